// CO-RE relocation kinds against the running kernel's BTF. Each result is
// stored to its own slot of `out`, so each shows up as one `r = imm`.
// Rebuild: clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
//          -c core_kinds.bpf.c -o core_kinds.bpf.o
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct task_struct {
	int tgid;
	char comm[16];
} __attribute__((preserve_access_index));

// A flavour: matched to task_struct by its name before "___".
struct task_struct___old {
	int tgid;
	long field_removed_long_ago;
} __attribute__((preserve_access_index));

struct sk_buff {
	__u8 fclone:2;
} __attribute__((preserve_access_index));

struct bpfvet_no_such_type {
	int x;
};

enum bpf_map_type___local {
	BPF_MAP_TYPE_ARENA___local = 1,
};

__u64 out[9];

SEC("raw_tp")
int core_kinds(void *ctx)
{
	out[0] = bpf_core_field_offset(struct task_struct, tgid);
	out[1] = bpf_core_field_size(struct task_struct, comm);
	out[2] = bpf_core_field_exists(struct task_struct___old, tgid);
	out[3] = bpf_core_field_exists(struct task_struct___old, field_removed_long_ago);
	out[4] = bpf_core_type_exists(struct bpfvet_no_such_type);
	out[5] = bpf_core_type_size(struct task_struct);
	out[6] = bpf_core_enum_value(enum bpf_map_type___local, BPF_MAP_TYPE_ARENA___local);
	out[7] = __builtin_preserve_field_info(((struct sk_buff *)0)->fclone, BPF_FIELD_RSHIFT_U64);
	out[8] = __builtin_preserve_field_info(((struct sk_buff *)0)->fclone, BPF_FIELD_LSHIFT_U64);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
