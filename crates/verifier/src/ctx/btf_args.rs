//! Context access of BTF-typed programs (tp_btf, fentry/fexit/fmod_ret,
//! LSM, iterators): the ctx is an array of u64 arguments typed by the attach
//! target's function prototype (`btf_ctx_access`).

use super::{Access, CtxError};
use bpfvet_isa::uapi::{AttachType as At, AttachType, ProgType};
use bpfvet_object::btf::{Btf, BtfType, Kind};

/// MAX_BPF_FUNC_ARGS u64 slots.
const MAX_ARGS: u32 = 12;

/// How an iterator target types one of its context arguments
/// (`bpf_iter_reg.ctx_arg_info`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IterArg {
    /// PTR_TO_BTF_ID_OR_NULL, possibly trusted.
    BtfIdOrNull { trusted: bool },
    /// PTR_TO_BUF | PTR_MAYBE_NULL, possibly read-only.
    BufOrNull { rdonly: bool },
}

/// Context arguments of the iterator targets, by member of
/// `struct bpf_iter__<target>`.
const ITER_ARGS: &[(&str, &[(&str, IterArg)])] = {
    use IterArg::*;
    &[
        ("task", &[("task", BtfIdOrNull { trusted: true })]),
        (
            "task_file",
            &[
                ("task", BtfIdOrNull { trusted: false }),
                ("file", BtfIdOrNull { trusted: false }),
            ],
        ),
        (
            "task_vma",
            &[
                ("task", BtfIdOrNull { trusted: false }),
                ("vma", BtfIdOrNull { trusted: false }),
            ],
        ),
        ("bpf_map", &[("map", BtfIdOrNull { trusted: true })]),
        (
            "bpf_map_elem",
            &[
                ("key", BufOrNull { rdonly: true }),
                ("value", BufOrNull { rdonly: false }),
            ],
        ),
        ("bpf_prog", &[("prog", BtfIdOrNull { trusted: false })]),
        ("bpf_link", &[("link", BtfIdOrNull { trusted: false })]),
        ("cgroup", &[("cgroup", BtfIdOrNull { trusted: true })]),
        ("kmem_cache", &[("s", BtfIdOrNull { trusted: true })]),
        ("dmabuf", &[("dmabuf", BtfIdOrNull { trusted: false })]),
        ("tcp", &[("sk_common", BtfIdOrNull { trusted: true })]),
        ("udp", &[("udp_sk", BtfIdOrNull { trusted: true })]),
        ("unix", &[("unix_sk", BtfIdOrNull { trusted: false })]),
        ("netlink", &[("sk", BtfIdOrNull { trusted: false })]),
        ("ipv6_route", &[("rt", BtfIdOrNull { trusted: false })]),
        ("ksym", &[("ksym", BtfIdOrNull { trusted: false })]),
        (
            "sockmap",
            &[
                ("key", BufOrNull { rdonly: true }),
                ("sk", BtfIdOrNull { trusted: false }),
            ],
        ),
        (
            "bpf_sk_storage_map",
            &[
                ("sk", BtfIdOrNull { trusted: false }),
                ("value", BufOrNull { rdonly: false }),
            ],
        ),
    ]
};

