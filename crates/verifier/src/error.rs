//! A verification failure: the kernel's message and where it happened.

use crate::Limit;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    pub insn: Option<usize>,
    pub msg: String,
    pub limit: Option<Limit>,
    /// Set when bpfvet stops because it does not model what the program
    /// uses (a program type, kfunc or feature): the verdict is a refusal by
    /// name, never an accept or a reject under semantics bpfvet lacks.
    pub unsupported: bool,
}

impl VerifyError {
    pub fn new(insn: Option<usize>, msg: String) -> VerifyError {
        VerifyError {
            insn,
            msg,
            limit: None,
            unsupported: false,
        }
    }
    /// bpfvet cannot decide: `what` names the unmodelled program type,
    /// kfunc or feature.
    pub fn unsupported(insn: Option<usize>, what: String) -> VerifyError {
        VerifyError {
            insn,
            msg: what,
            limit: None,
            unsupported: true,
        }
    }
    pub fn limit(insn: Option<usize>, limit: Limit, msg: String) -> VerifyError {
        VerifyError {
            insn,
            msg,
            limit: Some(limit),
            unsupported: false,
        }
    }

    /// The kernel's error_recoverable_with_nospec: on a speculative path an
    /// error returning EPERM, EACCES or EINVAL does not reject the program;
    /// the instruction gets a speculation barrier and the path ends. Limits
    /// and refusals never recover (the kernel's limits are E2BIG, ENOMEM or
    /// EFAULT; what bpfvet does not model it cannot call recoverable).
    pub fn recoverable_with_nospec(&self) -> bool {
        self.limit.is_none() && !self.unsupported && errno_class(&self.msg) == Errno::Recoverable
    }
}

/// What errno the kernel returns with a message, as far as nospec recovery
/// cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Errno {
    /// EPERM, EACCES or EINVAL: the checks' own errors.
    Recoverable,
    /// EFAULT (verifier bugs), E2BIG, ENOMEM, ENOTSUPP, EOPNOTSUPP, ENOENT.
    Fatal,
}

/// Fragments of the messages of 6.18's verifier.c that bpfvet can give
/// during exploration and that come with an errno other than EPERM, EACCES
/// or EINVAL. Every other message is EACCES or EINVAL.
const FATAL_MESSAGES: &[&str] = &[
    // EFAULT
    "verifier bug",
    "verifier internal error",
    "failed to retrieve map value address",
    "Helper has invalid btf/btf_id in R1",
    "unexpected __bpf_trap() due to uninitialized variable?",
    "allocated_stack too small",
    // E2BIG (a frame too many) or EFAULT (too many pending paths)
    "failed callback verification",
    "invalid insn idx",
    "kernel subsystem misconfigured",
    "bad parent state for iter next call",
    "invalid map_ptr to access map->",
    // E2BIG
    "frames is too deep",
    "BPF program is too large",
    // ENOMEM
    "could not be pushed for speculative verification",
    "failed to push state for failed lock acquisition",
    "jumps is too complex",
    // ENOTSUPP / EOPNOTSUPP
    "map_ptr access not supported",
    "supported only for fentry/fexit/fmod_ret programs",
    "not supported for program type",
    "callback function not allowed for map",
    "sign extending loads from arena are not supported yet",
    "bpf_timer cannot be used for PREEMPT_RT.",
    "JIT does not support calling",
    // ENOENT
    "ldimm64 insn specifies invalid btf_id",
    "ldimm64 failed to find the address for kernel symbol",
];

/// The errno class of a kernel message (see [`FATAL_MESSAGES`]).
pub fn errno_class(msg: &str) -> Errno {
    if FATAL_MESSAGES.iter().any(|f| msg.contains(f)) {
        Errno::Fatal
    } else {
        Errno::Recoverable
    }
}

pub type VResult<T> = Result<T, VerifyError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_checks_own_errors_recover_on_a_speculative_path() {
        let at = |msg: &str| VerifyError::new(Some(0), msg.to_string());
        assert!(at("R1 !read_ok").recoverable_with_nospec());
        assert!(at("invalid read from stack R10 off=-8 size=8").recoverable_with_nospec());
        assert!(!at("the call stack of 9 frames is too deep").recoverable_with_nospec());
        assert!(!at("verifier internal error: no dynptr id").recoverable_with_nospec());
        let limit = VerifyError::limit(
            Some(0),
            Limit::ProcessedInsns,
            "BPF program is too large. Processed 1000001 insn".into(),
        );
        assert!(!limit.recoverable_with_nospec());
        assert!(!VerifyError::unsupported(Some(0), "R1 !read_ok".into()).recoverable_with_nospec());
    }
}
