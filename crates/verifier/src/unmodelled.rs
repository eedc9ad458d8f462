//! What bpfvet refuses by name before verifying a program: program types,
//! and program flags whose semantics it does not model, and
//! programs the object loader could not prepare. A refusal is never an
//! accept or a reject under semantics bpfvet lacks.

use crate::error::VerifyError;

/// Program types whose verification depends on something bpfvet does not
/// resolve: they are refused by name rather than verified as something else.
pub(crate) fn prog_type(prog: &bpfvet_object::Program) -> Result<(), VerifyError> {
    use bpfvet_isa::uapi::ProgType as Pt;
    let what = match prog.prog_type {
        Pt::UNSPEC => format!(
            "no program type: section '{}' names none (give one with --prog-type)",
            prog.section
        ),
        Pt::EXT => "freplace programs (verified against the program they replace)".to_string(),
        _ => return Ok(()),
    };
    Err(VerifyError::unsupported(None, what))
}

/// Program flags that change verification in ways bpfvet does not model.
/// The others are modelled (BPF_F_TEST_STATE_FREQ, BPF_F_STRICT_ALIGNMENT
/// and BPF_F_ANY_ALIGNMENT), or change nothing the verifier decides
/// (BPF_F_TEST_RND_HI32 only changes the rewritten program).
pub(crate) fn prog_flags(prog: &bpfvet_object::Program) -> Result<(), VerifyError> {
    use bpfvet_isa::uapi::*;
    let flags = prog.prog_flags;
    let what = if (flags & BPF_F_SLEEPABLE != 0) && !prog.sleepable {
        // The kernel goes by the flag; bpfvet's sleepable regions by the
        // program's mark, which the loader sets with it.
        "program flag BPF_F_SLEEPABLE on a program not marked sleepable".to_string()
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
