// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: combined stack too large.  Each function stays
// within the 512-byte limit on its own, but the call chain main -> fill
// needs more than 512 bytes of stack at once.
// Kernel's last log line (Linux 6.18, root):
//   combined stack size of 2 calls is 640. Too large
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define WORDS 40 // 320 bytes per frame

static __noinline __u64 fill(__u32 seed)
{
	volatile __u64 buf[WORDS];
	__u64 sum = 0;
	int i;

	for (i = 0; i < WORDS; i++)
		buf[i] = seed + i;
	for (i = 0; i < WORDS; i++)
		sum += buf[i];
	return sum;
}

SEC("xdp")
int xdp_combined_stack(struct xdp_md *ctx)
{
	volatile __u64 buf[WORDS];
	__u32 len = ctx->data_end - ctx->data;
	int i;

	for (i = 0; i < WORDS; i++)
		buf[i] = len;
	return (fill(len) + buf[7]) & 1 ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
