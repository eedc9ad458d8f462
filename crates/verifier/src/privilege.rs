//! The checks a loader's capabilities decide before verification:
//! bpf_prog_load's (program size and type) and the verifier's first pass
//! over calls (add_subprog_and_kfunc). The checks during exploration read
//! `Env::caps`.

use crate::error::VerifyError;
use crate::{Caps, Privileges};
use bpfvet_isa::opcode::{
    BPF_CALL, BPF_JMP, BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC, BPF_PSEUDO_KFUNC_CALL,
};
use bpfvet_isa::privileges::cap;

/// BPF_MAXINSNS: the largest program a loader without CAP_BPF may load.
const MAX_UNPRIVILEGED_INSNS: usize = 4096;

/// bpf_prog_load's own checks. They fail with no verifier log, only an
/// errno: the error is "bpf_prog_load: E2BIG" or "bpf_prog_load: EPERM",
/// with the reason (which the kernel does not give) alongside.
pub(crate) fn check_load(
    prog: &bpfvet_object::Program,
    p: Privileges,
) -> Result<(), (String, VerifyError)> {
    let refuse = |errno: &str, why: String| {
        Err((
            why,
            VerifyError::new(None, format!("bpf_prog_load: {errno}")),
        ))
    };
    let has = |c: u32| p.has(c) || p.has(cap::SYS_ADMIN);
    let bpf_capable = has(cap::BPF);
    if !bpf_capable && prog.insns.len() > MAX_UNPRIVILEGED_INSNS {
        return refuse(
            "E2BIG",
            format!(
                "{} insns, over {MAX_UNPRIVILEGED_INSNS} for a loader without CAP_BPF",
                prog.insns.len()
            ),
        );
    }
    let (unprivileged, needs) = crate::helpers::prog_types::load_capabilities(prog.prog_type);
    let type_name = prog.prog_type.name().unwrap_or("?");
    if !bpf_capable && !unprivileged {
        return refuse("EPERM", format!("program type {type_name} needs CAP_BPF"));
    }
    if let Some(&c) = needs.iter().find(|&&c| !has(c)) {
        let name = if c == cap::NET_ADMIN {
            "CAP_NET_ADMIN"
        } else {
            "CAP_PERFMON"
        };
        return refuse("EPERM", format!("program type {type_name} needs {name}"));
    }
    Ok(())
}

/// Without CAP_BPF a program may neither call nor take the address of
/// another function, BPF or kernel (add_subprog_and_kfunc).
pub(crate) fn check_calls(prog: &bpfvet_object::Program, caps: &Caps) -> Result<(), VerifyError> {
    if caps.bpf_capable {
        return Ok(());
    }
    let calls_out = |i: &bpfvet_isa::Insn| {
        (i.code == BPF_JMP | BPF_CALL
            && (i.src == BPF_PSEUDO_CALL || i.src == BPF_PSEUDO_KFUNC_CALL))
            || (i.is_ld_imm64() && i.src == BPF_PSEUDO_FUNC)
    };
    match prog.insns.iter().position(calls_out) {
        Some(i) => Err(VerifyError::new(
            Some(i),
            "loading/calling other bpf or kernel functions are allowed for CAP_BPF and CAP_SYS_ADMIN"
                .into(),
        )),
        None => Ok(()),
    }
}

/// stacksafe for a loader without CAP_PERFMON, byte by byte as the kernel
/// walks it: never-written bytes still match anything, but unknown ones
/// (STACK_MISC) only unknown or zero bytes, since uninitialised stack is
/// unreadable here.
pub(crate) fn stacksafe_uninit_unreadable(
    old: &crate::state::Frame,
    cur: &crate::state::Frame,
    m: &mut crate::prune::IdMap,
    exact: crate::prune::Exact,
) -> bool {
    use crate::prune::{regsafe, Exact};
    use crate::regs::{Reg, RegType};
    use crate::state::{Slot, SlotType, REG_SIZE};
    // A full scalar spill, or bytes that all read as an unknown scalar.
    let scalar_of = |s: &Slot| {
        if s.is_full_spill() && s.spilled.ty == RegType::Scalar {
            Some(s.spilled)
        } else if s.types.iter().all(|t| *t == SlotType::Misc) {
            Some(Reg::unknown_scalar())
        } else {
            None
        }
    };
    let old_bytes = old.stack.len() * REG_SIZE;
    let cur_bytes = cur.stack.len() * REG_SIZE;
    let mut i = 0;
    while i < old_bytes {
        let (spi, b) = (i / REG_SIZE, i % REG_SIZE);
        let os = &old.stack[spi];
        let ot = os.types[b];
        if exact != Exact::Loose && (i >= cur_bytes || ot != cur.stack[spi].types[b]) {
            return false;
        }
        if ot == SlotType::Invalid {
            i += 1;
            continue;
        }
        if i >= cur_bytes {
            return false;
        }
        let cs = &cur.stack[spi];
        if let (Some(o), Some(c)) = (scalar_of(os), scalar_of(cs)) {
            if !regsafe(&o, &c, m, exact) {
                return false;
            }
            i += REG_SIZE;
            continue;
        }
        let ct = cs.types[b];
        // Unknown bytes were safe, so zeroed ones are too.
        if ot == SlotType::Misc && ct == SlotType::Zero {
            i += 1;
            continue;
        }
        if ot != ct {
            return false;
        }
        if b == REG_SIZE - 1 && !crate::prune::slot_objects_safe(os, cs, m, exact) {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prune::{stacksafe, Exact, IdMap};
    use crate::state::{Frame, Slot, SlotType};

    fn frame(types: [SlotType; 8]) -> Frame {
        let mut f = Frame::new(-1, 0, 0);
        f.stack.push(Slot {
            types,
            ..Slot::default()
        });
        f
    }

    #[test]
    fn unknown_bytes_cover_uninitialised_ones_only_for_root() {
        let old = frame([SlotType::Misc; 8]);
        let cur = frame([SlotType::Invalid; 8]);
        let mut m = IdMap::new(false);
        assert!(stacksafe(&old, &cur, &mut m, Exact::Loose));
        assert!(!stacksafe_uninit_unreadable(
            &old,
            &cur,
            &mut m,
            Exact::Loose
        ));
        // Zeroed bytes are covered by unknown ones, and never-written old
        // bytes cover anything, at every level.
        let zero = frame([SlotType::Zero; 8]);
        assert!(stacksafe_uninit_unreadable(
            &old,
            &zero,
            &mut m,
            Exact::Loose
        ));
        assert!(stacksafe_uninit_unreadable(
            &cur,
            &old,
            &mut m,
            Exact::Loose
        ));
    }
}