/// Raw tracepoints whose pointer arguments may be NULL (`raw_tp_null_args`):
/// (name, NULL-able args). 6.18 no longer turns the maybe-ERR_PTR arguments
/// of 6.12's table into scalars, so only the NULL-able ones are kept.
const RAW_TP_NULL_ARGS: &[(&str, &[u32])] = &[
    ("sched_pi_setprio", &[1]),
    ("sched_process_wait", &[0]),
    ("sched_stick_numa", &[2]),
    ("sched_swap_numa", &[2]),
    ("afs_make_fs_call", &[1]),
    ("afs_make_fs_calli", &[1]),
    ("afs_make_fs_call1", &[1]),
    ("afs_make_fs_call2", &[1]),
    ("afs_protocol_error", &[0]),
    ("afs_flock_ev", &[1]),
    ("cachefiles_lookup", &[0]),
    ("cachefiles_unlink", &[0]),
    ("cachefiles_rename", &[0]),
    ("cachefiles_prep_read", &[0]),
    ("cachefiles_mark_active", &[0]),
    ("cachefiles_mark_failed", &[0]),
    ("cachefiles_mark_inactive", &[0]),
    ("cachefiles_vfs_error", &[0]),
    ("cachefiles_io_error", &[0]),
    ("cachefiles_ondemand_open", &[0]),
    ("cachefiles_ondemand_copen", &[0]),
    ("cachefiles_ondemand_close", &[0]),
    ("cachefiles_ondemand_read", &[0]),
    ("cachefiles_ondemand_cread", &[0]),
    ("cachefiles_ondemand_fd_write", &[0]),
    ("cachefiles_ondemand_fd_release", &[0]),
    ("ext4_mballoc_discard", &[1]),
    ("ext4_mballoc_free", &[1]),
    ("fib_table_lookup", &[2]),
    ("posix_lock_inode", &[1]),
    ("fcntl_setlk", &[1]),
    ("locks_remove_posix", &[1]),
    ("flock_lock_inode", &[1]),
    ("break_lease_noblock", &[1]),
    ("break_lease_block", &[1]),
    ("break_lease_unblock", &[1]),
    ("generic_delete_lease", &[1]),
    ("time_out_leases", &[1]),
    ("host1x_cdma_push_gather", &[4]),
    ("mm_khugepaged_scan_pmd", &[1]),
    ("mm_collapse_huge_page_isolate", &[0]),
    ("mm_khugepaged_scan_file", &[1]),
    ("mm_khugepaged_collapse_file", &[1]),
    ("mm_page_alloc", &[0]),
    ("mm_page_pcpu_drain", &[0]),
    ("mm_page_alloc_zone_locked", &[0]),
    ("netfs_failure", &[1]),
    ("device_pm_callback_start", &[1]),
    ("qdisc_dequeue", &[3]),
    ("rxrpc_recvdata", &[0]),
    ("rxrpc_resend", &[1]),
    ("kfree_skb", &[3]),
    ("xs_stream_read_data", &[0]),
    ("xprt_reserve_cong", &[1]),
    ("xprt_release_cong", &[1]),
    ("xprt_get_cong", &[1]),
    ("xprt_put_cong", &[1]),
    ("tcp_send_reset", &[0, 1]),
    ("tegra_dma_tx_status", &[2]),
    ("tmigr_update_events", &[0]),
    ("writeback_dirty_folio", &[1]),
    ("folio_wait_writeback", &[1]),
];

/// The attach target of a BTF-typed program, resolved in the target BTF.
#[derive(Clone, Debug)]
pub struct BtfCtxTarget<'a> {
    pub btf: &'a Btf,
    /// The FUNC_PROTO typing the ctx; None gives MAX_BPF_FUNC_ARGS untyped
    /// u64 arguments.
    pub func_proto: Option<u32>,
    /// The name the kernel's messages use (the function, or the tracepoint
    /// without `btf_trace_`).
    pub name: String,
    /// tp_btf: the prototype's first `void *__data` argument is hidden.
    pub btf_trace: bool,
    pub prog_type: ProgType,
    pub expected_attach_type: AttachType,
    /// Iterator context arguments: (byte offset, how typed).
    pub iter_args: Vec<(u32, IterArg)>,
    /// Arguments that may be NULL although the prototype does not say so
    /// (a struct_ops stub's `__nullable` parameters), bit `i` for
    /// argument `i`.
    pub nullable_args: u32,
}

