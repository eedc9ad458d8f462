// SPDX-License-Identifier: Apache-2.0 OR MIT
// Socket filters (SEC("socket")).  A socket filter returns how many bytes of
// the packet to keep (0 drops it).  Under BPF_PROG_TEST_RUN, and on sockets
// above L2, offset 0 of the skb is the network header and skb->protocol
// carries the ethertype, so both programs read the IP header at offset 0.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

// Packets seen per IP protocol number.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} proto_count SEC(".maps");

// Counts IPv4 packets per protocol; keeps only the IP + UDP headers of UDP
// packets, whole packets otherwise, and drops truncated IPv4 packets.
SEC("socket")
int sock_count_ipproto(struct __sk_buff *skb)
{
	struct iphdr ip;
	__u64 *count;
	__u32 key;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return skb->len;
	if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)) < 0)
		return 0;

	key = ip.protocol;
	count = bpf_map_lookup_elem(&proto_count, &key);
	if (count)
		__sync_fetch_and_add(count, 1);

	if (ip.protocol == IPPROTO_UDP)
		return ip.ihl * 4 + 8;
	return skb->len;
}

// The legacy packet loads (BPF_LD | BPF_ABS / BPF_IND), as classic-BPF
// filters translated to eBPF use them.  Offsets are relative to skb->data.
unsigned long long load_byte(void *skb, unsigned long long off) asm("llvm.bpf.load.byte");
unsigned long long load_half(void *skb, unsigned long long off) asm("llvm.bpf.load.half");
unsigned long long load_word(void *skb, unsigned long long off) asm("llvm.bpf.load.word");

// Accepts (whole packet) IPv4 TCP segments to port 22 from 10.0.0.0/8 and
// drops everything else.  A load past the end of the packet makes the
// program return 0 on its own, which is LD_ABS/LD_IND semantics.
SEC("socket")
int sock_ldabs_ssh(struct __sk_buff *skb)
{
	__u32 ihl;

	if ((load_byte(skb, 0) >> 4) != 4)
		return 0;
	if (load_byte(skb, offsetof(struct iphdr, protocol)) != IPPROTO_TCP)
		return 0;
	if ((load_word(skb, offsetof(struct iphdr, saddr)) >> 24) != 10)
		return 0;
	ihl = (load_byte(skb, 0) & 0xf) * 4;
	if (load_half(skb, ihl + 2) != 22)
		return 0;
	return skb->len;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
