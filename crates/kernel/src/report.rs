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
    /// program type, we lack a capability, or (fentry/fexit/fmod_ret/lsm)
    /// the kernel cannot build BPF trampolines; bpftool fails the same way.
    #[error("refused with EPERM and an empty log (kernel lockdown, missing capability, or no BPF trampoline support)")]
    PermissionDenied,
    /// The attach target named by the section is not in vmlinux BTF.
    #[error("attach target '{target}' not found in /sys/kernel/btf/vmlinux")]
    AttachTargetMissing { target: String },
    /// The section name gives no program type (libbpf: "missing BPF prog
    /// type, check ELF section name").
    #[error("no program type: section '{section}' is not one libbpf knows")]
    UnknownProgType { section: String },
    /// The object loader could not prepare the program (an extern or a
    /// relocation only it needs); nothing was sent to the kernel.
    #[error("the object loader refused this program: {0}")]
    Loader(String),
    /// The program needs an attach target the backend cannot provide.
    #[error("{0}")]
    NeedsTarget(String),
    /// A map the program uses could not be created.
    #[error("map creation failed: {0}")]
    MapCreation(String),
    /// The log did not fit under the size cap; the load is not conclusive.
    #[error("verifier log needs {needed} bytes, over the cap of {cap} (raise --log-size)")]
    LogTruncated { needed: u64, cap: u64 },
    /// The verifier passed the program (the log holds its statistics and
    /// no error) but the load failed after it: a prog array owned by
    /// another program type, a failing JIT step.
    #[error("refused after verification: {errno}")]
    AfterVerification { errno: Errno },
    /// The privilege level asked for cannot be had on this host.
    #[error("cannot load at this privilege level: {0}")]
    Privileges(String),
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
    /// Whether the load fell back to no BTF (the kernel refused the
    /// object's BTF, as libbpf then loads without it).
    pub btf_dropped: bool,
    /// Wall time of the BPF_PROG_LOAD call(s).
    pub wall_time: Duration,
    /// The loaded program, for BPF_PROG_TEST_RUN.
    pub loaded: Option<crate::LoadedProgram>,
    /// For a reduced-privilege loader refused by bpf_prog_load's own checks
    /// (no verifier log): "bpf_prog_load: <errno>", its error line.
    pub load_refusal: Option<String>,
}

impl ProgramReport {
    /// The verifier's error for a rejected program: the last log line that
    /// is not statistics (None when accepted or when the log has none).
    pub fn error_line(&self) -> Option<&str> {
        if self.verdict != Verdict::Rejected {
            return None;
        }
        last_error_line(&self.log).or(self.load_refusal.as_deref())
    }

    /// The C source line the kernel names after its error (it does so at
    /// the stats-only log level), as `file.c:42: <text>`.
    pub fn error_source(&self) -> Option<String> {
        let error = self.error_line()?;
        let mut lines = self.log.lines().skip_while(|l| !l.starts_with(error));
        lines.next()?;
        let (text, place) = lines.next()?.strip_prefix("; ")?.rsplit_once(" @ ")?;
        Some(format!("{place}: {text}"))
    }

    /// The kernel's detail line just before its error, if any.
    pub fn error_detail(&self) -> Option<String> {
        error_detail(&self.log, self.error_line()?)
    }

    /// Processed instructions: bpf_prog_info when loaded, else the log.
    pub fn processed_insns(&self) -> Option<u64> {
        self.verified_insns
            .map(u64::from)
            .or(self.stats.processed_insns)
    }
}

/// The message line a verifier prints just before its error, the detail
/// that says which access or register failed (`invalid access to packet,
/// off=12 size=1, R1(id=0,off=12,r=0)` before `R1 offset is outside of the
/// packet`): None when the line before is an instruction, a source line or
/// a state.
pub fn error_detail(log: &str, error: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().collect();
    let at = lines.iter().rposition(|l| l.starts_with(error))?;
    let prev = lines.get(at.checked_sub(1)?)?.trim_end();
    let is_insn = prev
        .split_once(": ")
        .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
    let not_detail = prev.is_empty()
        || prev.starts_with("; ")
        || prev.starts_with("from ")
        || is_insn
        || prev == error;
    (!not_detail).then(|| prev.to_string())
}

/// The instruction a level-1 (or higher) log shows last before its error
/// (the one that failed), and the C line shown last before that
/// instruction (`file.c:42: <text>`). None in a stats-only log, which
/// prints no instructions.
pub fn failing_site(log: &str, error: &str) -> Option<(usize, Option<String>)> {
    let lines: Vec<&str> = log.lines().collect();
    let at = lines.iter().rposition(|l| l.starts_with(error))?;
    let (pos, insn) = lines[..at]
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, l)| Some((i, insn_index(l)?)))?;
    let source = lines[..pos].iter().rev().find_map(|l| {
        let (text, place) = l.strip_prefix("; ")?.rsplit_once(" @ ")?;
        Some(format!("{place}: {text}"))
    });
    Some((insn, source))
}

/// `12: (79) r0 = ...` is instruction 12; state lines (`12: R0=...`) and
/// branch lines (`from 3 to 12: ...`) are not instructions.
fn insn_index(line: &str) -> Option<usize> {
    let (n, rest) = line.split_once(": (")?;
    rest.get(..3)?.ends_with(')').then_some(())?;
    n.parse().ok()
}

