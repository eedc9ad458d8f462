// SPDX-License-Identifier: Apache-2.0 OR MIT
// More map types: per-CPU array, per-CPU hash, LRU hash and LRU per-CPU
// hash, all updated from one XDP program.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} cpu_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 128);
	__type(key, __u32);
	__type(value, __u64);
} cpu_len_bytes SEC(".maps");

// Small on purpose, so that a test can watch the least recently used
// entries being evicted.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} recent_lens SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} recent_first_byte SEC(".maps");

static __always_inline void bump(void *map, __u32 *key, __u64 by)
{
	__u64 *v = bpf_map_lookup_elem(map, key);

	if (v)
		*v += by; // per-CPU values need no atomics
	else
		bpf_map_update_elem(map, key, &by, BPF_NOEXIST);
}

// cpu_counts[len % 4] += 1, cpu_len_bytes[len] += len,
// recent_lens[len] = packets of that length (LRU), and
// recent_first_byte[first byte] += 1 (LRU, per CPU).  Always XDP_PASS.
SEC("xdp")
int xdp_map_types(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 len = data_end - data, slot = len % 4;
	__u64 *v;

	v = bpf_map_lookup_elem(&cpu_counts, &slot);
	if (v)
		*v += 1;
	bump(&cpu_len_bytes, &len, len);
	bump(&recent_lens, &len, 1);
	if (data + 1 <= data_end) {
		__u32 first = *(unsigned char *)data;

		bump(&recent_first_byte, &first, 1);
	}
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
