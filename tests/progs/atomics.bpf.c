// SPDX-License-Identifier: Apache-2.0 OR MIT
// Atomic instructions (BPF_ATOMIC, -mcpu=v3): add/or/and/xor with and
// without fetching the old value, exchange and compare-exchange, on 64- and
// 32-bit globals and on a map value.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// .bss: the results a test can check after a run.
__u64 sum;		 // += len             (atomic add, no fetch)
__u64 runs;		 // += 1, fetching     (old value in prev_runs)
__u64 prev_runs;
__u64 seen_bits;	 // |= 1 << (len % 64)  (fetch-or, old in prev_bits)
__u64 prev_bits;
__u64 mask = ~0ULL;	 // &= ~(1 << (len % 64))
__u64 parity;		 // ^= len
__u64 last_len;		 // exchanged with len (old in prev_len)
__u64 prev_len;
__u64 first_len;	 // set to len only while it is 0 (cmpxchg)
__u32 sum32;		 // 32-bit add
__u32 prev_sum32;	 // 32-bit fetch-add result

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} map_sum SEC(".maps");

SEC("xdp")
int xdp_atomics(struct xdp_md *ctx)
{
	__u64 len = ctx->data_end - ctx->data;
	__u64 expected = 0;
	__u32 zero = 0;
	__u64 *v;

	__sync_fetch_and_add(&sum, len);
	prev_runs = __sync_fetch_and_add(&runs, 1);
	prev_bits = __sync_fetch_and_or(&seen_bits, 1ULL << (len % 64));
	__sync_fetch_and_and(&mask, ~(1ULL << (len % 64)));
	__sync_fetch_and_xor(&parity, len);
	prev_len = __atomic_exchange_n(&last_len, len, __ATOMIC_SEQ_CST);
	__atomic_compare_exchange_n(&first_len, &expected, len, 0,
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	prev_sum32 = __sync_fetch_and_add(&sum32, (__u32)len);

	v = bpf_map_lookup_elem(&map_sum, &zero);
	if (v)
		__sync_fetch_and_add(v, len);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
