// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: helper called from the wrong program type. Socket
// filters may read packets (bpf_skb_load_bytes) but not modify them:
// bpf_skb_store_bytes is not in their helper set.
// Kernel's last log line (Linux 6.18, root):
//   program of this type cannot use helper bpf_skb_store_bytes#9
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("socket")
int sock_store_bytes(struct __sk_buff *skb)
{
	__u8 zero = 0;

	bpf_skb_store_bytes(skb, 0, &zero, sizeof(zero), 0);
	return skb->len;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
