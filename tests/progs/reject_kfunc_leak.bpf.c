// SPDX-License-Identifier: Apache-2.0 OR MIT
// A kfunc-acquired object never released: bpf_cpumask_create hands out a
// reference that must go back through bpf_cpumask_release before exit.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

extern struct bpf_cpumask *bpf_cpumask_create(void) __ksym;
extern void bpf_cpumask_set_cpu(u32 cpu, struct bpf_cpumask *cpumask) __ksym;

// Never releases the mask: refused at exit.
SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_cpumask_leak, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	struct bpf_cpumask *mask = bpf_cpumask_create();

	if (!mask)
		return 0;
	bpf_cpumask_set_cpu(0, mask);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
