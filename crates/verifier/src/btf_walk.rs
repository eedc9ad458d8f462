//! Kernel types from vmlinux BTF: what a BTF-typed context argument is
//! (via the ctx tables' btf_ctx_access) and what a load through a
//! PTR_TO_BTF_ID yields (a simplified btf_struct_walk).

use crate::check_mem::Access;
use crate::ctx::btf_args::{btf_ctx_access, BtfArgValue, BtfCtxTarget};
use crate::ctx::{self, CtxError};
use crate::error::VResult;
use crate::explore::Env;
use crate::regs::{flag, Reg, RegType};
use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_object::btf::{Btf, Kind};
use std::sync::OnceLock;

/// The target's vmlinux BTF (the host's unless `BPFVET_VMLINUX_BTF` names
/// another), read once per process.
pub fn vmlinux() -> Option<&'static Btf> {
    // The loader's parse (CO-RE), shared.
    bpfvet_object::target_vmlinux().map(|b| &**b)
}

/// Whether the BTF of a loaded kernel module (/sys/kernel/btf/*) may
/// define a type named `name`: its strings hold the name. The kernel looks
/// a kptr's pointee up in vmlinux and the modules before taking it for a
/// program-local type.
pub fn module_btf_may_define(name: &str) -> bool {
    static MODULES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    let modules = MODULES.get_or_init(|| {
        let dir = bpfvet_object::vmlinux_btf_path()
            .parent()
            .map(std::path::Path::to_path_buf);
        let Some(Ok(entries)) = dir.map(std::fs::read_dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| {
                Some(e.file_name().as_os_str()) != bpfvet_object::vmlinux_btf_path().file_name()
            })
            .filter_map(|e| std::fs::read(e.path()).ok())
            .collect()
    });
    let mut needle = Vec::with_capacity(name.len() + 2);
    needle.push(0);
    needle.extend_from_slice(name.as_bytes());
    needle.push(0);
    modules
        .iter()
        .any(|m| m.windows(needle.len()).any(|w| w == needle.as_slice()))
}

/// What a load from a kernel struct gives.
enum Field<'b> {
    Scalar,
    /// A pointer to anything but a struct: read-only untrusted memory.
    UntrustedMem,
    /// A pointer to the struct with this id, read from member `field`;
    /// `flags`: what the walk found (a union: untrusted; the pointer's
    /// `__user`, `__percpu` or `__rcu` tag).
    Ptr {
        id: u32,
        field: &'b str,
        flags: u16,
    },
}

/// One step of the kernel's btf_struct_walk.
enum Walk<'b> {
    Scalar,
    /// Pointee id, member name, flag of the pointer's type tag.
    Ptr(u32, &'b str, u16),
    /// The access starts at a nested struct: walk on inside it from 0.
    Struct(u32),
    /// A pointer member whose pointee is not a struct (6.18).
    PtrUntrusted,
}

/// `size`, innermost element type and element count of a member type,
/// arrays of arrays flattened (__btf_resolve_size).
fn member_layout(btf: &Btf, id: u32) -> Option<(u64, u32, u64)> {
    let mut nelems: u64 = 1;
    let (mut id, mut t) = btf.skip_mods_and_typedefs(id)?;
    for _ in 0..32 {
        if t.kind != Kind::Array {
            let size = btf.resolve_size(id).ok()?;
            return Some((size.checked_mul(nelems)?, id, nelems));
        }
        let (elem, _, n) = t.array_info()?;
        nelems = nelems.checked_mul(n as u64)?;
        (id, t) = btf.skip_mods_and_typedefs(elem)?;
    }
    None
}

/// One btf_struct_walk of [off, off+size) in struct `id`; walking a union
/// of several members sets `untrusted`, which lifts the bounds of scalar
/// members.
fn anon(name: &str) -> &str {
    if name.is_empty() {
        "(anon)"
    } else {
        name
    }
}

