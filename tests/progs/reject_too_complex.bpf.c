// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: too complex (unbounded loop).  The trip count
// comes from the packet (any u32), and the counter indexes a map value, so
// the verifier must track it precisely: every iteration is a new state,
// and exploration stops at the limit of 1,000,000 processed instructions.
// Kernel's last log line (Linux 6.18, root):
//   BPF program is too large. Processed 1000001 insn
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct table {
	__u64 v[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct table);
} tables SEC(".maps");

SEC("xdp")
int xdp_too_complex(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 zero = 0, n, i;
	struct table *t;
	__u64 sum = 0;

	if (data + sizeof(__u32) > data_end)
		return XDP_PASS;
	n = *(__u32 *)data;
	t = bpf_map_lookup_elem(&tables, &zero);
	if (!t)
		return XDP_PASS;
	for (i = 0; i < n; i++)
		sum += t->v[i & 15];
	return sum & 1 ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
