// SPDX-License-Identifier: GPL-2.0
/* A global function declared with an unnamed parameter (C2x syntax): the
 * kernel refuses such BTF ("Invalid arg#1"), so libbpf loads the program
 * without BTF, and the function becomes a static subprogram explored at
 * each of its two calls instead of once on its own. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

__attribute__((noinline)) int unnamed_arg(int)
{
	return bpf_get_prandom_u32() & 1;
}

SEC("socket")
int btf_refused_unnamed_arg(struct __sk_buff *skb)
{
	return unnamed_arg(1) + unnamed_arg(2);
}

char LICENSE[] SEC("license") = "GPL";
