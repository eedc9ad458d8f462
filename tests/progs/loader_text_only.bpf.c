// SPDX-License-Identifier: Apache-2.0 OR MIT
// No SEC() at all (PREVAIL's samples are built so): for libbpf the global
// function is a .text subprogram and the object has no programs;
// --prog-type '.text=xdp' verifies it as an XDP program.
#include <linux/bpf.h>

int text_only_func(struct xdp_md *ctx)
{
	return ctx->ingress_ifindex ? XDP_PASS : XDP_DROP;
}

char LICENSE[] __attribute__((section("license"), used)) = "GPL";
