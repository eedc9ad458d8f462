// .kconfig externs of each kind libbpf supports.
// Rebuild: clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
//          -c kconfig.bpf.c -o kconfig.bpf.o
#include <stdbool.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

extern int CONFIG_HZ __kconfig;
extern bool CONFIG_BPF_SYSCALL __kconfig;
extern enum libbpf_tristate CONFIG_BPF_JIT __kconfig;
extern unsigned int LINUX_KERNEL_VERSION __kconfig;
extern char CONFIG_BPFVET_NOT_SET __kconfig __weak;

__u64 out[5];

SEC("raw_tp")
int read_kconfig(void *ctx)
{
	out[0] = CONFIG_HZ;
	out[1] = CONFIG_BPF_SYSCALL;
	out[2] = CONFIG_BPF_JIT;
	out[3] = LINUX_KERNEL_VERSION;
	out[4] = CONFIG_BPFVET_NOT_SET;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
