//! Kernel types from vmlinux BTF: what a BTF-typed context argument is
//! (via the ctx tables' btf_ctx_access) and what a load through a
//! PTR_TO_BTF_ID yields (a simplified btf_struct_walk).

use crate::check_mem::Access;
use crate::ctx::btf_args::{btf_ctx_access, BtfArgValue, BtfCtxTarget};
use crate::ctx::{self, CtxError};
use crate::error::VResult;
use crate::explore::Env;
use crate::regs::{flag, Reg, RegType};
use bpfvet_isa::uapi::AttachType;
use bpfvet_object::btf::{Btf, Kind};
use std::sync::OnceLock;

/// The host's vmlinux BTF, read once per process.
pub fn vmlinux() -> Option<&'static Btf> {
    static VMLINUX: OnceLock<Option<Btf>> = OnceLock::new();
    VMLINUX
        .get_or_init(|| {
            let bytes = std::fs::read(bpfvet_object::HOST_VMLINUX).ok()?;
            Btf::from_bytes(&bytes).ok()
        })
        .as_ref()
}

/// What a load from a kernel struct gives.
enum Field {
    Scalar,
    /// A pointer to the struct with this id.
    Ptr(u32),
}

/// The member of struct `id` covering [off, off+size), descending through
/// nested structs, unions and arrays.
fn field_at(btf: &Btf, id: u32, off: u32, size: u32) -> Result<Field, String> {
    let mut id = id;
    let mut off = off;
    for _ in 0..32 {
        let Some((tid, t)) = btf.skip_mods_and_typedefs(id) else {
            return Ok(Field::Scalar);
        };
        match t.kind {
            Kind::Struct | Kind::Union => {
                if off + size > t.size_or_type {
                    return Err(format!(
                        "access beyond struct {} at off {off} size {size}",
                        btf.name(t)
                    ));
                }
                let found = btf.members(t).iter().find_map(|m| {
                    let moff = m.bit_offset / 8;
                    let msize = btf.resolve_size(m.type_id).ok()? as u32;
                    (m.bitfield_size == 0 && off >= moff && off + size <= moff + msize)
                        .then_some((m.type_id, moff))
                });
                let Some((mt, moff)) = found else {
                    return Ok(Field::Scalar);
                };
                id = mt;
                off -= moff;
            }
            Kind::Array => {
                let (elem, _, _) = t.array_info().unwrap_or_default();
                let esize = btf.resolve_size(elem).unwrap_or(1).max(1) as u32;
                id = elem;
                off %= esize;
            }
            Kind::Ptr if off == 0 && size == 8 => {
                return Ok(match btf.skip_mods_and_typedefs(t.size_or_type) {
                    Some((pid, pt)) if matches!(pt.kind, Kind::Struct | Kind::Union) => {
                        Field::Ptr(pid)
                    }
                    _ => Field::Scalar,
                });
            }
            _ => {
                let _ = tid;
                return Ok(Field::Scalar);
            }
        }
    }
    Ok(Field::Scalar)
}

impl Env<'_> {
    /// The register a BTF-typed context argument loads as.
    pub fn btf_ctx_arg(&self, off: i32, size: u32) -> VResult<Reg> {
        let (Some(btf), Some(target)) = (vmlinux(), self.prog.attach_target.as_deref()) else {
            return Ok(Reg::unknown_scalar());
        };
        let eat = self.prog.expected_attach_type.unwrap_or(AttachType(0));
        let Ok(t) = BtfCtxTarget::resolve(btf, self.prog_type, eat, target) else {
            return Ok(Reg::unknown_scalar());
        };
        match btf_ctx_access(&t, off, size, ctx::Access::Read) {
            Ok(a) => Ok(match a.value {
                BtfArgValue::Scalar => Reg::unknown_scalar(),
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
                    r
                }
                BtfArgValue::BufOrNull { .. } => {
                    let mut r = Reg::pointer(RegType::Mem);
                    r.flags |= flag::MAYBE_NULL;
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
        let (Some(btf), Some(target)) = (vmlinux(), self.prog.attach_target.as_deref()) else {
            return;
        };
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

    /// A load through a PTR_TO_BTF_ID: bounds of the struct and the type of
    /// the field read.
    pub fn btf_load(&self, reg: &Reg, off: i32, size: u32, access: Access) -> VResult<Reg> {
        if access == Access::Write {
            return self.err("only read is supported");
        }
        let Some(btf) = vmlinux() else {
            return Ok(Reg::unknown_scalar());
        };
        if reg.aux == 0 || !reg.v.is_const() || off < 0 {
            return Ok(Reg::unknown_scalar());
        }
        let off = off as u32 + reg.v.const_value() as u32;
        match field_at(btf, reg.aux, off, size) {
            Ok(Field::Scalar) => Ok(Reg::unknown_scalar()),
            Ok(Field::Ptr(id)) => {
                let mut r = Reg::pointer(RegType::BtfId);
                r.aux = id;
                Ok(r)
            }
            Err(e) => self.err(e),
        }
    }
}
