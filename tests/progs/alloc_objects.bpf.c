// SPDX-License-Identifier: Apache-2.0 OR MIT
// Objects a program allocates from its own BTF types (bpf_obj_new) and BPF
// lists of them in a map value, under the value's bpf_spin_lock.
// Run-time behaviour: each program returns 0 whatever its input; the list
// in `lists` ends as it began, empty.
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include "alloc_common.h"

// A plain struct of scalars.
struct pair {
	int a;
	long b;
};

// A refcounted object: bpf_refcount_acquire gives a second reference.
struct counted {
	struct bpf_refcount ref;
	long value;
};

// A map value that stashes a pair (a kptr to a struct of this program).
struct stash_value {
	struct pair __attribute__((btf_type_tag("kptr"))) *p;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, int);
	__type(value, struct stash_value);
	__uint(max_entries, 1);
} stash SEC(".maps");

// Allocates a pair, writes and reads it back, drops it.
SEC("tc")
int tc_obj_new_drop(struct __sk_buff *skb)
{
	struct pair *p = obj_new(struct pair);
	long sum;

	if (!p)
		return 0;
	p->a = 1;
	p->b = skb->len;
	sum = p->a + p->b;
	obj_drop(p);
	return sum > 0 ? 0 : 0;
}

// Stashes a new pair in the map and takes it back out: bpf_kptr_xchg
// hands ownership to the map and back; whatever was there is dropped.
SEC("tc")
int tc_kptr_stash(struct __sk_buff *skb)
{
	struct stash_value *v;
	struct pair *p, *old;
	int key = 0;

	v = bpf_map_lookup_elem(&stash, &key);
	if (!v)
		return 0;
	p = obj_new(struct pair);
	if (!p)
		return 0;
	p->a = 3;
	old = bpf_kptr_xchg(&v->p, p);
	if (old)
		obj_drop(old);
	old = bpf_kptr_xchg(&v->p, NULL);
	if (old)
		obj_drop(old);
	return 0;
}

// Two owning references to one refcounted object, each dropped.
SEC("tc")
int tc_refcount_acquire(struct __sk_buff *skb)
{
	struct counted *c = obj_new(struct counted), *d;

	if (!c)
		return 0;
	c->value = 7;
	d = refcount_acquire(c);
	obj_drop(c);
	if (d)
		obj_drop(d);
	return 0;
}

// Pushes an elem on the map's list, peeks at the front through a
// non-owning reference while the lock is held, pops it and drops it.
SEC("tc")
int tc_list_push_pop(struct __sk_buff *skb)
{
	struct list_value *v;
	struct bpf_list_node *n;
	struct elem *e;
	int key = 0;
	long seen = 0;

	v = bpf_map_lookup_elem(&lists, &key);
	if (!v)
		return 0;
	e = obj_new(struct elem);
	if (!e)
		return 0;
	e->value = 42;
	bpf_spin_lock(&v->lock);
	list_push_back(&v->head, &e->node);
	n = bpf_list_front(&v->head);
	if (n)
		seen = container_of(n, struct elem, node)->value;
	n = bpf_list_pop_front(&v->head);
	bpf_spin_unlock(&v->lock);
	if (n)
		obj_drop(container_of(n, struct elem, node));
	return seen == 42 ? 0 : 0;
}

// A tree element, ordered by key.
struct tree_elem {
	long key;
	struct bpf_rb_node rb;
};

// A global tree of tree_elems and its lock (an array map of one value).
private(T) struct bpf_spin_lock tree_lock;
private(T) struct bpf_rb_root tree contains(tree_elem, rb);

static bool elem_less(struct bpf_rb_node *a, const struct bpf_rb_node *b)
{
	struct tree_elem *x = container_of(a, struct tree_elem, rb);
	struct tree_elem *y = container_of(b, struct tree_elem, rb);

	return x->key < y->key;
}

// Adds a tnode to the global tree, finds the first one and removes it
// while the lock is held, then drops it.
SEC("tc")
int tc_rbtree_add_remove(struct __sk_buff *skb)
{
	struct bpf_rb_node *n;
	struct tree_elem *t = obj_new(struct tree_elem);

	if (!t)
		return 0;
	t->key = skb->len;
	bpf_spin_lock(&tree_lock);
	rbtree_add(&tree, &t->rb, elem_less);
	n = bpf_rbtree_first(&tree);
	if (n)
		n = bpf_rbtree_remove(&tree, n);
	bpf_spin_unlock(&tree_lock);
	if (n)
		obj_drop(container_of(n, struct tree_elem, rb));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
