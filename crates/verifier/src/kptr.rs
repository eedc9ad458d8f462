//! The rules for kptr fields of map values (found by map_record): loads
//! and stores at a kptr field (check_map_kptr_access), values stored or
//! exchanged into one (map_kptr_match_type), and the destination of
//! `bpf_kptr_xchg` (process_kptr_func).
//!
//! Modelled: kptrs to vmlinux structs (`__kptr`, `__kptr_untrusted`),
//! loads marked untrusted or RCU-protected as the kernel does, stores of
//! NULL or of a matching unreferenced pointer, loads of uptrs; kptrs to
//! objects of the program's BTF (`__kptr` to bpf_obj_new's objects,
//! `__percpu_kptr` to bpf_percpu_obj_new's): loads and bpf_kptr_xchg.
//! Refused by name: kptrs to module types, unreferenced kptrs to program
//! types, per-CPU kptrs to kernel structs.

use crate::check_alu::tnum_str;
use crate::error::{VResult, VerifyError};
use crate::explore::Env;
use crate::helpers::kfuncs::RCU_PROTECTED_KPTR_TYPES;
use crate::map_record::{Field, KptrKind};
use crate::regs::{flag, Reg, RegType};
use bpfvet_isa::opcode::{BPF_LDX, BPF_MEM, BPF_ST, BPF_STX};

