// SPDX-License-Identifier: Apache-2.0 OR MIT
// Subprograms called back by helpers, each verified in its own frame:
// bpf_loop, bpf_for_each_map_elem and a bpf_timer callback (the timer lives
// in a map value).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define CLOCK_MONOTONIC 1
#define TIMER_DELAY_NS 1000000

struct loop_ctx {
	unsigned char *bytes;
	__u32 sum;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} weights SEC(".maps");

struct timer_value {
	struct bpf_timer timer;
	__u64 fired;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct timer_value);
} timers SEC(".maps");

// Packet bytes copied to the stack, so the callback works on plain memory.
#define COPY_LEN 16

static int add_byte(__u32 index, struct loop_ctx *lc)
{
	if (index >= COPY_LEN)
		return 1; // stop
	lc->sum += lc->bytes[index];
	return 0;
}

// Sums the first 16 bytes of the packet with bpf_loop: XDP_PASS when the
// sum is even, XDP_DROP when odd, XDP_ABORTED for shorter packets.
SEC("xdp")
int xdp_bpf_loop(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	unsigned char copy[COPY_LEN];
	struct loop_ctx lc = { .bytes = copy };

	if (data + COPY_LEN > data_end)
		return XDP_ABORTED;
	__builtin_memcpy(copy, data, COPY_LEN);
	bpf_loop(COPY_LEN, add_byte, &lc, 0);
	return lc.sum & 1 ? XDP_DROP : XDP_PASS;
}

struct sum_ctx {
	__u64 total;
};

// Nothing in the callback's state may count iterations: the verifier
// checks callbacks like loop bodies, and a precise counter would never let
// its states converge.
static __u64 sum_weights(void *map, __u32 *key, __u64 *value, struct sum_ctx *sc)
{
	sc->total += *value * *key;
	return 0; // continue with the next element
}

// Adds packet length into weights[len % 8], then sums key-weighted values
// (value * key) of all eight elements with bpf_for_each_map_elem.  XDP_PASS
// if the weighted total is even, XDP_DROP if odd (on fresh maps: odd
// packet lengths drop).
SEC("xdp")
int xdp_for_each(struct xdp_md *ctx)
{
	__u32 len = ctx->data_end - ctx->data;
	__u32 key = len % 8;
	struct sum_ctx sc = {};
	__u64 *w;
	long visited;

	w = bpf_map_lookup_elem(&weights, &key);
	if (w)
		*w += len;
	visited = bpf_for_each_map_elem(&weights, sum_weights, &sc, 0);
	if (visited != 8)
		return XDP_ABORTED;
	return sc.total & 1 ? XDP_DROP : XDP_PASS;
}

static int timer_fired(void *map, __u32 *key, struct timer_value *val)
{
	val->fired++;
	return 0;
}

// Arms a one-shot 1 ms timer in timers[0] (initialising it on first use).
// Always XDP_PASS; timers[0].fired counts expirations.
SEC("xdp")
int xdp_arm_timer(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct timer_value *val = bpf_map_lookup_elem(&timers, &key);

	if (!val)
		return XDP_PASS;
	// -EBUSY on every run after the first: the timer is already set up.
	bpf_timer_init(&val->timer, &timers, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&val->timer, timer_fired);
	bpf_timer_start(&val->timer, TIMER_DELAY_NS, 0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
