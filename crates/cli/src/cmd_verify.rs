//! `bpfvet verify`: veristat-compatible verification statistics, from the
//! bpfvet verifier, the host kernel, or both side by side; `-C` compares
//! two CSV files and `-R` replays one.

pub(crate) mod backend;
mod compare;
mod csv_io;
mod fields;
pub(crate) mod filter;
pub(crate) mod guest;
pub(crate) mod input;
mod matrix;
mod output;
pub(crate) mod prog_types;
mod row;
mod sort;

use anyhow::{bail, Context};
use backend::{Backend, BackendKind, BpfvetBackend, KernelBackend, RunOptions};
use bpfvet_kernel::guest::image::{self, GuestKernel, KernelSpec};
use compare::Joined;
use fields::{Stat, StatSpec};
use filter::Filters;
use output::{Format, SideNames};
use row::Row;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Object files, or directories searched for *.o; CSV files with -C/-R.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Which verifier produces the figures [default: bpfvet]: bpfvet,
    /// kernel (the host's), both; kernel=K or both=K for another kernel
    /// booted under QEMU: a Debian kernel version (6.1, 6.12, 6.18),
    /// fetched once into ~/.cache/bpfvet/kernels, or a vmlinuz path.
    #[arg(long, value_parser = backend::parse_choice)]
    backend: Option<backend::Choice>,
    /// One row per program with the verdict and processed insns of each
    /// listed kernel (host, a Debian version, a vmlinuz path; bpfvet for
    /// bpfvet's own verifier), the first kernel that accepts it and the
    /// error texts that differ. Exit status 1 if any kernel rejects.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["backend", "compare", "replay"])]
    kernels: Vec<String>,
    /// Stats to emit, comma-separated veristat names (file, prog, verdict,
    /// duration, insns, states, peak_states, max_states_per_insn, mark_read,
    /// prog_size, prog_size_jited, stack_depth, prog_type, attach_type,
    /// mem_peak); with -C also name_a, name_b, name_diff, name_pct.
    #[arg(short = 'e', long = "emit")]
    emit: Option<String>,
    /// Sort order: stats with an optional ^ (ascending) or v (descending).
    #[arg(short = 's', long = "sort")]
    sort: Option<String>,
    #[arg(
        short = 'o',
        long = "output-format",
        value_enum,
        default_value = "table"
    )]
    format: Format,
    /// Filters: globs on file/prog ("file*/prog*"), stat predicates
    /// ("insns>100000", "verdict=failure"), "!" to negate, "@path" to read a list.
    #[arg(short = 'f', long = "filter")]
    filters: Vec<String>,
    /// Print only the first N results.
    #[arg(short = 'n', long = "top-n")]
    top_n: Option<usize>,
    /// No progress bar, notes or table footer; errors are still printed.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Objects verified at once [default: all cores]. The output is the
    /// same for any number. The kernel backend loads one program at a time.
    #[arg(short = 'j', long)]
    jobs: Option<usize>,
    /// Print the log of every program (stderr).
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Verifier log level (1 or 2); logs of failed programs go to stderr.
    #[arg(short = 'l', long = "log-level")]
    log_level: Option<u32>,
    /// Program types, libbpf's names: `TYPE` (e.g. sched_cls) for programs
    /// whose section names none (iproute2's numbered tc sections), or
    /// `SECTION_GLOB=TYPE[:ATTACH]` for the programs of matching sections
    /// (e.g. '2/*=sched_cls', 'mysec=xdp', '.text=xdp' for objects without
    /// SEC()). Repeatable; the first matching section rule wins.
    #[arg(long = "prog-type", value_parser = prog_types::parse_rule)]
    prog_type: Vec<prog_types::ProgTypeRule>,
    /// A file of `--prog-type` rules, one per line (`#` comments); they
    /// come after the command line's.
    #[arg(long = "prog-types", value_name = "FILE")]
    prog_types: Option<PathBuf>,
    #[arg(long, value_name = "LOADER", default_value = "auto", value_parser = crate::loader_arg::parse, help = crate::loader_arg::HELP)]
    loader: crate::loader_arg::LoaderArg,
    /// BPF_PROG_LOAD prog_flags added to every program, for both backends:
    /// UAPI names or numbers joined by `|` (BPF_F_TEST_STATE_FREQ|0x2).
    /// bpfvet refuses programs whose flags it does not model.
    #[arg(long = "prog-flags", value_parser = bpfvet_isa::uapi::parse_prog_flags)]
    prog_flags: Option<u32>,
    /// Initial verifier log buffer size in bytes.
    #[arg(long = "log-size")]
    log_size: Option<u32>,
    /// Wall-clock limit per program for the bpfvet verifier, e.g. 30s,
    /// 500ms, 2m (plain numbers are seconds). A program that runs out is
    /// reported as a failure with reason "limit: ...".
    #[arg(long, value_parser = parse_timeout)]
    timeout: Option<Duration>,
    /// Memory limit per program for the bpfvet verifier's explored and
    /// pending states, e.g. 512M, 2G, 65536 (bytes).
    #[arg(long = "max-memory", value_parser = parse_size)]
    max_memory: Option<usize>,
    /// The loader's capabilities, for both backends: root (all), bpf
    /// (CAP_BPF alone), net_admin (CAP_BPF and CAP_NET_ADMIN) or
    /// unprivileged (none; the kernel backend lowers
    /// kernel.unprivileged_bpf_disabled to 0 while it loads).
    #[arg(long, default_value = "root")]
    privileges: bpfvet_isa::Privileges,
    /// Compare two CSV files (A = baseline, B = comparison).
    #[arg(short = 'C', long = "compare", conflicts_with = "replay")]
    compare: bool,
    /// Re-print a saved CSV with new filters, sort and format.
    #[arg(short = 'R', long = "replay")]
    replay: bool,
    /// Instead of the statistics, print `bpfvet explain`'s report of every
    /// selected program (bpfvet backend; -n sets its top-N, default 10).
    #[arg(long, conflicts_with_all = ["compare", "replay", "backend"])]
    explain: bool,
}

