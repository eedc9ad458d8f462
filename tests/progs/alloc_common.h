// SPDX-License-Identifier: Apache-2.0 OR MIT
// Declarations shared by the allocated-object programs: the kfuncs of
// objects a program allocates from its own BTF types and of BPF lists
// (kernel/bpf/helpers.c), and the macros that call them the way
// bpf_experimental.h does.
#ifndef ALLOC_COMMON_H
#define ALLOC_COMMON_H

// Include after vmlinux.h (with BPF_NO_KFUNC_PROTOTYPES defined first: the
// declarations below are this header's).
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

extern void *bpf_obj_new_impl(__u64 local_type_id, void *meta) __ksym;
extern void bpf_obj_drop_impl(void *kptr, void *meta) __ksym;
extern void *bpf_refcount_acquire_impl(void *kptr, void *meta) __ksym;
extern int bpf_list_push_front_impl(struct bpf_list_head *head,
				    struct bpf_list_node *node, void *meta,
				    __u64 off) __ksym;
extern int bpf_list_push_back_impl(struct bpf_list_head *head,
				   struct bpf_list_node *node, void *meta,
				   __u64 off) __ksym;
extern struct bpf_list_node *bpf_list_pop_front(struct bpf_list_head *head) __ksym;
extern struct bpf_list_node *bpf_list_front(struct bpf_list_head *head) __ksym;
extern int bpf_rbtree_add_impl(struct bpf_rb_root *root, struct bpf_rb_node *node,
			       bool (less)(struct bpf_rb_node *a,
					   const struct bpf_rb_node *b),
			       void *meta, __u64 off) __ksym;
extern struct bpf_rb_node *bpf_rbtree_first(struct bpf_rb_root *root) __ksym;
extern struct bpf_rb_node *bpf_rbtree_remove(struct bpf_rb_root *root,
					     struct bpf_rb_node *node) __ksym;

#define obj_new(type) ((type *)bpf_obj_new_impl(bpf_core_type_id_local(type), NULL))
#define obj_drop(p) bpf_obj_drop_impl(p, NULL)
#define refcount_acquire(p) ((typeof(p))bpf_refcount_acquire_impl(p, NULL))
#define list_push_back(head, node) bpf_list_push_back_impl(head, node, NULL, 0)
#define rbtree_add(root, node, less) bpf_rbtree_add_impl(root, node, less, NULL, 0)
#define contains(name, node) __attribute__((btf_decl_tag("contains:" #name ":" #node)))

// Programs without lists define NO_LISTS: a list head's __contains must
// name a struct the object's BTF has, or the kernel refuses the BTF.
#ifndef NO_LISTS
// A list element: a value and the node that links it.
struct elem {
	long value;
	struct bpf_list_node node;
};

// A map value holding a list of elems and the lock that protects it.
struct list_value {
	struct bpf_spin_lock lock;
	struct bpf_list_head head contains(elem, node);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, int);
	__type(value, struct list_value);
	__uint(max_entries, 1);
} lists SEC(".maps");
#endif

#define private(name) SEC(".bss." #name) __hidden __attribute__((aligned(8)))

#endif
