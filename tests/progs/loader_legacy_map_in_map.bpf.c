// SPDX-License-Identifier: Apache-2.0 OR MIT
// A map of maps in the legacy `maps` section, as the kernel's samples/bpf
// declare them (test_map_in_map_kern.c, map_perf_test_kern.c): a 28-byte
// struct bpf_map_def whose inner_map_idx names the inner map template by
// its position in the section.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct samples_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
	unsigned int inner_map_idx;
	unsigned int numa_node;
};

struct samples_map_def SEC("maps") inner_counts = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(__u32),
	.value_size = sizeof(__u64),
	.max_entries = 4,
};

struct samples_map_def SEC("maps") outer_counts = {
	.type = BPF_MAP_TYPE_ARRAY_OF_MAPS,
	.key_size = sizeof(__u32),
	.max_entries = 2,
	.inner_map_idx = 0, // inner_counts
};

struct samples_map_def SEC("maps") outer_by_hash = {
	.type = BPF_MAP_TYPE_HASH_OF_MAPS,
	.key_size = sizeof(__u32),
	.max_entries = 2,
	.inner_map_idx = 0, // inner_counts
};

SEC("xdp")
int xdp_legacy_map_in_map(struct xdp_md *ctx)
{
	__u32 key = 0;
	void *inner = bpf_map_lookup_elem(&outer_counts, &key);
	__u64 *n;

	if (!inner)
		inner = bpf_map_lookup_elem(&outer_by_hash, &key);
	if (!inner)
		return XDP_PASS;
	n = bpf_map_lookup_elem(inner, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
