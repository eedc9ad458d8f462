// SPDX-License-Identifier: Apache-2.0 OR MIT
// Newer loop mechanisms: the open-coded numeric iterator (kfuncs
// bpf_iter_num_new / _next / _destroy, called by BTF id) and may_goto, a
// jump the kernel takes once a per-program loop budget is spent.  With
// either, the verifier may prune a loop's path against the checkpoint at
// its own head once the states converge (xdp_iter_num, xdp_may_goto_sum)
// instead of walking every iteration, as it still must when the counter is
// precise (xdp_may_goto).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// The iterator's state lives on the stack; its layout is the kernel's
// business, only its size and alignment are ABI.
struct bpf_iter_num {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

#define SLOTS 16

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} histogram SEC(".maps");

// Adds histogram[i] * i for i in 0..15 with the numeric iterator.
// XDP_PASS when the weighted sum is even, XDP_DROP when odd.
SEC("xdp")
int xdp_iter_num(struct xdp_md *ctx)
{
	struct bpf_iter_num it;
	__u64 sum = 0;
	int *i;

	bpf_iter_num_new(&it, 0, SLOTS);
	while ((i = bpf_iter_num_next(&it))) {
		__u32 key = *i;
		__u64 *v = bpf_map_lookup_elem(&histogram, &key);

		if (v)
			sum += *v * key;
	}
	bpf_iter_num_destroy(&it);
	return sum & 1 ? XDP_DROP : XDP_PASS;
}

// A loop bounded by may_goto: the kernel breaks out when its budget is
// spent (an iteration count in the interpreter; on the x86-64 JIT of the
// reference host, a time limit, so the exit point is not deterministic).  Counts the leading bytes of the
// packet that equal the first one, up to 32; XDP_PASS if all 32 are equal,
// XDP_DROP otherwise, XDP_ABORTED for packets shorter than 32 bytes.
#define can_loop                                                          \
	({                                                                \
		__label__ l_break, l_continue;                            \
		int ret = 1;                                              \
		asm volatile goto("may_goto %l[l_break]" :: ::l_break); \
		goto l_continue;                                          \
l_break:                                                                  \
		ret = 0;                                                  \
l_continue:                                                               \
		ret;                                                      \
	})

SEC("xdp")
int xdp_may_goto(struct xdp_md *ctx)
{
	unsigned char *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 n = 1;

	if ((void *)(data + 32) > data_end)
		return XDP_ABORTED;
	while (n < 32 && can_loop) {
		if (data[n & 31] != data[0])
			break;
		n++;
	}
	return n == 32 ? XDP_PASS : XDP_DROP;
}

// Sums 0 + 1 + ... + (n - 1) for n = the packet's first 32-bit word (host
// byte order), stopping early if the may_goto budget runs out (for n in the
// billions it does, at a point that varies from run to run), and returns
// the sum's low bit: XDP_DROP (1) or XDP_ABORTED (0); XDP_PASS for packets
// shorter than 4 bytes.  Neither i nor sum is ever compared with a
// constant, so the loop state converges after a few iterations; without
// may_goto the same loop is refused as too large.
SEC("xdp")
int xdp_may_goto_sum(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 n, i = 0, sum = 0;

	if (data + sizeof(__u32) > data_end)
		return XDP_PASS;
	n = *(__u32 *)data;
	while (i < n && can_loop) {
		sum += i;
		// Stops clang from replacing the loop by its closed form.
		barrier_var(sum);
		i++;
	}
	return sum & 1;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
