// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: null map value dereference. bpf_map_lookup_elem returns
// NULL for a missing key; the value is used without a NULL check.
// Kernel's last log line (Linux 6.18, root):
//   R0 invalid mem access 'map_value_or_null'
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

SEC("xdp")
int xdp_null_deref(struct xdp_md *ctx)
{
	__u32 key = ctx->data_end - ctx->data;
	__u64 *count = bpf_map_lookup_elem(&counters, &key);

	// Missing: if (!count) return XDP_PASS;
	*count += 1;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
