//! `bpfvet test`: the annotated tests of the kernel's BPF selftests
//! (`__success`, `__failure`, `__msg`, `__flag`, `__retval`, ... of
//! bpf_misc.h) checked the way the selftests' test_loader checks them, on
//! bpfvet's verifier and runtime, the host kernel, or both.

mod expect;
mod spec;

use crate::cmd_verify::backend::BackendKind;
use crate::cmd_verify::filter::Filters;
use crate::cmd_verify::input::{display_name, expand_inputs, not_bpf_object_reason, Input};
use crate::cmd_verify::{job_count, ordered_parallel, thread_pool};
use anyhow::Context;
use bpfvet_isa::Privileges;
use bpfvet_object::{Object, Program};
use spec::{Expect, TestSpec};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Objects, or directories searched for *.o. Objects without test
    /// annotations are skipped.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Which verifier the tests run on.
    #[arg(long, value_enum, default_value_t = BackendKind::Bpfvet)]
    pub backend: BackendKind,
    /// Only tests matching these globs ("file*/prog*", "!" to negate).
    #[arg(short = 'f', long = "filter")]
    pub filters: Vec<String>,
    /// Print only failures and the summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the verifier log of each failed test.
    #[arg(short, long)]
    pub verbose: bool,
    /// Objects tested at once with the bpfvet backend [default: all
    /// cores]; the output is the same. The kernel backend runs one at a time.
    #[arg(short = 'j', long)]
    pub jobs: Option<usize>,
    /// Which of test_loader's modes run: the privileged one (root), the
    /// unprivileged one of tests that have it (`__*_unpriv`, no
    /// capabilities or those of `__caps_unpriv`), or both.
    #[arg(long, value_enum, default_value_t = Modes::Root)]
    pub privileges: Modes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Modes {
    Root,
    Unprivileged,
    Both,
}

/// What one backend made of one test.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Pass,
    Fail(String),
    Skip(String),
}

/// A program's load as test_loader sees it: verdict, log and, for an
/// accepted program whose test gives a retval, the run's retval.
struct Load {
    accepted: bool,
    /// Set when the backend could not decide (a refusal).
    refused: Option<String>,
    log: String,
}

trait TestBackend {
    fn name(&self) -> &'static str;
    fn load(&mut self, obj: &Object, idx: usize, log_level: u32, level: Privileges) -> Load;
    fn retval(&mut self, obj: &Object, idx: usize) -> Result<u32, String>;
}

struct Bpfvet;

impl TestBackend for Bpfvet {
    fn name(&self) -> &'static str {
        "bpfvet"
    }

    fn load(&mut self, obj: &Object, idx: usize, log_level: u32, level: Privileges) -> Load {
        let opts = bpfvet_verifier::Options {
            log_level,
            privileges: level,
            ..Default::default()
        };
        let out = bpfvet_verifier::verify(obj, idx, &opts);
        let refused = match &out.verdict {
            bpfvet_verifier::Verdict::Unsupported { what, .. } => {
                Some(format!("not modelled by bpfvet: {what}"))
            }
            _ => None,
        };
        Load {
            accepted: out.verdict == bpfvet_verifier::Verdict::Accepted,
            refused,
            log: out.log,
        }
    }

    fn retval(&mut self, obj: &Object, idx: usize) -> Result<u32, String> {
        let vm = bpfvet_vm::Vm::load(obj).map_err(|e| e.to_string())?;
        let data = run_data(&obj.programs[idx]);
        let input = bpfvet_vm::TestRunInput {
            data: &data,
            ctx: None,
            repeat: 1,
            cpu: 0,
        };
        bpfvet_vm::test_run(&vm, idx, &input)
            .map(|o| o.retval)
            .map_err(|e| format!("bpfvet run: {e}"))
    }
}

struct Host {
    kernel: bpfvet_kernel::Kernel,
}

impl TestBackend for Host {
    fn name(&self) -> &'static str {
        "kernel"
    }

    fn load(&mut self, obj: &Object, idx: usize, log_level: u32, level: Privileges) -> Load {
        let session = self.kernel.open_object_as(obj, level);
        let opts = bpfvet_kernel::LoadOptions {
            log_level,
            privileges: level,
            ..Default::default()
        };
        let Some(r) = session.load_program(idx, &opts) else {
            return Load {
                accepted: false,
                refused: Some("no such program".into()),
                log: String::new(),
            };
        };
        let refused = match &r.verdict {
            bpfvet_kernel::Verdict::Refused(why) => Some(why.to_string()),
            _ => None,
        };
        Load {
            accepted: r.verdict.is_accepted(),
            refused,
            log: r.log,
        }
    }

    fn retval(&mut self, obj: &Object, idx: usize) -> Result<u32, String> {
        // Every program, so that prog-array slots (tail-call targets) are
        // filled as libbpf fills them.
        let session = self.kernel.open_object(obj);
        let (reports, _) = session.load_all(&Default::default());
        let prog = reports
            .get(idx)
            .and_then(|r| r.loaded.as_ref())
            .ok_or("the kernel did not load it")?;
        let data = run_data(&obj.programs[idx]);
        let input = bpfvet_kernel::TestRunInput {
            data: &data,
            data_out_size: data.len() * 4,
            repeat: 1,
            ..Default::default()
        };
        prog.test_run(&input)
            .map(|o| o.retval)
            .map_err(|e| format!("BPF_PROG_TEST_RUN: {e}"))
    }
}

