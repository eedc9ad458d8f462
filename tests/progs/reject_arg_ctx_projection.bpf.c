// SPDX-License-Identifier: Apache-2.0 OR MIT
// An `arg:ctx` tag wants the program type's own context struct by name:
// the kernel struct it stands for (struct sk_buff for a tc program's
// struct __sk_buff), which an untagged argument may name, is refused.
// Kernel: `Caller passes invalid args into func#1 ('skb_len')`
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

__attribute__((noinline)) int skb_len(struct sk_buff *skb __attribute__((btf_decl_tag("arg:ctx"))))
{
	return skb ? 1 : 0;
}

SEC("tc")
int tc_arg_ctx_projection(struct __sk_buff *skb)
{
	return skb_len((void *)skb);
}

char LICENSE[] SEC("license") = "GPL";
