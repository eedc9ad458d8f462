// SPDX-License-Identifier: Apache-2.0 OR MIT
// A node pushed on a list is only borrowed (a non-owning reference) until
// the list's lock is released; reading it after bpf_spin_unlock reads a
// pointer the verifier no longer knows.
// Kernel: `R8 invalid mem access 'scalar'` (the register the compiler
// chose for the node)
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include "alloc_common.h"

SEC("tc")
int tc_node_after_unlock(struct __sk_buff *skb)
{
	struct list_value *v;
	struct elem *e;
	int key = 0;

	v = bpf_map_lookup_elem(&lists, &key);
	if (!v)
		return 0;
	e = obj_new(struct elem);
	if (!e)
		return 0;
	bpf_spin_lock(&v->lock);
	list_push_back(&v->head, &e->node);
	bpf_spin_unlock(&v->lock);
	return e->value;
}

char LICENSE[] SEC("license") = "GPL";
