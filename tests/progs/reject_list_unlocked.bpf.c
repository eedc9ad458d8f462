// SPDX-License-Identifier: Apache-2.0 OR MIT
// A list operation without the lock that protects the list: every list
// kfunc needs the bpf_spin_lock of its head's value held.
// Kernel: `bpf_spin_lock at off=0 must be held for bpf_list_head`
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include "alloc_common.h"

SEC("tc")
int tc_list_unlocked(struct __sk_buff *skb)
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
	list_push_back(&v->head, &e->node);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