impl<'a> BtfCtxTarget<'a> {
    /// Finds the target `name` (a tracepoint for tp_btf, an iterator
    /// target for iter, a kernel function or LSM hook otherwise) in `btf`.
    pub fn resolve(
        btf: &'a Btf,
        prog_type: ProgType,
        expected_attach_type: AttachType,
        name: &str,
    ) -> Result<Self, String> {
        let mut target = BtfCtxTarget {
            btf,
            func_proto: None,
            name: name.to_string(),
            btf_trace: false,
            prog_type,
            expected_attach_type,
            iter_args: Vec::new(),
            nullable_args: 0,
        };
        let proto_of = |id: u32| -> Option<u32> {
            let t = btf.type_by_id(id)?;
            (t.kind == Kind::FuncProto).then_some(id)
        };
        match (prog_type, expected_attach_type) {
            (ProgType::TRACING, At::TRACE_RAW_TP) => {
                let typedef = format!("btf_trace_{name}");
                let id = btf
                    .find_by_name_kind(&typedef, Kind::Typedef)
                    .ok_or_else(|| format!("attach target {typedef} not found"))?;
                let ptr = btf.type_by_id(id).map(|t| t.size_or_type).unwrap_or(0);
                let pointee = btf.type_by_id(ptr).map(|t| t.size_or_type).unwrap_or(0);
                target.func_proto = Some(
                    proto_of(pointee)
                        .ok_or_else(|| format!("{typedef} is not a pointer to a FUNC_PROTO"))?,
                );
                target.btf_trace = true;
            }
            (ProgType::TRACING, At::TRACE_ITER) => {
                let func = format!("bpf_iter_{name}");
                target.func_proto = Some(func_proto_of(btf, &func)?);
                target.name = func;
                // Iterator ctx members are wrapped in unions; the prototype's
                // parameters carry the names and the slots.
                let proto = btf.type_by_id(target.func_proto.unwrap_or(0));
                let args = ITER_ARGS
                    .iter()
                    .find(|(t, _)| *t == name)
                    .map_or(&[][..], |e| e.1);
                let mut slot = 0u64;
                for p in proto.map(|t| btf.params(t)).unwrap_or(&[]) {
                    let pname = btf.str_at(p.name_off).unwrap_or("");
                    if let Some((_, how)) = args.iter().find(|(m, _)| *m == pname) {
                        target.iter_args.push((slot as u32, *how));
                    }
                    slot += slot_size(btf, p.type_id);
                }
            }
            (ProgType::LSM, _) => {
                let func = format!("bpf_lsm_{name}");
                target.func_proto = Some(func_proto_of(btf, &func)?);
                target.name = func;
            }
            _ => target.func_proto = Some(func_proto_of(btf, name)?),
        }
        Ok(target)
    }
}

fn func_proto_of(btf: &Btf, func: &str) -> Result<u32, String> {
    let id = btf
        .find_by_name_kind(func, Kind::Func)
        .ok_or_else(|| format!("attach target {func} not found"))?;
    let proto = btf.type_by_id(id).map(|t| t.size_or_type).unwrap_or(0);
    match btf.type_by_id(proto) {
        Some(t) if t.kind == Kind::FuncProto => Ok(proto),
        _ => Err(format!("{func} has no FUNC_PROTO")),
    }
}

/// What a load from a BTF-typed ctx yields.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BtfArgValue {
    Scalar,
    /// PTR_TO_BTF_ID of struct `btf_id` in the target BTF.
    BtfId {
        btf_id: u32,
        trusted: bool,
        maybe_null: bool,
        user: bool,
        percpu: bool,
    },
    /// PTR_TO_BUF | PTR_MAYBE_NULL (iterator key/value buffers).
    BufOrNull {
        rdonly: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BtfCtxAccess {
    pub value: BtfArgValue,
    /// Lines the kernel logs on the way (e.g. "func 'x' arg1 has btf_id ...").
    pub log: Vec<String>,
}

/// A refused access: the kernel's explanatory lines, then `error`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BtfCtxRefusal {
    pub log: Vec<String>,
    pub error: CtxError,
}

