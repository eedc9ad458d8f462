// SPDX-License-Identifier: Apache-2.0 OR MIT
// bpf_rbtree_add's less() callback runs while the tree is being changed:
// it may read the two nodes but not remove one from the tree.
// Kernel: `bpf_rbtree_remove not allowed in rbtree cb`
#define BPF_NO_KFUNC_PROTOTYPES
#define NO_LISTS
#include "vmlinux.h"
#include "alloc_common.h"

// A tree element, ordered by key.
struct tree_elem {
	long key;
	struct bpf_rb_node rb;
};

// A global tree of tree_elems and its lock (an array map of one value).
private(T) struct bpf_spin_lock tree_lock;
private(T) struct bpf_rb_root tree contains(tree_elem, rb);

static bool less_removing(struct bpf_rb_node *a, const struct bpf_rb_node *b)
{
	bpf_rbtree_remove(&tree, a);
	return false;
}

SEC("tc")
int tc_rbtree_cb_remove(struct __sk_buff *skb)
{
	struct tree_elem *t = obj_new(struct tree_elem);

	if (!t)
		return 0;
	bpf_spin_lock(&tree_lock);
	rbtree_add(&tree, &t->rb, less_removing);
	bpf_spin_unlock(&tree_lock);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
