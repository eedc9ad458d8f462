//! Calls of kernel functions (kfuncs): the callee is a FUNC in vmlinux BTF
//! (insn.imm is its id), its flags and the program types that may call it
//! come from the kfunc tables, and its arguments and return value are typed
//! from its BTF prototype (the kernel's check_kfunc_call and
//! check_kfunc_args).
//!
//! Modelled: scalar arguments (`__k` constants, `rdonly_buf_size` /
//! `rdwr_buf_size`), `__ign`, pointers to memory (fixed size, or sized by a
//! following `__sz` / `__szk` argument), the program context, iterators
//! (iter.rs), BTF pointers (trusted / RCU checks, without struct-type
//! matching), release of references, rcu_read_lock / preempt regions,
//! sleepable kfuncs, dynptr arguments (dynptr.rs: creation by
//! bpf_dynptr_from_skb/xdp/skb_meta and bpf_dynptr_clone, initialised
//! dynptrs otherwise) and bpf_dynptr_slice(_rdwr), `__map` arguments;
//! returns of scalars, void, `void *`, pointers to memory and to BTF
//! structs, with `_or_null` and acquired references. Allocated objects and
//! the list / rbtree kfuncs are graph.rs's.
//! `__str` constant strings are checked as the helpers' (check_reg_const_str).
//! Not modelled (refused with a message naming the gap): callbacks other
//! than bpf_rbtree_add's, bpf_wq's and task work's, per-CPU
//! allocated objects. A kfunc from module BTF (insn.off != 0) fails at
//! load (check_kfunc_calls).

use crate::btf_walk::vmlinux;
use crate::cfg::CallSummary;
use crate::check_mem::Access;
use crate::dynptr::{DynptrKind, DynptrSlot};
use crate::error::{VResult, VerifyError};
use crate::explore::Env;
use crate::graph::{GraphArg, GraphMeta};
use crate::helpers::kfuncs::{
    is_graph_kfunc, kfunc, KfuncFlags, ALLOCATED_OBJECT_KFUNCS, PKT_CHANGING_KFUNCS,
    RES_LOCK_ACQUIRE,
};
use crate::regs::{flag, Reg, RegType};
use crate::spin_lock::LockOp;
use crate::state::{RefKind, RefState};
use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_object::btf::{Btf, BtfType, Kind, Param};

/// What the arguments told us (`struct bpf_kfunc_call_arg_meta`).
#[derive(Default)]
pub struct KfuncMeta {
    pub name: String,
    pub flags: KfuncFlags,
    /// Reference carried by an argument (for release, or inherited by
    /// returned memory).
    pub ref_obj_id: u32,
    pub release_regno: u8,
    /// Size and writability of returned memory from a buf-size argument.
    pub r0_size: Option<u64>,
    /// The value of the last `__k` (known constant) argument.
    pub arg_constant: Option<u64>,
    pub r0_rdonly: bool,
    /// (frame, spi) of the iterator argument.
    pub iter: Option<(usize, usize)>,
    /// What allocated-object and graph arguments found (graph.rs).
    pub graph: GraphMeta,
    /// The initialised dynptr an argument named (for slices and clones).
    pub initialized_dynptr: Option<DynptrSlot>,
    /// The map (and map_uid) of the workqueue or task work item an
    /// argument points into.
    pub wq_map: Option<(u32, u32)>,
    /// The async callback subprogram (bpf_wq_set_callback_impl, task work).
    pub async_callback: Option<u32>,
}

impl KfuncMeta {
    fn has(&self, f: KfuncFlags) -> bool {
        self.flags.contains(f)
    }
    pub fn is_iter_kfunc(&self) -> bool {
        self.has(KfuncFlags::ITER_NEW)
            || self.has(KfuncFlags::ITER_NEXT)
            || self.has(KfuncFlags::ITER_DESTROY)
    }
}

/// The kfunc's FUNC_PROTO in vmlinux BTF, by FUNC id.
fn resolve(btf: &Btf, func_id: u32) -> Result<(&str, &BtfType), String> {
    let func = btf
        .type_by_id(func_id)
        .filter(|t| t.kind == Kind::Func)
        .ok_or_else(|| format!("kernel btf_id {func_id} is not a function"))?;
    let proto = btf
        .type_by_id(func.size_or_type)
        .filter(|t| t.kind == Kind::FuncProto)
        .ok_or_else(|| {
            format!("kernel function btf_id {func_id} does not have a valid func_proto")
        })?;
    Ok((btf.name(func), proto))
}

/// What the CFG pass learns of a kfunc call (the kernel's check_cfg and
/// liveness fetch the call's metadata through the program's kfunc sets).
/// For a kfunc not registered for this program the fetch fails: the
/// call reads every argument register (5) and marks nothing.
pub fn call_summary(insn: &Insn, prog_type: ProgType, attach: Option<AttachType>) -> CallSummary {
    let unregistered = CallSummary {
        args: 5,
        iter_next: false,
        might_sleep: false,
        changes_pkt_data: false,
    };
    let Some(btf) = vmlinux() else {
        return unregistered;
    };
    let func_id = insn.imm as u32;
    let Ok((name, proto)) = resolve(btf, func_id) else {
        return unregistered;
    };
    let flags = match kfunc(name) {
        Some(k) if k.set.allows(prog_type, attach) => k.flags,
        Some(_) => return unregistered,
        // A kfunc bpfvet's table lacks is refused where the call is
        // explored; its prototype is the likelier count meanwhile.
        None if btf.decl_tags_of(func_id).any(|t| t == "bpf_kfunc") => KfuncFlags::NONE,
        None => return unregistered,
    };
    CallSummary {
        args: proto.vlen as usize,
        iter_next: flags.contains(KfuncFlags::ITER_NEXT),
        might_sleep: flags.contains(KfuncFlags::SLEEPABLE),
        changes_pkt_data: PKT_CHANGING_KFUNCS.contains(&name),
    }
}

/// Whether the call is bpf_rbtree_add, which runs its `less` callback
/// before it returns (is_sync_callback_calling_kfunc).
pub fn is_sync_callback_kfunc_call(insn: &Insn) -> bool {
    insn.off == 0
        && vmlinux()
            .and_then(|btf| resolve(btf, insn.imm as u32).ok())
            .is_some_and(|(name, _)| name == "bpf_rbtree_add_impl")
}

/// The kfuncs scheduling a task work item (is_task_work_add_kfunc).
fn is_task_work_kfunc(name: &str) -> bool {
    matches!(
        name,
        "bpf_task_work_schedule_signal_impl" | "bpf_task_work_schedule_resume_impl"
    )
}

/// Whether the call registers a callback run later
/// (is_async_callback_calling_kfunc): bpf_wq_set_callback_impl and the
/// task work kfuncs.
pub fn is_async_callback_kfunc_call(insn: &Insn) -> bool {
    insn.off == 0
        && vmlinux()
            .and_then(|btf| resolve(btf, insn.imm as u32).ok())
            .is_some_and(|(name, _)| name == "bpf_wq_set_callback_impl" || is_task_work_kfunc(name))
}

/// The kernel's btf_type_is_scalar: an int or a (32-bit) enum.
fn is_scalar(t: &BtfType) -> bool {
    matches!(t.kind, Kind::Int | Kind::Enum)
}

/// The kernel's btf_type_str: the kind's upper-case name.
fn kind_str(t: &BtfType) -> String {
    t.kind.name().to_string()
}

fn param_name<'b>(btf: &'b Btf, p: &Param) -> &'b str {
    btf.str_at(p.name_off).unwrap_or("")
}

/// A struct or union whose members are all scalars, non-empty arrays of
/// scalars or such structs, nested at most three deep
/// (__btf_type_is_scalar_struct).
fn is_scalar_struct(btf: &Btf, t: &BtfType, depth: u32) -> bool {
    if !matches!(t.kind, Kind::Struct | Kind::Union) {
        return false;
    }
    btf.members(t).iter().all(|m| {
        let Some((_, mt)) = btf.skip_mods_and_typedefs(m.type_id) else {
            return false;
        };
        match mt.kind {
            Kind::Struct | Kind::Union => depth < 3 && is_scalar_struct(btf, mt, depth + 1),
            Kind::Array => {
                let (elem, _, nelems) = mt.array_info().unwrap_or_default();
                nelems != 0
                    && btf
                        .skip_mods_and_typedefs(elem)
                        .is_some_and(|(_, et)| is_scalar(et))
            }
            _ => is_scalar(mt),
        }
    })
}

