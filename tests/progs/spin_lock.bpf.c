// SPDX-License-Identifier: Apache-2.0 OR MIT
// A struct bpf_spin_lock inside map values (an array and a hash map): the
// verifier checks that the lock is released on every path and that no
// helper call happens while it is held.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

struct totals {
	struct bpf_spin_lock lock;
	__u64 packets;
	__u64 bytes;
	__u32 max_len;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct totals);
} global_totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct totals);
} per_protocol SEC(".maps");

static __always_inline void account(struct totals *t, __u32 len)
{
	bpf_spin_lock(&t->lock);
	t->packets++;
	t->bytes += len;
	if (len > t->max_len)
		t->max_len = len;
	bpf_spin_unlock(&t->lock);
}

// Updates global_totals[0] and per_protocol[skb->protocol] under their
// locks.  Always TC_ACT_OK.
SEC("tc")
int tc_spin_lock(struct __sk_buff *skb)
{
	__u32 zero = 0, proto = skb->protocol;
	struct totals *t, fresh = {};

	t = bpf_map_lookup_elem(&global_totals, &zero);
	if (t)
		account(t, skb->len);

	t = bpf_map_lookup_elem(&per_protocol, &proto);
	if (!t) {
		bpf_map_update_elem(&per_protocol, &proto, &fresh, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&per_protocol, &proto);
		if (!t)
			return TC_ACT_OK;
	}
	account(t, skb->len);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
