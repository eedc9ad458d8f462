//! Flags of the kfuncs BPF programs commonly call (`BTF_ID_FLAGS` sets of
//! kernel/bpf/helpers.c, cpumask.c, arena.c, the iterator files and
//! net/core/filter.c). Names and flags only: argument and return types come
//! from vmlinux BTF at verification time.

/// `KF_*` flags of a kfunc.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct KfuncFlags(pub u32);

impl KfuncFlags {
    pub const NONE: KfuncFlags = KfuncFlags(0);
    /// Returns a new reference the program must release.
    pub const ACQUIRE: KfuncFlags = KfuncFlags(1 << 0);
    /// Releases the reference passed to it.
    pub const RELEASE: KfuncFlags = KfuncFlags(1 << 1);
    /// The returned pointer may be NULL.
    pub const RET_NULL: KfuncFlags = KfuncFlags(1 << 2);
    /// Pointer arguments must be trusted.
    pub const TRUSTED_ARGS: KfuncFlags = KfuncFlags(1 << 4);
    /// Only from sleepable programs.
    pub const SLEEPABLE: KfuncFlags = KfuncFlags(1 << 5);
    pub const DESTRUCTIVE: KfuncFlags = KfuncFlags(1 << 6);
    /// Pointer arguments may be RCU-protected or trusted.
    pub const RCU: KfuncFlags = KfuncFlags(1 << 7);
    pub const ITER_NEW: KfuncFlags = KfuncFlags(1 << 8);
    pub const ITER_NEXT: KfuncFlags = KfuncFlags(1 << 9);
    pub const ITER_DESTROY: KfuncFlags = KfuncFlags(1 << 10);
    /// Must be called inside an RCU read-side section.
    pub const RCU_PROTECTED: KfuncFlags = KfuncFlags(1 << 11);

