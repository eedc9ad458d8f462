// SPDX-License-Identifier: Apache-2.0 OR MIT
// Two program types that BPF_PROG_TEST_RUN runs on a caller-supplied
// context rather than a packet: SEC("syscall") (sleepable; its context is
// a plain buffer, read and written by the program) and a raw tracepoint
// (its context is the tracepoint's u64 arguments).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// The syscall program's context, as the caller lays it out in ctx_in.
struct sum_args {
	__u64 a;
	__u64 b;
	__u64 sum;  // written by the program
	__u32 calls; // written by the program
};

__u32 syscall_calls;

// Writes a + b into ctx->sum and the running call count into ctx->calls;
// returns 0, or 1 when a + b overflows.
SEC("syscall")
int syscall_sum(struct sum_args *ctx)
{
	__u64 s = ctx->a + ctx->b;

	ctx->sum = s;
	ctx->calls = ++syscall_calls;
	return s < ctx->a;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 512);
	__type(key, __u64);
	__type(value, __u64);
} syscall_ids SEC(".maps");

// raw_syscalls:sys_enter has two arguments: (struct pt_regs *regs, long id).
// Counts calls per id; returns 0.
SEC("raw_tp/sys_enter")
int rawtp_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = ctx->args[1];
	__u64 one = 1, *n;

	n = bpf_map_lookup_elem(&syscall_ids, &id);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&syscall_ids, &id, &one, BPF_NOEXIST);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
