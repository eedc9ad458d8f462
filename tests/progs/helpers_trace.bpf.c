// SPDX-License-Identifier: Apache-2.0 OR MIT
// Tracing helpers: stack ids and raw stacks, current task identity,
// formatted output (bpf_snprintf, bpf_printk) and perf event output.
// Needs no kernel types: the kprobe only passes its context on.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define STACK_DEPTH 16
#define COMM_LEN 16

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1024);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");

struct sample {
	__u64 pid_tgid;
	__u64 uid_gid;
	__s64 kernel_stack_id;
	__s64 user_stack_bytes;
	char comm[COMM_LEN];
	char line[48];
	__u64 user_stack[STACK_DEPTH];
};

// A per-CPU scratch value: the sample is too big for the 512-byte stack.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample);
} scratch SEC(".maps");

SEC("kprobe/do_nanosleep")
int kprobe_sample(void *ctx)
{
	__u32 zero = 0;
	struct sample *s = bpf_map_lookup_elem(&scratch, &zero);
	__u64 args[2];

	if (!s)
		return 0;
	s->pid_tgid = bpf_get_current_pid_tgid();
	s->uid_gid = bpf_get_current_uid_gid();
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	s->kernel_stack_id = bpf_get_stackid(ctx, &stacks, 0);
	s->user_stack_bytes = bpf_get_stack(ctx, s->user_stack, sizeof(s->user_stack),
					    BPF_F_USER_STACK);

	args[0] = s->pid_tgid >> 32;
	args[1] = (__u32)s->uid_gid;
	bpf_snprintf(s->line, sizeof(s->line), "tgid %d uid %d", args, sizeof(args));
	bpf_printk("kprobe_sample: %s", s->line);
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, s, sizeof(*s));
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
