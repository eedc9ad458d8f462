// SPDX-License-Identifier: Apache-2.0 OR MIT
// A ring buffer producer: reserve / submit, reserve / discard, and
// bpf_ringbuf_output of a record built on the stack; and the same through a
// dynptr (bpf_ringbuf_reserve_dynptr / bpf_dynptr_write / _data / _submit).
#include <stddef.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define SAMPLE_LEN 16

struct sample {
	__u32 len;
	__u32 seq;
	unsigned char head[SAMPLE_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} samples SEC(".maps");

__u32 seq;

// Per packet: a reserved record with the first 16 bytes when the packet has
// them, a discarded reservation when it has an odd length, and for
// packets shorter than 16 bytes a length-only record via
// bpf_ringbuf_output.  Always XDP_PASS.
SEC("xdp")
int xdp_ringbuf_sample(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 len = data_end - data;
	struct sample *rec;

	if (data + SAMPLE_LEN > data_end) {
		struct sample small = { .len = len, .seq = seq++ };

		bpf_ringbuf_output(&samples, &small, sizeof(small), 0);
		return XDP_PASS;
	}
	rec = bpf_ringbuf_reserve(&samples, sizeof(*rec), 0);
	if (!rec)
		return XDP_PASS;
	if (len & 1) {
		// Reserved memory must be released on every path: discard it.
		bpf_ringbuf_discard(rec, 0);
		return XDP_PASS;
	}
	rec->len = len;
	rec->seq = seq++;
	__builtin_memcpy(rec->head, data, SAMPLE_LEN);
	bpf_ringbuf_submit(rec, 0);
	return XDP_PASS;
}

// Records the packet length and up to 16 leading bytes through a ringbuf
// dynptr: bpf_dynptr_data gives a checked slice for the header fields,
// bpf_dynptr_write copies the bytes (from a stack copy).  Short packets discard the record.
// Always XDP_PASS.
SEC("xdp")
int xdp_ringbuf_dynptr(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	unsigned char head[SAMPLE_LEN];
	struct bpf_dynptr ptr;
	struct sample *hdr;

	// The dynptr must be released even when the reservation failed.
	if (bpf_ringbuf_reserve_dynptr(&samples, sizeof(struct sample), 0, &ptr)) {
		bpf_ringbuf_discard_dynptr(&ptr, 0);
		return XDP_PASS;
	}
	hdr = bpf_dynptr_data(&ptr, 0, 2 * sizeof(__u32));
	if (!hdr || data + SAMPLE_LEN > data_end) {
		bpf_ringbuf_discard_dynptr(&ptr, 0);
		return XDP_PASS;
	}
	hdr->len = data_end - data;
	hdr->seq = seq++;
	// bpf_dynptr_write may not read packet memory: go through the stack.
	__builtin_memcpy(head, data, SAMPLE_LEN);
	bpf_dynptr_write(&ptr, offsetof(struct sample, head), head, SAMPLE_LEN, 0);
	bpf_ringbuf_submit_dynptr(&ptr, 0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