fn struct_walk<'b>(
    btf: &'b Btf,
    id: u32,
    mut off: u32,
    size: u32,
    untrusted: &mut bool,
) -> Result<Walk<'b>, String> {
    let Some((_, mut t)) = btf.skip_mods_and_typedefs(id) else {
        return Ok(Walk::Scalar);
    };
    'again: for _ in 0..32 {
        // Anonymous types and members are named "(anon)" in messages
        // (__btf_name_by_offset).
        let tname = anon(btf.name(t));
        if !matches!(t.kind, Kind::Struct | Kind::Union) {
            return Err(format!("Type '{tname}' is not a struct"));
        }
        let members = btf.members(t);
        if t.kind == Kind::Union && members.len() != 1 {
            *untrusted = true;
        }
        if off as u64 + size as u64 > t.size_or_type as u64 {
            // A trailing flexible array may be indexed past the end.
            let beyond = || format!("access beyond struct {tname} at off {off} size {size}");
            let Some(last) = members.last() else {
                return Err(beyond());
            };
            let Some((_, at)) = btf.skip_mods_and_typedefs(last.type_id) else {
                return Err(beyond());
            };
            let Some((elem, _, 0)) = at.array_info() else {
                return Err(beyond());
            };
            let moff = last.bit_offset / 8;
            if at.kind != Kind::Array || off < moff {
                return Err(beyond());
            }
            let Some((_, et)) = btf.skip_mods_and_typedefs(elem) else {
                return Err(beyond());
            };
            if et.kind == Kind::Int {
                return Ok(Walk::Scalar);
            }
            if !matches!(et.kind, Kind::Struct | Kind::Union) || et.size_or_type == 0 {
                return Err(beyond());
            }
            off = (off - moff) % et.size_or_type;
            t = et;
            continue 'again;
        }
        for m in members {
            let mut moff = m.bit_offset / 8;
            if off + size <= moff {
                break;
            }
            if m.bitfield_size != 0 {
                let end_bit = m.bit_offset + m.bitfield_size;
                if off <= moff && end_bit.div_ceil(8) <= off + size {
                    return Ok(Walk::Scalar);
                }
                continue;
            }
            if off < moff {
                break;
            }
            let mname = btf.str_at(m.name_off).unwrap_or("");
            let Some((mut msize, elem_id, nelems)) = member_layout(btf, m.type_id) else {
                return Err(format!("field {mname} doesn't have size"));
            };
            let mtrue_end = moff as u64 + msize;
            if off as u64 >= mtrue_end {
                continue;
            }
            let (mut mid, mut mt) = match btf.skip_mods_and_typedefs(m.type_id) {
                Some(x) => x,
                None => return Ok(Walk::Scalar),
            };
            if mt.kind == Kind::Array {
                if moff as u64 == mtrue_end {
                    continue;
                }
                msize /= nelems.max(1);
                if msize == 0 {
                    continue;
                }
                let idx = (off - moff) as u64 / msize;
                moff += (idx * msize) as u32;
                (mid, mt) = match btf.skip_mods_and_typedefs(elem_id) {
                    Some(x) => x,
                    None => return Ok(Walk::Scalar),
                };
            }
            if matches!(mt.kind, Kind::Struct | Kind::Union) {
                if off == moff {
                    return Ok(Walk::Struct(mid));
                }
                off -= moff;
                t = mt;
                continue 'again;
            }
            if mt.kind == Kind::Ptr {
                if msize != size as u64 || off != moff {
                    return Err(format!(
                        "cannot access ptr member {} with moff {moff} in struct {tname} with off {off} size {size}", anon(mname)
                    ));
                }
                // Only the first type tag counts, and only a plain one.
                let tag_flag = match btf.type_by_id(mt.size_or_type) {
                    Some(tag) if tag.kind == Kind::TypeTag && !tag.kind_flag => match btf.name(tag)
                    {
                        "user" => flag::USER,
                        "percpu" => flag::PERCPU,
                        "rcu" => flag::RCU,
                        _ => 0,
                    },
                    _ => 0,
                };
                if let Some((pid, pt)) = btf.skip_mods_and_typedefs(mt.size_or_type) {
                    if matches!(pt.kind, Kind::Struct | Kind::Union) {
                        return Ok(Walk::Ptr(pid, mname, tag_flag));
                    }
                }
                return Ok(Walk::PtrUntrusted);
            }
            if off as u64 + size as u64 > mtrue_end && !*untrusted {
                return Err(format!(
                    "access beyond the end of member {} (mend:{mtrue_end}) in struct {tname} with off {off} size {size}", anon(mname)
                ));
            }
            return Ok(Walk::Scalar);
        }
        return Err(format!("struct {tname} doesn't have field at offset {off}"));
    }
    Ok(Walk::Scalar)
}

