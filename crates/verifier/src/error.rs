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
}

pub type VResult<T> = Result<T, VerifyError>;
