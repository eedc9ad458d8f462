//! Who verifies: the bpfvet verifier, the host kernel, or both side by side.
//! Each backend turns the selected programs of one object into result rows
//! with veristat's stats; adding a backend is one more `Backend` impl.

use super::fields::Stat;
use super::row::{Rejection, Row};
use bpfvet_kernel::guest::image::KernelSpec;
use bpfvet_kernel::{Kernel, LoadOptions, ProgramReport, Verdict as KVerdict};
use bpfvet_object::Object;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    Bpfvet,
    Kernel,
    Both,
}

/// `--backend`: which verifiers, and for the kernel side which kernel
/// (None: the host's, through bpf(2) directly).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub kind: BackendKind,
    pub kernel: Option<KernelSpec>,
}

/// `bpfvet`, `kernel`, `both`, `kernel=K`, `both=K` (K as `--kernels`
/// takes it; `kernel=host` is plain `kernel`).
pub fn parse_choice(text: &str) -> Result<Choice, String> {
    let (name, kernel) = match text.split_once('=') {
        Some((n, k)) => (n, Some(KernelSpec::parse(k)?)),
        None => (text, None),
    };
    let kind = match name {
        "bpfvet" if kernel.is_none() => BackendKind::Bpfvet,
        "bpfvet" => return Err("bpfvet takes no kernel (kernel=K or both=K do)".into()),
        "kernel" => BackendKind::Kernel,
        "both" => BackendKind::Both,
        _ => {
            return Err(format!(
                "unknown backend '{name}' (bpfvet, kernel, both, kernel=VERSION, both=VERSION)"
            ))
        }
    };
    let kernel = kernel.filter(|k| *k != KernelSpec::Host);
    Ok(Choice { kind, kernel })
}

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Log level beyond stats (0, 1, 2).
    pub log_level: u32,
    /// Initial log buffer size; the kernel backend grows it on demand.
    pub log_size: Option<u32>,
    /// Keep each program's log in its row.
    pub keep_log: bool,
    /// No notes on stderr.
    pub quiet: bool,
    /// Per-program limits of the bpfvet verifier (the kernel has its own).
    pub timeout: Option<std::time::Duration>,
    pub max_memory: Option<usize>,
    /// The loader's capabilities, for both backends.
    pub privileges: bpfvet_isa::Privileges,
}

pub trait Backend {
    fn name(&self) -> &'static str;
    /// One row per program index in `progs`, in that order.
    fn verify_object(
        &mut self,
        file: &str,
        obj: &Object,
        progs: &[usize],
        opts: &RunOptions,
    ) -> Vec<Row>;
}

/// Fills the stats every backend knows from the object itself.
pub fn base_row(file: &str, obj: &Object, idx: usize) -> Row {
    let p = &obj.programs[idx];
    let mut row = Row::new(file, &p.name);
    row.set(Stat::ProgSize, p.insns.len() as i64);
    row.set(Stat::ProgType, p.prog_type.0 as i64);
    row.set(
        Stat::AttachType,
        p.expected_attach_type.map_or(0, |a| a.0 as i64),
    );
    row
}

fn opt(v: Option<u64>) -> Option<i64> {
    v.and_then(|v| i64::try_from(v).ok())
}

const MIB: u64 = 1024 * 1024;

/// Prefix of row reasons that are bpfvet's own failures, not verdicts.
pub const INTERNAL_ERROR: &str = "internal error";

/// The detail line before a bpfvet rejection: from the log when one was
/// kept, else from verifying the program again at level 1 (rejections
/// only, so accepted programs pay nothing).
fn rejection_detail(
    out: &bpfvet_verifier::Outcome,
    obj: &Object,
    idx: usize,
    error: &str,
    privileges: bpfvet_isa::Privileges,
) -> Option<String> {
    if !out.log.is_empty() {
        return bpfvet_kernel::report::error_detail(&out.log, error);
    }
    // A logged run costs several times a plain one: not for programs that
    // made the verifier work hard before failing.
    if out.stats.processed_insns > 100_000 {
        return None;
    }
    let opts = bpfvet_verifier::Options {
        log_level: 1,
        privileges,
        ..Default::default()
    };
    let again = bpfvet_verifier::verify(obj, idx, &opts);
    bpfvet_kernel::report::error_detail(&again.log, error)
}

pub struct KernelBackend {
    kernel: Kernel,
}