/// Structs a kfunc argument is classified by before it could pass as
/// memory (their members are plain words), and bpfvet does not model (the
/// graph roots and nodes are graph.rs's).
const KERNEL_OBJECT_ARGS: &[&str] = &["bpf_wq"];

/// The vmlinux struct a register points to as a kfunc argument: a BTF
/// pointer's own, or the struct the kernel takes map and socket pointers
/// for (reg2btf_ids).
fn reg_btf_struct(btf: &Btf, reg: &Reg) -> Option<u32> {
    let name = match reg.ty {
        RegType::BtfId => return (reg.aux != 0).then_some(reg.aux),
        RegType::MapPtr => "bpf_map",
        RegType::Sock => "sock",
        RegType::SockCommon => "sock_common",
        RegType::TcpSock => "tcp_sock",
        _ => return None,
    };
    btf.find_by_name_kind(name, Kind::Struct)
}

/// Argument kinds of get_kfunc_ptr_arg_type that bpfvet checks.
enum PtrArg {
    Ctx,
    Null,
    Iter,
    Dynptr,
    BtfId,
    /// `__map`: a map, as a map pointer or a BTF pointer to struct bpf_map.
    Map,
    Mem,
    MemSize,
    /// An object the program allocated, to be dropped (`__alloc`).
    AllocBtfId,
    /// An allocated object with a bpf_refcount (`__refcounted_kptr`).
    RefcountedKptr,
    /// A list head / rb root or node of a graph kfunc.
    Graph(GraphArg),
    /// A `struct bpf_wq` in a map value.
    Workqueue,
    /// A `struct bpf_task_work` in a map value.
    TaskWork,
    /// `__str`: a NUL-terminated string in a frozen read-only map.
    ConstStr,
    /// bpf_rbtree_add's `less` callback.
    Callback,
    /// Saved interrupt flags on the stack (`__irq_flag`, irq.rs).
    IrqFlag,
    /// A `struct bpf_res_spin_lock` in a map value or allocated object.
    ResSpinLock,
    /// A kind bpfvet does not model, named for the message.
    Unmodelled(&'static str),
}

impl Env<'_> {
    pub fn check_kfunc_call(&mut self, insn: &Insn) -> VResult<()> {
        if insn.imm == 0 && insn.off == 0 {
            // Left for dead-code removal: nothing happens here, a call the
            // exploration reached fails after it (fixups.rs).
            return Ok(());
        }
        if insn.off != 0 {
            return self.unsupported(format!("kfuncs from module BTF (fd index {})", insn.off));
        }
        let Some(btf) = vmlinux() else {
            return self.unsupported("kfunc calls without kernel BTF to resolve them");
        };
        let func_id = insn.imm as u32;
        let (name, proto) = match resolve(btf, func_id) {
            Ok(x) => x,
            Err(e) => return self.err(e),
        };
        let allowed = kfunc(name)
            .filter(|k| k.set.allows(self.prog_type, self.prog.expected_attach_type))
            .filter(|k| crate::struct_ops::kfunc_filter(self.prog, k.set));
        if name == "bpf_dynptr_from_skb" && crate::struct_ops::is_qdisc(self.prog) {
            // bpf_qdisc registers it for its programs too.
            return self.unsupported("bpf_dynptr_from_skb in Qdisc_ops programs");
        }
        let Some(k) = allowed else {
            // A function the kernel's BTF tags as a kfunc that bpfvet's table
            // lacks may well be registered for this program: not decidable.
            if kfunc(name).is_none() && btf.decl_tags_of(func_id).any(|t| t == "bpf_kfunc") {
                return self.unsupported(format!("kfunc {name}, which bpfvet's kfunc table lacks"));
            }
            return self.err(format!("calling kernel function {name} is not allowed"));
        };
        if name == "__bpf_trap" {
            // Clang calls it where a variable is read uninitialised; the
            // verifier takes any path reaching it as the program's bug.
            return self.err("unexpected __bpf_trap() due to uninitialized variable?");
        }
        if RES_LOCK_ACQUIRE.contains(&name) {
            self.push_failed_lock()?;
        }
        let mut meta = KfuncMeta {
            name: name.to_string(),
            flags: k.flags,
            ..Default::default()
        };
        if meta.has(KfuncFlags::DESTRUCTIVE) {
            if !self
                .opts
                .privileges
                .has(bpfvet_isa::privileges::cap::SYS_BOOT)
            {
                return self.err("destructive kfunc calls require CAP_SYS_BOOT capability");
            }
            // Past the capability check its pt_regs argument is checked,
            // which no program of the fuzzer or selftests has needed yet.
            return self.unsupported(format!("destructive kfunc {name} loaded with CAP_SYS_BOOT"));
        }
        let sleepable = meta.has(KfuncFlags::SLEEPABLE);
        if sleepable && !self.cur.in_sleepable {
            return self.err(format!(
                "program must be sleepable to call sleepable kfunc {name}"
            ));
        }
        self.check_kfunc_args(btf, proto, &mut meta)?;
        // A callback that cannot be queued (a frame too many, or too many
        // pending paths for an async one) fails the kfunc call, which
        // says so after the reason.
        let pushed = if name == "bpf_rbtree_add_impl" {
            self.push_rbtree_less(&meta.graph)
        } else if let Some(sub) = meta.async_callback {
            // Workqueue and task work callbacks run later, and may sleep. A
            // workqueue's gets the map of its first argument and returns
            // 0; task work's, that of the `__map` argument (R3), any int.
            if is_task_work_kfunc(name) {
                self.push_async_cb(sub, true, 3, (i32::MIN as i64, i32::MAX as i64))
            } else {
                self.push_async_cb(sub, true, 1, (0, 0))
            }
        } else {
            Ok(())
        };
        if let Err(e) = pushed {
            if e.unsupported {
                return Err(e);
            }
            // A limit logged its line already.
            if e.limit.is_none() {
                self.log.line(&e.msg);
            }
            return self.err(format!(
                "kfunc {name}#{func_id} failed callback verification"
            ));
        }
        if name == "bpf_session_cookie" {
            // The session's cookie: eight writable bytes.
            meta.r0_size = Some(8);
            meta.r0_rdonly = false;
        }
        self.kfunc_lock_regions(&meta, sleepable)?;
        if meta.release_regno != 0 {
            let rid = self.cur.reg(meta.release_regno).ref_obj_id;
            if self.release_reference(rid).is_err() {
                return self.err(format!(
                    "kfunc {name}#{func_id} reference has not been acquired before"
                ));
            }
        }
        if matches!(
            name,
            "bpf_list_push_front_impl" | "bpf_list_push_back_impl" | "bpf_rbtree_add_impl"
        ) {
            self.node_to_non_owning(self.cur.reg(2).ref_obj_id)?;
        }
        if name == "bpf_throw" && self.exception_cb.is_none() {
            // The default exception callback returns the cookie as the
            // program's return value.
            self.check_return_code(1)?;
        }
        if PKT_CHANGING_KFUNCS.contains(&name) {
            self.clear_all_pkt_pointers();
        }
        for r in 0..=5 {
            *self.cur.reg_mut(r) = Reg::not_init();
        }
        self.set_kfunc_return(btf, proto, &meta)?;
        if meta.has(KfuncFlags::ITER_NEXT) {
            self.process_iter_next_call(&meta)?;
        }
        Ok(())
    }

