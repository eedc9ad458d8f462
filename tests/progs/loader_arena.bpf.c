// SPDX-License-Identifier: Apache-2.0 OR MIT
// A BPF arena: its user address given with __ulong(map_extra, ...) and a
// global in the arena (section .addr_space.1). Debian's libbpf 1.1 cannot
// open it; bpfvet loads it as newer libbpf does and verifies both programs.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// Debian's headers predate arenas: the UAPI number and libbpf's macro.
#define BPF_MAP_TYPE_ARENA 33
#define arena_concat_(a, b) a##b
#define arena_concat(a, b) arena_concat_(a, b)
#ifndef __ulong
#define __ulong(name, val) enum { arena_concat(__unique_value, __COUNTER__) = val } name
#endif
#define __arena __attribute__((address_space(1)))

struct {
	__uint(type, BPF_MAP_TYPE_ARENA);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); // pages
	__ulong(map_extra, 1ull << 44); // user address of the arena
} arena SEC(".maps");

__u64 __arena arena_counter;

SEC("syscall")
int syscall_bumps_arena_global(void *ctx)
{
	arena_counter++;
	return 0;
}

SEC("syscall")
int syscall_without_arena(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
