// SPDX-License-Identifier: Apache-2.0 OR MIT
// Dynptrs beyond the ring buffer record of ringbuf.bpf.c: a local dynptr
// over a map value (bpf_dynptr_from_mem / _write / _data / _read), and the
// read-only dynptr a bpf_user_ringbuf_drain callback receives per sample.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define SCRATCH_LEN 32

struct scratch {
	unsigned char buf[SCRATCH_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_USER_RINGBUF);
	__uint(max_entries, 4096);
} commands SEC(".maps");

// Copies the packet length into a map value through a local dynptr, bumps
// a counter through a slice of it, and reads a word back.  Always XDP_PASS.
SEC("xdp")
int xdp_dynptr_local(struct xdp_md *ctx)
{
	__u64 len = ctx->data_end - ctx->data;
	struct bpf_dynptr d;
	struct scratch *s;
	__u64 *counter;
	__u32 key = 0, word = 0;

	s = bpf_map_lookup_elem(&scratch, &key);
	if (!s)
		return XDP_PASS;
	// A local dynptr may only view map values (not the stack).
	bpf_dynptr_from_mem(s, sizeof(*s), 0, &d);
	bpf_dynptr_write(&d, 0, &len, sizeof(len), 0);
	counter = bpf_dynptr_data(&d, 8, sizeof(*counter));
	if (counter)
		*counter += 1;
	bpf_dynptr_read(&word, sizeof(word), &d, 16, 0);
	return word == 0xffffffff ? XDP_DROP : XDP_PASS;
}

// The callback sees each user ring buffer sample as a const dynptr: it may
// read it, never release or rebuild it.
static long sum_sample(struct bpf_dynptr *sample, void *ctx)
{
	__u32 *sum = ctx;
	__u32 v;

	if (bpf_dynptr_read(&v, sizeof(v), sample, 0, 0))
		return 1;
	*sum += v;
	return 0;
}

// Drains up to the kernel's limit of samples user space produced and
// returns XDP_DROP when their sum is odd.
SEC("xdp")
int xdp_dynptr_user_ringbuf(struct xdp_md *ctx)
{
	__u32 sum = 0;

	bpf_user_ringbuf_drain(&commands, sum_sample, &sum, 0);
	return sum & 1 ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