    fn check_kfunc_args(
        &mut self,
        btf: &Btf,
        proto: &BtfType,
        meta: &mut KfuncMeta,
    ) -> VResult<()> {
        let args = btf.params(proto);
        if args.len() > 5 {
            return self.err(format!(
                "Function {} has {} > 5 args",
                meta.name,
                args.len()
            ));
        }
        // Release kfuncs take trusted arguments too (is_kfunc_trusted_args).
        let trusted = meta.has(KfuncFlags::TRUSTED_ARGS) || meta.has(KfuncFlags::RELEASE);
        let rcu = meta.has(KfuncFlags::RCU);
        let release = meta.has(KfuncFlags::RELEASE);
        let mut i = 0;
        while i < args.len() {
            let regno = (i + 1) as u8;
            let pname = param_name(btf, &args[i]);
            // `__ign` arguments are not looked at; a `__prog` one is the
            // program's aux, filled in by the kernel.
            if pname.ends_with("__ign") || pname.ends_with("__prog") {
                i += 1;
                continue;
            }
            let Some((_, t)) = btf.skip_mods_and_typedefs(args[i].type_id) else {
                return self.err(format!("Unrecognized arg#{i} type void"));
            };
            let reg = *self.cur.reg(regno);
            if is_scalar(t) {
                if reg.ty != RegType::Scalar {
                    return self.err(format!("R{regno} is not a scalar"));
                }
                if pname.ends_with("__k") {
                    if !reg.v.is_const() {
                        return self.err(format!("R{regno} must be a known constant"));
                    }
                    meta.arg_constant = Some(reg.v.const_value());
                    self.mark_chain_precision(regno)?;
                } else if pname == "rdonly_buf_size" || pname == "rdwr_buf_size" {
                    if meta.r0_size.is_some() {
                        return self.err("2 or more rdonly/rdwr_buf_size parameters for kfunc");
                    }
                    if !reg.v.is_const() {
                        return self.err(format!("R{regno} is not a const"));
                    }
                    let size = reg.v.const_value();
                    if size > u32::MAX as u64 {
                        return self.err(format!("R{regno} rdonly/rdwr_buf_size exceeds u32 max"));
                    }
                    meta.r0_size = Some(size);
                    meta.r0_rdonly = pname == "rdonly_buf_size";
                    self.mark_chain_precision(regno)?;
                }
                i += 1;
                continue;
            }
            if t.kind != Kind::Ptr {
                return self.err(format!("Unrecognized arg#{i} type {}", kind_str(t)));
            }
            let nullable = pname.ends_with("__nullable");
            if (trusted || rcu) && (reg.is_null_const() || reg.maybe_null()) && !nullable {
                return self.err(format!("Possibly NULL pointer passed to trusted arg{i}"));
            }
            if reg.ref_obj_id != 0 {
                if release && meta.ref_obj_id != 0 {
                    return self.err(format!(
                        "verifier bug: more than one arg with ref_obj_id R{regno} {} {}",
                        reg.ref_obj_id, meta.ref_obj_id
                    ));
                }
                meta.ref_obj_id = reg.ref_obj_id;
                if release {
                    meta.release_regno = regno;
                }
            }
            let (ref_id, ref_t) = btf.skip_mods_and_typedefs(t.size_or_type).unwrap_or((0, t));
            let pointee_void = t.size_or_type == 0 || ref_t.kind == Kind::Void;
            let sized_by_next = args.get(i + 1).is_some_and(|next| {
                let n = param_name(btf, next);
                (n.ends_with("__sz") || n.ends_with("__szk"))
                    && self.cur.reg(regno + 1).ty == RegType::Scalar
            });
            let struct_arg = !pointee_void && ref_t.kind == Kind::Struct;
            let ctx_struct = reg.ty == RegType::Ctx && struct_arg;
            // The parameter's type alone makes it a context argument
            // (btf_is_prog_ctx_type), whatever the register holds.
            let kind = if meta.name == "bpf_cast_to_kern_ctx"
                || (struct_arg
                    && crate::global_func::is_prog_ctx_struct(self.prog_type, btf.name(ref_t)))
            {
                PtrArg::Ctx
            } else if nullable && reg.is_null_const() {
                PtrArg::Null
            } else if pname.ends_with("__alloc") {
                PtrArg::AllocBtfId
            } else if pname.ends_with("__refcounted_kptr") {
                PtrArg::RefcountedKptr
            } else if !pointee_void && ref_t.kind == Kind::Struct && btf.name(ref_t) == "bpf_dynptr"
            {
                PtrArg::Dynptr
            } else if (meta.is_iter_kfunc() && i == 0) || pname.ends_with("__iter") {
                PtrArg::Iter
            } else if let Some(g) = (!pointee_void && ref_t.kind == Kind::Struct)
                .then(|| GraphArg::from_struct_name(btf.name(ref_t)))
                .flatten()
            {
                PtrArg::Graph(g)
            } else if pname.ends_with("__map") {
                PtrArg::Map
            } else if pname.ends_with("__str") {
                PtrArg::ConstStr
            } else if !pointee_void && btf.name(ref_t) == "bpf_wq" {
                PtrArg::Workqueue
            } else if !pointee_void && btf.name(ref_t) == "bpf_task_work" {
                PtrArg::TaskWork
            } else if pname.ends_with("__irq_flag") {
                PtrArg::IrqFlag
            } else if !pointee_void && btf.name(ref_t) == "bpf_res_spin_lock" {
                PtrArg::ResSpinLock
            } else if !pointee_void && KERNEL_OBJECT_ARGS.contains(&btf.name(ref_t)) {
                // Taken by their type before any memory check
                // (get_kfunc_ptr_arg_type).
                PtrArg::Unmodelled("work item")
            } else if ctx_struct && (is_scalar(ref_t) || is_scalar_struct(btf, ref_t, 0)) {
                // Another struct than the program's context, of scalars
                // only: the kernel takes the argument as memory and checks
                // the context access by the struct's size. (One holding
                // pointers is refused below as memory, as the kernel does.)
                PtrArg::Unmodelled("the context passed for another struct")
            } else if reg.ty.is_btf_id() || reg.ty == RegType::MapPtr || reg.ty.is_sock() {
                if pointee_void || ref_t.kind != Kind::Struct {
                    return self.err(format!(
                        "kernel function {} args#{i} pointer type {} {} is not supported",
                        meta.name,
                        // void is BTF type 0, whose kind the kernel names
                        // UNKNOWN (and whose name is empty).
                        if pointee_void {
                            "UNKNOWN".to_string()
                        } else {
                            kind_str(ref_t)
                        },
                        if pointee_void { "" } else { btf.name(ref_t) }
                    ));
                }
                PtrArg::BtfId
            } else if !pointee_void
                && ref_t.kind == Kind::FuncProto
                && (matches!(
                    meta.name.as_str(),
                    "bpf_rbtree_add_impl" | "bpf_wq_set_callback_impl"
                ) || is_task_work_kfunc(&meta.name))
            {
                // A callback is classified after the BTF pointer kinds.
                PtrArg::Callback
            } else if !pointee_void && ref_t.kind == Kind::FuncProto {
                PtrArg::Unmodelled("callback")
            } else {
                let points_to_scalars =
                    !pointee_void && (is_scalar(ref_t) || is_scalar_struct(btf, ref_t, 0));
                if !(points_to_scalars || sized_by_next && pointee_void) {
                    return self.err(format!(
                        "arg#{i} pointer type {} {} must point to {}scalar, or struct with scalar",
                        // void is BTF type 0, whose kind the kernel names
                        // UNKNOWN (and whose name is empty).
                        if pointee_void {
                            "UNKNOWN".to_string()
                        } else {
                            kind_str(ref_t)
                        },
                        if pointee_void { "" } else { btf.name(ref_t) },
                        if sized_by_next { "void, " } else { "" }
                    ));
                }
                if sized_by_next {
                    PtrArg::MemSize
                } else {
                    PtrArg::Mem
                }
            };
            // The pointer's offset is checked before what its kind asks
            // (check_func_arg_reg_off), except that map and BTF pointers
            // have their trust checked first.
            let offset_first = !matches!(
                kind,
                PtrArg::Null | PtrArg::Map | PtrArg::AllocBtfId | PtrArg::BtfId
            );
            if offset_first {
                self.check_func_arg_reg_off(regno, &reg, graph_arg_type(release, &reg))?;
            }
            match kind {
                PtrArg::Null => {}
                PtrArg::Ctx => {
                    if reg.ty != RegType::Ctx {
                        return self.err(format!(
                            "arg#{i} expected pointer to ctx, but got {}",
                            reg.type_str()
                        ));
                    }
                }
                PtrArg::Iter => {
                    // Walking a cgroup's tasks takes css_set_lock: only
                    // where the kernel knows it may (check_css_task_iter_allowlist).
                    let css_task_iter_allowed = match self.prog.prog_type {
                        ProgType::LSM => true,
                        ProgType::TRACING
                            if self.prog.expected_attach_type == Some(AttachType::TRACE_ITER) =>
                        {
                            true
                        }
                        _ => self.cur.in_sleepable,
                    };
                    if meta.name == "bpf_iter_css_task_new" && !css_task_iter_allowed {
                        return self.err(
                            "css_task_iter is only allowed in bpf_lsm, bpf_iter and sleepable progs",
                        );
                    }
                    self.process_iter_arg(btf, regno, &args[i], meta)?
                }
                PtrArg::IrqFlag => {
                    if reg.ty != RegType::Stack {
                        return self.err(format!("arg#{i} doesn't point to an irq flag on stack"));
                    }
                    self.process_irq_flag(regno, meta)?
                }
                PtrArg::ResSpinLock => {
                    self.check_func_arg_reg_off(regno, &reg, graph_arg_type(release, &reg))?;
                    let lockable = matches!(reg.ty, RegType::MapValue | RegType::Alloc);
                    if !lockable || reg.flags != 0 {
                        return self.err(format!(
                            "arg#{i} doesn't point to map value or allocated object"
                        ));
                    }
                    let op = LockOp {
                        acquire: RES_LOCK_ACQUIRE.contains(&meta.name.as_str()),
                        res: true,
                        irq: meta.name.ends_with("_irqsave") || meta.name.ends_with("_irqrestore"),
                    };
                    self.process_spin_lock(regno, &reg, op)?;
                }
                PtrArg::Map => self.check_kfunc_map_arg(btf, meta, i, regno, &reg, trusted, rcu)?,
                PtrArg::BtfId if matches!(reg.ty, RegType::Alloc | RegType::LocalBtfId) => {
                    self.check_prog_btf_kfunc_arg(
                        btf,
                        meta,
                        i,
                        regno,
                        &reg,
                        ref_t,
                        (trusted, rcu, release),
                    )?;
                }
                PtrArg::AllocBtfId => {
                    self.require_trusted_or_rcu(regno, &reg, is_trusted_reg(&reg), (trusted, rcu))?;
                    self.check_func_arg_reg_off(regno, &reg, graph_arg_type(release, &reg))?;
                    let mut g = meta.graph;
                    self.check_alloc_obj_arg(i, &reg, meta, &mut g)?;
                    meta.graph = g;
                }
                PtrArg::RefcountedKptr => {
                    let mut g = meta.graph;
                    self.check_refcounted_kptr_arg(i, &reg, &mut g)?;
                    meta.graph = g;
                }
                PtrArg::Callback => {
                    if reg.ty != RegType::Func {
                        return self.err(format!("arg{i} expected pointer to func"));
                    }
                    if meta.name == "bpf_wq_set_callback_impl" || is_task_work_kfunc(&meta.name) {
                        meta.async_callback = Some(reg.aux);
                    } else {
                        meta.graph.callback = Some(reg.aux);
                    }
                }
                PtrArg::Graph(kind) => {
                    let mut g = meta.graph;
                    self.check_graph_arg(kind, i, regno, &reg, meta, &mut g)?;
                    meta.graph = g;
                }
                PtrArg::Dynptr => {
                    let uninit = pname.ends_with("__uninit");
                    let create = match meta.name.as_str() {
                        "bpf_dynptr_from_skb" => Some((DynptrKind::Skb, None)),
                        "bpf_dynptr_from_xdp" => Some((DynptrKind::Xdp, None)),
                        "bpf_dynptr_from_skb_meta" => Some((DynptrKind::SkbMeta, None)),
                        // A clone is of its parent's kind and shares its
                        // reference.
                        "bpf_dynptr_clone" if uninit => meta
                            .initialized_dynptr
                            .map(|d| (d.kind, Some(d.ref_obj_id))),
                        _ => None,
                    };
                    match (uninit, create) {
                        (true, Some(c)) => {
                            self.check_kfunc_dynptr_arg(regno, Some(c))?;
                        }
                        (false, _) => {
                            meta.initialized_dynptr = self.check_kfunc_dynptr_arg(regno, None)?;
                        }
                        (true, None) => {
                            return self
                                .unsupported(format!("dynptr arguments of kfunc {}", meta.name));
                        }
                    }
                }
                PtrArg::BtfId => {
                    // Map and socket pointers are trusted as the kernel
                    // structs they stand for (reg2btf_ids).
                    self.require_trusted_or_rcu(regno, &reg, is_trusted_reg(&reg), (trusted, rcu))?;
                    // A released object is passed as it came; other BTF
                    // pointers may point inside (check_func_arg_reg_off).
                    let whole = release && reg.ref_obj_id != 0;
                    let at = crate::helpers::ArgType {
                        base: crate::helpers::ArgBase::PtrToBtfId,
                        flags: if whole {
                            crate::helpers::TypeFlags::OBJ_RELEASE
                        } else {
                            crate::helpers::TypeFlags::default()
                        },
                    };
                    self.check_func_arg_reg_off(regno, &reg, at)?;
                    self.check_btf_arg_modifiers(i, &reg)?;
                    self.check_kfunc_btf_type(btf, meta, i, &reg, ref_id, ref_t)?;
                }
                PtrArg::Mem => {
                    let Ok(size) = btf.resolve_size(ref_id) else {
                        return self.err(format!(
                            "arg#{i} reference type('{} {}') size cannot be determined",
                            kind_str(ref_t),
                            btf.name(ref_t)
                        ));
                    };
                    self.check_kfunc_mem(regno, size, true)?;
                }
                PtrArg::MemSize => {
                    let opt = pname.ends_with("__opt") || pname.ends_with("__nullable");
                    if !(reg.is_null_const() && opt) {
                        let checked = self
                            .size_arg(regno + 1, true)
                            .and_then(|size| self.check_kfunc_mem_maybe_null(regno, size, true));
                        if let Err(e) = checked {
                            self.log.line(&e.msg);
                            return self.err(format!(
                                "arg#{i} arg#{} memory, len pair leads to invalid memory access",
                                i + 1
                            ));
                        }
                    }
                    let next = param_name(btf, &args[i + 1]);
                    if next.ends_with("__szk") {
                        let size = self.cur.reg(regno + 1).v;
                        if !size.is_const() {
                            return self.err(format!("R{} must be a known constant", regno + 1));
                        }
                        meta.arg_constant = Some(size.const_value());
                    }
                    i += 1;
                }
                PtrArg::Workqueue => {
                    if reg.ty != RegType::MapValue || reg.maybe_null() {
                        return self.err(format!("arg#{i} doesn't point to a map value"));
                    }
                    // process_wq_func
                    self.check_map_field_pointer(regno, &reg, "bpf_wq")?;
                    meta.wq_map = Some((reg.map, reg.map_uid));
                }
                PtrArg::TaskWork => {
                    if reg.ty != RegType::MapValue || reg.maybe_null() {
                        return self.err(format!("arg#{i} doesn't point to a map value"));
                    }
                    // process_task_work_func
                    self.check_map_field_pointer(regno, &reg, "bpf_task_work")?;
                    meta.wq_map = Some((reg.map, reg.map_uid));
                }
                PtrArg::ConstStr => {
                    if reg.ty != RegType::MapValue || reg.maybe_null() {
                        return self.err(format!("arg#{i} doesn't point to a const string"));
                    }
                    self.check_reg_const_str(regno, &reg)?;
                }
                PtrArg::Unmodelled(what) => {
                    return self.unsupported(format!("{what} arguments of kfunc {}", meta.name));
                }
            }
            i += 1;
        }
        if release && meta.release_regno == 0 {
            return self.err(format!(
                "release kernel function {} expects refcounted PTR_TO_BTF_ID",
                meta.name
            ));
        }
        Ok(())
    }