/// `30s`, `500ms`, `2m`, `1h`, or plain seconds.
fn parse_timeout(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (e.g. 30s, 500ms, 2m)"))?;
    let d = match unit {
        "" | "s" => Duration::from_secs(n),
        "ms" => Duration::from_millis(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        _ => return Err(format!("unknown unit '{unit}' in '{text}' (ms, s, m, h)")),
    };
    if d.is_zero() {
        return Err("the timeout must be positive".into());
    }
    Ok(d)
}

/// Bytes with an optional binary suffix: `65536`, `512K`, `512M`, `2G`.
fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 512M, 2G)"))?;
    let shift = match unit
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return Err(format!("unknown unit '{unit}' in '{text}' (K, M, G)")),
    };
    let bytes = n
        .checked_mul(1usize << shift)
        .ok_or_else(|| format!("'{text}' is too large"))?;
    if bytes == 0 {
        return Err("the memory limit must be positive".into());
    }
    Ok(bytes)
}

/// Parsed options shared by every mode.
struct Plan {
    emit: Option<Vec<StatSpec>>,
    sort: Vec<StatSpec>,
    filters: Filters,
    format: Format,
    top_n: Option<usize>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let emit = args
        .emit
        .as_deref()
        .map(fields::parse_spec_list)
        .transpose()?;
    let sort = match args.sort.as_deref() {
        Some(s) => fields::parse_spec_list(s)?,
        None => fields::parse_spec_list("file,prog")?,
    };
    let mut filters = Filters::default();
    for f in &args.filters {
        filters.add(f)?;
    }
    let plan = Plan {
        emit,
        sort,
        filters,
        format: args.format,
        top_n: args.top_n.filter(|&n| n > 0),
    };
    if args.compare {
        return run_compare(&args, &plan);
    }
    if args.replay {
        return run_replay(&args, &plan);
    }
    if args.explain {
        let mut type_rules = args.prog_type.clone();
        if let Some(path) = &args.prog_types {
            type_rules.extend(prog_types::read_rules(path)?);
        }
        let allows = |file: &str, prog: &str| plan.filters.allows_name(file, Some(prog));
        return crate::cmd_explain::run_selection(&crate::cmd_explain::Selection {
            paths: &args.paths,
            allows: &allows,
            type_rules,
            top_n: plan.top_n.unwrap_or(10),
        });
    }
    run_verify(&args, &plan)
}