fn skip_mods(btf: &Btf, mut id: u32) -> (u32, Option<&BtfType>) {
    for _ in 0..32 {
        match btf.type_by_id(id) {
            Some(t) if t.kind.is_modifier() => id = t.size_or_type,
            other => return (id, other),
        }
    }
    (id, None)
}

fn slot_size(btf: &Btf, type_id: u32) -> u64 {
    match skip_mods(btf, type_id).1 {
        Some(t) if t.kind == Kind::Ptr => 8,
        Some(t) => (t.size_or_type as u64).div_ceil(8) * 8,
        None => 8,
    }
}

/// `get_ctx_arg_idx`: which argument (of the full prototype) holds `off`,
/// counting arguments wider than 8 bytes by their slots.
fn arg_index(btf: &Btf, proto: &BtfType, off: u64) -> u32 {
    let params = btf.params(proto);
    let mut end = 0;
    for (i, p) in params.iter().enumerate() {
        end += slot_size(btf, p.type_id);
        if off < end {
            return i as u32;
        }
    }
    end += slot_size(btf, proto.size_or_type);
    if off < end {
        params.len() as u32
    } else {
        params.len() as u32 + 1
    }
}

fn is_small_int(t: &BtfType) -> bool {
    t.kind == Kind::Int && t.size_or_type <= 8
}