    /// A `__map` argument (KF_ARG_PTR_TO_MAP). The kernel first asks for the
    /// register's map, a field it shares with a BTF pointer's type, so BTF
    /// pointers pass that test and then must point to a struct bpf_map.
    /// Register kinds whose shared field holds something else are refused.
    #[allow(clippy::too_many_arguments)]
    fn check_kfunc_map_arg(
        &mut self,
        btf: &Btf,
        meta: &KfuncMeta,
        i: usize,
        regno: u8,
        reg: &Reg,
        trusted: bool,
        rcu: bool,
    ) -> VResult<()> {
        match reg.ty {
            // Their register state holds no map (a stack pointer's is
            // zeroed from r10 on).
            RegType::Scalar | RegType::Stack => {
                return self.err(format!("pointer in R{regno} isn't map pointer"))
            }
            RegType::MapPtr | RegType::MapValue | RegType::MapKey | RegType::BtfId => {}
            other => {
                return self.unsupported(format!(
                    "a {} pointer as the map argument of kfunc {}",
                    other.name(),
                    meta.name
                ))
            }
        }
        // A workqueue argument names its map: this one must be the same,
        // down to the lookup of an inner map (map_uid).
        if let Some((wq_map, wq_uid)) = meta.wq_map {
            if reg.ty == RegType::BtfId {
                // The kernel would read the BTF pointer's type as a map.
                return self.unsupported(format!(
                    "a BTF pointer as the map argument of kfunc {} after a workqueue",
                    meta.name
                ));
            }
            let fields = self.map_fields(reg.map);
            let has_task_work = fields.iter().any(|f| f.name == "bpf_task_work");
            let has_wq = fields.iter().any(|f| f.name == "bpf_wq");
            if (has_wq || has_task_work) && (wq_map != reg.map || wq_uid != reg.map_uid) {
                // The message names the map argument's field, whichever
                // kfunc it is.
                if has_task_work {
                    return self.err(format!(
                        "bpf_task_work pointer in R2 map_uid={wq_uid} doesn't match map pointer in R3 map_uid={}",
                        reg.map_uid
                    ));
                }
                return self.err(format!(
                    "workqueue pointer in R1 map_uid={wq_uid} doesn't match map pointer in R2 map_uid={}",
                    reg.map_uid
                ));
            }
        }
        // Map values and keys belong to a map but are no BTF pointer: they
        // are untrusted, and then not a struct bpf_map.
        self.require_trusted_or_rcu(regno, reg, is_trusted_reg(reg), (trusted, rcu))?;
        let at = crate::helpers::ArgType {
            base: crate::helpers::ArgBase::PtrToBtfId,
            flags: crate::helpers::TypeFlags::default(),
        };
        self.check_func_arg_reg_off(regno, reg, at)?;
        if matches!(reg.ty, RegType::MapValue | RegType::MapKey) {
            let ts = reg.type_str();
            return self.err(format!("arg#{i} is {ts} expected {ts} or socket"));
        }
        let Some(need) = btf.find_by_name_kind("bpf_map", Kind::Struct) else {
            return self.unsupported("kfunc map arguments without struct bpf_map in kernel BTF");
        };
        match btf.type_by_id(need) {
            Some(need_t) => self.check_kfunc_btf_type(btf, meta, i, reg, need, need_t),
            None => self.unsupported("kfunc map arguments without struct bpf_map in kernel BTF"),
        }
    }

