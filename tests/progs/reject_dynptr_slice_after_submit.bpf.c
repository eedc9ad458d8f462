// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: a dynptr slice used after its dynptr is
// released.  bpf_dynptr_data's slice shares the ring buffer reservation's
// reference; submitting the dynptr releases it, so the slice becomes an
// unknown scalar and the store goes through a non-pointer.
// Kernel's last log line (Linux 6.18, root):
//   R6 invalid mem access 'scalar'
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

SEC("xdp")
int xdp_dynptr_slice_after_submit(struct xdp_md *ctx)
{
	struct bpf_dynptr ptr;
	__u64 *slot;

	bpf_ringbuf_reserve_dynptr(&events, 2 * sizeof(*slot), 0, &ptr);
	slot = bpf_dynptr_data(&ptr, 0, sizeof(*slot));
	bpf_ringbuf_submit_dynptr(&ptr, 0);
	if (slot)
		*slot = 1; // the record is no longer ours
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
