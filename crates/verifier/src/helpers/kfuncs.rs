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

/// The XDP metadata kfuncs (net/core/xdp.c's xdp_metadata_kfunc_ids):
/// only a device-bound program may call them (bpf_dev_bound_kfunc_check).
pub const DEV_BOUND_KFUNCS: &[&str] = &[
    "bpf_xdp_metadata_rx_timestamp",
    "bpf_xdp_metadata_rx_hash",
    "bpf_xdp_metadata_rx_vlan_tag",
];

/// Acquire kfuncs that return an object of the program's own BTF rather
/// than a kernel struct (the kernel's exceptions to "acquire kernel
/// function does not return PTR_TO_BTF_ID"); graph.rs models them but for
/// per-CPU objects.
pub const ALLOCATED_OBJECT_KFUNCS: &[&str] = &[
    "bpf_obj_new_impl",
    "bpf_percpu_obj_new_impl",
    "bpf_refcount_acquire_impl",
];

/// The list kfuncs (is_bpf_list_api_kfunc), modelled by graph.rs.
pub const LIST_KFUNCS: &[&str] = &[
    "bpf_list_push_front_impl",
    "bpf_list_push_back_impl",
    "bpf_list_pop_front",
    "bpf_list_pop_back",
    "bpf_list_front",
    "bpf_list_back",
];

/// The rbtree kfuncs (is_bpf_rbtree_api_kfunc), modelled by graph.rs; the
/// callbacks they run hold the tree's lock (in_rbtree_lock_required_cb).
pub const RBTREE_KFUNCS: &[&str] = &[
    "bpf_rbtree_add_impl",
    "bpf_rbtree_remove",
    "bpf_rbtree_first",
    "bpf_rbtree_root",
    "bpf_rbtree_left",
    "bpf_rbtree_right",
];

/// A list or rbtree kfunc (part of is_bpf_graph_api_kfunc).
pub fn is_graph_kfunc(name: &str) -> bool {
    LIST_KFUNCS.contains(&name) || RBTREE_KFUNCS.contains(&name)
}

use bpfvet_isa::uapi::{AttachType, ProgType};
use KfuncFlags as K;

/// The registration set a kfunc belongs to, which decides the program
/// types that may call it (`register_btf_kfunc_id_set`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum KfuncSet {
    /// Every program type.
    Common,
    /// Object allocation, graph, task and cgroup kfuncs.
    Generic,
    Cpumask,
    /// `bpf_dynptr_from_skb`: skb-based program types.
    Skb,
    /// `bpf_dynptr_from_skb_meta`: tc programs.
    SkbMeta,
    /// `bpf_dynptr_from_xdp`.
    Xdp,
    SockAddr,
    TcpReqsk,
    /// Socket iterators: tracing programs attached as iterators only.
    SkIter,
    /// Kprobe and uprobe session programs only.
    ProbeSession,
    /// The TCP congestion-control kfuncs: Reno's (net/ipv4/bpf_tcp_ca.c)
    /// and those of the algorithms built into vmlinux (tcp_cubic.c,
    /// tcp_bbr.c; DCTCP is a module), all for struct_ops programs.
    TcpCa,
    /// kernel/bpf/crypto.c: creating and releasing crypto contexts.
    CryptoInit,
    /// kernel/bpf/crypto.c: encrypting and decrypting.
    Crypto,
    /// kernel/cgroup/rstat.c.
    Rstat,
    /// `bpf_sock_ops_enable_tx_tstamp`.
    SockOps,
    /// net/netfilter/nf_conntrack_bpf.c and nf_nat_bpf.c.
    Conntrack,
    /// net/xfrm/xfrm_state_bpf.c.
    XfrmState,
    /// net/bpf/test_run.c's kfuncs for the selftests.
    TestRun,
    /// fs/bpf_fs_kfuncs.c: files, paths and xattrs, for LSM programs.
    Fs,
    /// net/sched/bpf_qdisc.c: for Qdisc_ops programs of these members
    /// only (bpf_qdisc_kfunc_filter; other struct_ops types are refused).
    Qdisc(&'static [&'static str]),
}

