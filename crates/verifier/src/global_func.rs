//! Global (non-static) functions: verified once on their own, with
//! arguments typed from their BTF signature, and treated as returning an
//! unknown scalar at every call site (the kernel's do_check_subprogs and
//! btf_prepare_func_args / btf_check_subprog_call).

use crate::check_mem::Access;
use crate::error::VResult;
use crate::explore::Env;
use crate::regs::{flag, Reg, RegType};
use crate::state::{Frame, State};
use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_object::btf::{Btf, Kind};

/// Each program type's context struct, as programs name it (the kernel's
/// include/linux/bpf_types.h); types whose context is `void *` or `u64`
/// have none.
const PROG_CTX_STRUCT: &[(ProgType, &str)] = &[
    (ProgType::SOCKET_FILTER, "__sk_buff"),
    (ProgType::SCHED_CLS, "__sk_buff"),
    (ProgType::SCHED_ACT, "__sk_buff"),
    (ProgType::CGROUP_SKB, "__sk_buff"),
    (ProgType::LWT_IN, "__sk_buff"),
    (ProgType::LWT_OUT, "__sk_buff"),
    (ProgType::LWT_XMIT, "__sk_buff"),
    (ProgType::LWT_SEG6LOCAL, "__sk_buff"),
    (ProgType::SK_SKB, "__sk_buff"),
    (ProgType::FLOW_DISSECTOR, "__sk_buff"),
    (ProgType::XDP, "xdp_md"),
    (ProgType::CGROUP_SOCK, "bpf_sock"),
    (ProgType::CGROUP_SOCK_ADDR, "bpf_sock_addr"),
    (ProgType::SOCK_OPS, "bpf_sock_ops"),
    (ProgType::SK_MSG, "sk_msg_md"),
    // bpf_user_pt_regs_t, struct pt_regs on x86-64.
    (ProgType::KPROBE, "pt_regs"),
    (ProgType::PERF_EVENT, "bpf_perf_event_data"),
    (ProgType::RAW_TRACEPOINT, "bpf_raw_tracepoint_args"),
    (ProgType::RAW_TRACEPOINT_WRITABLE, "bpf_raw_tracepoint_args"),
    (ProgType::CGROUP_DEVICE, "bpf_cgroup_dev_ctx"),
    (ProgType::CGROUP_SYSCTL, "bpf_sysctl"),
    (ProgType::CGROUP_SOCKOPT, "bpf_sockopt"),
    (ProgType::SK_REUSEPORT, "sk_reuseport_md"),
    (ProgType::SK_LOOKUP, "bpf_sk_lookup"),
    (ProgType::NETFILTER, "bpf_nf_ctx"),
];

/// Kernel structs of which a context struct is the program's view.
const CTX_PROJECTIONS: &[(&str, &str)] = &[("__sk_buff", "sk_buff"), ("xdp_md", "xdp_buff")];

/// Whether a pointer to struct `name` is the context of `prog_type`
/// (btf_is_prog_ctx_type): only that type's own struct, or the kernel
/// struct it projects.
pub(crate) fn is_prog_ctx_struct(prog_type: ProgType, name: &str) -> bool {
    PROG_CTX_STRUCT
        .iter()
        .filter(|(t, _)| *t == prog_type)
        .any(|(_, ctx)| *ctx == name || CTX_PROJECTIONS.contains(&(*ctx, name)))
}

/// Whether `name` is any program type's context struct.
fn is_any_ctx_struct(name: &str) -> bool {
    PROG_CTX_STRUCT.iter().any(|(_, ctx)| *ctx == name)
}

