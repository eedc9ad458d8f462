// SPDX-License-Identifier: Apache-2.0 OR MIT
// A prog array with a tail call: the entry program dispatches on the
// ethertype to a handler program in jump_table.  Slot 2 (ARP) is left
// empty on purpose, so the tail call falls through.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

enum { SLOT_IPV4, SLOT_IPV6, SLOT_ARP, SLOTS };

// Which program ran last: 1 = handle_ipv4, 2 = handle_ipv6, 3 = fallthrough.
__u32 last_handler;

SEC("xdp")
int handle_ipv4(struct xdp_md *ctx)
{
	last_handler = 1;
	return XDP_PASS;
}

SEC("xdp")
int handle_ipv6(struct xdp_md *ctx)
{
	last_handler = 2;
	return XDP_DROP;
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, SLOTS);
	__type(key, __u32);
	__array(values, int(void *));
} jump_table SEC(".maps") = {
	.values = {
		[SLOT_IPV4] = (void *)&handle_ipv4,
		[SLOT_IPV6] = (void *)&handle_ipv6,
	},
};

// IPv4 -> handle_ipv4 (XDP_PASS), IPv6 -> handle_ipv6 (XDP_DROP); ARP
// tail-calls the empty slot and, like every other packet, gets XDP_PASS
// with last_handler = 3; no Ethernet header -> XDP_ABORTED.
SEC("xdp")
int xdp_dispatch(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 slot;

	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	switch (bpf_ntohs(eth->h_proto)) {
	case ETH_P_IP:
		slot = SLOT_IPV4;
		break;
	case ETH_P_IPV6:
		slot = SLOT_IPV6;
		break;
	case ETH_P_ARP:
		slot = SLOT_ARP;
		break;
	default:
		slot = SLOTS; // out of range: the tail call fails
	}
	bpf_tail_call(ctx, &jump_table, slot);
	// Reached only when the tail call did not happen.
	last_handler = 3;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