/// Columns to print: `-e`, else the CSV's own columns (tables keep
/// veristat's short default where the CSV has them).
fn columns_for(plan: &Plan, csv_columns: &[Stat]) -> Vec<Stat> {
    if let Some(e) = &plan.emit {
        return e.iter().map(|s| s.stat).collect();
    }
    match plan.format {
        Format::Table => fields::default_table_stats()
            .into_iter()
            .filter(|s| csv_columns.contains(s))
            .collect(),
        _ => csv_columns.to_vec(),
    }
}

fn verify_columns(plan: &Plan, kind: BackendKind) -> Vec<Stat> {
    match (&plan.emit, plan.format) {
        (Some(e), _) => e.iter().map(|s| s.stat).collect(),
        // Side by side, the figures that say whether the two agree.
        (None, Format::Table) if kind == BackendKind::Both => vec![
            Stat::File,
            Stat::Prog,
            Stat::Verdict,
            Stat::TotalInsns,
            Stat::TotalStates,
            Stat::Duration,
        ],
        (None, Format::Table) => fields::default_table_stats(),
        (None, _) => fields::default_csv_stats(),
    }
}

fn finish_rows(plan: &Plan, mut rows: Vec<Row>, columns: &[Stat]) -> anyhow::Result<()> {
    rows.retain(|r| plan.filters.allows_name(&r.file, Some(&r.prog)) && plan.filters.allows_row(r));
    sort::sort_rows(&mut rows, &plan.sort);
    if let Some(n) = plan.top_n {
        rows.truncate(n);
    }
    let mut out = std::io::stdout().lock();
    output::write_rows(&mut out, plan.format, &rows, columns)?;
    out.flush()?;
    Ok(())
}

fn finish_joined(
    plan: &Plan,
    mut rows: Vec<Joined>,
    columns: &[Stat],
    sides: &SideNames,
    layout: output::Layout,
) -> anyhow::Result<()> {
    rows.retain(|j| {
        plan.filters.allows_name(&j.file, Some(&j.prog)) && plan.filters.allows_joined(j)
    });
    sort::sort_joined(&mut rows, &plan.sort);
    if let Some(n) = plan.top_n {
        rows.truncate(n);
    }
    let mut out = std::io::stdout().lock();
    output::write_joined(&mut out, plan.format, &rows, columns, sides, layout)?;
    out.flush()?;
    Ok(())
}

fn run_replay(args: &Args, plan: &Plan) -> anyhow::Result<ExitCode> {
    let [path] = args.paths.as_slice() else {
        bail!("replay mode expects exactly one input CSV file");
    };
    let (cols, rows) = csv_io::read_csv(path)?;
    let any_failed = rows.iter().any(|r| !r.succeeded());
    finish_rows(plan, rows, &columns_for(plan, &cols))?;
    Ok(ExitCode::from(any_failed as u8))
}

fn run_compare(args: &Args, plan: &Plan) -> anyhow::Result<ExitCode> {
    let [a, b] = args.paths.as_slice() else {
        bail!("comparison mode expects exactly two input CSV files");
    };
    let (cols_a, rows_a) = csv_io::read_csv(a)?;
    let (cols_b, rows_b) = csv_io::read_csv(b)?;
    if cols_a != cols_b {
        let names = |c: &[Stat]| c.iter().map(|s| s.csv_name()).collect::<Vec<_>>().join(",");
        bail!(
            "stats composition differs between '{}' ({}) and '{}' ({})",
            a.display(),
            names(&cols_a),
            b.display(),
            names(&cols_b)
        );
    }
    let joined = compare::join(rows_a, rows_b);
    let mismatch = joined.iter().any(|j| !j.same(Stat::Verdict));
    finish_joined(
        plan,
        joined,
        &columns_for(plan, &cols_a),
        &output::COMPARE_SIDES,
        output::Layout::Full,
    )?;
    Ok(ExitCode::from(mismatch as u8))
}