/// test_loader runs a program on 64 zero bytes; syscall programs get no
/// input at all.
fn run_data(prog: &Program) -> Vec<u8> {
    if prog.prog_type == bpfvet_isa::uapi::ProgType::SYSCALL {
        Vec::new()
    } else {
        vec![0; 64]
    }
}

/// Runs one test's expectations of one mode on one backend.
fn run_test(
    backend: &mut dyn TestBackend,
    obj: &Object,
    idx: usize,
    spec: &TestSpec,
    expect: &Expect,
    level: Privileges,
) -> (Outcome, String) {
    if !spec.arches.is_empty() && !spec.arches.iter().any(|a| a == "X86_64") {
        return (
            Outcome::Skip(format!("only for {}", spec.arches.join(", "))),
            String::new(),
        );
    }
    // libbpf loads with the test's level and, when that is 0 and the load
    // fails, loads again at level 1 to get the log.
    let log_level = match spec.log_level & 3 {
        0 if spec.log_level & 4 != 0 => 1,
        l => l,
    };
    let mut load = backend.load(obj, idx, log_level, level);
    if !load.accepted && log_level == 0 && load.refused.is_none() {
        load = backend.load(obj, idx, 1, level);
    }
    if let Some(why) = load.refused {
        return (Outcome::Skip(format!("refused: {why}")), load.log);
    }
    if load.accepted == expect.failure {
        let what = if expect.failure {
            "expected a rejection, the program was accepted"
        } else {
            "expected success, the program was rejected"
        };
        let detail = if load.accepted {
            String::new()
        } else {
            format!(
                ": {}",
                bpfvet_kernel::report::last_error_line(&load.log).unwrap_or("")
            )
        };
        return (Outcome::Fail(format!("{what}{detail}")), load.log);
    }
    match expect::first_missing(&load.log, &expect.msgs) {
        Ok(None) => {}
        Ok(Some(p)) => {
            return (
                Outcome::Fail(format!("message not in the log: '{p}'")),
                load.log,
            )
        }
        Err(e) => return (Outcome::Fail(e), load.log),
    }
    if let (Some(want), false) = (expect.retval, expect.failure) {
        match backend.retval(obj, idx) {
            Ok(got) if spec::retval_matches(want, got) => {}
            Ok(got) => {
                return (
                    Outcome::Fail(format!("retval {} (expected {want})", got as i32)),
                    load.log,
                )
            }
            Err(e) => return (Outcome::Skip(format!("retval not checked: {e}")), load.log),
        }
    }
    let unchecked = if level == Privileges::Root {
        &spec.unchecked
    } else {
        &spec.unchecked_unpriv
    };
    if !unchecked.is_empty() {
        return (
            Outcome::Skip(format!("verdict and messages agree; {} not checked (bpfvet does not produce the rewritten or jited program)", unchecked.join(", "))),
            load.log,
        );
    }
    (Outcome::Pass, load.log)
}

#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
    skipped: usize,
}

/// One file's test lines (stdout), errors (stderr) and counts.
#[derive(Default)]
struct FileTests {
    text: String,
    errors: Vec<String>,
    annotated: bool,
    tally: Vec<Tally>,
}