/// Program types share kfunc registrations in groups (`enum
/// btf_kfunc_hook`): a set registered for one member of a group is
/// callable from all of them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Hook {
    Xdp,
    Tc,
    StructOps,
    /// tracing, tracepoint, perf_event, lsm
    Tracing,
    Syscall,
    /// the cgroup program types and (since 6.18) sock_ops
    Cgroup,
    SchedAct,
    SkSkb,
    SocketFilter,
    Lwt,
    Netfilter,
    Kprobe,
}

fn hook(prog_type: ProgType) -> Option<Hook> {
    use ProgType as P;
    Some(match prog_type {
        P::XDP => Hook::Xdp,
        P::SCHED_CLS => Hook::Tc,
        P::STRUCT_OPS => Hook::StructOps,
        P::TRACING | P::TRACEPOINT | P::PERF_EVENT | P::LSM => Hook::Tracing,
        P::SYSCALL => Hook::Syscall,
        P::CGROUP_SKB
        | P::CGROUP_SOCK
        | P::CGROUP_DEVICE
        | P::CGROUP_SOCK_ADDR
        | P::CGROUP_SOCKOPT
        | P::CGROUP_SYSCTL
        | P::SOCK_OPS => Hook::Cgroup,
        P::SCHED_ACT => Hook::SchedAct,
        P::SK_SKB => Hook::SkSkb,
        P::SOCKET_FILTER => Hook::SocketFilter,
        P::LWT_OUT | P::LWT_IN | P::LWT_XMIT | P::LWT_SEG6LOCAL => Hook::Lwt,
        P::NETFILTER => Hook::Netfilter,
        P::KPROBE => Hook::Kprobe,
        _ => return None,
    })
}