/// What [off, off+size) of struct `id` is (btf_struct_access).
fn field_at(btf: &Btf, id: u32, off: u32, size: u32) -> Result<Field<'_>, String> {
    let mut untrusted = false;
    let (mut id, mut off) = (id, off);
    for _ in 0..32 {
        match struct_walk(btf, id, off, size, &mut untrusted)? {
            Walk::Scalar => return Ok(Field::Scalar),
            Walk::PtrUntrusted => return Ok(Field::UntrustedMem),
            Walk::Ptr(pid, field, tag) => {
                let flags = tag | if untrusted { flag::UNTRUSTED } else { 0 };
                return Ok(Field::Ptr {
                    id: pid,
                    field,
                    flags,
                });
            }
            Walk::Struct(sid) => (id, off) = (sid, 0),
        }
    }
    Ok(Field::Scalar)
}

/// btf_struct_access on a struct of the program's BTF, as an allocated
/// object reads it: Ok(true) for a scalar or a pointer to a struct (both
/// load as scalars), Ok(false) for a pointer to anything else, which the
/// kernel loads as read-only untrusted memory.
pub fn local_field_at(btf: &Btf, id: u32, off: u32, size: u32) -> Result<bool, String> {
    local_read_at(btf, id, off, size).map(|r| !matches!(r, LocalRead::UntrustedMem))
}

/// What a read through a pointer into the program's BTF finds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LocalRead {
    Scalar,
    /// A pointer to something other than a struct: read-only untrusted
    /// memory of no size.
    UntrustedMem,
    /// A pointer to a struct of the same BTF (its id).
    Ptr(u32),
}

/// btf_struct_access on a struct of the program's BTF: the member read.
pub fn local_read_at(btf: &Btf, id: u32, off: u32, size: u32) -> Result<LocalRead, String> {
    let mut untrusted = false;
    let (mut id, mut off) = (id, off);
    for _ in 0..32 {
        match struct_walk(btf, id, off, size, &mut untrusted)? {
            Walk::Scalar => return Ok(LocalRead::Scalar),
            Walk::Ptr(pid, ..) => return Ok(LocalRead::Ptr(pid)),
            Walk::PtrUntrusted => return Ok(LocalRead::UntrustedMem),
            Walk::Struct(sid) => (id, off) = (sid, 0),
        }
    }
    Ok(LocalRead::Scalar)
}

/// btf_nested_type_is_trusted: struct `owner` lists member `field`, a
/// pointer to `id`, in its `<owner><suffix>` companion type.
fn safe_member(btf: &Btf, owner: u32, suffix: &str, field: &str, id: u32) -> bool {
    let Some(t) = btf.type_by_id(owner) else {
        return false;
    };
    let name = format!("{}{suffix}", btf.name(t));
    let Some(safe) = btf
        .find_by_name_kind(&name, t.kind)
        .and_then(|s| btf.type_by_id(s))
    else {
        return false;
    };
    btf.members(safe).iter().any(|m| {
        btf.str_at(m.name_off) == Some(field)
            && btf.type_by_id(m.type_id).is_some_and(|mt| {
                mt.kind == Kind::Ptr
                    && btf
                        .skip_mods_and_typedefs(mt.size_or_type)
                        .is_some_and(|(pid, _)| pid == id)
            })
    })
}

/// btf_struct_ids_match without the strict mode: whether a pointer to
/// struct `id` at `off` points at a struct `target` nested at that offset.
pub fn nested_struct_match(btf: &Btf, id: u32, off: u32, target: u32) -> bool {
    let (mut id, mut off) = (id, off);
    let mut untrusted = false;
    for _ in 0..32 {
        match struct_walk(btf, id, off, 1, &mut untrusted) {
            Ok(Walk::Struct(sid)) if sid == target => return true,
            Ok(Walk::Struct(sid)) => (id, off) = (sid, 0),
            _ => return false,
        }
    }
    false
}