/// bpfvet's own verifier: needs no root and no particular kernel.
const DEFAULT_BACKEND: BackendKind = BackendKind::Bpfvet;

/// `--jobs`: all cores unless told.
pub fn job_count(jobs: Option<usize>) -> usize {
    jobs.filter(|&n| n > 0).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// A pool of `jobs` worker threads.
pub fn thread_pool(jobs: usize) -> anyhow::Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .thread_name(|i| format!("bpfvet-{i}"))
        .build()
        .context("starting worker threads")
}

/// Runs `work` on every item on `pool` and hands the results to `each` on
/// this thread in the items' order, as they complete: the output of any
/// number of jobs is that of one.
pub fn ordered_parallel<T: Sync, R: Send>(
    pool: &rayon::ThreadPool,
    items: &[T],
    work: impl Fn(&T) -> R + Sync,
    mut each: impl FnMut(&T, R),
) {
    use rayon::iter::{ParallelBridge, ParallelIterator};
    let (tx, rx) = std::sync::mpsc::channel::<(usize, R)>();
    std::thread::scope(|scope| {
        let work = &work;
        scope.spawn(move || {
            pool.install(|| {
                // par_bridge takes items roughly in order, so few results
                // wait in `pending` below.
                items
                    .iter()
                    .enumerate()
                    .par_bridge()
                    .for_each_with(tx, |tx, (i, item)| {
                        let _ = tx.send((i, work(item)));
                    })
            })
        });
        let mut pending = std::collections::BTreeMap::new();
        let mut next = 0;
        for (i, r) in rx {
            pending.insert(i, r);
            while let Some(r) = pending.remove(&next) {
                each(&items[next], r);
                next += 1;
            }
        }
    });
}

/// A message about one file: printed unless -q, or always (errors).
enum Message {
    Note(String),
    Error(String),
}

/// What reading (and, for the bpfvet backend, verifying) one file gave.
#[derive(Default)]
struct FileOutcome {
    messages: Vec<Message>,
    /// Kept for the kernel backend, which runs on the main thread.
    obj: Option<bpfvet_object::Object>,
    progs: Vec<usize>,
    /// The bpfvet backend's rows.
    rows: Vec<Row>,
    opened: bool,
    /// The file counts as yielding programs for its named path (opened
    /// with programs, or left out by a file filter).
    yielded: bool,
    load_error: bool,
    skipped: bool,
    progs_skipped: usize,
}

/// Shared, read-only inputs of `verify_file`.
struct FileJob<'a> {
    args: &'a Args,
    plan: &'a Plan,
    object_opts: &'a bpfvet_object::LoadOptions,
    type_rules: &'a [prog_types::ProgTypeRule],
    opts: &'a RunOptions,
    bpfvet: bool,
    kernel: bool,
}

