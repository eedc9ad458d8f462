// SPDX-License-Identifier: Apache-2.0 OR MIT
// Loops the verifier must bound on its own (no helper): a `for` loop with a
// constant trip count, kept as a real back-edge; `while` loops whose trip
// counts depend on the packet, which the verifier explores until every path
// has left them: a TLV walk (cheap) and a Collatz iteration (a loop-heavy
// program, costly to verify and to run).  A plain loop never converges:
// the verifier does not prune a path against a checkpoint on that same
// path, so it walks every iteration (a sum over an unknown u32 count hits
// the 1M-insn limit).  Loops that converge need an iterator or may_goto,
// see kfunc_iter.bpf.c.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define SUM_BYTES 32
#define MAX_STEPS 64
#define MAX_OPTIONS 8

// Returns XDP_PASS when the byte sum of the first 32 bytes is even,
// XDP_DROP when it is odd, XDP_ABORTED on packets shorter than 32 bytes.
SEC("xdp")
int xdp_for_loop(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	unsigned char *bytes = data;
	__u32 sum = 0;
	int i;

	if (data + SUM_BYTES > data_end)
		return XDP_ABORTED;
#pragma clang loop unroll(disable)
	for (i = 0; i < SUM_BYTES; i++)
		sum += bytes[i];
	return sum & 1 ? XDP_DROP : XDP_PASS;
}

// Walks type-length-value options from the start of the packet: byte 0 is
// the type (0 ends the list), byte 1 the length of the value that follows
// (at most 15 counted).  XDP_PASS with a proper end marker within 8 options,
// XDP_DROP when an option runs past the packet or there is no end marker.
SEC("xdp")
int xdp_tlv_walk(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 off = 0;
	int n = 0;

	while (n < MAX_OPTIONS) {
		unsigned char *opt = data + off;

		if ((void *)(opt + 2) > data_end)
			return XDP_DROP;
		if (opt[0] == 0)
			return XDP_PASS;
		off += 2 + (opt[1] & 0xf);
		n++;
	}
	return XDP_DROP;
}

// Runs the Collatz iteration from the packet's first byte (0 counts as 1)
// for at most 64 steps; returns XDP_PASS if it reached 1, XDP_DROP if not.
// The loop exit depends on both the value and the step counter.
SEC("xdp")
int xdp_collatz(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 x, steps = 0;

	if (data + 1 > data_end)
		return XDP_ABORTED;
	x = *(unsigned char *)data;
	if (x == 0)
		x = 1;
	while (x != 1 && steps < MAX_STEPS) {
		x = x & 1 ? 3 * x + 1 : x / 2;
		steps++;
	}
	return x == 1 ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
