// SPDX-License-Identifier: Apache-2.0 OR MIT
// Maps of maps: an ARRAY_OF_MAPS and a HASH_OF_MAPS, each declared with its
// inner map template and with initial slots filled from the object.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct counter_array {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
};

struct counter_array even_counts SEC(".maps"), odd_counts SEC(".maps");

// Slot 0 -> even_counts, slot 1 -> odd_counts.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct counter_array);
} by_parity SEC(".maps") = {
	.values = { &even_counts, &odd_counts },
};

struct len_hash {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
};

struct len_hash lens_seen SEC(".maps");

// Key 7 -> lens_seen; any other key is absent until user space adds it.
struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 8);
	__type(key, __u32);
	__array(values, struct len_hash);
} by_id SEC(".maps") = {
	.values = { [7] = &lens_seen },
};

// Counts the packet in by_parity[len & 1][len % 4] and records its length
// in by_id[7] (as a key whose value counts packets of that length).
// XDP_PASS, or XDP_ABORTED if an inner map is missing.
SEC("xdp")
int xdp_map_in_map(struct xdp_md *ctx)
{
	__u32 len = ctx->data_end - ctx->data;
	__u32 outer_key = len & 1, inner_key = len % 4, id = 7;
	__u64 one = 1, *n;
	void *inner;

	inner = bpf_map_lookup_elem(&by_parity, &outer_key);
	if (!inner)
		return XDP_ABORTED;
	n = bpf_map_lookup_elem(inner, &inner_key);
	if (n)
		__sync_fetch_and_add(n, 1);

	inner = bpf_map_lookup_elem(&by_id, &id);
	if (!inner)
		return XDP_ABORTED;
	n = bpf_map_lookup_elem(inner, &len);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(inner, &len, &one, BPF_NOEXIST);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