fn verify_file(job: &FileJob, input: &input::Input) -> FileOutcome {
    let mut out = FileOutcome::default();
    let path = &input.path;
    let name = input::display_name(path);
    if !job.plan.filters.allows_name(&name, None) {
        out.skipped = true;
        out.yielded = true;
        return out;
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            out.messages.push(Message::Error(format!(
                "bpfvet: failed to read '{}': {e}",
                path.display()
            )));
            out.load_error = true;
            out.skipped = true;
            return out;
        }
    };
    if let Some(why) = input::not_bpf_object_reason(&bytes) {
        out.skipped = true;
        if input.named {
            out.load_error = true;
            out.messages.push(Message::Error(format!(
                "bpfvet: '{}' is not a BPF object file: {why}",
                path.display()
            )));
        } else {
            out.messages.push(Message::Note(format!(
                "bpfvet: skipping '{}': not a BPF object file: {why}",
                path.display()
            )));
        }
        return out;
    }
    let mut obj = match bpfvet_object::Object::parse(&bytes, path, job.object_opts) {
        Ok(o) => o,
        Err(e) => {
            // The loader's error starts with the path: say it once.
            let shown = path.display().to_string();
            let why = crate::error_text(&e.into());
            let why = why.strip_prefix(&format!("{shown}: ")).unwrap_or(&why);
            out.messages.push(Message::Error(format!(
                "bpfvet: failed to open '{shown}': {why}"
            )));
            out.load_error = true;
            out.skipped = true;
            return out;
        }
    };
    out.opened = true;
    if let Some(note) = crate::loader_arg::detected_note(&obj) {
        out.messages
            .push(Message::Note(format!("bpfvet: {name}: {note}")));
    }
    for w in &obj.warnings {
        out.messages
            .push(Message::Note(format!("bpfvet: {name}: warning: {w}")));
    }
    if let Some(flags) = job.args.prog_flags {
        for p in &mut obj.programs {
            p.prog_flags |= flags;
        }
    }
    if obj.programs.is_empty() {
        let text = format!(
            "bpfvet: {name}: no programs: no function is in a program section \
             (.text functions are subprograms; --prog-type '.text=TYPE' verifies \
             the global ones of an object without SEC())"
        );
        out.messages.push(if input.named {
            out.load_error = true;
            Message::Error(text)
        } else {
            Message::Note(text)
        });
    } else {
        out.yielded = true;
    }
    prog_types::apply(job.type_rules, &mut obj, &path.to_string_lossy());
    out.progs = (0..obj.programs.len())
        .filter(|&i| {
            job.plan
                .filters
                .allows_name(&name, Some(&obj.programs[i].name))
        })
        .collect();
    out.progs_skipped = obj.programs.len() - out.progs.len();
    if job.bpfvet {
        out.rows = BpfvetBackend.verify_object(&name, &obj, &out.progs, job.opts);
    }
    if job.kernel {
        out.obj = Some(obj);
    }
    out
}

