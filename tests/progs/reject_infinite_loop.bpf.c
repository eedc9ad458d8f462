// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: infinite loop. The loop has no exit at all, so the
// verifier finds a state at the loop head equal to one it already saw on
// the same path.
// Kernel's log ends with (Linux 6.18, root):
//   infinite loop detected at insn 0
//   cur state: R1=ctx() R10=fp0
//   old state: R1=ctx() R10=fp0
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_infinite_loop(struct xdp_md *ctx)
{
	// The empty asm is a side effect, so clang keeps the loop.
	for (;;)
		asm volatile("");
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