/// What a global function's argument is, from its BTF type.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ArgKind {
    Scalar,
    Ctx,
    /// Memory of this many bytes, possibly NULL.
    Mem(u32),
    /// `struct bpf_dynptr *`: an initialised dynptr, read-only in the callee.
    Dynptr,
    /// Memory of this many bytes the caller promises is not NULL
    /// (`arg:nonnull`).
    NonNullMem(u32),
    /// `arg:trusted`: a trusted pointer to the vmlinux struct with this
    /// id, NULL allowed with `arg:nullable`.
    TrustedBtf {
        id: u32,
        nullable: bool,
    },
    /// `arg:untrusted` on a pointer to a struct: an untrusted pointer to
    /// the vmlinux struct with this id; the caller may pass anything.
    UntrustedBtf(u32),
    /// `arg:untrusted` on a pointer to void or a primitive type:
    /// read-only untrusted memory; the caller may pass anything.
    UntrustedMem,
    /// `arg:arena`: the caller passes an arena pointer or a number; the
    /// callee gets a number (it casts it into the arena itself).
    Arena,
    /// The tags do not fit the argument (btf_prepare_func_args' message).
    TagError(String),
    /// An `arg:` tag (or combination) bpfvet does not model: the call is
    /// refused, except that a `trusted` argument without `nullable` never
    /// takes a scalar (the kernel rejects the call whether or not the
    /// signature is valid).
    UnmodelledTag {
        trusted_nonnull: bool,
    },
    Unsupported,
}

