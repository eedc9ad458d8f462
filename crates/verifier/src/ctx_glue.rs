//! Bridges a ctx dereference to the context tables (`ctx`): checks the
//! access and builds the register a load yields.

use crate::check_mem::Access;
use crate::ctx::{self, CtxValue};
use crate::error::VResult;
use crate::explore::Env;
use crate::regs::{flag, Reg, RegType};

/// The register a ctx load at `off` gives (an unknown scalar for plain
/// fields); for a store, only the check. `sx` is a sign-extending load,
/// which most context fields refuse.
pub fn ctx_field(env: &mut Env, off: i32, size: u32, access: Access, sx: bool) -> VResult<Reg> {
    if access == Access::Read {
        if let Some(id) = env.struct_ops.and_then(|so| so.ctx_read_override(off)) {
            let mut r = Reg::pointer(RegType::BtfId);
            r.aux = id;
            r.flags |= flag::TRUSTED;
            return Ok(r);
        }
    }
    let access = match access {
        Access::Read => ctx::Access::Read,
        Access::Write => ctx::Access::Write,
    };
    let query = ctx::CtxQuery {
        prog_type: env.prog_type,
        expected_attach_type: env.prog.expected_attach_type,
        off,
        size,
        access,
        ldsx: sx,
        bpf_capable: env.caps.bpf_capable,
    };
    let acc = match ctx::check_ctx_access_with(&query) {
        Ok(acc) => acc,
        Err(e @ ctx::CtxError::Unmodelled(_)) => return env.unsupported(e.to_string()),
        Err(e) => return env.err(e.to_string()),
    };
    let ptr = |ty: RegType| Reg::pointer(ty);
    let or_null = |env: &mut Env, ty: RegType| {
        let mut r = Reg::pointer(ty);
        r.flags |= flag::MAYBE_NULL;
        r.id = env.new_id();
        r
    };
    Ok(match acc.value {
        CtxValue::Scalar => Reg::unknown_scalar(),
        CtxValue::PacketStart => ptr(RegType::Packet),
        CtxValue::PacketEnd => ptr(RegType::PacketEnd),
        CtxValue::PacketMeta => ptr(RegType::PacketMeta),
        CtxValue::FlowKeys => ptr(RegType::FlowKeys),
        CtxValue::Sock => ptr(RegType::Sock),
        CtxValue::SockOrNull => or_null(env, RegType::Sock),
        CtxValue::SockCommonOrNull => or_null(env, RegType::SockCommon),
        CtxValue::TpBuffer => ptr(RegType::TpBuffer),
        CtxValue::BtfArg { .. } => {
            let mut r = env.btf_ctx_arg(off, size)?;
            if env.log.level >= 1 && r.ty == RegType::BtfId {
                env.log_btf_arg(off, r.aux);
            }
            // Logged as declared, then typed as the struct_ops type says.
            let plain_trusted = r.flags & !flag::TRUSTED == 0;
            if let (Some(so), RegType::BtfId, true) = (&env.struct_ops, r.ty, plain_trusted) {
                r.aux = so.promoted_arg(r.aux);
            }
            if r.maybe_null() {
                // A NULL check must find the register by its id.
                r.id = env.new_id();
            }
            r
        }
        CtxValue::BtfStruct(_) => {
            let mut r = ptr(RegType::BtfId);
            r.flags |= flag::TRUSTED;
            r
        }
    })
}