    /// A KF_TRUSTED_ARGS or KF_RCU kfunc's pointer argument must be
    /// trusted (`is_trusted`), or for KF_RCU an RCU-protected pointer.
    fn require_trusted_or_rcu(
        &self,
        regno: u8,
        reg: &Reg,
        is_trusted: bool,
        (trusted, rcu): (bool, bool),
    ) -> VResult<()> {
        if !(trusted || rcu) || is_trusted {
            return Ok(());
        }
        if !rcu {
            return self.err(format!("R{regno} must be referenced or trusted"));
        }
        if reg.flags & flag::RCU == 0 {
            return self.err(format!("R{regno} must be a rcu pointer"));
        }
        Ok(())
    }

    /// A pointer into the program's BTF (an allocated object, a loaded
    /// per-CPU or untrusted kptr) as a kfunc's BTF pointer argument: it
    /// passes the trust, offset and modifier checks as any BTF pointer,
    /// then matches no kernel struct (process_kf_arg_ptr_to_btf_id compares
    /// types of different BTFs).
    #[allow(clippy::too_many_arguments)]
    fn check_prog_btf_kfunc_arg(
        &self,
        btf: &Btf,
        meta: &KfuncMeta,
        i: usize,
        regno: u8,
        reg: &Reg,
        need_t: &BtfType,
        (trusted, rcu, release): (bool, bool, bool),
    ) -> VResult<()> {
        self.require_trusted_or_rcu(regno, reg, is_trusted_reg(reg), (trusted, rcu))?;
        let at = crate::helpers::ArgType {
            base: crate::helpers::ArgBase::PtrToBtfId,
            flags: if release && reg.ref_obj_id != 0 {
                crate::helpers::TypeFlags::OBJ_RELEASE
            } else {
                crate::helpers::TypeFlags::default()
            },
        };
        self.check_func_arg_reg_off(regno, reg, at)?;
        self.check_btf_arg_modifiers(i, reg)?;
        let Some(prog_btf) = self.obj.btf.as_ref() else {
            return self.unsupported("pointers into program BTF without program BTF");
        };
        let reg_t = prog_btf.skip_mods_and_typedefs(reg.aux).map(|(_, t)| t);
        let reg_name = reg_t.map_or("", |t| prog_btf.name(t));
        let need_name = btf.name(need_t);
        if matches!(
            (need_name, reg_name),
            ("__sk_buff", "sk_buff") | ("xdp_md", "xdp_buff")
        ) {
            return self.unsupported("a program type named as a kernel context struct");
        }
        self.err(format!(
            "kernel function {} args#{i} expected pointer to {} {need_name} but R{regno} has a pointer to {} {reg_name}",
            meta.name,
            kind_str(need_t),
            reg_t.map_or(String::new(), kind_str),
        ))
    }

    /// A BTF pointer argument (KF_ARG_PTR_TO_BTF_ID) with a modifier other
    /// than the trusted ones passes only when RCU-protected; map and socket
    /// pointers stand for their kernel structs and always pass.
    fn check_btf_arg_modifiers(&self, i: usize, reg: &Reg) -> VResult<()> {
        if !reg.ty.is_btf_id() || !has_unsafe_modifiers(reg) || reg.flags & flag::RCU != 0 {
            return Ok(());
        }
        let expected = if reg.flags & flag::TRUSTED != 0 {
            "trusted_ptr_"
        } else {
            "ptr_"
        };
        self.err(format!(
            "arg#{i} is {} expected {expected} or socket",
            reg.type_str()
        ))
    }

    /// The struct a BTF pointer argument points to must be the parameter's
    /// (process_kf_arg_ptr_to_btf_id): the same type, one that starts with
    /// it, or the kernel type of a context projection (`__sk_buff`).
    fn check_kfunc_btf_type(
        &self,
        btf: &Btf,
        meta: &KfuncMeta,
        i: usize,
        reg: &Reg,
        need: u32,
        need_t: &BtfType,
    ) -> VResult<()> {
        let Some(reg_id) = reg_btf_struct(btf, reg) else {
            return Ok(());
        };
        let need_name = btf.name(need_t);
        let reg_name = btf.name_of(reg_id);
        let strict = (meta.has(KfuncFlags::RELEASE) && reg.ref_obj_id != 0)
            || nocast_alias(reg_name, need_name);
        let same = (reg.off == 0 && reg_id == need)
            || (!strict
                && reg.off >= 0
                && crate::btf_walk::nested_struct_match(btf, reg_id, reg.off as u32, need));
        let projection = matches!(
            (need_name, reg_name),
            ("__sk_buff", "sk_buff") | ("xdp_md", "xdp_buff")
        );
        if same || projection {
            return Ok(());
        }
        let reg_kind = btf.type_by_id(reg_id).map_or(String::new(), kind_str);
        self.err(format!(
            "kernel function {} args#{i} expected pointer to {} {need_name} but R{} has a pointer to {reg_kind} {reg_name}",
            meta.name,
            kind_str(need_t),
            i + 1
        ))
    }

