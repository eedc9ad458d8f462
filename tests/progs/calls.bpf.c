// SPDX-License-Identifier: Apache-2.0 OR MIT
// bpf-to-bpf calls: static __noinline subprograms (verified at every call
// site, in the caller's context), a global function (verified once, on its
// own, against its BTF signature), a call chain three frames deep and a
// callee that writes into its caller's stack through a pointer.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

// Weights in .rodata: clang cannot see their values, so it keeps all five
// arguments of weigh() instead of specialising the callee.
const volatile __u32 weight_len = 3;
const volatile __u32 weight_type = 5;
const volatile __u32 weight_bias = 7;

struct summary {
	__u32 len;
	__u32 ethertype;
	__u32 weight;
};

// Five arguments: the most a BPF call can pass in registers.
static __noinline __u32 weigh(__u32 len, __u32 ethertype, __u32 a, __u32 b, __u32 c)
{
	__u32 w = len * a + ethertype * b + c;

	return w % 1000;
}

// A middle frame: calls weigh() and writes through a pointer into the
// caller's stack.
static __noinline int summarise(struct summary *out, __u32 len, __u32 ethertype)
{
	out->len = len;
	out->ethertype = ethertype;
	out->weight = weigh(len, ethertype, weight_len, weight_type, weight_bias);
	return out->weight > 500;
}

// A global function: the verifier checks it once with ctx as an unknown
// context pointer of the caller's program type, and trusts its return
// value to be any scalar at the call sites.
__noinline int packet_ethertype(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return -1;
	return bpf_ntohs(eth->h_proto);
}

// XDP_DROP when the packet has no Ethernet header or its weight
// ((len*3 + ethertype*5 + 7) % 1000) exceeds 500, XDP_PASS otherwise.
SEC("xdp")
int xdp_calls(struct xdp_md *ctx)
{
	struct summary s = {};
	int ethertype = packet_ethertype(ctx);

	if (ethertype < 0)
		return XDP_DROP;
	if (summarise(&s, ctx->data_end - ctx->data, ethertype))
		return XDP_DROP;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
