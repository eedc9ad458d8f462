// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: out-of-bounds map value access with a variable offset.
// The index is masked to 0..31 but the array in the value has 16 slots,
// so the largest offset the verifier can prove lies past the value's end.
// Kernel's log ends with (Linux 6.18, root):
//   invalid access to map value, value_size=64 off=124 size=4
//   R0 max value is outside of the allowed memory range
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct slots {
	__u32 count[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slots);
} table SEC(".maps");

SEC("xdp")
int xdp_map_value_oob(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 zero = 0, idx;
	struct slots *s;

	if (data + 1 > data_end)
		return XDP_PASS;
	idx = *(unsigned char *)data & 31; // should be & 15
	s = bpf_map_lookup_elem(&table, &zero);
	if (!s)
		return XDP_PASS;
	s->count[idx]++;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