    /// Memory a kfunc may both read and write (check_mem_reg); NULL passes.
    pub(crate) fn check_kfunc_mem(&mut self, regno: u8, size: u64, zero_ok: bool) -> VResult<()> {
        if self.cur.reg(regno).is_null_const() {
            return Ok(());
        }
        self.check_kfunc_mem_maybe_null(regno, size, zero_ok)
    }

    /// Memory of a memory/size pair (check_kfunc_mem_size_reg): a maybe-NULL
    /// pointer is checked as if not NULL, but a NULL constant is not let
    /// through (only a zero size allows it).
    fn check_kfunc_mem_maybe_null(&mut self, regno: u8, size: u64, zero_ok: bool) -> VResult<()> {
        let reg = *self.cur.reg(regno);
        self.cur.reg_mut(regno).flags &= !flag::MAYBE_NULL;
        self.in_kfunc_mem_arg = true;
        let res = self
            .check_helper_mem(regno, size, Access::Read, zero_ok, false)
            .and_then(|()| self.check_helper_mem(regno, size, Access::Write, zero_ok, false));
        self.in_kfunc_mem_arg = false;
        *self.cur.reg_mut(regno) = reg;
        res
    }

    /// bpf_rcu_read_lock/unlock and bpf_preempt_disable/enable regions.
    fn kfunc_lock_regions(&mut self, meta: &KfuncMeta, sleepable: bool) -> VResult<()> {
        let name = meta.name.as_str();
        let (rcu_lock, rcu_unlock) = (name == "bpf_rcu_read_lock", name == "bpf_rcu_read_unlock");
        if self.cur.active_rcu_lock {
            if self.in_rbtree_cb() && (rcu_lock || rcu_unlock) {
                return self
                    .err("Calling bpf_rcu_read_{lock,unlock} in unnecessary rbtree callback");
            }
            if rcu_lock {
                return self.err(format!("nested rcu read lock (kernel function {name})"));
            } else if rcu_unlock {
                let untrust = |r: &mut Reg| {
                    if r.flags & flag::RCU != 0 {
                        r.flags &= !(flag::RCU | flag::MAYBE_NULL);
                        r.flags |= flag::UNTRUSTED;
                    }
                };
                self.cur.for_each_reg_mut(untrust);
                // RCU-protected iterators on the stack lose their protection
                // too: their next/destroy then want an RCU CS again.
                for fr in &mut self.cur.frames {
                    for s in &mut fr.stack {
                        if s.types[crate::state::REG_SIZE - 1] == crate::state::SlotType::Iter {
                            untrust(&mut s.spilled);
                        }
                    }
                }
                self.cur.active_rcu_lock = false;
            } else if sleepable {
                return self.err(format!(
                    "kernel func {name} is sleepable within rcu_read_lock region"
                ));
            }
        } else if rcu_lock {
            self.cur.active_rcu_lock = true;
        } else if rcu_unlock {
            return self.err(format!(
                "unmatched rcu read unlock (kernel function {name})"
            ));
        }
        let (disable, enable) = (name == "bpf_preempt_disable", name == "bpf_preempt_enable");
        if self.cur.active_preempt_locks > 0 {
            if disable {
                self.cur.active_preempt_locks += 1;
            } else if enable {
                self.cur.active_preempt_locks -= 1;
            } else if sleepable {
                return self.err(format!(
                    "kernel func {name} is sleepable within non-preemptible region"
                ));
            }
        } else if disable {
            self.cur.active_preempt_locks += 1;
        } else if enable {
            return self.err(format!(
                "unmatched attempt to enable preemption (kernel function {name})"
            ));
        }
        if self.cur.active_irq_id != 0 && sleepable {
            return self.err(format!(
                "kernel func {name} is sleepable within IRQ-disabled region"
            ));
        }
        // A sleepable program needs bpf_rcu_read_lock (or a held lock)
        // around kfuncs that walk RCU-protected lists.
        if meta
            .flags
            .contains(crate::helpers::kfuncs::KfuncFlags::RCU_PROTECTED)
            && !self.in_rcu_cs()
        {
            return self.err(format!(
                "kernel func {name} requires RCU critical section protection"
            ));
        }
        Ok(())
    }

    /// bpf_percpu_obj_new's own rules for the struct it allocates: small
    /// enough for the per-CPU allocator, scalars only, no special fields.
    fn check_percpu_obj_type(&mut self, id: u32) -> VResult<()> {
        /// BPF_GLOBAL_PERCPU_MA_MAX_SIZE
        const MAX_SIZE: u32 = 512;
        let Some(btf) = self.obj.btf.as_ref() else {
            return Ok(());
        };
        let Some(t) = btf.type_by_id(id) else {
            return Ok(());
        };
        if t.size_or_type > MAX_SIZE {
            return self.err(format!(
                "bpf_percpu_obj_new type size ({}) is greater than {MAX_SIZE}",
                t.size_or_type as i32
            ));
        }
        if !is_scalar_struct(btf, t, 0) {
            return self.err("bpf_percpu_obj_new type ID argument must be of a struct of scalars");
        }
        if !self.alloc_record(id)?.is_empty() {
            return self.err("bpf_percpu_obj_new type ID argument must not contain special fields");
        }
        Ok(())
    }

