// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: out-of-bounds packet read. The program reads the Ethernet
// header without first proving, by a comparison with data_end, that the
// packet is long enough.
// Kernel's log ends with (Linux 6.18, root):
//   invalid access to packet, off=12 size=1, R1(id=0,off=12,r=0)
//   R1 offset is outside of the packet
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_no_bounds_check(struct xdp_md *ctx)
{
	struct ethhdr *eth = (void *)(long)ctx->data;

	// Missing: if ((void *)(eth + 1) > (void *)(long)ctx->data_end) ...
	return eth->h_proto == bpf_htons(ETH_P_IP) ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
