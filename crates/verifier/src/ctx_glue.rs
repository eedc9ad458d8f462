//! Bridges a ctx dereference to the context tables (`ctx`): checks the
//! access and says what a load yields.

use crate::check_mem::Access;
use crate::ctx::{self, CtxError, CtxValue};
use crate::error::VResult;
use crate::explore::Env;
use crate::regs::RegType;

/// Returns the pointer type a load yields, or None for a scalar.
pub fn ctx_field(env: &Env, off: i32, size: u32, access: Access) -> VResult<Option<RegType>> {
    let a = match access {
        Access::Read => ctx::Access::Read,
        Access::Write => ctx::Access::Write,
    };
    match ctx::check_ctx_access(env.prog_type, env.prog.expected_attach_type, off, size, a) {
        Ok(acc) => Ok(match acc.value {
            CtxValue::Scalar => None,
            CtxValue::PacketStart => Some(RegType::Packet),
            CtxValue::PacketEnd => Some(RegType::PacketEnd),
            CtxValue::PacketMeta => Some(RegType::PacketMeta),
            CtxValue::FlowKeys => Some(RegType::FlowKeys),
            CtxValue::Sock => Some(RegType::Sock),
            CtxValue::SockOrNull => Some(RegType::Sock),
            CtxValue::SockCommonOrNull => Some(RegType::SockCommon),
            CtxValue::TpBuffer => Some(RegType::TpBuffer),
            CtxValue::BtfArg { .. } => None,
            CtxValue::BtfStruct(_) => Some(RegType::BtfId),
        }),
        Err(e @ CtxError::Invalid { .. }) => env.err(e.to_string()),
        Err(e) => env.err(e.to_string()),
    }
}