impl Env<'_> {
    pub fn is_global(&self, subprog: usize) -> bool {
        self.prog
            .func_info
            .get(subprog)
            .is_some_and(|f| f.linkage == 1)
    }

    /// The name of subprogram `subprog` in the object's BTF.
    pub fn subprog_name(&self, subprog: usize) -> String {
        match (self.obj.btf.as_ref(), self.prog.func_info.get(subprog)) {
            (Some(btf), Some(fi)) => btf.name_of(fi.type_id).to_string(),
            _ => String::new(),
        }
    }

    /// Argument kinds of global subprogram `subprog` (up to 5).
    pub fn global_args(&self, subprog: usize) -> Vec<ArgKind> {
        let Some(btf) = self.obj.btf.as_ref() else {
            return Vec::new();
        };
        let Some(fi) = self.prog.func_info.get(subprog) else {
            return Vec::new();
        };
        let Some(func) = btf.type_by_id(fi.type_id) else {
            return Vec::new();
        };
        let Some(proto) = btf.type_by_id(func.size_or_type) else {
            return Vec::new();
        };
        btf.params(proto)
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let tags = arg_tags(btf, fi.type_id, i);
                if !tags.is_empty() {
                    return self.tagged_arg_kind(i, &tags, p.type_id);
                }
                let Some((_, t)) = btf.skip_mods_and_typedefs(p.type_id) else {
                    return ArgKind::Unsupported;
                };
                match t.kind {
                    Kind::Int | Kind::Enum | Kind::Enum64 => ArgKind::Scalar,
                    Kind::Ptr => match btf.skip_mods_and_typedefs(t.size_or_type) {
                        Some((_, pt))
                            if pt.kind == Kind::Struct
                                && is_prog_ctx_struct(self.prog_type, btf.name(pt)) =>
                        {
                            ArgKind::Ctx
                        }
                        // kprobe and perf_event contexts are the typedef
                        // bpf_user_pt_regs_t: a struct of that name matches.
                        Some((_, pt))
                            if pt.kind == Kind::Struct
                                && btf.name(pt) == "bpf_user_pt_regs_t"
                                && (self.prog_type == ProgType::KPROBE
                                    || self.prog_type == ProgType::PERF_EVENT) =>
                        {
                            ArgKind::Ctx
                        }
                        Some((_, pt))
                            if pt.kind == Kind::Struct && btf.name(pt) == "bpf_dynptr" =>
                        {
                            ArgKind::Dynptr
                        }
                        // Memory of the pointee's size, zero included
                        // (btf_prepare_func_args).
                        Some((id, _)) => match btf.resolve_size(id) {
                            Ok(sz) if sz <= u32::MAX as u64 => ArgKind::Mem(sz as u32),
                            _ => ArgKind::Unsupported,
                        },
                        None => ArgKind::Unsupported,
                    },
                    _ => ArgKind::Unsupported,
                }
            })
            .collect()
    }

    /// btf_prepare_func_args for argument `i` carrying `arg:` decl tags,
    /// in the kernel's order: unknown tags, non-pointers, the context
    /// (`ctx` on a pointer whose pointee the program type accepts as its
    /// context; other pointees are refused by name), dynptrs, `trusted`,
    /// `untrusted`, `arena` and memory (`nonnull`).
    fn tagged_arg_kind(&self, i: usize, tags: &[&str], type_id: u32) -> ArgKind {
        const KNOWN: [&str; 6] = [
            "ctx",
            "trusted",
            "untrusted",
            "nonnull",
            "nullable",
            "arena",
        ];
        let refuse = ArgKind::UnmodelledTag {
            trusted_nonnull: false,
        };
        let bad = |m: String| ArgKind::TagError(m);
        let invalid = || bad(format!("arg#{i} has invalid combination of tags"));
        if tags.iter().any(|t| !KNOWN.contains(t)) {
            return bad(format!("arg#{i} has unsupported set of tags"));
        }
        let has = |n: &str| tags.contains(&n);
        let only = |n: &str| tags.iter().all(|t| *t == n);
        let Some(btf) = self.obj.btf.as_ref() else {
            return refuse;
        };
        let Some((_, t)) = btf.skip_mods_and_typedefs(type_id) else {
            return refuse;
        };
        if t.kind != Kind::Ptr {
            return bad(format!(
                "arg#{i} has pointer tag, but is not a pointer type"
            ));
        }
        let pointee = btf.skip_mods_and_typedefs(t.size_or_type);
        let pointee_struct = pointee
            .filter(|(id, pt)| *id != 0 && pt.kind == Kind::Struct)
            .map(|(_, pt)| btf.name(pt));
        let regs_prog = matches!(self.prog_type, ProgType::KPROBE | ProgType::PERF_EVENT);
        let ctx_struct = pointee_struct.is_some_and(|n| {
            is_prog_ctx_struct(self.prog_type, n) || (regs_prog && n == "bpf_user_pt_regs_t")
        });
        if has("ctx") || ctx_struct {
            if !only("ctx") {
                return invalid();
            }
            if has("ctx") && !self.ctx_tag_pointee_ok(t.size_or_type) {
                return self.ctx_tag_error(i, t.size_or_type).map_or(refuse, bad);
            }
            return ArgKind::Ctx;
        }
        if pointee_struct == Some("bpf_dynptr") {
            return invalid();
        }
        if has("trusted") {
            if has("nonnull") {
                return invalid();
            }
            return match kernel_type_of(btf, i, t.size_or_type) {
                Ok(id) => ArgKind::TrustedBtf {
                    id,
                    nullable: has("nullable"),
                },
                Err(m) => bad(m),
            };
        }
        if has("untrusted") {
            if !only("untrusted") {
                return bad(format!(
                    "arg#{i} untrusted cannot be combined with any other tags"
                ));
            }
            let primitive = match pointee {
                None | Some((0, _)) => true,
                Some((_, pt)) => {
                    matches!(pt.kind, Kind::Enum | Kind::Enum64)
                        || (pt.kind == Kind::Int && int_is_regular(pt))
                }
            };
            if primitive {
                return ArgKind::UntrustedMem;
            }
            let id = match kernel_type_of(btf, i, t.size_or_type) {
                Ok(id) => id,
                Err(m) => return bad(m),
            };
            let Some(vmlinux) = crate::btf_walk::vmlinux() else {
                return refuse;
            };
            return match vmlinux.type_by_id(id) {
                Some(kt) if matches!(kt.kind, Kind::Struct | Kind::Union) => {
                    ArgKind::UntrustedBtf(id)
                }
                Some(kt) => bad(format!(
                    "arg#{i} has type {} '{}', but only struct or primitive types are allowed",
                    kt.kind.name(),
                    btf.name(t)
                )),
                None => refuse,
            };
        }
        if has("arena") {
            if !only("arena") {
                return bad(format!(
                    "arg#{i} arena cannot be combined with any other tags"
                ));
            }
            return ArgKind::Arena;
        }
        // A pointer to memory the caller passes.
        if has("nullable") {
            return invalid();
        }
        // Another program type's context: how the kernel takes it is not
        // modelled.
        if pointee_struct.is_some_and(is_any_ctx_struct) {
            return refuse;
        }
        match pointee {
            Some((pid, _)) if pid != 0 => match btf.resolve_size(pid) {
                Ok(sz) if sz > 0 && sz <= u32::MAX as u64 && has("nonnull") => {
                    ArgKind::NonNullMem(sz as u32)
                }
                _ => refuse,
            },
            _ => refuse,
        }
    }

    /// The pointee types an `arg:ctx` pointer may have for this program
    /// type (the accepting cases of btf_validate_prog_ctx_type; the others
    /// are left unmodelled).
    /// Why an `arg:ctx` pointee the program type does not take is refused
    /// (btf_validate_prog_ctx_type): it has no name, or it is not the
    /// type's canonical context struct (`void *` where that is no struct).
    /// None where bpfvet does not know the canonical type.
    fn ctx_tag_error(&self, i: usize, pointee: u32) -> Option<String> {
        let btf = self.obj.btf.as_ref()?;
        let (_, t) = btf.skip_mods_and_typedefs(pointee)?;
        if btf.name(t).is_empty() {
            return Some(format!("arg#{i} type doesn't have a name"));
        }
        if let Some((_, ctx)) = PROG_CTX_STRUCT.iter().find(|(p, _)| *p == self.prog_type) {
            return Some(format!("arg#{i} should be `struct {ctx} *`"));
        }
        // Contexts declared as `void *` (or `__u32 *`).
        matches!(
            self.prog_type,
            ProgType::TRACING | ProgType::LSM | ProgType::STRUCT_OPS | ProgType::LIRC_MODE2
        )
        .then(|| format!("arg#{i} should be void pointer"))
    }

    fn ctx_tag_pointee_ok(&self, pointee: u32) -> bool {
        let Some(btf) = self.obj.btf.as_ref() else {
            return false;
        };
        let pt = self.prog_type;
        let regs_prog = pt == ProgType::KPROBE || pt == ProgType::PERF_EVENT;
        // bpf_user_pt_regs_t is accepted by name before typedefs are
        // resolved.
        let mut id = pointee;
        for _ in 0..32 {
            match btf.type_by_id(id) {
                Some(t) if t.kind == Kind::Typedef => {
                    if regs_prog && btf.name(t) == "bpf_user_pt_regs_t" {
                        return true;
                    }
                    break;
                }
                Some(t) if t.kind.is_modifier() => id = t.size_or_type,
                _ => break,
            }
        }
        let Some((pid, t)) = btf.skip_mods_and_typedefs(pointee) else {
            return false;
        };
        if pid == 0 {
            return true; // void *
        }
        if pt == ProgType::TRACEPOINT || pt == ProgType::SYSCALL {
            return !btf.name(t).is_empty();
        }
        let is_struct = |name: &str| t.kind == Kind::Struct && btf.name(t) == name;
        // The tag wants the program type's own struct by name
        // (btf_validate_prog_ctx_type): the kernel struct it projects, which
        // an untagged argument may name, is refused here.
        if PROG_CTX_STRUCT
            .iter()
            .any(|&(p, ctx)| p == pt && is_struct(ctx))
        {
            return true;
        }
        let u64_array = t.kind == Kind::Int && t.size_or_type == 8;
        let attach = self.prog.expected_attach_type;
        let tracing = |a: AttachType| pt == ProgType::TRACING && attach == Some(a);
        // struct pt_regs is x86-64's bpf_user_pt_regs_t.
        (regs_prog && is_struct("pt_regs"))
            || ((pt == ProgType::RAW_TRACEPOINT || pt == ProgType::RAW_TRACEPOINT_WRITABLE)
                && (is_struct("bpf_raw_tracepoint_args") || u64_array))
            || (tracing(AttachType::TRACE_RAW_TP)
                && (is_struct("bpf_raw_tracepoint_args") || u64_array))
            || (tracing(AttachType::TRACE_ITER)
                && t.kind == Kind::Struct
                && btf.name(t).starts_with("bpf_iter__"))
            || ((tracing(AttachType::TRACE_FENTRY)
                || tracing(AttachType::TRACE_FEXIT)
                || tracing(AttachType::MODIFY_RETURN)
                || pt == ProgType::LSM
                || pt == ProgType::STRUCT_OPS)
                && u64_array)
    }

    /// The call site's arguments must match the callee's signature
    /// (btf_check_func_arg_match); the reason is logged and the call
    /// rejected as a whole. A global function is verified without the
    /// caller's lock or preemption state, so it may not be called with a
    /// lock held or preemption disabled (static ones may).
    pub fn check_global_call_args(&mut self, subprog: usize) -> VResult<()> {
        // The entry function's BTF is unreliable unless it takes exactly
        // the context (do_check_common): a call back to it then fails
        // without a reason of its own.
        let main_unreliable = subprog == 0
            && (self.global_signature_error(0).is_some() || self.global_args(0) != [ArgKind::Ctx]);
        let mismatch = if main_unreliable {
            Err(crate::error::VerifyError::new(None, String::new()))
        } else {
            self.global_args_mismatch(subprog)
        };
        if self.cur.active_locks > 0 {
            self.log
                .line("global function calls are not allowed while holding a lock,");
            return self.err("use static function instead");
        }
        let sub_might_sleep = self
            .cfg
            .subprogs
            .get(subprog)
            .is_some_and(|s| s.might_sleep);
        if sub_might_sleep
            && (self.cur.active_rcu_lock
                || self.cur.active_preempt_locks > 0
                || self.cur.active_irq_id != 0
                || !self.cur.in_sleepable)
        {
            self.log
                .line("global functions that may sleep are not allowed in non-sleepable context,");
            self.log
                .line("i.e., in a RCU/IRQ/preempt-disabled section, or in");
            return self.err("a non-sleepable BPF program context");
        }
        match mismatch {
            Err(e) if e.limit.is_none() && !e.unsupported => {
                if !e.msg.is_empty() {
                    self.log.line(&e.msg);
                }
                let name = self.subprog_name(subprog);
                self.err(format!(
                    "Caller passes invalid args into func#{subprog} ('{name}')"
                ))
            }
            other => other,
        }
    }

    /// btf_prepare_func_args: what makes a global function's signature
    /// unusable (a non-scalar return, an untagged pointer argument whose
    /// pointee has no size, an argument neither scalar nor pointer).
    /// Arguments carrying `arg:` tags are left to the argument checks.
    fn global_signature_error(&self, subprog: usize) -> Option<String> {
        let btf = self.obj.btf.as_ref()?;
        let fi = self.prog.func_info.get(subprog)?;
        let func = btf.type_by_id(fi.type_id)?;
        let proto = btf.type_by_id(func.size_or_type)?;
        let name = btf.name(func);
        let scalar = |k: Kind| matches!(k, Kind::Int | Kind::Enum | Kind::Enum64);
        let (ret_id, ret) = btf.skip_mods_and_typedefs(proto.size_or_type)?;
        if ret_id == 0 || !scalar(ret.kind) {
            return Some(format!(
                "Global function {name}() doesn't return scalar. Only those are supported."
            ));
        }
        let tagged = |i: usize| {
            (1..btf.len()).any(|id| {
                btf.type_by_id(id).is_some_and(|t| {
                    t.kind == Kind::DeclTag
                        && t.size_or_type == fi.type_id
                        && t.decl_tag_component() == Some(i as i32)
                        && btf.name(t).starts_with("arg:")
                })
            })
        };
        for (i, p) in btf.params(proto).iter().enumerate() {
            let (id, t) = btf.skip_mods_and_typedefs(p.type_id)?;
            if id != 0 && scalar(t.kind) {
                continue;
            }
            let problem = if t.kind != Kind::Ptr || id == 0 {
                format!(
                    "Arg#{i} type {} in {name}() is not supported yet.",
                    t.kind.name()
                )
            } else {
                let (pid, pt) = btf.skip_mods_and_typedefs(t.size_or_type)?;
                if pid != 0 && btf.resolve_size(pid).is_ok() {
                    continue;
                }
                let kind = if pid == 0 { "UNKNOWN" } else { pt.kind.name() };
                format!(
                    "arg#{i} reference type('{kind} {}') size cannot be determined: -22",
                    btf.name(pt)
                )
            };
            // Scanned only for a suspect argument: tags are rare.
            if !tagged(i) {
                return Some(problem);
            }
        }
        None
    }

    fn global_args_mismatch(&mut self, subprog: usize) -> VResult<()> {
        if let Some(msg) = self.global_signature_error(subprog) {
            return self.err(msg);
        }
        let args = self.global_args(subprog);
        // The signature is prepared before any argument is looked at.
        for k in &args {
            if let ArgKind::TagError(msg) = k {
                return self.err(msg.clone());
            }
        }
        for (i, k) in args.into_iter().enumerate().take(5) {
            let regno = (i + 1) as u8;
            self.check_read(regno)?;
            let r = *self.cur.reg(regno);
            match k {
                ArgKind::Scalar if r.ty != RegType::Scalar => {
                    return self.err(format!("R{regno} is not a scalar"));
                }
                ArgKind::Ctx => {
                    self.check_arg_reg_off(regno, &r)?;
                    if r.ty != RegType::Ctx {
                        return self.err(format!("arg#{i} expects pointer to ctx"));
                    }
                }
                ArgKind::Mem(size) => {
                    self.check_arg_reg_off(regno, &r)?;
                    self.check_global_mem_arg(regno, size)?;
                }
                ArgKind::Dynptr => self.check_global_dynptr_arg(regno)?,
                ArgKind::NonNullMem(size) => {
                    self.check_arg_reg_off(regno, &r)?;
                    if r.is_null_const() {
                        return self.unsupported("NULL passed to an arg:nonnull argument");
                    }
                    self.check_global_mem_arg(regno, size)?;
                    if r.flags & flag::MAYBE_NULL != 0 {
                        return self.err(format!("arg#{i} is expected to be non-NULL"));
                    }
                }
                ArgKind::TrustedBtf { id, nullable } => {
                    self.check_global_trusted_arg(regno, &r, id, nullable)?;
                }
                // Untrusted arguments are read-only to the callee, through
                // probe loads: anything goes.
                ArgKind::UntrustedBtf(_) | ArgKind::UntrustedMem => {}
                ArgKind::Arena if !matches!(r.ty, RegType::Arena | RegType::Scalar) => {
                    return self.err(format!("R{regno} is not a pointer to arena or scalar."));
                }
                ArgKind::TagError(_) => {}
                ArgKind::UnmodelledTag { trusted_nonnull } => {
                    if trusted_nonnull && r.ty == RegType::Scalar {
                        return self.err(format!(
                            "R{regno} type=scalar expected=ptr_, trusted_ptr_, rcu_ptr_"
                        ));
                    }
                    return self.unsupported("global function argument tag (arg:...)");
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The exception callback's signature is a global function's
    /// (btf_prepare_func_args) taking exactly one integer (the cookie
    /// bpf_throw was given).
    fn check_exception_cb_signature(&self, k: usize) -> VResult<()> {
        if let Some(msg) = self.global_signature_error(k) {
            return Err(crate::error::VerifyError::new(None, msg));
        }
        if self.global_args(k) != [ArgKind::Scalar] {
            return Err(crate::error::VerifyError::new(
                None,
                "exception cb only supports single integer argument".into(),
            ));
        }
        Ok(())
    }

    /// check_func_arg_reg_off for an argument without a type of its own
    /// (the kernel passes ARG_DONTCARE): memory pointers may carry any
    /// offset, BTF pointers a fixed one, other pointers none.
    fn check_arg_reg_off(&self, regno: u8, r: &Reg) -> VResult<()> {
        self.check_func_arg_reg_off(regno, r, crate::helpers::ArgType::default())
    }

    /// An `arg:trusted` argument (check_reg_type for a trusted BTF
    /// pointer): NULL where `arg:nullable` allows it, otherwise a plain,
    /// trusted or RCU pointer to the struct or one starting with it.
    fn check_global_trusted_arg(
        &mut self,
        regno: u8,
        r: &Reg,
        need: u32,
        nullable: bool,
    ) -> VResult<()> {
        if nullable && r.is_null_const() {
            return Ok(());
        }
        let mut flags = r.flags;
        if nullable {
            flags &= !flag::MAYBE_NULL;
        }
        let compatible =
            r.ty == RegType::BtfId && (flags == 0 || flags == flag::TRUSTED || flags == flag::RCU);
        if !compatible {
            return self.err(format!(
                "R{regno} type={} expected=ptr_, trusted_ptr_, rcu_ptr_",
                r.type_str()
            ));
        }
        if let Some(btf) = crate::btf_walk::vmlinux().filter(|_| r.aux != 0) {
            let matched = (r.off == 0 && r.aux == need)
                || (r.off >= 0
                    && crate::btf_walk::nested_struct_match(btf, r.aux, r.off as u32, need));
            if !matched {
                return self.err(format!(
                    "R{regno} is of type {} but {} is expected",
                    btf.name_of(r.aux),
                    btf.name_of(need)
                ));
            }
        }
        self.check_arg_reg_off(regno, r)
    }

    /// check_mem_reg: NULL passes; otherwise the callee may read and write
    /// all `size` bytes (as if the pointer were not NULL).
    fn check_global_mem_arg(&mut self, regno: u8, size: u32) -> VResult<()> {
        let saved = *self.cur.reg(regno);
        if saved.is_null_const() {
            return Ok(());
        }
        self.cur.reg_mut(regno).flags &= !flag::MAYBE_NULL;
        let res = self
            .check_helper_mem(regno, size as u64, Access::Read, true, false)
            .and_then(|()| match saved.ty {
                // Checked even for an empty access (check_map_access_type).
                RegType::MapValue => {
                    self.check_map_access_type(saved.map, saved.off, size, Access::Write)
                }
                _ => Ok(()),
            })
            .and_then(|()| self.check_helper_mem(regno, size as u64, Access::Write, true, false));
        *self.cur.reg_mut(regno) = saved;
        res
    }

    /// Verifies every global function the main program called, each from
    /// a fresh state.
    pub fn check_global_subprogs(&mut self) -> VResult<()> {
        // The exception callback is presumed called.
        if let Some(ex) = self.exception_cb {
            if let Some(c) = self.called_global.get_mut(ex) {
                *c = true;
            }
        }
        let mut k = 1;
        while k < self.called_global.len() {
            if !self.called_global[k] || self.verified_global[k] {
                k += 1;
                continue;
            }
            self.verified_global[k] = true;
            let mut st = State::new();
            st.frames[0] = Frame::new(-1, 0, k as u32);
            for (i, a) in self.global_args(k).into_iter().enumerate().take(5) {
                st.frames[0].regs[i + 1] = match a {
                    ArgKind::Scalar
                    | ArgKind::Arena
                    | ArgKind::Unsupported
                    | ArgKind::UnmodelledTag { .. } => Reg::unknown_scalar(),
                    ArgKind::NonNullMem(sz) => {
                        let mut r = Reg::pointer(RegType::Mem);
                        r.aux = sz;
                        r
                    }
                    ArgKind::Ctx => Reg::pointer(RegType::Ctx),
                    ArgKind::Dynptr => self.const_local_dynptr(),
                    ArgKind::TrustedBtf { id, nullable } => {
                        let mut r = Reg::pointer(RegType::BtfId);
                        r.aux = id;
                        r.flags = flag::TRUSTED | if nullable { flag::MAYBE_NULL } else { 0 };
                        r.id = self.new_id();
                        r
                    }
                    ArgKind::UntrustedBtf(id) => {
                        let mut r = Reg::pointer(RegType::BtfId);
                        r.aux = id;
                        r.flags = flag::UNTRUSTED;
                        r.id = self.new_id();
                        r
                    }
                    ArgKind::UntrustedMem => {
                        let mut r = Reg::pointer(RegType::Mem);
                        r.flags = flag::RDONLY | flag::UNTRUSTED;
                        r
                    }
                    ArgKind::TagError(_) => Reg::unknown_scalar(),
                    ArgKind::Mem(sz) => {
                        let mut r = Reg::pointer(RegType::Mem);
                        r.aux = sz;
                        r.flags |= flag::MAYBE_NULL;
                        r.id = self.new_id();
                        r
                    }
                };
            }
            st.in_sleepable = self.prog.sleepable;
            // Its paths begin at its first instruction: a precision walk
            // stops there.
            st.first_insn_idx = self.cfg.subprogs[k].start;
            self.cur = st;
            self.log.start_pass();
            self.log.scratch_all();
            let name = self.subprog_name(k);
            if self.log.level >= 1 {
                self.log.line(&format!("Validating {name}() func#{k}..."));
            }
            self.insn_idx = self.cfg.subprogs[k].start;
            if self.exception_cb == Some(k) {
                self.check_exception_cb_signature(k)?;
            }
            self.do_check()?;
            self.log.pass_verified();
            if self.log.level >= 1 {
                self.log.line(&format!(
                    "Func#{k} ('{name}') is safe for any args that match its prototype"
                ));
            }
            // Restart the scan: this function may have called others.
            k = 1;
        }
        Ok(())
    }
}

/// A whole-byte int of 1, 2, 4, 8 or 16 bytes (btf_type_int_is_regular).
fn int_is_regular(t: &bpfvet_object::btf::BtfType) -> bool {
    t.int_info().is_some_and(|(_, offset, bits)| {
        let bytes = bits.div_ceil(8);
        bits % 8 == 0 && offset == 0 && bytes <= 16 && bytes.is_power_of_two()
    })
}

/// The vmlinux type a program type stands for (btf_get_ptr_to_btf_id):
/// the one type of the same kind whose name is the same up to a
/// `___flavor` suffix.
fn kernel_type_of(btf: &Btf, i: usize, pointee: u32) -> Result<u32, String> {
    let Some((_, local)) = btf.skip_mods_and_typedefs(pointee) else {
        return Err(format!("arg#{i} reference type has no matches"));
    };
    let name = btf.name(local);
    let what = format!("arg#{i} reference type('{} {name}')", local.kind.name());
    let Some(vmlinux) = crate::btf_walk::vmlinux() else {
        return Err(format!("{what} has no matches"));
    };
    let essential = |n: &str| n.rfind("___").map_or(n.len(), |p| p);
    let want = &name[..essential(name)];
    let mut found = None;
    let mut count = 0;
    for id in 1..vmlinux.len() {
        let Some(t) = vmlinux.type_by_id(id) else {
            continue;
        };
        let n = vmlinux.name(t);
        if t.kind == local.kind && &n[..essential(n)] == want {
            count += 1;
            found = Some(id);
        }
    }
    match (count, found) {
        (1, Some(id)) => Ok(id),
        (0, _) => Err(format!("{what} has no matches")),
        _ => Err(format!("{what} is ambiguous")),
    }
}

/// The `arg:` decl tags on parameter `arg` of function `func_id`, without
/// the prefix.
fn arg_tags(btf: &Btf, func_id: u32, arg: usize) -> Vec<&str> {
    (1..btf.len())
        .filter_map(|id| btf.type_by_id(id))
        .filter(|t| {
            t.kind == Kind::DeclTag
                && t.size_or_type == func_id
                && t.decl_tag_component() == Some(arg as i32)
        })
        .filter_map(|t| btf.name(t).strip_prefix("arg:"))
        .collect()
}
