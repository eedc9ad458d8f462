// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: leaked ring buffer reservation. On the path where the
// packet is short, the reserved record is neither submitted nor discarded:
// a reference is still held at exit.
// Kernel's log ends with (Linux 6.18, root):
//   Unreleased reference id=2 alloc_insn=6
//   BPF_EXIT instruction in main prog would lead to reference leak
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

SEC("xdp")
int xdp_ringbuf_leak(struct xdp_md *ctx)
{
	__u32 len = ctx->data_end - ctx->data;
	__u32 *rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);

	if (!rec)
		return XDP_PASS;
	if (len < 64)
		return XDP_PASS; // leaks rec
	*rec = len;
	bpf_ringbuf_submit(rec, 0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
