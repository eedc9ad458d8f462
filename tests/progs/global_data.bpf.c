// SPDX-License-Identifier: Apache-2.0 OR MIT
// Global variables, which libbpf turns into one-entry array maps:
// .rodata (const volatile configuration, frozen after load so the verifier
// knows its values), .data (initialised), .bss (zeroed) and a custom
// .data.counters section.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// .rodata: a loader may patch these before load; the verifier then treats
// them as constants and prunes the branches they make dead.
const volatile __u32 cfg_max_len = 1500;
const volatile __u8 cfg_count_sizes = 1;

// .data
__u32 last_len = 0xffffffff;
char greeting[8] = "bpfvet";

// .bss
__u64 packets;
__u64 bytes;

// .data.counters: packets per size class (<=64, <=512, <=1500, larger).
__u64 size_class[4] SEC(".data.counters") = { 0, 0, 0, 0 };

// XDP_DROP for packets longer than cfg_max_len, XDP_PASS otherwise.  After
// the run, packets/bytes/last_len/size_class hold the statistics.
SEC("xdp")
int xdp_global_data(struct xdp_md *ctx)
{
	__u32 len = ctx->data_end - ctx->data;

	packets++;
	bytes += len;
	last_len = len;
	// Uses a .data byte so the section is read by code, not just loaded.
	if (greeting[0] != 'b')
		return XDP_ABORTED;
	if (cfg_count_sizes) {
		__u32 class = len <= 64 ? 0 : len <= 512 ? 1 : len <= 1500 ? 2 : 3;

		size_class[class]++;
	}
	return len > cfg_max_len ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
