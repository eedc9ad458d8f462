// SPDX-License-Identifier: Apache-2.0 OR MIT
// REJECTED by the verifier: a bpf_timer callback must return 0; this one
// can return 1.  The verifier checks R0 where the callback's own path ends
// (it runs as a path of its own, not in the caller's frame).
// Kernel's last log line (Linux 6.18, root):
//   At async callback return the register R0 has smin=1 smax=1 should have been in [0, 0]
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define CLOCK_MONOTONIC 1

struct timer_value {
	struct bpf_timer timer;
	__u64 fired;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct timer_value);
} bad_timers SEC(".maps");

static int fired_once(void *map, __u32 *key, struct timer_value *val)
{
	if (val->fired++)
		return 0;
	return 1; // should be 0
}

SEC("xdp")
int xdp_timer_callback_return(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct timer_value *val = bpf_map_lookup_elem(&bad_timers, &key);

	if (!val)
		return XDP_PASS;
	bpf_timer_init(&val->timer, &bad_timers, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&val->timer, fired_once);
	bpf_timer_start(&val->timer, 1000, 0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