    /// R0 from the prototype's return type.
    fn set_kfunc_return(&mut self, btf: &Btf, proto: &BtfType, meta: &KfuncMeta) -> VResult<()> {
        let name = meta.name.as_str();
        let ret = btf.skip_mods_and_typedefs(proto.size_or_type);
        let ret_ptr = ret.filter(|(_, t)| t.kind == Kind::Ptr);
        let pointee = ret_ptr.and_then(|(_, t)| btf.skip_mods_and_typedefs(t.size_or_type));
        let returns_struct = pointee.is_some_and(|(_, t)| t.kind == Kind::Struct);
        if meta.has(KfuncFlags::ACQUIRE) && !returns_struct {
            // The kernel's exceptions are the allocators of program-typed
            // objects (graph.rs).
            let r0 = match name {
                "bpf_obj_new_impl" => self.obj_new_r0(meta)?,
                "bpf_refcount_acquire_impl" => self.refcount_acquire_r0(&meta.graph)?,
                "bpf_percpu_obj_new_impl" => {
                    // Its type id is checked as bpf_obj_new_impl's first.
                    let id = self.obj_new_type_id(meta)?;
                    self.check_percpu_obj_type(id)?;
                    let mut r0 = Reg::pointer(RegType::Alloc);
                    r0.aux = id;
                    r0.flags = flag::PERCPU;
                    r0
                }
                _ if ALLOCATED_OBJECT_KFUNCS.contains(&name) => {
                    return Err(VerifyError::unsupported(
                        Some(self.insn_idx),
                        format!("{name}: per-CPU allocated objects"),
                    ));
                }
                _ => return self.err("acquire kernel function does not return PTR_TO_BTF_ID"),
            };
            // refcount_acquire of an owning reference cannot fail.
            let ret_null = meta.has(KfuncFlags::RET_NULL) && !meta.graph.arg_owning_ref;
            return self.finish_kfunc_r0(r0, meta, ret_null);
        }
        let Some((_, rt)) = ret.filter(|_| proto.size_or_type != 0) else {
            // void: R0 stays unreadable.
            return Ok(());
        };
        if is_scalar(rt) {
            // A lock taken returns 0 (the failure was queued at the call).
            *self.cur.reg_mut(0) = if RES_LOCK_ACQUIRE.contains(&name) {
                Reg::known(0)
            } else {
                Reg::unknown_scalar()
            };
            return Ok(());
        }
        if rt.kind != Kind::Ptr {
            return self.err(format!(
                "kernel function {name} returns {} is not supported",
                kind_str(rt)
            ));
        }
        if name == "bpf_cast_to_kern_ctx" {
            // The kernel's own context behind the program's (__sk_buff ->
            // sk_buff, xdp_md -> xdp_buff ...), as a trusted pointer.
            let id = match kern_ctx_type(btf, self.prog.prog_type) {
                Ok(id) => id,
                Err(id) => return self.err(format!("kern ctx type id {id} is not a struct")),
            };
            let mut r0 = Reg::pointer(RegType::BtfId);
            r0.aux = id;
            r0.flags |= flag::TRUSTED;
            *self.cur.reg_mut(0) = r0;
            return Ok(());
        }
        if name == "bpf_rdonly_cast" {
            // A kernel object of the type the constant names, read through
            // probe loads; `void` gives untrusted memory, not modelled.
            // The constant is looked up as a u32 type id (truncated) and
            // printed signed.
            let value = meta.arg_constant.unwrap_or(0);
            let id = value as u32;
            let target = btf.type_by_id(id);
            return match target {
                // A struct or a union (btf_type_is_struct).
                Some(t) if matches!(t.kind, Kind::Struct | Kind::Union) => {
                    let mut r0 = Reg::pointer(RegType::BtfId);
                    r0.aux = id;
                    r0.flags |= flag::UNTRUSTED;
                    *self.cur.reg_mut(0) = r0;
                    Ok(())
                }
                // void: read-only untrusted memory of no known size.
                _ if id == 0 || target.is_some_and(|t| t.kind == Kind::Void) => {
                    let mut r0 = Reg::pointer(RegType::Mem);
                    r0.flags |= flag::RDONLY | flag::UNTRUSTED;
                    *self.cur.reg_mut(0) = r0;
                    Ok(())
                }
                Some(_) => {
                    self.err("kfunc bpf_rdonly_cast type ID argument must be of a struct or void")
                }
                None => self.err(format!(
                    "Unknown type ID {} passed to kfunc bpf_rdonly_cast",
                    value as i64
                )),
            };
        }
        if name == "bpf_dynptr_slice" || name == "bpf_dynptr_slice_rdwr" {
            return self.set_dynptr_slice_return(meta);
        }
        const DYNAMIC_RETURN: [&str; 7] = [
            "bpf_obj_new_impl",
            "bpf_percpu_obj_new_impl",
            "bpf_refcount_acquire_impl",
            "bpf_list_pop_front",
            "bpf_list_pop_back",
            "bpf_rbtree_remove",
            "bpf_rbtree_first",
        ];
        if let Some((_, pt)) = pointee.filter(|_| is_graph_kfunc(name)) {
            // A node of a graph: the object that holds it (mark_reg_graph_node).
            let r0 = self.graph_node_r0(btf.name(pt), &meta.graph)?;
            return self.finish_kfunc_r0(r0, meta, meta.has(KfuncFlags::RET_NULL));
        }
        if DYNAMIC_RETURN.contains(&name) {
            return self.unsupported(format!("the return type of kernel function {name}"));
        }
        let r0 = match pointee {
            None => {
                // `void *` is a scalar to the program.
                *self.cur.reg_mut(0) = Reg::unknown_scalar();
                return Ok(());
            }
            Some((_, pt)) if pt.kind == Kind::Void => {
                *self.cur.reg_mut(0) = Reg::unknown_scalar();
                return Ok(());
            }
            Some((pid, pt)) if pt.kind != Kind::Struct => {
                let size = meta
                    .r0_size
                    .or_else(|| btf.resolve_size(pid).ok())
                    .filter(|s| *s != 0);
                let Some(size) = size else {
                    return self.err(format!(
                        "kernel function {name} returns pointer type {} {} is not supported",
                        kind_str(pt),
                        btf.name(pt)
                    ));
                };
                let rdonly = meta.r0_size.is_none() || meta.r0_rdonly;
                let mut r = Reg::pointer(RegType::Mem);
                r.aux = size.min(u32::MAX as u64) as u32;
                if rdonly {
                    r.flags |= flag::RDONLY;
                }
                // Memory that lives as long as the object it came from.
                r.ref_obj_id = meta.ref_obj_id;
                r
            }
            Some((pid, _)) => {
                let mut r = Reg::pointer(RegType::BtfId);
                r.aux = pid;
                if name == "bpf_get_kmem_cache" {
                    r.flags |= flag::UNTRUSTED;
                } else if meta.has(KfuncFlags::ITER_NEXT) {
                    r.flags |= if self.iter_slot_is_rcu(meta) {
                        flag::RCU
                    } else {
                        flag::TRUSTED
                    };
                }
                r
            }
        };
        let ret_null = meta.has(KfuncFlags::RET_NULL);
        self.finish_kfunc_r0(r0, meta, ret_null)
    }

    /// The end of a kfunc's R0: `_or_null` with an id for the NULL check,
    /// the reference an acquire kfunc takes, and an id for the lock of an
    /// allocated object that has one.
    fn finish_kfunc_r0(&mut self, mut r0: Reg, meta: &KfuncMeta, ret_null: bool) -> VResult<()> {
        if ret_null {
            r0.flags |= flag::MAYBE_NULL;
            r0.id = self.new_id();
        }
        if meta.has(KfuncFlags::ACQUIRE) {
            let rid = self.new_id();
            self.cur.refs.push(RefState {
                kind: RefKind::Ptr,
                id: rid,
                insn_idx: self.insn_idx,
                lock_ptr: 0,
            });
            if ret_null {
                r0.id = rid;
            }
            r0.ref_obj_id = rid;
        } else if r0.ty == RegType::Alloc && is_graph_kfunc(&meta.name) {
            self.set_non_owning(&mut r0)?;
        }
        if r0.ty == RegType::Alloc && r0.id == 0 && self.alloc_has_spin_lock(r0.aux) {
            r0.id = self.new_id();
        }
        *self.cur.reg_mut(0) = r0;
        Ok(())
    }

    /// bpf_dynptr_slice(_rdwr): memory of the constant size asked for,
    /// tied to the dynptr (its kind is part of the type, so packet slices
    /// go with packet pointers), read-only unless the program may write
    /// packets, and maybe NULL.
    fn set_dynptr_slice_return(&mut self, meta: &KfuncMeta) -> VResult<()> {
        let (Some(size), Some(d)) = (meta.arg_constant, meta.initialized_dynptr) else {
            return self.err("verifier internal error: bpf_dynptr_slice(_rdwr) no constant size");
        };
        let mut r0 = Reg::pointer(RegType::Mem);
        r0.aux = size as u32;
        r0.flags = d.kind.slice_flag();
        if meta.name == "bpf_dynptr_slice" {
            r0.flags |= flag::RDONLY;
        } else if !crate::ctx::packet::direct_write_allowed(self.prog_type) {
            return self.err("the prog does not allow writes to packet data");
        }
        if d.id == 0 {
            return self.err("verifier internal error: no dynptr id");
        }
        r0.dynptr_id = d.id;
        r0.flags |= flag::MAYBE_NULL;
        r0.id = self.new_id();
        *self.cur.reg_mut(0) = r0;
        Ok(())
    }
}

/// Whether one struct name is the other with the `___init` suffix (the
/// kernel's btf_type_ids_nocast_alias): such a pair, like nf_conn and
/// nf_conn___init, must match exactly, not through the first member.
fn nocast_alias(a: &str, b: &str) -> bool {
    const SUFFIX: &str = "___init";
    let (short, long) = if a.len() < b.len() { (a, b) } else { (b, a) };
    long.len() == short.len() + SUFFIX.len() && long.starts_with(short) && long.ends_with(SUFFIX)
}

/// is_trusted_reg: referenced; or without a modifier other than the trusted
/// ones (PTR_TRUSTED, NON_OWN_REF) and either a map or socket pointer (the
/// kernel structs of reg2btf_ids), an allocated object (MEM_ALLOC, itself
/// trusted) or a BTF pointer marked trusted.
fn is_trusted_reg(reg: &Reg) -> bool {
    if reg.ref_obj_id != 0 {
        return true;
    }
    if has_unsafe_modifiers(reg) {
        return false;
    }
    match reg.ty {
        RegType::MapPtr | RegType::Alloc => true,
        RegType::BtfId | RegType::LocalBtfId => reg.flags != 0,
        t => t.is_sock(),
    }
}

/// bpf_type_has_unsafe_modifiers: a flag other than PTR_TRUSTED and
/// NON_OWN_REF (MEM_ALLOC is a register type here).
fn has_unsafe_modifiers(reg: &Reg) -> bool {
    reg.flags & !(flag::TRUSTED | flag::NON_OWN_REF) != 0
}

