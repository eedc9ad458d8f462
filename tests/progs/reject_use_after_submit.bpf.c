// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: use after release.  Submitting a ring buffer
// record releases the reference; every register that pointed at the record
// becomes an unknown scalar, so the later store is through a non-pointer.
// Kernel's last log line (Linux 6.18, root):
//   R6 invalid mem access 'scalar'
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

SEC("xdp")
int xdp_use_after_submit(struct xdp_md *ctx)
{
	__u64 *rec = bpf_ringbuf_reserve(&events, 2 * sizeof(*rec), 0);

	if (!rec)
		return XDP_PASS;
	rec[0] = ctx->data_end - ctx->data;
	bpf_ringbuf_submit(rec, 0);
	// Keeps clang from moving the store before the call.
	barrier_var(rec);
	rec[1] = 1; // the record is no longer ours
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
