// SPDX-License-Identifier: Apache-2.0 OR MIT
// Every function of a program section is a program, static ones too (as
// cilium/ebpf loads Cilium's static tail-call programs); functions in
// .text are subprograms only, whether static or global.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// A .text subprogram shared by the programs below.
static __attribute__((noinline)) int verdict_for(__u32 ifindex)
{
	return ifindex & 1 ? XDP_PASS : XDP_DROP;
}

// A global .text function nothing calls: a subprogram, not a program.
__attribute__((noinline)) int text_global_unused(int x)
{
	return x + 1;
}

SEC("xdp")
int xdp_global_entry(struct xdp_md *ctx)
{
	return verdict_for(ctx->ingress_ifindex);
}

// Static, and in the same section as the global program.
SEC("xdp") __attribute__((used))
static int xdp_static_entry(struct xdp_md *ctx)
{
	return verdict_for(ctx->rx_queue_index);
}

// Static and alone in its section, as a Cilium tail call is.
SEC("tc") __attribute__((used))
static int tc_static_entry(struct __sk_buff *skb)
{
	return skb->len > 64 ? 0 : 2;
}

char LICENSE[] SEC("license") = "GPL";