/// The last line of a verifier log that is not statistics or the state dump
/// that follows "infinite loop detected".
pub fn last_error_line(log: &str) -> Option<&str> {
    let last = log.lines().rfind(|l| {
        !l.is_empty()
            && !l.starts_with("processed ")
            && !l.starts_with("verification time")
            && !l.starts_with("stack depth")
            // Source lines ("; text @ file:line") are never the error.
            && !l.starts_with("; ")
            && !l.starts_with("cur state:")
            && !l.starts_with("old state:")
    })?;
    // A message printed without a newline runs into the stats line.
    let last = match last.find("verification time") {
        Some(i) => &last[..i],
        None => last,
    };
    Some(after_joined_insn(last))
}

/// What do_check prints for a state before the state's first instruction:
/// its complexity limit and is_state_visited's checks. When the state
/// was popped from the branch stack, the log was cut back to just after
/// the instruction that pushed it, its newline gone, so such a message
/// lands on that instruction's line (`31: (a5) if r8 < 0x8 goto pc-2
/// infinite loop detected at insn 30`).
const PRE_INSN_MESSAGES: [&str; 4] = [
    "infinite loop detected at insn ",
    "BPF program is too large. Processed ",
    "invalid insn idx ",
    "verifier bug: ",
];

/// The message of an instruction line a pre-instruction message ran
/// into; any other line as it is.
fn after_joined_insn(line: &str) -> &str {
    let is_insn_line = line
        .split_once(": (")
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if !is_insn_line {
        return line;
    }
    PRE_INSN_MESSAGES
        .iter()
        .filter_map(|m| line.find(&format!(" {m}")))
        .min()
        .map_or(line, |i| &line[i + 1..])
}

#[cfg(test)]
mod tests {
    use super::{error_detail, failing_site, last_error_line};

    #[test]
    fn message_joined_to_an_instruction_line_is_the_error() {
        // Level 1 at reduced privileges: a speculative state popped back
        // to the jump that pushed it finds an infinite loop.
        let log = "30: (07) r8 += 1\n\
                   31: (a5) if r8 < 0x8 goto pc-2 infinite loop detected at insn 30\n\
                   cur state: R8=scalar() R10=fp0\n\
                   old state: R8=Pscalar() R10=fp0\n\
                   verification time 67336 usec\n\
                   stack depth 8\n\
                   processed 10316 insns (limit 1000000) max_states_per_insn 4 total_states 108 peak_states 108 mark_read 0\n";
        assert_eq!(
            last_error_line(log),
            Some("infinite loop detected at insn 30")
        );
        // An instruction line alone stays one (a log ending in the
        // last instruction verified), as does a message naming an insn.
        assert_eq!(
            last_error_line("5: (95) exit\nprocessed 6 insns (limit 1000000)\n"),
            Some("5: (95) exit")
        );
        assert_eq!(
            last_error_line("infinite loop detected at insn 3\n"),
            Some("infinite loop detected at insn 3")
        );
    }

    #[test]
    fn error_line_skips_stats_and_source_lines() {
        // The shape of a stats-only (level 4) log of a rejected program.
        let log = "invalid bpf_context access off=64 size=4\n\
                   ; __u32 v = *(__u32 *)(ctx + 64); @ prog.c:12\n\
                   verification time 66 usec\n\
                   stack depth 0\n\
                   processed 1 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0\n";
        assert_eq!(
            last_error_line(log),
            Some("invalid bpf_context access off=64 size=4")
        );
    }

    #[test]
    fn failing_site_is_the_last_instruction_before_the_error() {
        let log = "0: R1=ctx() R10=fp0\n\
                   ; int x = 0; @ prog.c:3\n\
                   0: (b7) r0 = 0                        ; R0_w=0\n\
                   ; return skb->data[12]; @ prog.c:4\n\
                   1: (71) r2 = *(u8 *)(r1 +12)\n\
                   from 4 to 6: R0=1\n\
                   6: R0=1\n\
                   invalid access to packet, off=12 size=1, R1(id=0,off=12,r=0)\n\
                   R1 offset is outside of the packet\n\
                   processed 2 insns\n";
        assert_eq!(
            failing_site(log, "R1 offset is outside of the packet"),
            Some((1, Some("prog.c:4: return skb->data[12];".to_string())))
        );
        // A stats-only log names no instruction.
        assert_eq!(
            failing_site(
                "R1 offset is outside of the packet\nprocessed 2 insns\n",
                "R1 offset"
            ),
            None
        );
    }

    #[test]
    fn detail_is_the_message_before_the_error() {
        let log = "1: (71) r2 = *(u8 *)(r1 +12)\n\
                   invalid access to packet, off=12 size=1, R1(id=0,off=12,r=0)\n\
                   R1 offset is outside of the packet\n\
                   processed 2 insns\n";
        assert_eq!(
            error_detail(log, "R1 offset is outside of the packet").as_deref(),
            Some("invalid access to packet, off=12 size=1, R1(id=0,off=12,r=0)")
        );
        // An instruction or source line before the error is no detail.
        let log = "0: (95) exit\nR0 !read_ok\n";
        assert_eq!(error_detail(log, "R0 !read_ok"), None);
        let log = "; return x; @ a.c:3\nR0 !read_ok\n";
        assert_eq!(error_detail(log, "R0 !read_ok"), None);
    }

    #[test]
    fn error_line_cuts_a_message_run_into_the_stats() {
        let log = "R1 type=scalar expected=fpverification time 5 usec\nprocessed 3 insns\n";
        assert_eq!(last_error_line(log), Some("R1 type=scalar expected=fp"));
        assert_eq!(last_error_line("processed 3 insns\n"), None);
    }
}