impl KfuncSet {
    /// The hooks the set is registered for.
    fn hooks(self) -> &'static [Hook] {
        use Hook as H;
        match self {
            KfuncSet::Common => &[],
            KfuncSet::Generic => &[
                H::Tracing,
                H::Tc,
                H::Xdp,
                H::StructOps,
                H::Syscall,
                H::Cgroup,
            ],
            KfuncSet::Cpumask => &[H::Tracing, H::StructOps, H::Syscall],
            KfuncSet::Skb => &[
                H::Tc,
                H::SchedAct,
                H::SkSkb,
                H::SocketFilter,
                H::Cgroup,
                H::Lwt,
                H::Netfilter,
                H::Tracing,
            ],
            KfuncSet::SkbMeta => &[H::Tc, H::SchedAct],
            KfuncSet::Xdp => &[H::Xdp],
            KfuncSet::SockAddr => &[H::Cgroup],
            KfuncSet::TcpReqsk => &[H::Tc],
            KfuncSet::SkIter => &[H::Tracing],
            KfuncSet::ProbeSession => &[H::Kprobe],
            KfuncSet::TcpCa => &[H::StructOps],
            KfuncSet::CryptoInit => &[H::Syscall],
            KfuncSet::Crypto => &[H::Tc, H::SchedAct, H::Xdp],
            KfuncSet::Rstat => &[H::Tracing],
            KfuncSet::SockOps => &[H::Cgroup],
            KfuncSet::Conntrack => &[H::Xdp, H::Tc],
            KfuncSet::XfrmState => &[H::Xdp],
            KfuncSet::TestRun => &[H::Tc, H::Tracing, H::Syscall],
            KfuncSet::Fs => &[H::Tracing],
            KfuncSet::Qdisc(_) => &[H::StructOps],
        }
    }

    /// Whether a program of this type (and expected attach type) may call
    /// kfuncs of the set.
    pub fn allows(self, prog_type: ProgType, attach: Option<AttachType>) -> bool {
        match self {
            KfuncSet::Common => true,
            // The set's filter admits only iterator tracing programs.
            KfuncSet::SkIter => {
                prog_type == ProgType::TRACING && attach == Some(AttachType::TRACE_ITER)
            }
            // The set's filter admits only session programs.
            KfuncSet::ProbeSession => {
                prog_type == ProgType::KPROBE
                    && matches!(
                        attach,
                        Some(AttachType::TRACE_KPROBE_SESSION | AttachType::TRACE_UPROBE_SESSION)
                    )
            }
            // The set's filter admits only LSM programs of its hook.
            KfuncSet::Fs => prog_type == ProgType::LSM,
            _ => hook(prog_type).is_some_and(|h| self.hooks().contains(&h)),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Kfunc {
    pub name: &'static str,
    pub flags: KfuncFlags,
    pub set: KfuncSet,
}

const fn kf(name: &'static str, flags: KfuncFlags, set: KfuncSet) -> Kfunc {
    Kfunc { name, flags, set }
}

use KfuncSet as S;

/// Every Qdisc_ops member a program may implement (bpf_qdisc's common
/// kfuncs).
const QDISC_ALL: &[&str] = &["enqueue", "dequeue", "init", "reset", "destroy"];

/// Kfuncs a program may call while holding a bpf_spin_lock besides the
/// GRAPH_KFUNCS (the kernel's kfunc_spin_allowed: the list and rbtree API,
/// refcount_acquire, the numbers iterator and the resilient spin lock).
/// Newer kernels than 6.18 add the arena and stream kfuncs.
pub const SPIN_LOCK_ALLOWED: &[&str] = &[
    "bpf_refcount_acquire_impl",
    "bpf_iter_num_new",
    "bpf_iter_num_next",
    "bpf_iter_num_destroy",
    "bpf_res_spin_lock",
    "bpf_res_spin_unlock",
    "bpf_res_spin_lock_irqsave",
    "bpf_res_spin_unlock_irqrestore",
];

/// Kfuncs that may move packet data (is_kfunc_pkt_changing): packet
/// pointers are invalid after them, as after bpf_xdp_adjust_head.
pub const PKT_CHANGING_KFUNCS: &[&str] = &["bpf_xdp_pull_data"];

/// The resilient lock kfuncs that take the lock: each may fail, returning
/// a negative error without the lock.
pub const RES_LOCK_ACQUIRE: &[&str] = &["bpf_res_spin_lock", "bpf_res_spin_lock_irqsave"];

/// Kfuncs whose permission under a bpf_spin_lock changed around 6.18
/// (bpfvet refuses to guess).
pub const SPIN_LOCK_UNCERTAIN: &[&str] = &[
    "bpf_stream_vprintk",
    "bpf_stream_print_stack",
    "bpf_arena_alloc_pages",
    "bpf_arena_free_pages",
    "bpf_arena_reserve_pages",
];

/// Every kfunc in the table.
pub const KFUNCS: &[Kfunc] = &[
    kf(
        "bpf_obj_new_impl",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf(
        "bpf_percpu_obj_new_impl",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf("bpf_obj_drop_impl", K::RELEASE, S::Generic),
    kf("bpf_percpu_obj_drop_impl", K::RELEASE, S::Generic),
    kf(
        "bpf_refcount_acquire_impl",
        K(K::ACQUIRE.0 | K::RET_NULL.0 | K::RCU.0),
        S::Generic,
    ),
    kf("bpf_list_push_front_impl", K::NONE, S::Generic),
    kf("bpf_list_push_back_impl", K::NONE, S::Generic),
    kf(
        "bpf_list_pop_front",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf(
        "bpf_list_pop_back",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf(
        "bpf_task_acquire",
        K(K::ACQUIRE.0 | K::RCU.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf("bpf_task_release", K::RELEASE, S::Generic),
    kf(
        "bpf_rbtree_remove",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf("bpf_rbtree_add_impl", K::NONE, S::Generic),
    kf("bpf_rbtree_first", K::RET_NULL, S::Generic),
    kf("bpf_list_front", K::RET_NULL, S::Generic),
    kf("bpf_list_back", K::RET_NULL, S::Generic),
    kf("bpf_rbtree_root", K::RET_NULL, S::Generic),
    kf("bpf_rbtree_left", K::RET_NULL, S::Generic),
    kf("bpf_rbtree_right", K::RET_NULL, S::Generic),
    kf(
        "bpf_cgroup_acquire",
        K(K::ACQUIRE.0 | K::RCU.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf("bpf_cgroup_release", K::RELEASE, S::Generic),
    kf(
        "bpf_cgroup_ancestor",
        K(K::ACQUIRE.0 | K::RCU.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf(
        "bpf_cgroup_from_id",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf("bpf_task_under_cgroup", K::RCU, S::Generic),
    kf(
        "bpf_task_get_cgroup1",
        K(K::ACQUIRE.0 | K::RCU.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf(
        "bpf_task_from_pid",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf("bpf_throw", K::NONE, S::Generic),
    // Registered with CONFIG_CRASH_DUMP only (build_option).
    kf("crash_kexec", K::DESTRUCTIVE, S::Generic),
    kf(
        "bpf_task_from_vpid",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf("bpf_send_signal_task", K::TRUSTED_ARGS, S::Generic),
    kf(
        "bpf_lookup_user_key",
        K(K::ACQUIRE.0 | K::RET_NULL.0 | K::SLEEPABLE.0),
        S::Generic,
    ),
    kf(
        "bpf_lookup_system_key",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Generic,
    ),
    kf("bpf_key_put", K::RELEASE, S::Generic),
    // Not bpf_verify_pkcs7_signature: only kernels built with
    // SYSTEM_DATA_VERIFICATION register it (its BTF is there either way).
    kf("bpf_cast_to_kern_ctx", K::NONE, S::Common),
    kf("bpf_rdonly_cast", K::NONE, S::Common),
    kf("bpf_rcu_read_lock", K::NONE, S::Common),
    kf("bpf_rcu_read_unlock", K::NONE, S::Common),
    kf("bpf_dynptr_slice", K::RET_NULL, S::Common),
    kf("bpf_dynptr_slice_rdwr", K::RET_NULL, S::Common),
    kf("bpf_iter_num_new", K::ITER_NEW, S::Common),
    kf(
        "bpf_iter_num_next",
        K(K::ITER_NEXT.0 | K::RET_NULL.0),
        S::Common,
    ),
    kf("bpf_iter_num_destroy", K::ITER_DESTROY, S::Common),
    kf(
        "bpf_iter_task_vma_new",
        K(K::ITER_NEW.0 | K::RCU.0),
        S::Common,
    ),
    kf(
        "bpf_iter_task_vma_next",
        K(K::ITER_NEXT.0 | K::RET_NULL.0),
        S::Common,
    ),
    kf("bpf_iter_task_vma_destroy", K::ITER_DESTROY, S::Common),
    kf(
        "bpf_iter_css_task_new",
        K(K::ITER_NEW.0 | K::TRUSTED_ARGS.0),
        S::Common,
    ),
    kf(
        "bpf_iter_css_task_next",
        K(K::ITER_NEXT.0 | K::RET_NULL.0),
        S::Common,
    ),
    kf("bpf_iter_css_task_destroy", K::ITER_DESTROY, S::Common),
    kf(
        "bpf_iter_css_new",
        K(K::ITER_NEW.0 | K::TRUSTED_ARGS.0 | K::RCU_PROTECTED.0),
        S::Common,
    ),
    kf(
        "bpf_iter_css_next",
        K(K::ITER_NEXT.0 | K::RET_NULL.0),
        S::Common,
    ),
    kf("bpf_iter_css_destroy", K::ITER_DESTROY, S::Common),
    kf(
        "bpf_iter_task_new",
        K(K::ITER_NEW.0 | K::TRUSTED_ARGS.0 | K::RCU_PROTECTED.0),
        S::Common,
    ),
    kf(
        "bpf_iter_task_next",
        K(K::ITER_NEXT.0 | K::RET_NULL.0),
        S::Common,
    ),
    kf("bpf_iter_task_destroy", K::ITER_DESTROY, S::Common),
    kf("bpf_dynptr_adjust", K::NONE, S::Common),
    kf("bpf_dynptr_is_null", K::NONE, S::Common),
    kf("bpf_dynptr_is_rdonly", K::NONE, S::Common),
    kf("bpf_dynptr_size", K::NONE, S::Common),
    kf("bpf_dynptr_clone", K::NONE, S::Common),
    kf("bpf_dynptr_copy", K::NONE, S::Common),
    kf("bpf_dynptr_memset", K::NONE, S::Common),
    kf("bpf_wq_init", K::NONE, S::Common),
    kf("bpf_wq_set_callback_impl", K::NONE, S::Common),
    kf("bpf_wq_start", K::NONE, S::Common),
    kf("bpf_preempt_disable", K::NONE, S::Common),
    kf("bpf_preempt_enable", K::NONE, S::Common),
    kf("bpf_iter_bits_new", K::ITER_NEW, S::Common),
    kf(
        "bpf_iter_bits_next",
        K(K::ITER_NEXT.0 | K::RET_NULL.0),
        S::Common,
    ),
    kf("bpf_iter_bits_destroy", K::ITER_DESTROY, S::Common),
    kf("bpf_copy_from_user_str", K::SLEEPABLE, S::Common),
    kf("bpf_copy_from_user_task_str", K::SLEEPABLE, S::Common),
    kf("bpf_local_irq_save", K::NONE, S::Common),
    kf("bpf_local_irq_restore", K::NONE, S::Common),
    // kernel/bpf/rqspinlock.c; taking the lock may fail (spin_lock.rs).
    kf("bpf_res_spin_lock", K::RET_NULL, S::Common),
    kf("bpf_res_spin_unlock", K::NONE, S::Common),
    kf("bpf_res_spin_lock_irqsave", K::RET_NULL, S::Common),
    kf("bpf_res_spin_unlock_irqrestore", K::NONE, S::Common),
    // String kfuncs: their pointers are `__ign` (read with a fault
    // handler), the rest scalars.
    kf("bpf_strcmp", K::NONE, S::Common),
    kf("bpf_strcasecmp", K::NONE, S::Common),
    kf("bpf_strchr", K::NONE, S::Common),
    kf("bpf_strchrnul", K::NONE, S::Common),
    kf("bpf_strnchr", K::NONE, S::Common),
    kf("bpf_strrchr", K::NONE, S::Common),
    kf("bpf_strlen", K::NONE, S::Common),
    kf("bpf_strnlen", K::NONE, S::Common),
    kf("bpf_strspn", K::NONE, S::Common),
    kf("bpf_strcspn", K::NONE, S::Common),
    kf("bpf_strstr", K::NONE, S::Common),
    kf("bpf_strnstr", K::NONE, S::Common),
    // Returns an untrusted pointer (check_kfunc_call).
    kf("bpf_get_kmem_cache", K::NONE, S::Common),
    kf(
        "bpf_iter_kmem_cache_new",
        K(K::ITER_NEW.0 | K::SLEEPABLE.0),
        S::Common,
    ),
    kf(
        "bpf_iter_kmem_cache_next",
        K(K::ITER_NEXT.0 | K::RET_NULL.0 | K::SLEEPABLE.0),
        S::Common,
    ),
    kf(
        "bpf_iter_kmem_cache_destroy",
        K(K::ITER_DESTROY.0 | K::SLEEPABLE.0),
        S::Common,
    ),
    kf(
        "bpf_iter_dmabuf_new",
        K(K::ITER_NEW.0 | K::SLEEPABLE.0),
        S::Common,
    ),
    kf(
        "bpf_iter_dmabuf_next",
        K(K::ITER_NEXT.0 | K::RET_NULL.0 | K::SLEEPABLE.0),
        S::Common,
    ),
    kf(
        "bpf_iter_dmabuf_destroy",
        K(K::ITER_DESTROY.0 | K::SLEEPABLE.0),
        S::Common,
    ),
    kf(
        "bpf_cpumask_create",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Cpumask,
    ),
    kf("bpf_cpumask_release", K::RELEASE, S::Cpumask),
    kf(
        "bpf_cpumask_acquire",
        K(K::ACQUIRE.0 | K::TRUSTED_ARGS.0),
        S::Cpumask,
    ),
    kf("bpf_cpumask_first", K::RCU, S::Cpumask),
    kf("bpf_cpumask_first_zero", K::RCU, S::Cpumask),
    kf("bpf_cpumask_first_and", K::RCU, S::Cpumask),
    kf("bpf_cpumask_set_cpu", K::RCU, S::Cpumask),
    kf("bpf_cpumask_clear_cpu", K::RCU, S::Cpumask),
    kf("bpf_cpumask_test_cpu", K::RCU, S::Cpumask),
    kf("bpf_cpumask_test_and_set_cpu", K::RCU, S::Cpumask),
    kf("bpf_cpumask_test_and_clear_cpu", K::RCU, S::Cpumask),
    kf("bpf_cpumask_setall", K::RCU, S::Cpumask),
    kf("bpf_cpumask_clear", K::RCU, S::Cpumask),
    kf("bpf_cpumask_and", K::RCU, S::Cpumask),
    kf("bpf_cpumask_or", K::RCU, S::Cpumask),
    kf("bpf_cpumask_xor", K::RCU, S::Cpumask),
    kf("bpf_cpumask_equal", K::RCU, S::Cpumask),
    kf("bpf_cpumask_intersects", K::RCU, S::Cpumask),
    kf("bpf_cpumask_subset", K::RCU, S::Cpumask),
    kf("bpf_cpumask_empty", K::RCU, S::Cpumask),
    kf("bpf_cpumask_full", K::RCU, S::Cpumask),
    kf("bpf_cpumask_copy", K::RCU, S::Cpumask),
    kf("bpf_cpumask_any_distribute", K::RCU, S::Cpumask),
    kf("bpf_cpumask_any_and_distribute", K::RCU, S::Cpumask),
    kf("bpf_cpumask_weight", K::RCU, S::Cpumask),
    kf("bpf_cpumask_populate", K::RCU, S::Cpumask),
    kf(
        "bpf_arena_alloc_pages",
        K(K::TRUSTED_ARGS.0 | K::SLEEPABLE.0),
        S::Common,
    ),
    kf(
        "bpf_arena_free_pages",
        K(K::TRUSTED_ARGS.0 | K::SLEEPABLE.0),
        S::Common,
    ),
    kf("bpf_kfree_skb", K::RELEASE, S::Qdisc(QDISC_ALL)),
    kf("bpf_skb_get_hash", K::TRUSTED_ARGS, S::Qdisc(QDISC_ALL)),
    kf("bpf_qdisc_skb_drop", K::RELEASE, S::Qdisc(&["enqueue"])),
    kf(
        "bpf_qdisc_watchdog_schedule",
        K::TRUSTED_ARGS,
        S::Qdisc(&["enqueue", "dequeue"]),
    ),
    kf(
        "bpf_qdisc_bstats_update",
        K::TRUSTED_ARGS,
        S::Qdisc(&["dequeue"]),
    ),
    // Called by the prologue and epilogue bpf_qdisc adds, never by a
    // program.
    kf("bpf_qdisc_init_prologue", K::TRUSTED_ARGS, S::Qdisc(&[])),
    kf(
        "bpf_qdisc_reset_destroy_epilogue",
        K::TRUSTED_ARGS,
        S::Qdisc(&[]),
    ),
    kf("tcp_reno_ssthresh", K::NONE, S::TcpCa),
    kf("tcp_reno_cong_avoid", K::NONE, S::TcpCa),
    kf("tcp_reno_undo_cwnd", K::NONE, S::TcpCa),
    kf("tcp_slow_start", K::NONE, S::TcpCa),
    kf("tcp_cong_avoid_ai", K::NONE, S::TcpCa),
    kf("cubictcp_init", K::NONE, S::TcpCa),
    kf("cubictcp_recalc_ssthresh", K::NONE, S::TcpCa),
    kf("cubictcp_cong_avoid", K::NONE, S::TcpCa),
    kf("cubictcp_state", K::NONE, S::TcpCa),
    kf("cubictcp_cwnd_event", K::NONE, S::TcpCa),
    kf("cubictcp_acked", K::NONE, S::TcpCa),
    kf("bbr_init", K::NONE, S::TcpCa),
    kf("bbr_main", K::NONE, S::TcpCa),
    kf("bbr_sndbuf_expand", K::NONE, S::TcpCa),
    kf("bbr_undo_cwnd", K::NONE, S::TcpCa),
    kf("bbr_cwnd_event", K::NONE, S::TcpCa),
    kf("bbr_ssthresh", K::NONE, S::TcpCa),
    kf("bbr_min_tso_segs", K::NONE, S::TcpCa),
    kf("bbr_set_state", K::NONE, S::TcpCa),
    kf(
        "bpf_arena_reserve_pages",
        K(K::TRUSTED_ARGS.0 | K::SLEEPABLE.0),
        S::Common,
    ),
    kf("bpf_dynptr_from_skb", K::TRUSTED_ARGS, S::Skb),
    kf("bpf_dynptr_from_skb_meta", K::TRUSTED_ARGS, S::SkbMeta),
    kf("bpf_dynptr_from_xdp", K::NONE, S::Xdp),
    kf("bpf_xdp_pull_data", K::NONE, S::Xdp),
    kf("bpf_sock_addr_set_sun_path", K::NONE, S::SockAddr),
    kf("bpf_sk_assign_tcp_reqsk", K::TRUSTED_ARGS, S::TcpReqsk),
    kf("bpf_sock_destroy", K::TRUSTED_ARGS, S::SkIter),
    // kernel/trace/bpf_trace.c
    kf("bpf_session_is_return", K::NONE, S::ProbeSession),
    kf("bpf_session_cookie", K::NONE, S::ProbeSession),
    kf("bpf_map_sum_elem_count", K::TRUSTED_ARGS, S::Common),
    // Common kfuncs new in 6.18 (helpers.c's common_btf_ids): dynptr
    // probe/copy kfuncs (the source pointer is `__ign`), the trap clang
    // emits for uninitialised variables, cgroup xattrs, BPF streams and
    // task work.
    kf("bpf_probe_read_user_dynptr", K::NONE, S::Common),
    kf("bpf_probe_read_kernel_dynptr", K::NONE, S::Common),
    kf("bpf_probe_read_user_str_dynptr", K::NONE, S::Common),
    kf("bpf_probe_read_kernel_str_dynptr", K::NONE, S::Common),
    kf("bpf_copy_from_user_dynptr", K::SLEEPABLE, S::Common),
    kf("bpf_copy_from_user_str_dynptr", K::SLEEPABLE, S::Common),
    kf(
        "bpf_copy_from_user_task_dynptr",
        K(K::SLEEPABLE.0 | K::TRUSTED_ARGS.0),
        S::Common,
    ),
    kf(
        "bpf_copy_from_user_task_str_dynptr",
        K(K::SLEEPABLE.0 | K::TRUSTED_ARGS.0),
        S::Common,
    ),
    kf("__bpf_trap", K::NONE, S::Common),
    kf("bpf_cgroup_read_xattr", K::RCU, S::Common),
    kf(
        "bpf_get_task_exe_file",
        K(K::ACQUIRE.0 | K::TRUSTED_ARGS.0 | K::RET_NULL.0),
        S::Fs,
    ),
    kf("bpf_put_file", K::RELEASE, S::Fs),
    kf("bpf_path_d_path", K::TRUSTED_ARGS, S::Fs),
    kf(
        "bpf_get_dentry_xattr",
        K(K::SLEEPABLE.0 | K::TRUSTED_ARGS.0),
        S::Fs,
    ),
    kf(
        "bpf_get_file_xattr",
        K(K::SLEEPABLE.0 | K::TRUSTED_ARGS.0),
        S::Fs,
    ),
    kf(
        "bpf_set_dentry_xattr",
        K(K::SLEEPABLE.0 | K::TRUSTED_ARGS.0),
        S::Fs,
    ),
    kf(
        "bpf_remove_dentry_xattr",
        K(K::SLEEPABLE.0 | K::TRUSTED_ARGS.0),
        S::Fs,
    ),
    kf("bpf_stream_vprintk_impl", K::TRUSTED_ARGS, S::Common),
    kf(
        "bpf_task_work_schedule_signal_impl",
        K::TRUSTED_ARGS,
        S::Common,
    ),
    kf(
        "bpf_task_work_schedule_resume_impl",
        K::TRUSTED_ARGS,
        S::Common,
    ),
    // kernel/bpf/crypto.c
    kf(
        "bpf_crypto_ctx_create",
        K(K::ACQUIRE.0 | K::RET_NULL.0 | K::SLEEPABLE.0),
        S::CryptoInit,
    ),
    kf("bpf_crypto_ctx_release", K::RELEASE, S::CryptoInit),
    kf(
        "bpf_crypto_ctx_acquire",
        K(K::ACQUIRE.0 | K::RCU.0 | K::RET_NULL.0),
        S::CryptoInit,
    ),
    kf("bpf_crypto_decrypt", K::RCU, S::Crypto),
    kf("bpf_crypto_encrypt", K::RCU, S::Crypto),
    // kernel/cgroup/rstat.c
    kf("css_rstat_updated", K::NONE, S::Rstat),
    kf("css_rstat_flush", K::SLEEPABLE, S::Rstat),
    kf("bpf_sock_ops_enable_tx_tstamp", K::TRUSTED_ARGS, S::SockOps),
    // net/netfilter/nf_conntrack_bpf.c, nf_nat_bpf.c
    kf(
        "bpf_xdp_ct_alloc",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Conntrack,
    ),
    kf(
        "bpf_xdp_ct_lookup",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Conntrack,
    ),
    kf(
        "bpf_skb_ct_alloc",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Conntrack,
    ),
    kf(
        "bpf_skb_ct_lookup",
        K(K::ACQUIRE.0 | K::RET_NULL.0),
        S::Conntrack,
    ),
    kf(
        "bpf_ct_insert_entry",
        K(K::ACQUIRE.0 | K::RET_NULL.0 | K::RELEASE.0),
        S::Conntrack,
    ),
    kf("bpf_ct_release", K::RELEASE, S::Conntrack),
    kf("bpf_ct_set_timeout", K::TRUSTED_ARGS, S::Conntrack),
    kf("bpf_ct_change_timeout", K::TRUSTED_ARGS, S::Conntrack),
    kf("bpf_ct_set_status", K::TRUSTED_ARGS, S::Conntrack),
    kf("bpf_ct_change_status", K::TRUSTED_ARGS, S::Conntrack),
    kf("bpf_ct_set_nat_info", K::TRUSTED_ARGS, S::Conntrack),
    // net/xfrm/xfrm_state_bpf.c
    kf(
        "bpf_xdp_get_xfrm_state",
        K(K::RET_NULL.0 | K::ACQUIRE.0),
        S::XfrmState,
    ),
    kf("bpf_xdp_xfrm_state_release", K::RELEASE, S::XfrmState),
    // net/bpf/test_run.c
    kf("bpf_kfunc_call_test_release", K::RELEASE, S::TestRun),
    kf("bpf_kfunc_call_memb_release", K::RELEASE, S::TestRun),
];

/// Kernel structs with a registered kptr destructor
/// (register_btf_id_dtor_kfuncs): the only ones a map value may hold as
/// referenced kptrs.
pub const KPTR_DTOR_TYPES: &[&str] = &[
    "task_struct",
    "cgroup",
    "bpf_cpumask",
    "bpf_crypto_ctx",
    "prog_test_ref_kfunc",
    "prog_test_member",
];

/// Kernel structs freed after an RCU grace period (rcu_protected_types):
/// a referenced kptr to one loads as an RCU pointer inside an RCU section.
pub const RCU_PROTECTED_KPTR_TYPES: &[&str] = &[
    "prog_test_ref_kfunc",
    "cgroup",
    "bpf_cpumask",
    "task_struct",
    "bpf_crypto_ctx",
];

/// The build option a kernel registers kfunc `k` under, if any: the host
/// lacks CONFIG_CRASH_DUMP and CONFIG_NET_SCH_BPF, the 6.18 guest has both.
pub fn build_option(k: &Kfunc) -> Option<&'static str> {
    match (k.name, k.set) {
        ("crash_kexec", _) => Some("CONFIG_CRASH_DUMP"),
        (_, KfuncSet::Qdisc(_)) => Some("CONFIG_NET_SCH_BPF"),
        _ => None,
    }
}

pub fn kfunc(name: &str) -> Option<&'static Kfunc> {
    KFUNCS.iter().find(|k| k.name == name)
}

/// The flags of kfunc `name`, None if the table does not know it.
pub fn kfunc_flags(name: &str) -> Option<KfuncFlags> {
    kfunc(name).map(|k| k.flags)
}

/// Whether a program of `prog_type` (with expected attach type `attach`)
/// may call kfunc `name`; the kernel's refusal reads `calling kernel
/// function <name> is not allowed`.
pub fn kfunc_allowed(name: &str, prog_type: ProgType, attach: Option<AttachType>) -> Option<bool> {
    kfunc(name).map(|k| k.set.allows(prog_type, attach))
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
        assert_eq!(
            kfunc_allowed("bpf_cpumask_create", ProgType::XDP, None),
            Some(false)
        );
        assert_eq!(
            kfunc_allowed("bpf_rcu_read_lock", ProgType::XDP, None),
            Some(true)
        );
        let fentry = Some(AttachType::TRACE_FENTRY);
        let iter = Some(AttachType::TRACE_ITER);
        assert_eq!(
            kfunc_allowed("bpf_sock_destroy", ProgType::TRACING, fentry),
            Some(false)
        );
        assert_eq!(
            kfunc_allowed("bpf_sock_destroy", ProgType::TRACING, iter),
            Some(true)
        );
    }

    #[test]
    fn names_are_unique() {
        for (i, k) in KFUNCS.iter().enumerate() {
            assert!(
                KFUNCS[i + 1..].iter().all(|m| m.name != k.name),
                "{}",
                k.name
            );
        }
    }
}
