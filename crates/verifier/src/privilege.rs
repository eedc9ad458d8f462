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