    pub const fn contains(self, other: KfuncFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

use KfuncFlags as K;

/// (name, flags) of every kfunc in the table.
pub const KFUNCS: &[(&str, KfuncFlags)] = &[
    ("bpf_obj_new_impl", K(K::ACQUIRE.0 | K::RET_NULL.0)),
    ("bpf_percpu_obj_new_impl", K(K::ACQUIRE.0 | K::RET_NULL.0)),
    ("bpf_obj_drop_impl", K::RELEASE),
    ("bpf_percpu_obj_drop_impl", K::RELEASE),
    (
        "bpf_refcount_acquire_impl",
        K(K::ACQUIRE.0 | K::RET_NULL.0 | K::RCU.0),
    ),
    ("bpf_list_push_front_impl", K::NONE),
    ("bpf_list_push_back_impl", K::NONE),
    ("bpf_list_pop_front", K(K::ACQUIRE.0 | K::RET_NULL.0)),
    ("bpf_list_pop_back", K(K::ACQUIRE.0 | K::RET_NULL.0)),
    (
        "bpf_task_acquire",
        K(K::ACQUIRE.0 | K::RCU.0 | K::RET_NULL.0),
    ),
    ("bpf_task_release", K::RELEASE),
    ("bpf_rbtree_remove", K(K::ACQUIRE.0 | K::RET_NULL.0)),
    ("bpf_rbtree_add_impl", K::NONE),
    ("bpf_rbtree_first", K::RET_NULL),
    (
        "bpf_cgroup_acquire",
        K(K::ACQUIRE.0 | K::RCU.0 | K::RET_NULL.0),
    ),
    ("bpf_cgroup_release", K::RELEASE),
    (
        "bpf_cgroup_ancestor",
        K(K::ACQUIRE.0 | K::RCU.0 | K::RET_NULL.0),
    ),
    ("bpf_cgroup_from_id", K(K::ACQUIRE.0 | K::RET_NULL.0)),
    ("bpf_task_under_cgroup", K::RCU),
    (
        "bpf_task_get_cgroup1",
        K(K::ACQUIRE.0 | K::RCU.0 | K::RET_NULL.0),
    ),
    ("bpf_task_from_pid", K(K::ACQUIRE.0 | K::RET_NULL.0)),
    ("bpf_throw", K::NONE),
    ("bpf_cast_to_kern_ctx", K::NONE),
    ("bpf_rdonly_cast", K::NONE),
    ("bpf_rcu_read_lock", K::NONE),
    ("bpf_rcu_read_unlock", K::NONE),
    ("bpf_dynptr_slice", K::RET_NULL),
    ("bpf_dynptr_slice_rdwr", K::RET_NULL),
    ("bpf_iter_num_new", K::ITER_NEW),
    ("bpf_iter_num_next", K(K::ITER_NEXT.0 | K::RET_NULL.0)),
    ("bpf_iter_num_destroy", K::ITER_DESTROY),
    ("bpf_iter_task_vma_new", K(K::ITER_NEW.0 | K::RCU.0)),
    ("bpf_iter_task_vma_next", K(K::ITER_NEXT.0 | K::RET_NULL.0)),
    ("bpf_iter_task_vma_destroy", K::ITER_DESTROY),
    (
        "bpf_iter_css_task_new",
        K(K::ITER_NEW.0 | K::TRUSTED_ARGS.0),
    ),
    ("bpf_iter_css_task_next", K(K::ITER_NEXT.0 | K::RET_NULL.0)),
    ("bpf_iter_css_task_destroy", K::ITER_DESTROY),
    (
        "bpf_iter_css_new",
        K(K::ITER_NEW.0 | K::TRUSTED_ARGS.0 | K::RCU_PROTECTED.0),
    ),
    ("bpf_iter_css_next", K(K::ITER_NEXT.0 | K::RET_NULL.0)),
    ("bpf_iter_css_destroy", K::ITER_DESTROY),
    (
        "bpf_iter_task_new",
        K(K::ITER_NEW.0 | K::TRUSTED_ARGS.0 | K::RCU_PROTECTED.0),
    ),
    ("bpf_iter_task_next", K(K::ITER_NEXT.0 | K::RET_NULL.0)),
    ("bpf_iter_task_destroy", K::ITER_DESTROY),
    ("bpf_dynptr_adjust", K::NONE),
    ("bpf_dynptr_is_null", K::NONE),
    ("bpf_dynptr_is_rdonly", K::NONE),
    ("bpf_dynptr_size", K::NONE),
    ("bpf_dynptr_clone", K::NONE),
    ("bpf_wq_init", K::NONE),
    ("bpf_wq_set_callback_impl", K::NONE),
    ("bpf_wq_start", K::NONE),
    ("bpf_preempt_disable", K::NONE),
    ("bpf_preempt_enable", K::NONE),
    ("bpf_iter_bits_new", K::ITER_NEW),
    ("bpf_iter_bits_next", K(K::ITER_NEXT.0 | K::RET_NULL.0)),
    ("bpf_iter_bits_destroy", K::ITER_DESTROY),
    ("bpf_copy_from_user_str", K::SLEEPABLE),
    ("bpf_cpumask_create", K(K::ACQUIRE.0 | K::RET_NULL.0)),
    ("bpf_cpumask_release", K::RELEASE),
    ("bpf_cpumask_acquire", K(K::ACQUIRE.0 | K::TRUSTED_ARGS.0)),
    ("bpf_cpumask_first", K::RCU),
    ("bpf_cpumask_first_zero", K::RCU),
    ("bpf_cpumask_first_and", K::RCU),
    ("bpf_cpumask_set_cpu", K::RCU),
    ("bpf_cpumask_clear_cpu", K::RCU),
    ("bpf_cpumask_test_cpu", K::RCU),
    ("bpf_cpumask_test_and_set_cpu", K::RCU),
    ("bpf_cpumask_test_and_clear_cpu", K::RCU),
    ("bpf_cpumask_setall", K::RCU),
    ("bpf_cpumask_clear", K::RCU),
    ("bpf_cpumask_and", K::RCU),
    ("bpf_cpumask_or", K::RCU),
    ("bpf_cpumask_xor", K::RCU),
    ("bpf_cpumask_equal", K::RCU),
    ("bpf_cpumask_intersects", K::RCU),
    ("bpf_cpumask_subset", K::RCU),
    ("bpf_cpumask_empty", K::RCU),
    ("bpf_cpumask_full", K::RCU),
    ("bpf_cpumask_copy", K::RCU),
    ("bpf_cpumask_any_distribute", K::RCU),
    ("bpf_cpumask_any_and_distribute", K::RCU),
    ("bpf_cpumask_weight", K::RCU),
    (
        "bpf_arena_alloc_pages",
        K(K::TRUSTED_ARGS.0 | K::SLEEPABLE.0),
    ),
    (
        "bpf_arena_free_pages",
        K(K::TRUSTED_ARGS.0 | K::SLEEPABLE.0),
    ),
    ("bpf_map_sum_elem_count", K::TRUSTED_ARGS),
    ("bpf_dynptr_from_skb", K::TRUSTED_ARGS),
    ("bpf_dynptr_from_xdp", K::NONE),
    ("bpf_sock_addr_set_sun_path", K::NONE),
    ("bpf_sk_assign_tcp_reqsk", K::TRUSTED_ARGS),
    ("bpf_sock_destroy", K::TRUSTED_ARGS),
];

/// The flags of kfunc `name`, None if the table does not know it.
pub fn kfunc_flags(name: &str) -> Option<KfuncFlags> {
    KFUNCS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_release_pairs() {
        let new = kfunc_flags("bpf_obj_new_impl").unwrap();
        assert!(new.contains(K::ACQUIRE) && new.contains(K::RET_NULL));
        assert!(kfunc_flags("bpf_obj_drop_impl")
            .unwrap()
            .contains(K::RELEASE));
        assert!(kfunc_flags("bpf_iter_num_next")
            .unwrap()
            .contains(K::ITER_NEXT));
        assert!(kfunc_flags("bpf_arena_alloc_pages")
            .unwrap()
            .contains(K::SLEEPABLE));
        assert_eq!(kfunc_flags("bpf_rcu_read_lock"), Some(K::NONE));
        assert_eq!(kfunc_flags("no_such_kfunc"), None);
    }

    #[test]
    fn names_are_unique() {
        for (i, (n, _)) in KFUNCS.iter().enumerate() {
            assert!(KFUNCS[i + 1..].iter().all(|(m, _)| m != n), "{n}");
        }
    }
}
