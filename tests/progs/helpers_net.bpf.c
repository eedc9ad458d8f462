// SPDX-License-Identifier: Apache-2.0 OR MIT
// Networking helpers beyond the basics: checksum arithmetic, tail
// adjustment, socket lookup with reference tracking (acquire / release),
// perf event output, and the time / random / CPU helpers.
#include <stddef.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

// Values no test can predict; kept out of the return values on purpose.
__u64 last_ktime;
__u32 last_random;
__u32 last_cpu;

// Ethernet padding trimmed by xdp_trim_padding, in bytes.
__u32 trimmed;

// For IPv4 packets: XDP_DROP when the header checksum is wrong (checked
// with bpf_csum_diff); otherwise trims bytes past the IP total length (L2
// padding) with bpf_xdp_adjust_tail and returns XDP_PASS.  Non-IPv4 and
// short packets pass untouched.
SEC("xdp")
int xdp_trim_padding(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u32 frame_len, ip_len;
	__s64 csum;

	last_ktime = bpf_ktime_get_ns();
	last_random = bpf_get_prandom_u32();
	last_cpu = bpf_get_smp_processor_id();

	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if (ip->ihl != 5)
		return XDP_PASS; // keep the checksummed length constant
	csum = bpf_csum_diff(0, 0, (__be32 *)ip, sizeof(*ip), 0);
	if (csum < 0)
		return XDP_ABORTED;
	// Fold the 32-bit sum to 16 bits: a valid header sums to 0xffff.
	csum = (csum & 0xffff) + (csum >> 16);
	csum = (csum & 0xffff) + (csum >> 16);
	if (csum != 0xffff)
		return XDP_DROP;

	frame_len = data_end - data;
	ip_len = sizeof(*eth) + bpf_ntohs(ip->tot_len);
	if (ip_len < frame_len && frame_len - ip_len < 64) {
		trimmed = frame_len - ip_len;
		if (bpf_xdp_adjust_tail(ctx, -(int)trimmed))
			return XDP_ABORTED;
	}
	return XDP_PASS;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} tcp_events SEC(".maps");

struct tcp_event {
	__u32 saddr, daddr;
	__u16 sport, dport;
	__u32 has_socket;
};

// For IPv4 TCP: looks the 4-tuple up among the host's sockets (the socket
// reference must be released on every path), reports the tuple through a
// perf event array (-ENOENT when nobody listens: ignored), and marks the
// skb 1 when a socket was found.  Always TC_ACT_OK.
SEC("tc")
int tc_socket_lookup(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct tcphdr *tcp = (void *)(ip + 1);
	struct bpf_sock_tuple tuple = {};
	struct tcp_event ev = {};
	struct bpf_sock *sk;

	if ((void *)(tcp + 1) > data_end)
		return TC_ACT_OK;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 || ip->protocol != IPPROTO_TCP)
		return TC_ACT_OK;

	tuple.ipv4.saddr = ip->saddr;
	tuple.ipv4.daddr = ip->daddr;
	tuple.ipv4.sport = tcp->source;
	tuple.ipv4.dport = tcp->dest;
	sk = bpf_sk_lookup_tcp(skb, &tuple, sizeof(tuple.ipv4), BPF_F_CURRENT_NETNS, 0);
	if (sk) {
		ev.has_socket = 1;
		bpf_sk_release(sk);
	}
	skb->mark = ev.has_socket;

	ev.saddr = ip->saddr;
	ev.daddr = ip->daddr;
	ev.sport = bpf_ntohs(tcp->source);
	ev.dport = bpf_ntohs(tcp->dest);
	bpf_perf_event_output(skb, &tcp_events, BPF_F_CURRENT_CPU, &ev, sizeof(ev));
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
