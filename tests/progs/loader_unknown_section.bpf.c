// SPDX-License-Identifier: Apache-2.0 OR MIT
// A section libbpf does not know: its program names no type, so it is
// refused by name until the caller gives one (--prog-type 'mysec=xdp').
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("mysec")
int prog_in_unknown_section(struct xdp_md *ctx)
{
	return XDP_PASS;
}

SEC("xdp")
int xdp_known_section(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
