// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: combined stack too large through a callback.
// The program's frame (300 bytes) and bpf_loop's callback frame (300
// bytes) fit alone; the callback runs on top of the caller's stack, so
// the chain needs 304 + 304 bytes (a JITed frame is rounded up to 16).
// Kernel's last log line (Linux 6.18, root):
//   combined stack size of 2 calls is 608. Too large
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static int touch(__u32 i, void *ctx)
{
	volatile char buf[300];

	buf[i & 255] = 1;
	return buf[(i + 1) & 255] ? 0 : 1;
}

SEC("xdp")
int xdp_callback_stack(struct xdp_md *ctx)
{
	volatile char big[300];
	__u32 k = ctx->ingress_ifindex;

	big[k & 255] = 2;
	bpf_loop(4, touch, 0, 0);
	return big[(k + 3) & 255] ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