impl Env<'_> {
    /// The register a BTF-typed context argument loads as.
    /// For an LSM program's read of the slot after the hook's arguments
    /// (the return value so far), the 32-bit range it lies in.
    fn lsm_retval_range(&self, t: &BtfCtxTarget, off: i32) -> Option<(i64, i64)> {
        if self.prog_type != ProgType::LSM
            || self.prog.expected_attach_type != Some(AttachType::LSM_MAC)
        {
            return None;
        }
        let nr_args = t.btf.params(t.btf.type_by_id(t.func_proto?)?).len() as i32;
        if off != nr_args * 8 {
            return None;
        }
        match crate::lsm::return_rule(self.prog).ok()? {
            crate::lsm::LsmReturn::Range {
                min,
                max,
                subreg: true,
            } => Some((min, max)),
            _ => None,
        }
    }

    /// The function whose arguments type the ctx: the attach target, or a
    /// struct_ops program's member.
    fn btf_ctx_target(&self) -> Option<BtfCtxTarget<'static>> {
        let btf = vmlinux()?;
        let eat = self.prog.expected_attach_type.unwrap_or(AttachType(0));
        if let (Some(so), Some(member)) = (&self.struct_ops, &self.prog.struct_ops) {
            return Some(BtfCtxTarget {
                btf,
                func_proto: Some(so.func_proto),
                name: member.member.clone(),
                btf_trace: false,
                prog_type: self.prog_type,
                expected_attach_type: eat,
                iter_args: Vec::new(),
                nullable_args: so.tags.nullable,
            });
        }
        let target = self.prog.attach_target.as_deref()?;
        BtfCtxTarget::resolve(btf, self.prog_type, eat, target).ok()
    }

    pub fn btf_ctx_arg(&self, off: i32, size: u32) -> VResult<Reg> {
        let Some(t) = self.btf_ctx_target() else {
            return Ok(Reg::unknown_scalar());
        };
        match btf_ctx_access(&t, off, size, ctx::Access::Read) {
            Ok(a) => Ok(match a.value {
                BtfArgValue::Scalar => {
                    let mut r = Reg::unknown_scalar();
                    if let Some((min, max)) = self.lsm_retval_range(&t, off) {
                        // The previous program's return value, in the range
                        // this one must return in too.
                        r.v.s32_min = r.v.s32_min.max(min as i32);
                        r.v.s32_max = r.v.s32_max.min(max as i32);
                        r.v.sync();
                    }
                    r
                }
                BtfArgValue::BtfId {
                    btf_id,
                    trusted,
                    maybe_null,
                    ..
                } => {
                    let mut r = Reg::pointer(RegType::BtfId);
                    r.aux = btf_id;
                    if trusted {
                        r.flags |= flag::TRUSTED;
                    }
                    if maybe_null {
                        r.flags |= flag::MAYBE_NULL;
                    }
                    // A `__ref` argument carries the entry's reference,
                    // which must still be held.
                    let held = self
                        .ctx_arg_refs
                        .iter()
                        .find(|(arg, _)| i64::from(*arg) * 8 == i64::from(off));
                    if let Some(&(_, id)) = held {
                        if !self.cur.refs.iter().any(|r| r.id == id) {
                            return self.err(format!(
                                "invalid bpf_context access off={off}. Reference may already be released"
                            ));
                        }
                        r.ref_obj_id = id;
                    }
                    r
                }
                BtfArgValue::BufOrNull { rdonly } => {
                    let mut r = Reg::pointer(RegType::Buf);
                    r.flags |= flag::MAYBE_NULL;
                    if rdonly {
                        r.flags |= flag::RDONLY;
                    }
                    r
                }
            }),
            Err(e) => match e.error {
                CtxError::Invalid { off, size } => {
                    self.err(format!("invalid bpf_context access off={off} size={size}"))
                }
                other => self.unsupported(other.to_string()),
            },
        }
    }

    /// The kernel's note on a typed context argument:
    /// `func 'sched_switch' arg1 has btf_id 114 type STRUCT 'task_struct'`.
    pub fn log_btf_arg(&mut self, off: i32, btf_id: u32) {
        let (Some(btf), Some(t)) = (vmlinux(), self.btf_ctx_target()) else {
            return;
        };
        let target = t.name;
        let kind = match btf.type_by_id(btf_id).map(|t| t.kind) {
            Some(Kind::Struct) => "STRUCT",
            Some(Kind::Union) => "UNION",
            _ => return,
        };
        let msg = format!(
            "func '{target}' arg{} has btf_id {btf_id} type {kind} '{}'",
            off / 8,
            btf.name_of(btf_id)
        );
        self.log.line(&msg);
    }

    /// The trust of a pointer loaded from member `field` (pointing to
    /// `id`) of the struct `reg` points to (check_ptr_to_btf_access):
    /// walking an untrusted pointer or leaving an RCU section gives an
    /// untrusted one; members the kernel lists as safe (the
    /// `<struct>__safe_*` types in vmlinux BTF) stay trusted or RCU.
    fn walked_ptr_flags(&self, btf: &Btf, reg: &Reg, field: &str, id: u32, walked: u16) -> u16 {
        let mut fl = walked;
        let trusted_reg = reg.ref_obj_id != 0
            || (reg.flags & flag::TRUSTED != 0 && reg.flags & !flag::TRUSTED == 0);
        let rcu_reg = reg.flags & flag::RCU != 0;
        let listed = |suffix: &str| safe_member(btf, reg.aux, suffix, field, id);
        if reg.flags & flag::UNTRUSTED != 0 {
            fl = flag::UNTRUSTED;
        } else if trusted_reg || rcu_reg {
            if listed("__safe_trusted") {
                fl |= flag::TRUSTED;
            } else if listed("__safe_trusted_or_null") {
                fl |= flag::TRUSTED | flag::MAYBE_NULL;
            } else if self.in_rcu_cs() && !reg.maybe_null() {
                let rcu_or_null = listed("__safe_rcu_or_null");
                if listed("__safe_rcu") {
                    fl |= flag::RCU;
                } else if fl & flag::RCU != 0 || rcu_or_null {
                    fl |= flag::RCU | flag::MAYBE_NULL;
                    if rcu_or_null {
                        fl &= !flag::UNTRUSTED;
                    }
                } else if fl & (flag::PERCPU | flag::USER) == 0 {
                    fl &= !(flag::TRUSTED | flag::RCU);
                }
            } else {
                fl = flag::UNTRUSTED;
            }
        } else {
            fl &= !(flag::TRUSTED | flag::RCU);
        }
        fl
    }

    /// A load through a PTR_TO_BTF_ID in `regno`: bounds of the struct and
    /// the type of the field read (check_ptr_to_btf_access).
    pub fn btf_load(
        &self,
        regno: u8,
        reg: &Reg,
        off: i32,
        size: u32,
        access: Access,
    ) -> VResult<Reg> {
        let Some(btf) = vmlinux().filter(|_| reg.aux != 0) else {
            if access == Access::Write {
                return self.err("only read is supported");
            }
            return Ok(Reg::unknown_scalar());
        };
        let tname = btf.name_of(reg.aux);
        // Kernel memory is the GPL's: checked before anything else.
        if !crate::check_call::license_is_gpl(self.obj.license_of(self.prog)) {
            return self.err(format!(
                "Cannot access kernel 'struct {tname}' from non-GPL compatible program"
            ));
        }
        if off < 0 {
            return self.err(format!(
                "R{regno} is ptr_{tname} invalid negative access: off={off}"
            ));
        }
        if !reg.v.is_const() || reg.v.const_value() != 0 {
            return self.err(format!(
                "R{regno} is ptr_{tname} invalid variable offset: off={off}, var_off={}",
                crate::check_alu::tnum_str(&reg.v)
            ));
        }
        if reg.flags & flag::USER != 0 {
            return self.err(format!(
                "R{regno} is ptr_{tname} access user memory: off={off}"
            ));
        }
        if reg.flags & flag::PERCPU != 0 {
            return self.err(format!(
                "R{regno} is ptr_{tname} access percpu memory: off={off}"
            ));
        }
        if access == Access::Write {
            return self.btf_store(btf, reg, off, size);
        }
        match field_at(btf, reg.aux, off as u32, size) {
            Ok(Field::Scalar) => Ok(Reg::unknown_scalar()),
            Ok(Field::UntrustedMem) => {
                let mut r = Reg::pointer(RegType::Mem);
                r.flags = flag::RDONLY | flag::UNTRUSTED;
                Ok(r)
            }
            Ok(Field::Ptr { id, field, flags }) => {
                let mut r = Reg::pointer(RegType::BtfId);
                r.aux = id;
                r.flags = self.walked_ptr_flags(btf, reg, field, id, flags);
                Ok(r)
            }
            Err(e) => self.err(e),
        }
    }
}

