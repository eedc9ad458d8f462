// SPDX-License-Identifier: Apache-2.0 OR MIT
// An XDP packet parser: Ethernet, up to two VLAN tags (802.1Q / 802.1ad),
// IPv4 (with options), IPv6, TCP and UDP, every header bounds-checked
// against data_end.  It counts packets and bytes per flow in a hash map and
// decides XDP_PASS / XDP_DROP from the packet, so a runtime can be tested
// against the kernel on crafted packets.
//
// Policy (what a test should expect):
//   truncated Ethernet / VLAN / IP / TCP / UDP header    -> XDP_DROP
//   IPv4 with ihl < 5 or version != 4, IPv6 version != 6 -> XDP_DROP
//   IPv4 ttl <= 1, IPv6 hop_limit <= 1                   -> XDP_DROP
//   TCP with doff < 5 or options past the packet end     -> XDP_DROP
//   TCP to port 23 (telnet), UDP to port 9 (discard)     -> XDP_DROP
//   UDP whose length field is < 8                        -> XDP_DROP
//   more than two VLAN tags, non-IP ethertypes           -> XDP_PASS, no flow
//   IPv4 fragments (MF or offset set)                    -> XDP_PASS, flow without ports
//   everything else                                      -> XDP_PASS
// Flows are counted for every IPv4/IPv6 packet whose IP header is complete
// and valid, including those then dropped for their TTL or L4 header.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

// The UAPI headers have no VLAN header outside the kernel.
struct vlan_tag {
	__be16 tci;
	__be16 next_proto;
};

#define MAX_VLAN_TAGS 2
#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

struct flow_key {
	__u32 saddr[4];
	__u32 daddr[4];
	__be16 sport;
	__be16 dport;
	__u16 vlan_id; // innermost VLAN id, 0 if untagged
	__u8 family;   // 4 or 6
	__u8 proto;
};

struct flow_stats {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct flow_key);
	__type(value, struct flow_stats);
} flows SEC(".maps");

// Packets per returned XDP action (index = XDP_ABORTED .. XDP_REDIRECT).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 5);
	__type(key, __u32);
	__type(value, __u64);
} action_count SEC(".maps");

static __always_inline int count_action(int action)
{
	__u32 key = action;
	__u64 *n = bpf_map_lookup_elem(&action_count, &key);

	if (n)
		__sync_fetch_and_add(n, 1);
	return action;
}

static __always_inline void count_flow(struct flow_key *key, __u64 bytes)
{
	struct flow_stats *st = bpf_map_lookup_elem(&flows, key);

	if (st) {
		__sync_fetch_and_add(&st->packets, 1);
		__sync_fetch_and_add(&st->bytes, bytes);
	} else {
		struct flow_stats fresh = { .packets = 1, .bytes = bytes };

		// Another CPU may have inserted it meanwhile; losing one count
		// in that race is acceptable for statistics.
		bpf_map_update_elem(&flows, key, &fresh, BPF_NOEXIST);
	}
}

// Parses the L4 header at l4 for protocol key->proto; returns the action.
static __always_inline int parse_l4(void *l4, void *data_end, struct flow_key *key)
{
	if (key->proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;
		__u32 hlen;

		if ((void *)(tcp + 1) > data_end)
			return XDP_DROP;
		hlen = tcp->doff * 4;
		if (hlen < sizeof(*tcp) || l4 + hlen > data_end)
			return XDP_DROP;
		key->sport = tcp->source;
		key->dport = tcp->dest;
		return tcp->dest == bpf_htons(23) ? XDP_DROP : XDP_PASS;
	}
	if (key->proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;

		if ((void *)(udp + 1) > data_end)
			return XDP_DROP;
		if (bpf_ntohs(udp->len) < sizeof(*udp))
			return XDP_DROP;
		key->sport = udp->source;
		key->dport = udp->dest;
		return udp->dest == bpf_htons(9) ? XDP_DROP : XDP_PASS;
	}
	return XDP_PASS;
}

SEC("xdp")
int xdp_parse_flows(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct flow_key key = {};
	struct ethhdr *eth = data;
	void *cursor;
	__be16 proto;
	int action, i;

	if ((void *)(eth + 1) > data_end)
		return count_action(XDP_DROP);
	proto = eth->h_proto;
	cursor = eth + 1;

	for (i = 0; i < MAX_VLAN_TAGS; i++) {
		struct vlan_tag *tag = cursor;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(tag + 1) > data_end)
			return count_action(XDP_DROP);
		key.vlan_id = bpf_ntohs(tag->tci) & 0x0fff;
		proto = tag->next_proto;
		cursor = tag + 1;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = cursor;
		__u32 hlen;

		if ((void *)(ip + 1) > data_end)
			return count_action(XDP_DROP);
		hlen = ip->ihl * 4;
		if (ip->version != 4 || hlen < sizeof(*ip))
			return count_action(XDP_DROP);
		// Options make the header length variable: check it as a whole.
		if (cursor + hlen > data_end)
			return count_action(XDP_DROP);
		key.family = 4;
		key.proto = ip->protocol;
		key.saddr[0] = ip->saddr;
		key.daddr[0] = ip->daddr;
		if (ip->ttl <= 1) {
			action = XDP_DROP;
		} else if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)) {
			// Only the first fragment has the L4 header; count all of
			// them under the port-less flow.
			action = XDP_PASS;
		} else {
			action = parse_l4(cursor + hlen, data_end, &key);
		}
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = cursor;

		if ((void *)(ip6 + 1) > data_end)
			return count_action(XDP_DROP);
		if (ip6->version != 6)
			return count_action(XDP_DROP);
		key.family = 6;
		key.proto = ip6->nexthdr;
		__builtin_memcpy(key.saddr, &ip6->saddr, sizeof(key.saddr));
		__builtin_memcpy(key.daddr, &ip6->daddr, sizeof(key.daddr));
		if (ip6->hop_limit <= 1)
			action = XDP_DROP;
		else
			action = parse_l4(ip6 + 1, data_end, &key);
	} else {
		// Not IP, or more VLAN tags than we parse.
		return count_action(XDP_PASS);
	}

	count_flow(&key, data_end - data);
	return count_action(action);
}

// Removes the outer VLAN tag (any of the two ethertypes) by moving the MAC
// addresses forward and shrinking the head: a program whose output packet
// differs from its input.  Untagged packets pass unchanged.
SEC("xdp")
int xdp_vlan_pop(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct vlan_tag *tag;
	unsigned char macs[2 * ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_8021Q) && eth->h_proto != bpf_htons(ETH_P_8021AD))
		return XDP_PASS;
	tag = (void *)(eth + 1);
	if ((void *)(tag + 1) > data_end)
		return XDP_DROP;

	__builtin_memcpy(macs, eth, sizeof(macs));
	if (bpf_xdp_adjust_head(ctx, (int)sizeof(*tag)))
		return XDP_ABORTED;

	// The head moved: every old packet pointer is invalid now.
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	// The ethertype field now holds the tag's next protocol already.
	__builtin_memcpy(eth, macs, sizeof(macs));
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
