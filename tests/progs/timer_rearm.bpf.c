// SPDX-License-Identifier: Apache-2.0 OR MIT
// A bpf_timer whose callback arms the timer again.  The verifier checks an
// async callback as a path of its own that starts on a fresh stack (one
// frame, no caller), so the callback's second entry (armed from inside the
// callback) is a new path too, one async level deeper.  The caller goes on
// after bpf_timer_set_callback without entering the callback: the branches
// after the call are walked once, not once more after the callback.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define CLOCK_MONOTONIC 1
#define TIMER_DELAY_NS 1000000

struct timer_value {
	struct bpf_timer timer;
	__u64 fired;
	__u64 limit;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct timer_value);
} rearm_timers SEC(".maps");

static int rearm(void *map, __u32 *key, struct timer_value *val)
{
	val->fired++;
	if (val->fired < val->limit) {
		bpf_timer_set_callback(&val->timer, rearm);
		bpf_timer_start(&val->timer, TIMER_DELAY_NS, 0);
	}
	return 0;
}

// Arms timers[0] to fire up to `limit` times (the packet's length, at most
// 4).  XDP_PASS, or XDP_DROP when the timer could not be started.
SEC("xdp")
int xdp_timer_rearm(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct timer_value *val = bpf_map_lookup_elem(&rearm_timers, &key);
	__u32 len = ctx->data_end - ctx->data;

	if (!val)
		return XDP_PASS;
	val->limit = len > 4 ? 4 : len;
	bpf_timer_init(&val->timer, &rearm_timers, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&val->timer, rearm);
	if (bpf_timer_start(&val->timer, TIMER_DELAY_NS, 0))
		return val->limit > 2 ? XDP_DROP : XDP_PASS;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
