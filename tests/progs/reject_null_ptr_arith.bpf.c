// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: pointer arithmetic on a NULL-able pointer. The address
// of a field is computed from the lookup result before the NULL check; the
// verifier allows no arithmetic on map_value_or_null.
// Kernel's last log line (Linux 6.18, root):
//   R1 pointer arithmetic on map_value_or_null prohibited, null-check it first
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct pair {
	__u64 first;
	__u64 second;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct pair);
} pairs SEC(".maps");

SEC("xdp")
int xdp_null_ptr_arith(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct pair *p = bpf_map_lookup_elem(&pairs, &key);
	__u64 *second = &p->second;

	// Keeps clang from moving the addition after the check.
	barrier_var(second);
	if (!p)
		return XDP_PASS;
	*second += 1;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
