//! What bpfvet refuses by name before verifying a program: program types,
//! program flags and map kinds whose semantics it does not model, and
//! programs the object loader could not prepare. A refusal is never an
//! accept or a reject under semantics bpfvet lacks.

use crate::error::VerifyError;
use crate::kfunc;

/// Program types whose verification depends on something bpfvet does not
/// resolve: they are refused by name rather than verified as something else.
pub(crate) fn prog_type(prog: &bpfvet_object::Program) -> Result<(), VerifyError> {
    use bpfvet_isa::uapi::ProgType as Pt;
    let what = match prog.prog_type {
        Pt::UNSPEC => format!(
            "no program type: section '{}' names none (give one with --prog-type)",
            prog.section
        ),
        Pt::STRUCT_OPS => "struct_ops programs (the struct_ops member a program implements \
                           decides its arguments, return value and allowed kfuncs)"
            .to_string(),
        Pt::EXT => "freplace programs (verified against the program they replace)".to_string(),
        _ => return Ok(()),
    };
    Err(VerifyError::unsupported(None, what))
}

/// Program flags that change verification in ways bpfvet does not model.
/// The others are modelled (BPF_F_TEST_STATE_FREQ), or change nothing the
/// verifier decides for a root loader on x86-64 (which has efficient
/// unaligned access: BPF_F_ANY_ALIGNMENT; BPF_F_TEST_RND_HI32 only changes
/// the rewritten program).
pub(crate) fn prog_flags(prog: &bpfvet_object::Program) -> Result<(), VerifyError> {
    use bpfvet_isa::uapi::*;
    let flags = prog.prog_flags;
    let what = if (flags & BPF_F_SLEEPABLE != 0) && !prog.sleepable {
        // The kernel goes by the flag; bpfvet's sleepable regions by the
        // program's mark, which the loader sets with it.
        "program flag BPF_F_SLEEPABLE on a program not marked sleepable".to_string()
    } else if flags & BPF_F_STRICT_ALIGNMENT != 0 && flags & BPF_F_ANY_ALIGNMENT == 0 {
        "program flag BPF_F_STRICT_ALIGNMENT (strict pointer alignment checks)".to_string()
    } else if flags & BPF_F_TEST_REG_INVARIANTS != 0 {
        "program flag BPF_F_TEST_REG_INVARIANTS (bounds invariant violations as errors)".to_string()
    } else {
        let known = PROG_FLAGS.iter().fold(0, |all, (_, bit)| all | bit);
        if flags & !known == 0 {
            return Ok(());
        }
        format!("program flags {:#x}", flags & !known)
    };
    Err(VerifyError::unsupported(None, what))
}

/// A program the object loader could not prepare has no instruction
/// stream to verify.
pub(crate) fn loader_refusal(prog: &bpfvet_object::Program) -> Result<(), VerifyError> {
    match &prog.refused {
        Some(why) => Err(VerifyError::unsupported(
            None,
            format!("the object loader refused this program: {why}"),
        )),
        None => Ok(()),
    }
}

/// Map types whose verification bpfvet does not model: a program that
/// references one is refused by name.
pub(crate) fn maps(
    obj: &bpfvet_object::Object,
    prog: &bpfvet_object::Program,
) -> Result<(), VerifyError> {
    use bpfvet_isa::opcode::{BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE};
    use bpfvet_isa::uapi::MapType;
    let what = "BPF arenas (arena maps, pointers into an arena, addr_space_cast)";
    let mut i = 0;
    while i < prog.insns.len() {
        let insn = prog.insns[i];
        let is_kfunc_call = insn.code == bpfvet_isa::opcode::BPF_JMP | bpfvet_isa::opcode::BPF_CALL
            && insn.src == bpfvet_isa::opcode::BPF_PSEUDO_KFUNC_CALL;
        if is_kfunc_call && kfunc::is_arena_kfunc_call(&insn) {
            return Err(VerifyError::unsupported(
                Some(i),
                format!("{what}: arena kfunc call"),
            ));
        }
        if insn.is_ld_imm64() {
            let is_map = insn.src == BPF_PSEUDO_MAP_IDX || insn.src == BPF_PSEUDO_MAP_IDX_VALUE;
            let map = is_map
                .then(|| obj.maps.get(insn.imm as u32 as usize))
                .flatten();
            if let Some(m) = map.filter(|m| m.map_type == MapType::ARENA) {
                return Err(VerifyError::unsupported(
                    Some(i),
                    format!("{what}: arena map '{}'", m.name),
                ));
            }
            i += 1;
        }
        i += 1;
    }
    Ok(())
}
