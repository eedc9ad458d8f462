// SPDX-License-Identifier: Apache-2.0 OR MIT
// Pin values other loaders define: Cilium's own replace flag (1 << 4) and
// iproute2's PIN_GLOBAL_NS (2). libbpf knows 0 and 1 only; bpfvet warns
// and opens the object, as cilium/ebpf does.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define CILIUM_PIN_REPLACE (1 << 4)
#define PIN_GLOBAL_NS 2

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, CILIUM_PIN_REPLACE);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, PIN_GLOBAL_NS);
} packets SEC(".maps");

SEC("tc")
int tc_count_and_tail_call(struct __sk_buff *skb)
{
	__u32 key = 0;
	__u64 *n = bpf_map_lookup_elem(&packets, &key);

	if (n)
		__sync_fetch_and_add(n, 1);
	bpf_tail_call(skb, &calls, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