impl Env<'_> {
    /// The name of the struct a kptr field points to.
    fn kptr_struct_name(&self, f: &Field) -> String {
        let Some(k) = f.kptr else {
            return String::new();
        };
        match (k.target, crate::btf_walk::vmlinux()) {
            (Some(t), Some(v)) => v.name_of(t).to_string(),
            _ => self
                .obj
                .btf
                .as_ref()
                .and_then(|b| b.type_by_id(k.btf_id).map(|t| b.name(t).to_string()))
                .unwrap_or_default(),
        }
    }

    fn unmodelled<T>(&self, what: String) -> VResult<T> {
        Err(VerifyError::unsupported(Some(self.insn_idx), what))
    }

    /// check_map_kptr_access: a load or store at a kptr field. `value`
    /// is the loaded-into or stored register (None for BPF_ST).
    pub fn check_map_kptr_access(&mut self, f: &Field, value: Option<u8>) -> VResult<()> {
        let insn = self.insns[self.insn_idx];
        let class = insn.code & 0x07;
        let Some(k) = f.kptr else {
            return Ok(());
        };
        let (kind, target) = (&k.kind, k.target);
        let name = self.kptr_struct_name(f);
        if insn.code & 0xe0 != BPF_MEM {
            return self.err("kptr in map can only be accessed using BPF_MEM instruction mode");
        }
        if class != BPF_LDX && matches!(kind, KptrKind::Ref | KptrKind::Percpu) {
            return self.err("store to referenced kptr disallowed");
        }
        if class != BPF_LDX && *kind == KptrKind::Uptr {
            return self.err("store to uptr disallowed");
        }
        if *kind == KptrKind::Uptr {
            // mark_uptr_ld_reg: the user memory the field pins, or NULL,
            // as big as the program's struct it points to.
            let Some(d) = value.filter(|_| class == BPF_LDX) else {
                return Ok(());
            };
            let size = self
                .obj
                .btf
                .as_ref()
                .and_then(|b| b.type_by_id(k.btf_id))
                .map_or(0, |t| t.size_or_type);
            let mut r = Reg::pointer(RegType::Mem);
            r.aux = size;
            r.flags = flag::MAYBE_NULL;
            r.id = self.new_id();
            *self.cur.reg_mut(d) = r;
            return Ok(());
        }
        if class == BPF_LDX && *kind == KptrKind::Ref && k.local {
            return self.load_local_kptr(&k, value);
        }
        if class == BPF_LDX && *kind == KptrKind::Percpu {
            return self.load_percpu_kptr(&k, &name, value);
        }
        let Some(target) = target else {
            return self.unmodelled(format!(
                "kptrs to struct {name}, a type outside vmlinux BTF"
            ));
        };
        match class {
            BPF_LDX => {
                let Some(d) = value else { return Ok(()) };
                let mut r = Reg::pointer(RegType::BtfId);
                r.aux = target;
                r.flags = flag::MAYBE_NULL;
                let rcu_safe =
                    *kind == KptrKind::Ref && RCU_PROTECTED_KPTR_TYPES.contains(&name.as_str());
                r.flags |= if rcu_safe && self.in_rcu_cs() {
                    flag::RCU
                } else {
                    flag::UNTRUSTED
                };
                r.id = self.new_id();
                *self.cur.reg_mut(d) = r;
                Ok(())
            }
            BPF_STX => {
                let Some(v) = value else { return Ok(()) };
                let vr = *self.cur.reg(v);
                if vr.is_null_const() {
                    return self.mark_chain_precision(v);
                }
                self.kptr_match_type(f, v)
            }
            BPF_ST => {
                if insn.imm != 0 {
                    return self.err(format!(
                        "BPF_ST imm must be 0 when storing to kptr at off={}",
                        f.off
                    ));
                }
                Ok(())
            }
            _ => self.err("kptr in map can only be accessed using BPF_LDX/BPF_STX/BPF_ST"),
        }
    }

    /// A load of a referenced kptr to an object of the program's BTF
    /// (btf_ld_kptr_type): in an RCU read-side section the object,
    /// RCU-protected and maybe NULL, non-owning when it is a graph node;
    /// outside one, an untrusted pointer into the program's BTF.
    fn load_local_kptr(&mut self, k: &crate::map_record::Kptr, value: Option<u8>) -> VResult<()> {
        let Some(d) = value else { return Ok(()) };
        let mut r = if self.in_rcu_cs() {
            let rec = self.alloc_record(k.btf_id)?;
            let mut r = Reg::pointer(RegType::Alloc);
            r.flags = flag::RCU;
            if rec
                .iter()
                .any(|f| matches!(f.name, "bpf_list_node" | "bpf_rb_node"))
            {
                r.flags |= flag::NON_OWN_REF;
            }
            r
        } else {
            let mut r = Reg::pointer(RegType::LocalBtfId);
            r.flags = flag::UNTRUSTED;
            r
        };
        r.aux = k.btf_id;
        r.flags |= flag::MAYBE_NULL;
        r.id = self.new_id();
        *self.cur.reg_mut(d) = r;
        Ok(())
    }

    /// A load of a per-CPU kptr (btf_ld_kptr_type): in an RCU read-side
    /// section a per-CPU, RCU-protected pointer into the program's BTF,
    /// which only bpf_this_cpu_ptr / bpf_per_cpu_ptr may turn into memory;
    /// outside one, an untrusted pointer. Both maybe NULL.
    fn load_percpu_kptr(
        &mut self,
        k: &crate::map_record::Kptr,
        name: &str,
        value: Option<u8>,
    ) -> VResult<()> {
        let Some(d) = value else { return Ok(()) };
        if !k.local {
            return self.unmodelled(format!("per-CPU kptrs to struct {name}, a kernel type"));
        }
        let mut r = Reg::pointer(RegType::LocalBtfId);
        r.aux = k.btf_id;
        r.flags = flag::MAYBE_NULL;
        if self.in_rcu_cs() {
            // A graph node in the pointee would make it non-owning too.
            let rec = self.alloc_record(k.btf_id)?;
            if rec
                .iter()
                .any(|f| matches!(f.name, "bpf_list_node" | "bpf_rb_node"))
            {
                return self.unmodelled("per-CPU kptrs to types with a graph node".into());
            }
            r.flags |= flag::RCU | flag::PERCPU;
        } else {
            r.flags |= flag::UNTRUSTED;
        }
        r.id = self.new_id();
        *self.cur.reg_mut(d) = r;
        Ok(())
    }

    /// check_ptr_to_btf_access through a pointer into the program's BTF
    /// that is no allocation of the program's: per-CPU memory is not
    /// addressable that way, and the rest is read only, as the kernel
    /// reads it (probe loads). Returns the register a read gives.
    pub(crate) fn local_btf_access(
        &mut self,
        regno: u8,
        reg: &Reg,
        off: i32,
        size: u32,
        access: crate::check_mem::Access,
    ) -> VResult<Reg> {
        let Some(btf) = self.obj.btf.as_ref() else {
            return self.unmodelled("pointers into program BTF without program BTF".into());
        };
        let tname = btf.name_of(reg.aux).to_string();
        if off < 0 {
            return self.err(format!(
                "R{regno} is ptr_{tname} invalid negative access: off={off}"
            ));
        }
        if !reg.v.is_const() || reg.v.const_value() != 0 {
            return self.err(format!(
                "R{regno} is ptr_{tname} invalid variable offset: off={off}, var_off={}",
                tnum_str(&reg.v)
            ));
        }
        if reg.flags & flag::PERCPU != 0 {
            return self.err(format!(
                "R{regno} is ptr_{tname} access percpu memory: off={off}"
            ));
        }
        if access == crate::check_mem::Access::Write {
            // Congestion control's btf_struct_access refuses any struct
            // but tcp_sock with the verifier's own line; bpf_dummy_ops'
            // would name its state struct.
            if self.struct_ops.is_some_and(|so| !so.writes_only_tcp_sock()) {
                return self.unmodelled(
                    "stores through pointers into program BTF in struct_ops programs".into(),
                );
            }
            // 6.18.15's source hands the register to a program type's own
            // btf_struct_access (congestion control, tc, xdp) and reports
            // its own bug for program BTF; the 6.18.44 host prints the
            // read-only line for congestion control as for the rest, and
            // tc and xdp share that path.
            return self.err("only read is supported");
        }
        if reg.flags != flag::UNTRUSTED {
            return self.unmodelled(format!(
                "loads through a {} pointer into program BTF",
                reg.type_str()
            ));
        }
        use crate::btf_walk::LocalRead;
        let r = match crate::btf_walk::local_read_at(btf, reg.aux, off as u32, size) {
            Ok(LocalRead::Scalar) => Reg::unknown_scalar(),
            Ok(LocalRead::UntrustedMem) => {
                let mut r = Reg::pointer(RegType::Mem);
                r.flags = flag::RDONLY | flag::UNTRUSTED;
                r
            }
            // Walking an untrusted pointer gives untrusted pointers.
            Ok(LocalRead::Ptr(id)) => {
                let mut r = Reg::pointer(RegType::LocalBtfId);
                r.aux = id;
                r.flags = flag::UNTRUSTED;
                r
            }
            Err(e) => return self.err(e),
        };
        Ok(r)
    }

    /// Inside an RCU read-side section (in_rcu_cs): a non-sleepable
    /// program is always in one.
    pub fn in_rcu_cs(&self) -> bool {
        self.cur.active_rcu_lock || self.cur.active_locks > 0 || !self.cur.in_sleepable
    }

    /// map_kptr_match_type: register `regno` may be stored into (or
    /// exchanged with) kptr field `f`.
    pub fn kptr_match_type(&mut self, f: &Field, regno: u8) -> VResult<()> {
        let Some(k) = f.kptr else {
            return Ok(());
        };
        let kind = &k.kind;
        let name = self.kptr_struct_name(f);
        if k.local && matches!(kind, KptrKind::Ref | KptrKind::Percpu) {
            return self.local_kptr_match_type(&k, &name, regno);
        }
        let Some(target) = k.target else {
            return self.unmodelled(format!(
                "kptrs to struct {name}, a type outside vmlinux BTF"
            ));
        };
        let r = *self.cur.reg(regno);
        let mut perm = flag::MAYBE_NULL | flag::TRUSTED | flag::RCU;
        if *kind == KptrKind::Unref {
            perm |= flag::UNTRUSTED;
        }
        let vm = crate::btf_walk::vmlinux();
        let bad = |env: &Self, reg_name: &str| -> VResult<()> {
            let mut msg = format!(
                "invalid kptr access, R{regno} type={}{reg_name} expected=ptr_{name}",
                r.type_str()
            );
            if *kind == KptrKind::Unref {
                msg.push_str(&format!(" or untrusted_ptr_{name}"));
            }
            env.err(msg)
        };
        if r.ty == RegType::Alloc && r.flags & !flag::MAYBE_NULL == 0 {
            // An object of the program's BTF passes the flag check (its
            // permitted flags follow its own BTF) and then matches no
            // kernel type.
            let reg_name = self
                .obj
                .btf
                .as_ref()
                .map_or(String::new(), |b| b.name_of(r.aux).to_string());
            self.check_ptr_off_reg(regno, &r, true)?;
            return bad(self, &reg_name);
        }
        if r.ty != RegType::BtfId || r.flags & !perm != 0 {
            return bad(self, "");
        }
        if r.aux == 0 {
            return self.unmodelled("storing a BTF pointer of unknown type into a kptr".into());
        }
        let reg_name = vm.map_or("", |b| b.name_of(r.aux)).to_string();
        if r.off < 0 {
            return self.err(format!(
                "negative offset {} ptr R{regno} off={} disallowed",
                r.type_str(),
                r.off
            ));
        }
        if !r.v.is_const() || r.v.const_value() != 0 {
            return self.err(format!(
                "variable {} access var_off={} disallowed",
                r.type_str(),
                tnum_str(&r.v)
            ));
        }
        let strict = *kind != KptrKind::Unref;
        let matched = if r.off == 0 && r.aux == target {
            true
        } else if strict {
            false
        } else {
            vm.is_some_and(|b| crate::btf_walk::nested_struct_match(b, r.aux, r.off as u32, target))
        };
        if !matched {
            return bad(self, &reg_name);
        }
        Ok(())
    }

    /// map_kptr_match_type for a kptr to an allocated object of the
    /// program's BTF: an owning reference to that very struct (per-CPU or
    /// not for a per-CPU kptr, as the kernel's flag test lets both pass).
    fn local_kptr_match_type(
        &mut self,
        k: &crate::map_record::Kptr,
        name: &str,
        regno: u8,
    ) -> VResult<()> {
        let r = *self.cur.reg(regno);
        // The flags permitted follow the register's BTF; its type name is
        // printed only once they pass.
        let perm = match r.ty {
            RegType::BtfId => flag::MAYBE_NULL | flag::TRUSTED | flag::RCU,
            _ if k.kind == KptrKind::Percpu => flag::MAYBE_NULL | flag::PERCPU,
            _ => flag::MAYBE_NULL,
        };
        // A pointer into the program's BTF without MEM_ALLOC has no
        // permitted flag set without MEM_ALLOC's company.
        let reg_name = if matches!(r.ty, RegType::BtfId | RegType::Alloc) && r.flags & !perm == 0 {
            let btf = if r.ty == RegType::Alloc {
                self.obj.btf.as_ref()
            } else {
                crate::btf_walk::vmlinux()
            };
            btf.map_or(String::new(), |b| b.name_of(r.aux).to_string())
        } else {
            String::new()
        };
        let bad = format!(
            "invalid kptr access, R{regno} type={}{reg_name} expected=ptr_{name}",
            r.type_str()
        );
        if !matches!(r.ty, RegType::BtfId | RegType::Alloc) || r.flags & !perm != 0 {
            return self.err(bad);
        }
        self.check_ptr_off_reg(regno, &r, true)?;
        if r.ty != RegType::Alloc || r.off != 0 || r.aux != k.btf_id {
            return self.err(bad);
        }
        Ok(())
    }

    /// The reference bpf_kptr_xchg moved into the kptr is released; in an
    /// RCU section a per-CPU object stays readable through the registers
    /// that held it, as an RCU-protected per-CPU pointer (no longer an
    /// allocation of the program's), the others become invalid.
    pub(crate) fn release_kptr_xchg_source(&mut self, ref_id: u32) -> VResult<()> {
        if !self.in_rcu_cs() {
            return self.release_reference(ref_id);
        }
        let Some(pos) = self
            .cur
            .refs
            .iter()
            .position(|r| r.kind == crate::state::RefKind::Ptr && r.id == ref_id)
        else {
            return self.err("release kernel function has no referenced object");
        };
        self.cur.refs.remove(pos);
        let invalid = self.invalid_reg();
        self.cur.for_each_reg_mut(|r| {
            if r.ref_obj_id != ref_id {
                return;
            }
            if r.ty == RegType::Alloc && r.flags & flag::PERCPU != 0 {
                r.ty = RegType::LocalBtfId;
                r.ref_obj_id = 0;
                r.flags |= flag::RCU;
            } else {
                *r = invalid;
            }
        });
        Ok(())
    }

    /// process_kptr_func: the destination of `bpf_kptr_xchg` in `regno`.
    pub fn check_kptr_xchg_dest(&mut self, regno: u8) -> VResult<Field> {
        let r = *self.cur.reg(regno);
        if r.ty == RegType::Alloc && r.flags == 0 {
            return self.alloc_kptr_xchg_dest(regno, &r);
        }
        if r.ty != RegType::MapValue {
            return self.unmodelled("bpf_kptr_xchg into allocated objects".into());
        }
        let Some(m) = self.map_def(r.map) else {
            return self.err("invalid map_ptr to access map->value");
        };
        if m.btf_value_type_id == 0 || self.obj.btf.is_none() {
            return self.err(format!(
                "map '{}' has to have BTF in order to use bpf_kptr_xchg",
                m.name.chars().take(15).collect::<String>()
            ));
        }
        if !r.v.is_const() {
            return self.err(format!(
                "R{regno} doesn't have constant offset. kptr has to be at the constant offset"
            ));
        }
        let rec = self.map_fields(r.map);
        if !rec.iter().any(is_kptr) {
            return self.err(format!("R{regno} has no valid kptr"));
        }
        // btf_record_find: a kptr starting exactly there.
        let off = r.off as i64 + r.v.const_value() as i64;
        let field = rec
            .iter()
            .find(|f| is_kptr(f) && f.off as i64 == off)
            .copied();
        let Some(field) = field else {
            return self.err(format!("off={off} doesn't point to kptr"));
        };
        match field.kptr_kind() {
            Some(KptrKind::Ref | KptrKind::Percpu) => {}
            _ => return self.err(format!("off={off} kptr isn't referenced kptr")),
        }
        if field
            .kptr
            .is_some_and(|k| k.kind == KptrKind::Percpu && !k.local)
        {
            return self.unmodelled(format!(
                "per-CPU kptrs to struct {}, a kernel type",
                self.kptr_struct_name(&field)
            ));
        }
        if field.kptr.is_some_and(|k| k.target.is_none() && !k.local) {
            return self.unmodelled(format!(
                "kptrs to struct {}, a type outside vmlinux BTF",
                self.kptr_struct_name(&field)
            ));
        }
        Ok(field)
    }

    /// process_kptr_func with an allocated object as the destination: a
    /// kptr field of its struct's record.
    fn alloc_kptr_xchg_dest(&mut self, regno: u8, r: &Reg) -> VResult<Field> {
        if !r.v.is_const() {
            return self.err(format!(
                "R{regno} doesn't have constant offset. kptr has to be at the constant offset"
            ));
        }
        let rec = self.alloc_record(r.aux)?;
        if !rec.iter().any(is_kptr) {
            return self.err(format!("R{regno} has no valid kptr"));
        }
        let off = r.off as i64 + r.v.const_value() as i64;
        let Some(field) = rec
            .iter()
            .find(|f| is_kptr(f) && f.off as i64 == off)
            .copied()
        else {
            return self.err(format!("off={off} doesn't point to kptr"));
        };
        match field.kptr {
            // As in a map value: a kernel object's reference goes in and
            // the one held comes out (process_kptr_func takes the
            // object's record alike).
            Some(k) if k.kind == KptrKind::Ref && (k.local || k.target.is_some()) => Ok(field),
            Some(k) if k.kind == KptrKind::Percpu && k.local => Ok(field),
            Some(k) if k.kind == KptrKind::Ref || k.kind == KptrKind::Percpu => {
                self.unmodelled(format!(
                    "bpf_kptr_xchg into allocated objects' {} fields",
                    field.name
                ))
            }
            _ => self.err(format!("off={off} kptr isn't referenced kptr")),
        }
    }
}

/// A field of the kernel's BPF_KPTR kinds (uptrs are not among them).
fn is_kptr(f: &Field) -> bool {
    matches!(
        f.kptr_kind(),
        Some(KptrKind::Unref | KptrKind::Ref | KptrKind::Percpu)
    )
}
