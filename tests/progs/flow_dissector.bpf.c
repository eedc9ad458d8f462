// SPDX-License-Identifier: Apache-2.0 OR MIT
// A flow dissector (SEC("flow_dissector")): fills struct bpf_flow_keys for
// IPv4 TCP/UDP, the way the kernel's own dissector would, and refuses what
// it cannot parse.  Runnable by BPF_PROG_TEST_RUN on an Ethernet frame:
// the kernel presets nhoff = 14 and n_proto from the frame.
//   IPv4 (any ihl >= 5) with TCP or UDP -> BPF_OK, addresses, ports, thoff
//   IPv4 fragment (not first)           -> BPF_OK, is_frag, no ports
//   other IPv4 protocols                -> BPF_OK, no ports
//   anything else, or truncated         -> BPF_DROP
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

// Direct packet access, not bpf_skb_load_bytes: under test_run (and in
// eth_get_headlen) the dissector has no skb, and that helper then fails.
SEC("flow_dissector")
int dissect(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct bpf_flow_keys *keys = skb->flow_keys;
	struct iphdr *ip;
	__be16 *ports;

	if (keys->n_proto != bpf_htons(ETH_P_IP))
		return BPF_DROP;
	// Bound nhoff first: a packet pointer whose offset may reach 0xffff
	// plus the header size gets no range from the data_end check.
	if (keys->nhoff > 256)
		return BPF_DROP;
	ip = data + keys->nhoff;
	if ((void *)(ip + 1) > data_end)
		return BPF_DROP;
	if (ip->ihl < 5)
		return BPF_DROP;

	keys->addr_proto = ETH_P_IP;
	keys->ipv4_src = ip->saddr;
	keys->ipv4_dst = ip->daddr;
	keys->ip_proto = ip->protocol;
	keys->thoff = keys->nhoff + ip->ihl * 4;

	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)) {
		keys->is_frag = 1;
		if (ip->frag_off & bpf_htons(IP_OFFSET))
			return BPF_OK;
		keys->is_first_frag = 1;
	}
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return BPF_OK;
	// Source and destination ports lead both the TCP and the UDP header.
	ports = (void *)ip + ip->ihl * 4;
	if ((void *)(ports + 2) > data_end)
		return BPF_DROP;
	keys->sport = ports[0];
	keys->dport = ports[1];
	return BPF_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
