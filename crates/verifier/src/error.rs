//! A verification failure: the kernel's message and where it happened.

use crate::Limit;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    pub insn: Option<usize>,
    pub msg: String,
    pub limit: Option<Limit>,
}

impl VerifyError {
    pub fn new(insn: Option<usize>, msg: String) -> VerifyError {
        VerifyError {
            insn,
            msg,
            limit: None,
        }
    }
    pub fn limit(insn: Option<usize>, limit: Limit, msg: String) -> VerifyError {
        VerifyError {
            insn,
            msg,
            limit: Some(limit),
        }
    }
}

pub type VResult<T> = Result<T, VerifyError>;
