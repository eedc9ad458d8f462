// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: read of an uninitialised register.  At entry
// only R1 (the context) and R10 (the frame pointer) hold values; the
// program returns R2.  (Root may read uninitialised *stack*, see
// uninit_stack_root.bpf.c, but never an uninitialised register.)  C cannot
// express this, hence the one line of assembly.
// Kernel's last log line (Linux 6.18, root):
//   R2 !read_ok
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_uninit_reg(struct xdp_md *ctx)
{
	long v;

	asm volatile("%0 = r2" : "=r"(v));
	return v;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
