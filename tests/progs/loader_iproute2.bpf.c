// SPDX-License-Identifier: Apache-2.0 OR MIT
// An object for iproute2 (`tc filter add ... bpf obj F sec classifier`):
// its map is a `struct bpf_elf_map` record in the legacy `maps` section,
// pinned in iproute2's global namespace, and its tail call sits in a
// numbered section that tc loads with the type of the program it was
// asked for.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct bpf_elf_map {
	__u32 type;
	__u32 size_key;
	__u32 size_value;
	__u32 max_elem;
	__u32 flags;
	__u32 id;
	__u32 pinning;
	__u32 inner_id;
	__u32 inner_idx;
};

#define PIN_GLOBAL_NS 2

struct bpf_elf_map SEC("maps") jmp_table = {
	.type = BPF_MAP_TYPE_PROG_ARRAY,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u32),
	.max_elem = 2,
	.pinning = PIN_GLOBAL_NS,
	.id = 1,
};

SEC("1/0")
int tail_mark(struct __sk_buff *skb)
{
	skb->mark = 1;
	return 0;
}

SEC("classifier")
int entry(struct __sk_buff *skb)
{
	bpf_tail_call(skb, &jmp_table, 0);
	return 0;
}

char __license[] SEC("license") = "GPL";
