//! The host Linux kernel as a second backend (issue 3): load an [`Object`]
//! exactly as libbpf would — same final instruction stream as the bpfvet
//! verifier sees — and collect the kernel's verdict, log and statistics;
//! run programs with BPF_PROG_TEST_RUN and operate on the created maps.
//!
//! ```no_run
//! # fn demo(obj: &bpfvet_object::Object) -> Result<(), bpfvet_kernel::Error> {
//! let kernel = bpfvet_kernel::Kernel::open()?; // "kernel backend unavailable: ..." otherwise
//! let session = kernel.open_object(obj);
//! let report = session.load_program(0, &Default::default()).unwrap();
//! println!("{:?} {:?}", report.verdict, report.processed_insns());
//! # Ok(()) }
//! ```
//!
//! [`Object`]: bpfvet_object::Object

pub mod attach_target;
pub mod guest;
pub mod log_stats;
pub mod map;
pub mod mem_peak;
pub mod oracle;
pub mod privileges;
pub mod program;
pub mod report;
pub mod session;
pub mod sys;

pub use log_stats::{parse_log_stats, LogStats};
pub use map::{KernelMap, MapCreateError};
pub use program::{LoadedProgram, TestRunInput, TestRunOutput};
pub use report::{ProgramReport, Refusal, Verdict};
pub use session::{
    BtfError, Error, Kernel, LoadOptions, ObjectSession, LOG_LEVEL_STATS, MAX_LOG_SIZE,
};
pub use sys::Errno;
