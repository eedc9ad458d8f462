// SPDX-License-Identifier: Apache-2.0 OR MIT
// A kptr to a struct of the program's own BTF holds objects of exactly
// that struct: bpf_kptr_xchg of an object of another struct is refused.
// Kernel: `invalid kptr access, R2 type=ptr_elem expected=ptr_pair`
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include "alloc_common.h"

struct pair {
	int a;
	long b;
};

struct pair_stash {
	struct pair __attribute__((btf_type_tag("kptr"))) *p;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, int);
	__type(value, struct pair_stash);
	__uint(max_entries, 1);
} pairs SEC(".maps");

SEC("tc")
int tc_stash_wrong_type(struct __sk_buff *skb)
{
	struct pair_stash *v;
	struct elem *e, *old;
	int key = 0;

	// Names struct pair in a relocation, so that the object's BTF defines
	// it (a pointee known only by name would make the kptr invalid).
	if (skb->len == 0)
		return bpf_core_type_id_local(struct pair) == 0;
	v = bpf_map_lookup_elem(&pairs, &key);
	if (!v)
		return 0;
	e = obj_new(struct elem);
	if (!e)
		return 0;
	old = bpf_kptr_xchg(&v->p, e);
	if (old)
		obj_drop(old);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