impl Env<'_> {
    /// A store through a kernel BTF pointer: only tc and xdp programs may
    /// store, and only into a conntrack entry's `mark` (the program types'
    /// btf_struct_access, which nf_conntrack fills in).
    fn btf_store(&self, btf: &Btf, reg: &Reg, off: i32, size: u32) -> VResult<Reg> {
        use bpfvet_isa::uapi::ProgType as P;
        if let Some(so) = &self.struct_ops {
            return so
                .write(btf, reg.aux, off as u32, size)
                .map(|()| Reg::unknown_scalar())
                .or_else(|e| self.err(e));
        }
        let conntrack_writes = matches!(self.prog_type, P::SCHED_CLS | P::SCHED_ACT | P::XDP);
        let tname = btf.name_of(reg.aux);
        if !conntrack_writes || !matches!(tname, "nf_conn" | "nf_conn___init") {
            return self.err("only read is supported");
        }
        // nf_conn___init wraps nf_conn: the offsets are the same.
        let mark = btf
            .find_by_name_kind("nf_conn", Kind::Struct)
            .and_then(|id| btf.type_by_id(id))
            .and_then(|t| {
                btf.members(t)
                    .iter()
                    .find(|m| btf.str_at(m.name_off) == Some("mark"))
                    .map(|m| (m.bit_offset / 8, btf.resolve_size(m.type_id).unwrap_or(0)))
            });
        let Some((mark_off, mark_size)) = mark.filter(|(o, _)| off as u32 == *o) else {
            return self.err(format!("no write support to nf_conn at off {off}"));
        };
        let end = mark_off as u64 + mark_size;
        if off as u64 + size as u64 > end {
            return self.err(format!(
                "write access at off {off} with size {size} beyond the member of nf_conn ended at {end}"
            ));
        }
        Ok(Reg::unknown_scalar())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The member bounds of btf_struct_walk, on the host's task_struct.
    #[test]
    fn scalar_access_stays_inside_its_member() {
        let Some(btf) = vmlinux() else {
            println!("SKIP: no vmlinux BTF");
            return;
        };
        let Some(task) = btf.find_by_name_kind("task_struct", Kind::Struct) else {
            return;
        };
        let t = btf.type_by_id(task).expect("task_struct");
        let comm = btf
            .members(t)
            .iter()
            .find(|m| btf.str_at(m.name_off) == Some("comm"))
            .expect("comm")
            .bit_offset
            / 8;
        assert!(matches!(field_at(btf, task, comm, 16), Ok(Field::Scalar)));
        assert!(matches!(
            field_at(btf, task, comm + 8, 8),
            Ok(Field::Scalar)
        ));
        let err = field_at(btf, task, comm, 17).err().expect("beyond comm");
        assert_eq!(
            err,
            format!(
                "access beyond the end of member comm (mend:{}) in struct task_struct with off {comm} size 17",
                comm + 16
            )
        );
        let end = t.size_or_type;
        assert!(field_at(btf, task, end, 1)
            .err()
            .expect("beyond struct")
            .starts_with("access beyond struct task_struct"));
    }
}
