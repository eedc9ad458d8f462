// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: spin lock still held at exit. The early return on
// long packets skips bpf_spin_unlock.
// Kernel's last log line (Linux 6.18, root):
//   BPF_EXIT instruction in main prog cannot be used inside bpf_spin_lock-ed region
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

struct locked {
	struct bpf_spin_lock lock;
	__u64 packets;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct locked);
} state SEC(".maps");

SEC("tc")
int tc_lock_leak(struct __sk_buff *skb)
{
	__u32 zero = 0;
	struct locked *v = bpf_map_lookup_elem(&state, &zero);

	if (!v)
		return TC_ACT_OK;
	bpf_spin_lock(&v->lock);
	v->packets++;
	if (skb->len > 1000)
		return TC_ACT_SHOT; // lock still held
	bpf_spin_unlock(&v->lock);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
