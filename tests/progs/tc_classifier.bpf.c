// SPDX-License-Identifier: Apache-2.0 OR MIT
// A tc classifier (SEC("tc"), BPF_PROG_TYPE_SCHED_CLS): reads and writes
// __sk_buff fields, copies the IPv4 header out with bpf_skb_load_bytes and
// rewrites the DSCP of UDP packets with bpf_skb_store_bytes, fixing the IP
// checksum with bpf_l3_csum_replace.
//
// Under test_run the skb starts at the Ethernet header.  Expectations:
//   non-IPv4 or too short      -> TC_ACT_OK, mark = 0
//   IPv4 with ttl == 0         -> TC_ACT_SHOT
//   IPv4                       -> TC_ACT_OK, mark = 0xb0f0000 | protocol,
//                                 priority = IP precedence (tos >> 5),
//                                 tc_classid = 1:protocol, cb[0] = skb->len
//   IPv4 UDP with tos != 0x20  -> as above, and the packet leaves with
//                                 tos = 0x20 (DSCP CS1) and a valid checksum
#include <stddef.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define DSCP_CS1_TOS 0x20
#define MARK_TAG 0xb0f0000

SEC("tc")
int tc_classify(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr ip;

	skb->mark = 0;
	if ((void *)(eth + 1) > data_end)
		return TC_ACT_OK;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0)
		return TC_ACT_OK;
	if (ip.ttl == 0)
		return TC_ACT_SHOT;

	skb->mark = MARK_TAG | ip.protocol;
	skb->priority = ip.tos >> 5;
	skb->tc_classid = TC_H_MAKE(1 << 16, ip.protocol);
	skb->cb[0] = skb->len;

	if (ip.protocol == IPPROTO_UDP && ip.tos != DSCP_CS1_TOS) {
		// The checksum covers 16-bit words; tos is the low byte of the
		// first one (version/ihl is the high byte).
		__u16 old_word = bpf_htons(((__u16)((__u8 *)&ip)[0] << 8) | ip.tos);
		__u16 new_word = bpf_htons(((__u16)((__u8 *)&ip)[0] << 8) | DSCP_CS1_TOS);
		__u8 tos = DSCP_CS1_TOS;

		if (bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check),
					old_word, new_word, sizeof(__u16)))
			return TC_ACT_SHOT;
		if (bpf_skb_store_bytes(skb, ETH_HLEN + offsetof(struct iphdr, tos), &tos,
					sizeof(tos), 0))
			return TC_ACT_SHOT;
	}
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
