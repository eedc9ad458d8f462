// SPDX-License-Identifier: Apache-2.0 OR MIT
// An extern no BTF describes (a libcall such as falco's memcpy) used by one
// program only: that program is refused by name, the other one verifies.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_calls_memcpy(struct xdp_md *ctx)
{
	asm volatile("call memcpy" ::: "r0", "r1", "r2", "r3", "r4", "r5");
	return XDP_DROP;
}

SEC("xdp")
int xdp_plain(struct xdp_md *ctx)
{
	return ctx->ingress_ifindex ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
