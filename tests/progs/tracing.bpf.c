// SPDX-License-Identifier: Apache-2.0 OR MIT
// Tracing programs that need kernel types (vmlinux.h, CO-RE relocations):
// a kprobe and a kretprobe on do_sys_openat2, a tracepoint on
// raw_syscalls/sys_enter and a BTF tracepoint (tp_btf) on sched_switch.
// They load on any kernel; attaching them is not needed for verification.
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define NAME_LEN 64

struct open_event {
	__u32 tgid;
	__s32 dfd;
	char name[NAME_LEN];
};

// The last file name each process opened (by tgid).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct open_event);
} last_open SEC(".maps");

// Failed opens per errno (index = -ret, clamped).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} open_errors SEC(".maps");

// System calls per syscall number.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u64);
} syscall_count SEC(".maps");

// Context switches away from each CPU's previous task, per prev state.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} switches SEC(".maps");

SEC("kprobe/do_sys_openat2")
int BPF_KPROBE(kprobe_openat2, int dfd, const char *filename)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct open_event ev = {};

	// A CO-RE read: the field offset is relocated against the running
	// kernel's BTF at load time.
	ev.tgid = BPF_CORE_READ(task, tgid);
	ev.dfd = dfd;
	if (bpf_probe_read_user_str(ev.name, sizeof(ev.name), filename) < 0)
		return 0;
	bpf_map_update_elem(&last_open, &ev.tgid, &ev, BPF_ANY);
	return 0;
}

SEC("kretprobe/do_sys_openat2")
int BPF_KRETPROBE(kretprobe_openat2, long ret)
{
	__u32 key;
	__u64 *n;

	if (ret >= 0)
		return 0;
	key = -ret > 255 ? 255 : -ret;
	n = bpf_map_lookup_elem(&open_errors, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_enter")
int tp_sys_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = ctx->id;
	__u64 one = 1, *n;

	n = bpf_map_lookup_elem(&syscall_count, &id);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&syscall_count, &id, &one, BPF_NOEXIST);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	// tp_btf arguments are typed kernel pointers: direct loads, no
	// probe_read needed.
	__u32 key = prev->__state == 0 ? 0 : 1;
	__u64 *n = bpf_map_lookup_elem(&switches, &key);

	if (n)
		*n += 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