fn test_file(
    args: &Args,
    filters: &Filters,
    input: &Input,
    backends: &mut [Box<dyn TestBackend>],
) -> FileTests {
    use std::fmt::Write as _;
    let mut out = FileTests {
        tally: backends.iter().map(|_| Tally::default()).collect(),
        ..Default::default()
    };
    let path = &input.path;
    let file = display_name(path);
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            out.errors.push(format!("bpfvet: {}: {e}", path.display()));
            return out;
        }
    };
    if let Some(why) = not_bpf_object_reason(&bytes) {
        out.errors.push(format!(
            "bpfvet: '{}' is not a BPF object file: {why}",
            path.display()
        ));
        return out;
    }
    let obj = match Object::parse(&bytes, path, &Default::default()) {
        Ok(o) => o,
        Err(e) => {
            // The error names the file.
            out.errors.push(format!("bpfvet: {e}"));
            return out;
        }
    };
    let Some(btf) = obj.btf.as_ref().filter(|b| spec::has_annotations(b)) else {
        return out;
    };
    out.annotated = true;
    let tally = &mut out.tally;
    let text = &mut out.text;
    for idx in 0..obj.programs.len() {
        let prog = &obj.programs[idx];
        if !filters.allows_name(&file, Some(&prog.name)) {
            continue;
        }
        let spec = match spec::parse(btf, &prog.name) {
            Ok(s) => s,
            Err(e) => {
                for t in tally.iter_mut() {
                    t.failed += 1;
                }
                let _ = writeln!(text, "FAIL {file}/{}: bad annotations: {e}", prog.name);
                continue;
            }
        };
        if spec.auxiliary {
            continue;
        }
        let mut obj_flags = obj.clone();
        let p = &mut obj_flags.programs[idx];
        p.prog_flags = (p.prog_flags | spec.flags_set) & !spec.flags_cleared;
        // (label suffix, expectations, level or why the mode is not run)
        let mut modes: Vec<(&str, &Expect, Result<Privileges, String>)> = Vec::new();
        if let Some(e) = &spec.privileged {
            let run = if args.privileges == Modes::Unprivileged {
                Err("privileged mode is not run (--privileges unprivileged)".to_string())
            } else {
                Ok(Privileges::Root)
            };
            modes.push(("", e, run));
        }
        if let Some(e) = &spec.unprivileged {
            let run = if args.privileges == Modes::Root {
                Err("unprivileged mode is not run (--privileges root)".to_string())
            } else {
                spec.unpriv_level.clone()
            };
            modes.push((" (unpriv)", e, run));
        }
        for (mode, expect, run) in modes {
            let label = format!("{file}/{}{mode}", spec.name);
            for (b, backend) in backends.iter_mut().enumerate() {
                let side = if backends_len(args.backend) > 1 {
                    format!(" [{}]", backend.name())
                } else {
                    String::new()
                };
                let (outcome, log) = match &run {
                    Ok(level) => run_test(backend.as_mut(), &obj_flags, idx, &spec, expect, *level),
                    Err(why) => (Outcome::Skip(why.clone()), String::new()),
                };
                match &outcome {
                    Outcome::Pass => {
                        tally[b].passed += 1;
                        if !args.quiet {
                            let _ = writeln!(text, "PASS {label}{side}");
                        }
                    }
                    Outcome::Skip(why) => {
                        tally[b].skipped += 1;
                        if !args.quiet {
                            let _ = writeln!(text, "SKIP {label}{side}: {why}");
                        }
                    }
                    Outcome::Fail(why) => {
                        tally[b].failed += 1;
                        let _ = writeln!(text, "FAIL {label}{side}: {why}");
                        if args.verbose {
                            let _ = writeln!(text, "{log}");
                        }
                    }
                }
            }
        }
    }
    out
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut filters = Filters::default();
    for f in &args.filters {
        filters
            .add(f)
            .with_context(|| format!("bad filter '{f}'"))?;
    }
    let mut backends: Vec<Box<dyn TestBackend>> = Vec::new();
    if args.backend != BackendKind::Kernel {
        backends.push(Box::new(Bpfvet));
    }
    if args.backend != BackendKind::Bpfvet {
        let kernel = bpfvet_kernel::Kernel::open().context("kernel backend unavailable")?;
        if args.privileges != Modes::Root {
            if let Err(why) = bpfvet_kernel::privileges::available(Privileges::Unprivileged) {
                anyhow::bail!("kernel backend unavailable for unprivileged loads: {why}");
            }
        }
        backends.push(Box::new(Host { kernel }));
    }
    let inputs = expand_inputs(&args.paths)?;
    let mut tally: Vec<Tally> = backends.iter().map(|_| Tally::default()).collect();
    let mut load_errors = 0;
    let mut objects = 0;
    let mut merge = |out: FileTests| {
        print!("{}", out.text);
        for m in &out.errors {
            eprintln!("{m}");
        }
        load_errors += out.errors.len();
        objects += out.annotated as usize;
        for (t, o) in tally.iter_mut().zip(&out.tally) {
            t.passed += o.passed;
            t.failed += o.failed;
            t.skipped += o.skipped;
        }
    };
    if args.backend == BackendKind::Bpfvet {
        // bpfvet's backend holds nothing: one per worker thread.
        bpfvet_verifier::preload_kernel_btf();
        let pool = thread_pool(job_count(args.jobs))?;
        ordered_parallel(
            &pool,
            &inputs,
            |input| {
                let mut own: Vec<Box<dyn TestBackend>> = vec![Box::new(Bpfvet)];
                test_file(&args, &filters, input, &mut own)
            },
            |_, out| merge(out),
        );
    } else {
        // The kernel backend's syscalls run one at a time.
        for input in &inputs {
            merge(test_file(&args, &filters, input, &mut backends));
        }
    }
    for (t, backend) in tally.iter().zip(&backends) {
        let who = if backends.len() > 1 {
            format!("{}: ", backend.name())
        } else {
            String::new()
        };
        println!(
            "{who}{} passed, {} failed, {} skipped",
            t.passed, t.failed, t.skipped
        );
    }
    if objects == 0 && load_errors == 0 {
        eprintln!("bpfvet: no annotated test objects under the named paths");
        return Ok(ExitCode::from(2));
    }
    Ok(if load_errors > 0 {
        ExitCode::from(2)
    } else if tally.iter().any(|t| t.failed > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn backends_len(kind: BackendKind) -> usize {
    if kind == BackendKind::Both {
        2
    } else {
        1
    }
}
