// SPDX-License-Identifier: Apache-2.0 OR MIT
// Kfuncs that hand out kernel objects (acquire / release), on BTF
// tracepoints: a cpumask created, filled and released; the current task
// taken and put back; and an iterator over the task's memory areas.
// (reject_kfunc_leak.bpf.c forgets a release.)
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

extern struct bpf_cpumask *bpf_cpumask_create(void) __ksym;
extern void bpf_cpumask_release(struct bpf_cpumask *cpumask) __ksym;
extern void bpf_cpumask_set_cpu(u32 cpu, struct bpf_cpumask *cpumask) __ksym;
extern u32 bpf_cpumask_weight(const struct cpumask *cpumask) __ksym;
extern struct task_struct *bpf_task_acquire(struct task_struct *p) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it,
				 struct task_struct *task, u64 addr) __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym;

u64 weight_sum;
u64 vma_count;
u32 last_pid;

// Counts the CPUs in a fresh mask holding CPU 0 and the current CPU.
SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_cpumask, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	struct bpf_cpumask *mask = bpf_cpumask_create();

	if (!mask)
		return 0;
	bpf_cpumask_set_cpu(0, mask);
	bpf_cpumask_set_cpu(bpf_get_smp_processor_id(), mask);
	weight_sum += bpf_cpumask_weight((const struct cpumask *)mask);
	bpf_cpumask_release(mask);
	return 0;
}

// Takes a reference on the current task and puts it back.
SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_task_ref, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	struct task_struct *t = bpf_task_acquire(bpf_get_current_task_btf());

	if (!t)
		return 0;
	last_pid = t->pid;
	bpf_task_release(t);
	return 0;
}

// Counts the current task's memory areas with an open-coded iterator.
SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_vma_iter, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	u64 n = 0;

	bpf_iter_task_vma_new(&it, bpf_get_current_task_btf(), 0);
	while ((vma = bpf_iter_task_vma_next(&it)))
		n++;
	bpf_iter_task_vma_destroy(&it);
	vma_count += n;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
