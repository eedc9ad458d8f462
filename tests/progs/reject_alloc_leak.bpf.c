// SPDX-License-Identifier: Apache-2.0 OR MIT
// An allocated object must be dropped (or handed to a list) before the
// program exits: bpf_obj_new acquires a reference.
// Kernel: `BPF_EXIT instruction in main prog would lead to reference leak`
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include "alloc_common.h"

SEC("tc")
int tc_alloc_leak(struct __sk_buff *skb)
{
	struct elem *e = obj_new(struct elem);

	if (!e)
		return 0;
	e->value = skb->len;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
