// SPDX-License-Identifier: Apache-2.0 OR MIT
// A task iterator: its ctx->task argument may be NULL (the end of the
// walk); after the program checks it, loads through it are allowed.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("iter/task")
int iter_task_pids(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	__u32 pid;

	if (!task)
		return 0;
	pid = task->pid;
	bpf_seq_write(seq, &pid, sizeof(pid));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
