// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: invalid callback return value.  A bpf_loop
// callback must return 0 (continue) or 1 (stop); this one can return 2.
// The verifier checks the range of R0 at the callback's exit.
// Kernel's last log line (Linux 6.18, root):
//   At callback return the register R0 has smin=2 smax=2 should have been in [0, 1]
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static int step(__u32 index, __u32 *budget)
{
	if (*budget == 0)
		return 2; // should be 1
	*budget -= 1;
	return 0;
}

SEC("xdp")
int xdp_callback_return(struct xdp_md *ctx)
{
	__u32 budget = ctx->data_end - ctx->data;

	bpf_loop(64, step, &budget, 0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
