// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: write to read-only .rodata. libbpf freezes .rodata
// after creating it, and the verifier refuses stores into a frozen map's
// value.
// Kernel's last log line (Linux 6.18, root):
//   write into map forbidden, value_size=4 off=0 size=4
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

const volatile __u32 limit = 100;

SEC("xdp")
int xdp_rodata_write(struct xdp_md *ctx)
{
	// Casting const away compiles, but the map stays read-only.
	*(volatile __u32 *)&limit = ctx->data_end - ctx->data;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
