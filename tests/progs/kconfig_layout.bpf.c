// SPDX-License-Identifier: GPL-2.0
/* Two kconfig externs, the smaller declared first: libbpf lays them out by
 * alignment (the int first) and then sorts the .kconfig DATASEC by offset,
 * which the kernel's BTF check requires. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern _Bool CONFIG_BPF_SYSCALL __kconfig __weak;
extern unsigned int LINUX_KERNEL_VERSION __kconfig;

SEC("socket")
int kconfig_two_externs(struct __sk_buff *skb)
{
	return CONFIG_BPF_SYSCALL + (LINUX_KERNEL_VERSION & 1);
}

char LICENSE[] SEC("license") = "GPL";
