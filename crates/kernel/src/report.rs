//! What the kernel said about one program.

use crate::log_stats::LogStats;
use crate::sys::Errno;
use bpfvet_isa::uapi::{AttachType, ProgType};
use std::time::Duration;

/// The kernel's answer to BPF_PROG_LOAD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Verified and loaded.
    Accepted,
    /// The verifier ran and rejected the program (its log has the stats line).
    Rejected,
    /// The kernel refused the program for a reason that is not verification.
    Refused(Refusal),
}

impl Verdict {
    pub fn is_accepted(&self) -> bool {
        matches!(self, Verdict::Accepted)
    }
}

/// Reasons a program never reached (or never finished) verification.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// EPERM with an empty log: the kernel is locked down against this
    /// program type (fentry/fexit/fmod_ret/lsm here) or we lack a capability.
    #[error("refused with EPERM and an empty log (kernel lockdown or missing capability)")]
    PermissionDenied,
    /// The attach target named by the section is not in vmlinux BTF.
    #[error("attach target '{target}' not found in /sys/kernel/btf/vmlinux")]
    AttachTargetMissing { target: String },
    /// The section name gives no program type (libbpf: "missing BPF prog
    /// type, check ELF section name").
    #[error("no program type: section '{section}' is not one libbpf knows")]
    UnknownProgType { section: String },
    /// The program needs an attach target the backend cannot provide.
    #[error("{0}")]
    NeedsTarget(String),
    /// A map the program uses could not be created.
    #[error("map creation failed: {0}")]
    MapCreation(String),
    /// The log did not fit under the size cap; the load is not conclusive.
    #[error("verifier log needs {needed} bytes, over the cap of {cap} (raise --log-size)")]
    LogTruncated { needed: u64, cap: u64 },
    /// Any other refusal before the verifier ran.
    #[error("refused before verification: {errno}{}", if detail.is_empty() { String::new() } else { format!(" ({detail})") })]
    Other { errno: Errno, detail: String },
}

/// Everything collected for one program.
#[derive(Debug)]
pub struct ProgramReport {
    pub name: String,
    pub section: String,
    pub verdict: Verdict,
    /// errno of the final BPF_PROG_LOAD, None when it succeeded.
    pub errno: Option<Errno>,
    /// The verifier log of the final attempt.
    pub log: String,
    pub stats: LogStats,
    /// bpf_prog_info.verified_insns (accepted programs only).
    pub verified_insns: Option<u32>,
    /// Instructions handed to the kernel.
    pub insn_cnt: u32,
    /// bpf_prog_info.xlated_prog_len / jited_prog_len in bytes.
    pub xlated_size: Option<u32>,
    pub jited_size: Option<u32>,
    /// memory.peak of the backend's cgroup over the load, in bytes.
    pub mem_peak_bytes: Option<u64>,
    pub prog_type: ProgType,
    /// The attach type passed to the kernel (0 when the program has none).
    pub expected_attach_type: AttachType,
    /// Whether the load fell back to no BTF / no func_info and line_info.
    pub btf_dropped: bool,
    pub ext_info_dropped: bool,
    /// Wall time of the BPF_PROG_LOAD call(s).
    pub wall_time: Duration,
    /// The loaded program, for BPF_PROG_TEST_RUN.
    pub loaded: Option<crate::LoadedProgram>,
}

impl ProgramReport {
    /// Processed instructions: bpf_prog_info when loaded, else the log.
    pub fn processed_insns(&self) -> Option<u64> {
        self.verified_insns
            .map(u64::from)
            .or(self.stats.processed_insns)
    }
}
