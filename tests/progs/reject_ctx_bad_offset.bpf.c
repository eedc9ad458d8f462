// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: invalid context access. struct xdp_md is 24 bytes; the
// program loads a u32 at offset 64 of its context.
// Kernel's last log line (Linux 6.18, root):
//   invalid bpf_context access off=64 size=4
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_bad_ctx_offset(struct xdp_md *ctx)
{
	__u32 beyond = *(volatile __u32 *)((char *)ctx + 64);

	return beyond ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
