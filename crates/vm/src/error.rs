//! What can stop a load or a run.

use bpfvet_maps::MapError;

#[derive(Debug, thiserror::Error)]
pub enum VmError {
    #[error("program has no instructions")]
    Empty,
    #[error("insn {pc}: {what}")]
    BadInsn { pc: usize, what: String },
    #[error("insn {pc}: {kind} of {size} bytes at {addr:#x} is outside every region the run owns")]
    OutOfBounds {
        pc: usize,
        kind: &'static str,
        addr: u64,
        size: u32,
    },
    #[error("insn {pc}: write of {size} bytes at {addr:#x} into read-only memory")]
    ReadOnly { pc: usize, addr: u64, size: u32 },
    #[error("insn {pc}: misaligned atomic access at {addr:#x}")]
    Misaligned { pc: usize, addr: u64 },
    #[error("insn {pc}: context access off={off} size={size} is not allowed")]
    CtxAccess { pc: usize, off: u32, size: u32 },
    #[error("insn {pc}: helper {name} (#{id}) cannot be honoured in user space")]
    UnsupportedHelper { pc: usize, id: i32, name: String },
    #[error("insn {pc}: helper {name}: {what}")]
    HelperFault {
        pc: usize,
        name: &'static str,
        what: String,
    },
    #[error("insn {pc}: kfunc {} (vmlinux btf id {id}) cannot be run in user space", name.as_deref().unwrap_or("?"))]
    UnsupportedKfunc {
        pc: usize,
        id: i32,
        name: Option<String>,
    },
    #[error("insn {pc}: call stack deeper than {max} frames")]
    CallDepth { pc: usize, max: usize },
    #[error("instruction budget of {0} exhausted (the program may not terminate)")]
    InsnLimit(u64),
    #[error("insn {pc}: jump out of the program to {target}")]
    JumpOutOfRange { pc: usize, target: i64 },
    #[error("program {0:?} not found in the object")]
    NoSuchProgram(String),
    #[error("map {name:?}: {source}")]
    MapCreate {
        name: String,
        #[source]
        source: MapError,
    },
    #[error("map {0:?}: not supported by the runtime")]
    MapUnsupported(String),
    #[error("the verifier rejects program {prog}{}: {error}", insn.map(|i| format!(" at insn {i}")).unwrap_or_default())]
    Rejected {
        prog: String,
        error: String,
        insn: Option<usize>,
    },
    #[error("test_run: {0} (the kernel answers EINVAL)")]
    Invalid(String),
    #[error("program type {0} cannot be run by test_run")]
    NotRunnable(String),
}

pub type Result<T> = std::result::Result<T, VmError>;