/// `btf_ctx_access` after the generic bounds check: the kernel's verdict on
/// reading `size` bytes at `off` of a BTF-typed ctx.
pub fn btf_ctx_access(
    target: &BtfCtxTarget,
    off: i32,
    size: u32,
    access: Access,
) -> Result<BtfCtxAccess, BtfCtxRefusal> {
    let mut log = Vec::new();
    let refuse = |log: Vec<String>| BtfCtxRefusal {
        log,
        error: CtxError::Invalid { off, size },
    };
    let slots = 8 * MAX_ARGS as i32;
    // Tracing and struct_ops programs pass bpf_tracing_ctx_access first
    // (read-only, aligned); LSM programs go to btf_ctx_access directly.
    let generic = target.prog_type != ProgType::LSM
        && (access == Access::Write || off % size.max(1) as i32 != 0);
    if off < 0 || off >= slots || generic {
        return Err(refuse(log));
    }
    let btf = target.btf;
    let tname = &target.name;
    if off % 8 != 0 {
        log.push(format!("func '{tname}' offset {off} is not multiple of 8"));
        return Err(refuse(log));
    }
    let Some(proto) = target.func_proto.and_then(|id| btf.type_by_id(id)) else {
        return Ok(BtfCtxAccess {
            value: BtfArgValue::Scalar,
            log,
        });
    };
    // The index counts the full prototype (a tp_btf's hidden first argument
    // included) while the list it indexes drops that argument.
    let arg = arg_index(btf, proto, off as u64);
    let mut params = btf.params(proto);
    if target.btf_trace {
        params = params.get(1..).unwrap_or(&[]);
    }
    let nr_args = params.len() as u32;
    if arg > nr_args {
        log.push(format!(
            "func '{tname}' doesn't have {}-th argument",
            arg + 1
        ));
        return Err(refuse(log));
    }
    let eat = target.expected_attach_type;
    let type_id = if arg == nr_args {
        match eat {
            At::LSM_MAC | At::LSM_CGROUP | At::TRACE_FEXIT => proto.size_or_type,
            At::MODIFY_RETURN => {
                let (_, t) = skip_mods(btf, proto.size_or_type);
                match t {
                    Some(t) if is_small_int(t) => proto.size_or_type,
                    t => {
                        let kind = t.map_or("UNKN", |t| t.kind.name());
                        log.push(format!("ret type {kind} not allowed for fmod_ret"));
                        return Err(refuse(log));
                    }
                }
            }
            _ => {
                log.push(format!(
                    "func '{tname}' doesn't have {}-th argument",
                    arg + 1
                ));
                return Err(refuse(log));
            }
        }
    } else {
        params[arg as usize].type_id
    };
    let (_, t) = skip_mods(btf, type_id);
    let Some(t) = t else {
        return Err(refuse(log));
    };
    if is_small_int(t) || t.kind.is_enum() || t.kind == Kind::Struct {
        return Ok(BtfCtxAccess {
            value: BtfArgValue::Scalar,
            log,
        });
    }
    if t.kind != Kind::Ptr {
        log.push(format!(
            "func '{tname}' arg{arg} '{}' has type {}. Only pointer access is allowed",
            btf.name(t),
            t.kind.name()
        ));
        return Err(refuse(log));
    }
    if size != 8 {
        log.push(format!("func '{tname}' size {size} must be 8"));
        return Err(refuse(log));
    }
    let iter_arg = target
        .iter_args
        .iter()
        .find(|(o, _)| *o as i32 == off)
        .map(|(_, a)| *a);
    if let Some(IterArg::BufOrNull { rdonly }) = iter_arg {
        return Ok(BtfCtxAccess {
            value: BtfArgValue::BufOrNull { rdonly },
            log,
        });
    }
    let pointee = t.size_or_type;
    let pointee_is_int = skip_mods(btf, pointee)
        .1
        .is_some_and(|p| p.kind == Kind::Int);
    if pointee == 0 || pointee_is_int {
        return Ok(BtfCtxAccess {
            value: BtfArgValue::Scalar,
            log,
        });
    }
    let (mut trusted, mut maybe_null) = match iter_arg {
        Some(IterArg::BtfIdOrNull { trusted }) => (trusted, true),
        _ => (args_trusted(target), false),
    };
    if iter_arg.is_none() {
        let param_name = params
            .get(arg as usize)
            .and_then(|p| btf.str_at(p.name_off))
            .unwrap_or("");
        if param_name.ends_with("__nullable")
            || (arg < 32 && target.nullable_args & (1 << arg) != 0)
        {
            maybe_null = true;
        }
        if eat == At::TRACE_RAW_TP {
            if let Some((_, nulls)) = RAW_TP_NULL_ARGS.iter().find(|(n, _)| n == tname) {
                maybe_null |= nulls.contains(&arg);
            }
        }
    } else {
        trusted = trusted && args_trusted(target);
    }
    let mut btf_id = pointee;
    let first = btf.type_by_id(pointee);
    let (user, percpu) = match first {
        Some(tt) if tt.kind == Kind::TypeTag => {
            let tag = btf.name(tt);
            (tag == "user", tag == "percpu")
        }
        _ => (false, false),
    };
    let mut cur = first;
    for _ in 0..32 {
        match cur {
            Some(c) if c.kind.is_modifier() => {
                btf_id = c.size_or_type;
                cur = btf.type_by_id(btf_id);
            }
            _ => break,
        }
    }
    let Some(s) = cur.filter(|c| c.kind.is_composite()) else {
        let kind = cur.map_or("UNKN", |c| c.kind.name());
        log.push(format!(
            "func '{tname}' arg{arg} type {kind} is not a struct"
        ));
        return Err(refuse(log));
    };
    log.push(format!(
        "func '{tname}' arg{arg} has btf_id {btf_id} type {} '{}'",
        s.kind.name(),
        btf.name(s)
    ));
    Ok(BtfCtxAccess {
        value: BtfArgValue::BtfId {
            btf_id,
            trusted,
            maybe_null,
            user,
            percpu,
        },
        log,
    })
}

/// `prog_args_trusted`: pointer arguments of tp_btf, iterators and
/// struct_ops are trusted, and those of LSM hooks but a few.
fn args_trusted(target: &BtfCtxTarget) -> bool {
    match target.prog_type {
        ProgType::TRACING => matches!(
            target.expected_attach_type,
            At::TRACE_RAW_TP | At::TRACE_ITER
        ),
        ProgType::STRUCT_OPS => true,
        ProgType::LSM => crate::lsm::hook_args_trusted(&target.name),
        _ => false,
    }
}