fn run_verify(args: &Args, plan: &Plan) -> anyhow::Result<ExitCode> {
    let choice = args.backend.clone().unwrap_or(backend::Choice {
        kind: DEFAULT_BACKEND,
        kernel: None,
    });
    let kind = choice.kind;
    let columns = verify_columns(plan, kind);
    let opts = RunOptions {
        log_level: args.log_level.unwrap_or(if args.verbose { 1 } else { 0 }),
        log_size: args.log_size,
        keep_log: args.verbose || args.log_level.unwrap_or(0) > 0,
        quiet: args.quiet,
        timeout: args.timeout,
        max_memory: args.max_memory,
        privileges: args.privileges,
    };
    let measure_mem = columns.contains(&Stat::MemPeak);
    let sides = verifier_sides(args, &choice)?;
    let use_bpfvet = sides.contains(&Side::Bpfvet);
    let mut kernel = if sides.contains(&Side::Host) {
        Some(KernelBackend::open(measure_mem, args.quiet)?)
    } else {
        None
    };
    let guests = resolve_guests(&sides, args.quiet)?;
    if !guests.is_empty() && args.privileges != bpfvet_isa::Privileges::Root {
        bail!(
            "--privileges {} is for the host kernel and bpfvet; guests load as root",
            args.privileges
        );
    }
    if kernel.is_some() {
        if let Err(why) = bpfvet_kernel::privileges::available(args.privileges) {
            bail!(
                "kernel backend unavailable at --privileges {}: {why}",
                args.privileges
            );
        }
    }

    let inputs = input::expand_inputs(&args.paths)?;
    let mut type_rules = args.prog_type.clone();
    if let Some(path) = &args.prog_types {
        type_rules.extend(prog_types::read_rules(path)?);
    }
    // CO-RE relocations resolve against the host's vmlinux BTF, and the
    // verifier reads it for kfuncs and BTF-typed contexts: both once, here,
    // so that no program's duration includes them.
    let mut object_opts = bpfvet_object::LoadOptions {
        text_programs: prog_types::types_text(&type_rules),
        loader: args.loader.0,
        ..Default::default()
    };
    object_opts
        .preload_target()
        .context("reading the CO-RE target BTF")?;
    if use_bpfvet {
        bpfvet_verifier::preload_kernel_btf();
    }
    let progress =
        (!args.quiet && inputs.len() >= 10 && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new(inputs.len() as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {wide_msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
    let say = |msg: String| match &progress {
        Some(bar) => bar.println(msg),
        None => eprintln!("{msg}"),
    };
    let note = |msg: String| {
        if !args.quiet {
            say(msg);
        }
    };

    let job = FileJob {
        args,
        plan,
        object_opts: &object_opts,
        type_rules: &type_rules,
        opts: &opts,
        bpfvet: use_bpfvet,
        kernel: kernel.is_some() || !guests.is_empty(),
    };
    let mut batch: Vec<guest::BatchObject> = Vec::new();
    let pool = thread_pool(job_count(args.jobs))?;
    let mut bpfvet_rows: Vec<Row> = Vec::new();
    let mut kernel_rows: Vec<Row> = Vec::new();
    let mut load_errors = 0usize;
    let mut yielded = vec![false; args.paths.len()];
    let mut errored = vec![false; args.paths.len()];
    let (mut files_done, mut files_skipped, mut progs_skipped) = (0usize, 0usize, 0usize);
    let report_rows = |rows: &[Row], backend: &str, path: &std::path::Path| {
        for r in rows {
            if let Some(why) = &r.reason {
                let line = format!("bpfvet: {}/{} ({backend}): {why}", r.file, r.prog);
                // bpfvet's own failure is an error, shown even with -q.
                if why.starts_with(backend::INTERNAL_ERROR) {
                    say(line);
                } else {
                    note(line);
                }
            }
            let show_log = args.verbose || (opts.keep_log && !r.succeeded());
            if let (Some(rej), false) = (&r.rejection, show_log) {
                note(format!(
                    "bpfvet: {}/{} ({backend}): {}",
                    r.file,
                    r.prog,
                    rej.explain()
                ));
            }
            if let (true, Some(log)) = (show_log, &r.log) {
                // Asked for with -l/-v, so printed even with -q.
                say(format!(
                    "PROCESSING {}/{} ({backend}), VERDICT: {}, VERIFIER LOG:\n{log}",
                    path.display(),
                    r.prog,
                    r.text(Stat::Verdict, "-")
                ));
            }
        }
    };
    ordered_parallel(
        &pool,
        &inputs,
        |input| verify_file(&job, input),
        |input, out| {
            if let Some(bar) = &progress {
                bar.set_message(input.path.display().to_string());
                bar.inc(1);
            }
            for m in out.messages {
                match m {
                    Message::Note(t) => note(t),
                    Message::Error(t) => say(t),
                }
            }
            files_done += out.opened as usize;
            files_skipped += out.skipped as usize;
            progs_skipped += out.progs_skipped;
            load_errors += out.load_error as usize;
            yielded[input.origin] |= out.yielded;
            errored[input.origin] |= out.load_error;
            report_rows(&out.rows, BpfvetBackend.name(), &input.path);
            bpfvet_rows.extend(out.rows);
            if let (Some(k), Some(obj)) = (kernel.as_mut(), &out.obj) {
                let name = input::display_name(&input.path);
                let rows = k.verify_object(&name, obj, &out.progs, &opts);
                report_rows(&rows, k.name(), &input.path);
                kernel_rows.extend(rows);
            }
            if let (false, Some(obj)) = (guests.is_empty(), out.obj) {
                batch.push(guest::BatchObject {
                    name: input::display_name(&input.path),
                    path: input.path.clone(),
                    obj,
                    progs: out.progs,
                });
            }
        },
    );
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    // Guests verify the whole batch in one boot each, after the host.
    let mut guest_rows: Vec<Vec<Row>> = Vec::new();
    for g in &guests {
        let (rows, stats) = guest::run_batch(g, &batch, &opts, object_opts.text_programs)?;
        // Worded as the host kernel's rows are, so tools reading stderr
        // need not know which kernel it was.
        let label = "kernel";
        for r in &rows {
            let path = batch
                .iter()
                .find(|b| b.name == r.file)
                .map_or_else(|| std::path::PathBuf::from(&r.file), |b| b.path.clone());
            report_rows(std::slice::from_ref(r), label, &path);
        }
        note(format!(
            "bpfvet: kernel {} ({}, {}): {} programs in {} boot(s); boot {:.1} s, verifying {:.1} s{}",
            g.label,
            stats.release,
            stats.accel,
            rows.len(),
            stats.boots,
            stats.boot_time.as_secs_f64(),
            stats.verify_time.as_secs_f64(),
            if stats.lost.is_empty() {
                String::new()
            } else {
                format!("; lost: {}", stats.lost.join(", "))
            }
        ));
        guest_rows.push(rows);
    }
    for (i, path) in args.paths.iter().enumerate() {
        if !yielded[i] && !errored[i] {
            // A directory without objects, or with objects without programs.
            eprintln!(
                "bpfvet: '{}': no BPF programs found (no *.o file with a program)",
                path.display()
            );
            load_errors += 1;
        }
    }

    if !args.kernels.is_empty() {
        let mut guest_rows = guest_rows.into_iter();
        let mut bpfvet_rows = Some(bpfvet_rows);
        let mut kernel_rows = Some(kernel_rows);
        let matrix: Vec<matrix::Side> = sides
            .iter()
            .map(|s| matrix::Side {
                label: s.label(),
                rows: match s {
                    Side::Bpfvet => bpfvet_rows.take().unwrap_or_default(),
                    Side::Host => kernel_rows.take().unwrap_or_default(),
                    Side::Guest(_) => guest_rows.next().unwrap_or_default(),
                },
            })
            .collect();
        let any_failed = matrix.iter().any(|s| s.rows.iter().any(|r| !r.succeeded()));
        let mut out = std::io::stdout().lock();
        matrix::write(&mut out, plan.format, &matrix)?;
        out.flush()?;
        return Ok(ExitCode::from(if load_errors > 0 {
            2
        } else {
            any_failed as u8
        }));
    }
    if let Some(rows) = guest_rows.pop() {
        kernel_rows = rows;
    }
    let all = bpfvet_rows.iter().chain(&kernel_rows);
    let any_failed = all.clone().any(|r| !r.succeeded());
    let internal_errors = all
        .filter(|r| {
            r.reason
                .as_deref()
                .is_some_and(|m| m.starts_with(backend::INTERNAL_ERROR))
        })
        .count();
    if kind == BackendKind::Both {
        // Both backends saw the same programs in the same order.
        let joined = compare::zip(bpfvet_rows, kernel_rows);
        let summary = both_summary(&joined);
        let layout = if plan.emit.is_some() {
            output::Layout::Full
        } else {
            output::Layout::Compact
        };
        finish_joined(plan, joined, &columns, &BOTH_SIDES, layout)?;
        if !args.quiet {
            eprintln!("{summary}");
        }
    } else {
        let rows = if use_bpfvet { bpfvet_rows } else { kernel_rows };
        let total = rows.len();
        finish_rows(plan, rows, &columns)?;
        if plan.format == Format::Table && !args.quiet {
            println!(
                "Done. Processed {files_done} files, {total} programs. \
                 Skipped {files_skipped} files, {progs_skipped} programs."
            );
        }
    }
    Ok(ExitCode::from(if load_errors + internal_errors > 0 {
        2
    } else {
        any_failed as u8
    }))
}

/// A verifier whose rows are shown: bpfvet's, the host kernel's, or a
/// kernel booted under QEMU.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Side {
    Bpfvet,
    Host,
    Guest(KernelSpec),
}

impl Side {
    fn label(&self) -> String {
        match self {
            Side::Bpfvet => matrix::BPFVET.into(),
            Side::Host => "host".into(),
            Side::Guest(k) => k.label(),
        }
    }
}

/// The sides `--backend` or `--kernels` asks for, in order.
fn verifier_sides(args: &Args, choice: &backend::Choice) -> anyhow::Result<Vec<Side>> {
    if !args.kernels.is_empty() {
        let mut sides = Vec::new();
        for k in &args.kernels {
            let side = match k.trim() {
                matrix::BPFVET => Side::Bpfvet,
                k => match KernelSpec::parse(k).map_err(anyhow::Error::msg)? {
                    KernelSpec::Host => Side::Host,
                    spec => Side::Guest(spec),
                },
            };
            if sides.contains(&side) {
                bail!("--kernels lists '{}' twice", side.label());
            }
            sides.push(side);
        }
        return Ok(sides);
    }
    let kernel = match &choice.kernel {
        Some(spec) => Side::Guest(spec.clone()),
        None => Side::Host,
    };
    Ok(match choice.kind {
        BackendKind::Bpfvet => vec![Side::Bpfvet],
        BackendKind::Kernel => vec![kernel],
        BackendKind::Both => vec![Side::Bpfvet, kernel],
    })
}

/// The images of the guest sides, fetched into the cache when missing.
fn resolve_guests(sides: &[Side], quiet: bool) -> anyhow::Result<Vec<GuestKernel>> {
    let specs: Vec<&KernelSpec> = sides
        .iter()
        .filter_map(|s| match s {
            Side::Guest(k) => Some(k),
            _ => None,
        })
        .collect();
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(why) = bpfvet_kernel::guest::vm::qemu_unavailable() {
        bail!("kernel backend unavailable: {why}");
    }
    let note = |m: &str| {
        if !quiet {
            eprintln!("{m}");
        }
    };
    specs
        .into_iter()
        .map(|k| image::resolve(k, &note).map_err(|e| anyhow::anyhow!("kernel {}: {e}", k.label())))
        .collect()
}

const BOTH_SIDES: SideNames = SideNames {
    table: [" (bpfvet)", " (kernel)", " (DIFF)"],
    csv: ["_bpfvet", "_kernel", "_diff"],
    plain_csv_diff: true,
};

/// A total time, readable at any size.
fn total_time(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{:.3} s", d.as_secs_f64())
    } else {
        format!("{:.3} ms", d.as_secs_f64() * 1e3)
    }
}

/// The closing lines of `--backend both`. Programs a side refused are
/// counted apart: they are neither agreements nor mismatches.
fn both_summary(joined: &[Joined]) -> String {
    let n = joined.len();
    let refused_by = |side: fn(&Joined) -> Option<&Row>| {
        joined
            .iter()
            .filter(|j| side(j).is_some_and(Row::refused))
            .count()
    };
    let refused = joined.iter().filter(|j| j.refused()).count();
    let decided = n - refused;
    let pct = |k: usize| {
        if decided == 0 {
            0.0
        } else {
            k as f64 * 100.0 / decided as f64
        }
    };
    let verdicts = joined.iter().filter(|j| j.same(Stat::Verdict)).count();
    let insns = joined.iter().filter(|j| j.same(Stat::TotalInsns)).count();
    let total = |side: fn(&Joined) -> Option<&Row>| {
        let us: i64 = joined
            .iter()
            .filter_map(side)
            .filter_map(|r| r.get(Stat::Duration))
            .sum();
        Duration::from_micros(us.max(0) as u64)
    };
    format!(
        "Programs: {n}; refused: {refused} (by bpfvet: {}, by the kernel: {}); both verified: {decided}.\n\
         Verdict agreement: {verdicts}/{decided} ({:.1}%), mismatches: {}. Exact insns agreement: {insns}/{decided} ({:.1}%).\n\
         bpfvet total time: {}; kernel total verification time: {}.",
        refused_by(|j| j.a.as_ref()),
        refused_by(|j| j.b.as_ref()),
        pct(verdicts),
        decided - verdicts,
        pct(insns),
        total_time(total(|j| j.a.as_ref())),
        total_time(total(|j| j.b.as_ref())),
    )
}