/// The argument type check_func_arg_reg_off sees for an allocated-object
/// or graph argument: a release of a referenced one must be at offset 0.
fn graph_arg_type(release: bool, reg: &Reg) -> crate::helpers::ArgType {
    crate::helpers::ArgType {
        base: crate::helpers::ArgBase::PtrToBtfId,
        flags: if release && reg.ref_obj_id != 0 {
            crate::helpers::TypeFlags::OBJ_RELEASE
        } else {
            crate::helpers::TypeFlags::default()
        },
    }
}

/// The kernel context type behind a program type's context: the `_kern`
/// member of vmlinux's `struct bpf_ctx_convert` for the type
/// (get_kern_ctx_btf_id). Err with the member's type id when that is not
/// a struct (tracing programs, whose context is `void *`), or 0 when the
/// BTF has no such member.
fn kern_ctx_type(btf: &Btf, prog_type: bpfvet_isa::uapi::ProgType) -> Result<u32, u32> {
    let member = prog_type
        .name()
        .map(|n| format!("BPF_PROG_TYPE_{}_kern", n.to_uppercase()));
    let m = btf
        .find_by_name_kind("bpf_ctx_convert", Kind::Struct)
        .and_then(|id| btf.type_by_id(id))
        .and_then(|t| {
            btf.members(t)
                .iter()
                .find(|m| btf.str_at(m.name_off) == member.as_deref())
        })
        .ok_or(0u32)?;
    match btf.skip_mods_and_typedefs(m.type_id) {
        Some((id, kt)) if kt.kind == Kind::Struct => Ok(id),
        _ => Err(m.type_id),
    }
}

/// The checks the kernel makes on every kfunc call when it collects them
/// before exploring (add_kfunc_call), so calls on dead paths fail too: a
/// GPL-compatible license, a vmlinux FUNC with a prototype, an address,
/// and no device-bound kfunc (programs here are never device-bound). Stops
/// at the first bpf-to-bpf call or callback with an invalid destination
/// or past the subprogram limit: the kernel reports that one first (cfg.rs
/// does), before it looks for the exception callback. Whether the pass
/// went through to the end.
pub fn check_kfunc_calls(
    obj: &bpfvet_object::Object,
    prog: &bpfvet_object::Program,
) -> Result<bool, VerifyError> {
    use bpfvet_isa::opcode::{BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC, BPF_PSEUDO_KFUNC_CALL};
    let n = prog.insns.len() as i64;
    let mut first = true;
    // Function starts met so far: the one past the limit is reported
    // first too (cfg.rs does), as the kernel collects both in one pass.
    let mut starts = std::collections::BTreeSet::from([0i64]);
    // BTF ids of the vmlinux kfuncs with a descriptor so far.
    let mut descs = std::collections::HashSet::new();
    for (i, ins) in prog.insns.iter().enumerate() {
        let is_call = ins.code == 0x85;
        if (is_call && ins.src == BPF_PSEUDO_CALL)
            || (ins.is_ld_imm64() && ins.src == BPF_PSEUDO_FUNC)
        {
            let t = i as i64 + ins.imm as i64 + 1;
            if t < 0 || t >= n {
                return Ok(false);
            }
            if !starts.contains(&t) && starts.len() >= crate::cfg::MAX_SUBPROGS {
                return Ok(false);
            }
            starts.insert(t);
            continue;
        }
        if !is_call || ins.src != BPF_PSEUDO_KFUNC_CALL {
            continue;
        }
        let err = |msg: String| Err(VerifyError::new(Some(i), msg));
        if std::mem::take(&mut first) {
            // add_kfunc_call's first call sets up the program's kfunc table.
            if !crate::kernel_config::jit_enabled() {
                return err("JIT is required for calling kernel function".into());
            }
            if !crate::check_call::license_is_gpl(obj.license_of(prog)) {
                return err("cannot call kernel function from non-GPL compatible program".into());
            }
        }
        if ins.imm == 0 && ins.off == 0 {
            // Left for dead-code elimination (an explored one fails).
            continue;
        }
        // A module kfunc names its BTF by fd_array index. The loaders here
        // put maps, program BTF copies or invalid fds there, never a
        // module's BTF (they hold none open): whatever the index reads,
        // even past the array's end, the kernel finds no module BTF.
        if ins.off != 0 {
            return err("failed to find BTF for kernel function".into());
        }
        // The kernel keeps one descriptor per distinct kfunc, at most 256.
        if descs.contains(&ins.imm) {
            continue;
        }
        if descs.len() == MAX_KFUNC_DESCS {
            return err("too many different kernel function calls".into());
        }
        let Some(btf) = vmlinux() else {
            return Err(VerifyError::unsupported(
                Some(i),
                "kfunc calls without kernel BTF to resolve them".into(),
            ));
        };
        let (name, proto) = match resolve(btf, ins.imm as u32) {
            Ok(x) => x,
            Err(e) => return err(e),
        };
        // The kernel wants every callee's address, kfunc or not (a call of
        // a function that is no kfunc fails where it is explored). The
        // kfuncs of bpfvet's table are registered, never-inlined kernel
        // functions, always in kallsyms: only other names need the (slow)
        // read of /proc/kallsyms.
        let has_address = if kfunc(name).is_some() {
            Some(true)
        } else {
            crate::ksym::kernel_symbol_exists(name)
        };
        match has_address {
            Some(true) => {}
            Some(false) => return err(format!("cannot find address for kernel function {name}")),
            None => {
                return Err(VerifyError::unsupported(
                    Some(i),
                    format!("the address of kernel function {name} (kallsyms unreadable)"),
                ))
            }
        }
        if crate::helpers::kfuncs::DEV_BOUND_KFUNCS.contains(&name) {
            return err("metadata kfuncs require device-bound program".into());
        }
        if let Some(msg) = distill_func_proto_error(btf, proto, name) {
            return err(msg);
        }
        descs.insert(ins.imm);
    }
    Ok(true)
}

/// Distinct kfuncs one program may call (MAX_KFUNC_DESCS).
const MAX_KFUNC_DESCS: usize = 256;

/// The most arguments a kernel function may take (MAX_BPF_FUNC_ARGS).
const MAX_KERNEL_FUNC_ARGS: usize = 12;

/// btf_distill_func_proto's error for a kernel function whose prototype
/// the calling convention cannot take: too many arguments, a struct or
/// non-integer return, varargs, a void or over-16-byte argument.
fn distill_func_proto_error(btf: &Btf, proto: &BtfType, name: &str) -> Option<String> {
    let params = btf.params(proto);
    if params.len() > MAX_KERNEL_FUNC_ARGS {
        return Some(format!(
            "The function {name} has {} arguments. Too many.",
            params.len()
        ));
    }
    // __get_type_size: the size the calling convention passes, -1 for a
    // kind it cannot pass; and the kind's name (UNKNOWN for void).
    let sized = |id: u32| -> (i64, &'static str, Kind) {
        if id == 0 {
            return (0, "UNKNOWN", Kind::Void);
        }
        match btf.skip_mods_and_typedefs(id) {
            None => (-1, "UNKNOWN", Kind::Void),
            Some((_, t)) => match t.kind {
                Kind::Ptr => (8, "PTR", t.kind),
                Kind::Int | Kind::Enum | Kind::Enum64 | Kind::Struct | Kind::Union => {
                    (t.size_or_type as i64, t.kind.name(), t.kind)
                }
                k => (-1, k.name(), k),
            },
        }
    };
    let (size, kind, k) = sized(proto.size_or_type);
    if size < 0 || k.is_composite() {
        return Some(format!(
            "The function {name} return type {kind} is unsupported."
        ));
    }
    for (i, p) in params.iter().enumerate() {
        if i + 1 == params.len() && p.type_id == 0 {
            return Some(format!(
                "The function {name} with variable args is unsupported."
            ));
        }
        let (size, kind, _) = sized(p.type_id);
        if !(0..=16).contains(&size) {
            return Some(format!(
                "The function {name} arg{i} type {kind} is unsupported."
            ));
        }
        if size == 0 {
            return Some(format!("The function {name} has malformed void argument."));
        }
    }
    None
}
