// SPDX-License-Identifier: Apache-2.0 OR MIT
// A cgroup_skb egress filter: the verifier holds its return value to the
// range [0, 3] (bit 0 allow / drop, bit 1 congestion notification).
// Runnable by BPF_PROG_TEST_RUN, where the skb starts at the IP header.
//   IPv4 to 192.0.2.0/24 (TEST-NET-1) -> 0 (drop)
//   everything else                   -> 1 (allow)
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

__u64 dropped;

SEC("cgroup_skb/egress")
int cgroup_egress_filter(struct __sk_buff *skb)
{
	struct iphdr ip;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return 1;
	if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)))
		return 1;
	if ((bpf_ntohl(ip.daddr) & 0xffffff00) == 0xc0000200) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	return 1;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
