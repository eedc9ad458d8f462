// SPDX-License-Identifier: Apache-2.0 OR MIT
// ACCEPTED as root, although it reads uninitialised stack: half of the key
// passed to bpf_map_lookup_elem is never written.  The kernel lets programs
// loaded with CAP_PERFMON (root) read uninitialised stack slots, as unknown
// values; without it the same program is refused with "invalid read from
// stack".  Unprivileged BPF is disabled on the reference host, so only the
// privileged verdict is measured (see EXPECTED.md).  The rejected program
// of this family is reject_uninit_reg.bpf.c.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, __u64);
} by_key SEC(".maps");

SEC("xdp")
int xdp_uninit_stack(struct xdp_md *ctx)
{
	__u64 key;
	__u64 *v;

	// Writes only the low 4 bytes of the 8-byte key.
	*(__u32 *)&key = ctx->data_end - ctx->data;
	v = bpf_map_lookup_elem(&by_key, &key);
	return v ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
