// SPDX-License-Identifier: Apache-2.0 OR MIT
// The list node inside an allocated object belongs to the list kfuncs:
// loads and stores may not touch its bytes.
// Kernel: `direct access to bpf_list_node is disallowed`
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include "alloc_common.h"

SEC("tc")
int tc_touch_node(struct __sk_buff *skb)
{
	struct elem *e = obj_new(struct elem);
	long x;

	if (!e)
		return 0;
	x = *(volatile long *)&e->node;
	obj_drop(e);
	return x;
}

char LICENSE[] SEC("license") = "GPL";