impl KernelBackend {
    pub fn open(
        measure_mem_peak: bool,
        quiet: bool,
    ) -> Result<KernelBackend, bpfvet_kernel::Error> {
        let mut kernel = Kernel::open()?;
        if measure_mem_peak {
            if let Err(why) = kernel.enable_mem_peak() {
                if !quiet {
                    eprintln!(
                        "bpfvet: mem_peak not measured: {why} (CSV shows 0, as veristat does)"
                    );
                }
            }
        }
        Ok(KernelBackend { kernel })
    }
}

pub fn kernel_row(file: &str, obj: &Object, idx: usize, r: &ProgramReport, keep_log: bool) -> Row {
    let mut row = base_row(file, obj, idx);
    row.set(Stat::Verdict, r.verdict.is_accepted() as i64);
    row.set(Stat::Duration, opt(r.stats.verification_time_usec));
    row.set(Stat::TotalInsns, opt(r.processed_insns()));
    row.set(Stat::TotalStates, opt(r.stats.total_states));
    row.set(Stat::PeakStates, opt(r.stats.peak_states));
    row.set(Stat::MaxStatesPerInsn, opt(r.stats.max_states_per_insn));
    row.set(Stat::MarkRead, opt(r.stats.mark_read));
    row.set(Stat::JitedSize, r.jited_size.map(i64::from));
    row.set(Stat::StackDepth, opt(r.stats.stack_depth()));
    row.set(Stat::AttachType, r.expected_attach_type.0 as i64);
    row.set(Stat::MemPeak, opt(r.mem_peak_bytes.map(|b| b / MIB)));
    if let KVerdict::Refused(why) = &r.verdict {
        row.reason = Some(format!("refused: {why}"));
    }
    row.rejection = r.error_line().map(|e| Rejection {
        error: e.to_string(),
        detail: r.error_detail(),
        insn: None,
        source: r.error_source(),
    });
    if keep_log {
        row.log = Some(r.log.clone());
    }
    row
}

impl KernelBackend {
    /// One row per program index in `progs`, handed to `each` as soon as
    /// the kernel gave it (the object's BTF and maps are loaded once).
    pub fn verify_each(
        &mut self,
        file: &str,
        obj: &Object,
        progs: &[usize],
        opts: &RunOptions,
        mut each: impl FnMut(Row),
    ) {
        let session = self.kernel.open_object_as(obj, opts.privileges);
        if let (Some(why), false) = (&session.btf_error, opts.quiet) {
            eprintln!("bpfvet: {file}: the kernel refused the object's BTF ({why}); loading without it, as libbpf does");
        }
        let mut load = LoadOptions {
            log_level: opts.log_level,
            privileges: opts.privileges,
            ..Default::default()
        };
        if let Some(size) = opts.log_size {
            load.log_size = size;
        } else if opts.log_level > 0 {
            load.log_size = 16 * 1024 * 1024;
        }
        for &i in progs {
            each(match session.load_program(i, &load) {
                Some(r) => {
                    let mut row = kernel_row(file, obj, i, &r, opts.keep_log);
                    if let Some(rejection) = &mut row.rejection {
                        if let Some((insn, source)) = kernel_failing_site(&session, i, &r, &load) {
                            rejection.insn = Some(insn);
                            rejection.source = rejection.source.take().or(source);
                        }
                    }
                    row
                }
                None => base_row(file, obj, i),
            });
        }
    }
}

impl Backend for KernelBackend {
    fn name(&self) -> &'static str {
        "kernel"
    }

    fn verify_object(
        &mut self,
        file: &str,
        obj: &Object,
        progs: &[usize],
        opts: &RunOptions,
    ) -> Vec<Row> {
        let mut rows = Vec::with_capacity(progs.len());
        self.verify_each(file, obj, progs, opts, |r| rows.push(r));
        rows
    }
}

/// The instruction the kernel rejected and its C line: from the log when it
/// was kept at level 1 or more, else from loading the program again at
/// level 1 (as for bpfvet's detail line: rejections only, and not after
/// long explorations).
fn kernel_failing_site(
    session: &bpfvet_kernel::ObjectSession<'_>,
    idx: usize,
    report: &ProgramReport,
    load: &LoadOptions,
) -> Option<(usize, Option<String>)> {
    let error = report.error_line()?;
    if let Some(site) = bpfvet_kernel::report::failing_site(&report.log, error) {
        return Some(site);
    }
    if load.log_level > 0 || report.processed_insns()? > 100_000 {
        return None;
    }
    let level1 = LoadOptions {
        log_level: 1,
        log_size: 16 * 1024 * 1024,
        ..load.clone()
    };
    let again = session.load_program(idx, &level1)?;
    bpfvet_kernel::report::failing_site(&again.log, again.error_line()?)
}

