//! Global (non-static) functions: verified once on their own, with
//! arguments typed from their BTF signature, and treated as returning an
//! unknown scalar at every call site (the kernel's do_check_subprogs and
//! btf_prepare_func_args / btf_check_subprog_call).

use crate::error::VResult;
use crate::explore::Env;
use crate::regs::{flag, Reg, RegType};
use crate::state::{Frame, State};
use bpfvet_object::btf::Kind;

/// Context struct names: a pointer to one of these is the program's ctx.
const CTX_STRUCTS: [&str; 15] = [
    "__sk_buff",
    "xdp_md",
    "bpf_sock_ops",
    "sk_msg_md",
    "bpf_sock",
    "bpf_sock_addr",
    "pt_regs",
    "bpf_perf_event_data",
    "bpf_raw_tracepoint_args",
    "bpf_sysctl",
    "bpf_sockopt",
    "sk_reuseport_md",
    "bpf_sk_lookup",
    "bpf_cgroup_dev_ctx",
    "bpf_nf_ctx",
];

/// What a global function's argument is, from its BTF type.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ArgKind {
    Scalar,
    Ctx,
    /// Memory of this many bytes, possibly NULL.
    Mem(u32),
    /// `struct bpf_dynptr *`: an initialised dynptr, read-only in the callee.
    Dynptr,
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
            .map(|p| {
                let Some((_, t)) = btf.skip_mods_and_typedefs(p.type_id) else {
                    return ArgKind::Unsupported;
                };
                match t.kind {
                    Kind::Int | Kind::Enum | Kind::Enum64 => ArgKind::Scalar,
                    Kind::Ptr => match btf.skip_mods_and_typedefs(t.size_or_type) {
                        Some((_, pt))
                            if pt.kind == Kind::Struct && CTX_STRUCTS.contains(&btf.name(pt)) =>
                        {
                            ArgKind::Ctx
                        }
                        Some((_, pt))
                            if pt.kind == Kind::Struct && btf.name(pt) == "bpf_dynptr" =>
                        {
                            ArgKind::Dynptr
                        }
                        Some((id, _)) => match btf.resolve_size(id) {
                            Ok(sz) if sz > 0 => ArgKind::Mem(sz as u32),
                            _ => ArgKind::Unsupported,
                        },
                        None => ArgKind::Unsupported,
                    },
                    _ => ArgKind::Unsupported,
                }
            })
            .collect()
    }

    /// The call site's arguments must match the callee's signature; a
    /// mismatch ends in "Caller passes invalid args" (btf_check_subprog_call).
    pub fn check_global_call_args(&mut self, subprog: usize) -> VResult<()> {
        for (i, k) in self.global_args(subprog).into_iter().enumerate().take(5) {
            let regno = (i + 1) as u8;
            self.check_read(regno)?;
            if let Err(e) = self.check_global_call_arg(i, k) {
                if e.unsupported || e.limit.is_some() {
                    return Err(e);
                }
                self.log.line(&e.msg);
                return self.err(format!(
                    "Caller passes invalid args into func#{subprog} ('{}')",
                    self.subprog_name(subprog)
                ));
            }
        }
        Ok(())
    }

    /// One argument of a global call (btf_check_func_arg_match).
    fn check_global_call_arg(&mut self, i: usize, k: ArgKind) -> VResult<()> {
        let regno = (i + 1) as u8;
        let r = *self.cur.reg(regno);
        {
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
                ArgKind::Dynptr => self.check_global_dynptr_arg(regno)?,
                ArgKind::Mem(size) => {
                    // Memory the callee may read and write (check_mem_reg).
                    self.check_arg_reg_off(regno, &r)?;
                    self.check_kfunc_mem(regno, size as u64, true)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// check_func_arg_reg_off for an argument of no particular type:
    /// memory pointers may carry any offset, BTF pointers a fixed one,
    /// the rest none.
    fn check_arg_reg_off(&self, regno: u8, r: &Reg) -> VResult<()> {
        let any_off = matches!(
            r.ty,
            RegType::Stack
                | RegType::Packet
                | RegType::PacketMeta
                | RegType::MapKey
                | RegType::MapValue
                | RegType::Mem
                | RegType::TpBuffer
                | RegType::Scalar
        );
        if any_off {
            return Ok(());
        }
        let ts = r.type_str();
        if r.off < 0 {
            return self.err(format!(
                "negative offset {ts} ptr R{regno} off={} disallowed",
                r.off
            ));
        }
        if r.ty != RegType::BtfId && r.off != 0 {
            return self.err(format!(
                "dereference of modified {ts} ptr R{regno} off={} disallowed",
                r.off
            ));
        }
        if !r.v.is_const() || r.v.const_value() != 0 {
            return self.err(format!(
                "variable {ts} access var_off={} disallowed",
                crate::check_alu::tnum_str(&r.v)
            ));
        }
        Ok(())
    }

    /// Verifies every global function the main program called, each from
    /// a fresh state.
    pub fn check_global_subprogs(&mut self) -> VResult<()> {
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
                    ArgKind::Scalar | ArgKind::Unsupported => Reg::unknown_scalar(),
                    ArgKind::Ctx => Reg::pointer(RegType::Ctx),
                    ArgKind::Dynptr => self.const_local_dynptr(),
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
            self.cur = st;
            self.log.start_pass();
            self.log.scratch_all();
            let name = self.subprog_name(k);
            if self.log.level >= 1 {
                self.log.line(&format!("Validating {name}() func#{k}..."));
            }
            self.insn_idx = self.cfg.subprogs[k].start;
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