/// The reason a program the object loader could not prepare is refused,
/// worded as the kernel backend words it.
fn loader_refusal(why: &str) -> String {
    bpfvet_kernel::Refusal::Loader(why.to_owned()).to_string()
}

pub struct BpfvetBackend;

impl Backend for BpfvetBackend {
    fn name(&self) -> &'static str {
        "bpfvet"
    }

    fn verify_object(
        &mut self,
        file: &str,
        obj: &Object,
        progs: &[usize],
        opts: &RunOptions,
    ) -> Vec<Row> {
        if let (Some(why), false) = (&obj.btf_refused, opts.quiet) {
            eprintln!("bpfvet: {file}: the kernel would refuse the object's BTF ({why}); verifying without it, as libbpf loads");
        }
        let vopts = bpfvet_verifier::Options {
            log_level: opts.log_level,
            timeout: opts.timeout,
            max_memory: opts.max_memory,
            privileges: opts.privileges,
            ..Default::default()
        };
        progs
            .iter()
            .map(|&i| {
                let mut row = base_row(file, obj, i);
                if let Some(why) = &obj.programs[i].refused {
                    row.set(Stat::Verdict, 0);
                    row.reason = Some(format!("refused: {}", loader_refusal(why)));
                    return row;
                }
                // A verifier bug must not end a corpus run: it becomes this
                // program's named error (and exit code 2).
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    bpfvet_verifier::verify(obj, i, &vopts)
                }));
                let out = match run {
                    Ok(out) => out,
                    Err(panic) => {
                        let msg = panic
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        row.set(Stat::Verdict, 0);
                        row.reason =
                            Some(format!("{INTERNAL_ERROR}: bpfvet verifier panicked: {msg}"));
                        return row;
                    }
                };
                let s = &out.stats;
                let ok = matches!(out.verdict, bpfvet_verifier::Verdict::Accepted);
                row.set(Stat::Verdict, ok as i64);
                row.set(
                    Stat::Duration,
                    opt(u64::try_from(s.duration.as_micros()).ok()),
                );
                row.set(Stat::TotalInsns, opt(Some(s.processed_insns)));
                row.set(Stat::TotalStates, opt(Some(s.total_states)));
                row.set(Stat::PeakStates, opt(Some(s.peak_states)));
                row.set(Stat::MaxStatesPerInsn, opt(Some(s.max_states_per_insn)));
                row.set(Stat::MarkRead, opt(Some(s.mark_read)));
                row.set(
                    Stat::StackDepth,
                    s.stack_depth.iter().map(|&d| d as i64).sum::<i64>(),
                );
                // The verifier's own peak state memory stands in for the
                // kernel's cgroup memory.peak.
                row.set(Stat::MemPeak, opt(Some(s.peak_state_bytes / MIB)));
                match &out.verdict {
                    bpfvet_verifier::Verdict::LimitExceeded { error, .. } => {
                        row.reason = Some(format!("limit: {error}"));
                    }
                    bpfvet_verifier::Verdict::Rejected {
                        error,
                        insn,
                        source,
                    } => {
                        row.rejection = Some(Rejection {
                            error: error.clone(),
                            detail: rejection_detail(&out, obj, i, error, opts.privileges),
                            insn: *insn,
                            source: source.clone(),
                        });
                    }
                    bpfvet_verifier::Verdict::Unsupported { what, insn } => {
                        row.reason = Some(match insn {
                            Some(i) => format!("refused: insn {i}: not modelled by bpfvet: {what}"),
                            None => format!("refused: not modelled by bpfvet: {what}"),
                        });
                    }
                    bpfvet_verifier::Verdict::Accepted => {}
                }
                if opts.keep_log {
                    row.log = Some(out.log);
                }
                row
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_choices() {
        let c = |t| parse_choice(t);
        assert_eq!(
            c("kernel"),
            Ok(Choice {
                kind: BackendKind::Kernel,
                kernel: None
            })
        );
        assert_eq!(c("kernel=host"), c("kernel"));
        assert_eq!(
            c("both=6.18"),
            Ok(Choice {
                kind: BackendKind::Both,
                kernel: Some(KernelSpec::Version("6.18".into()))
            })
        );
        assert_eq!(
            c("kernel=/boot/vmlinuz-x").unwrap().kernel,
            Some(KernelSpec::Path("/boot/vmlinuz-x".into()))
        );
        assert!(c("bpfvet=6.18").is_err());
        assert!(c("kernel=six").is_err());
        assert!(c("qemu").is_err());
    }
}
