//! Resumable batch runs of the differential fuzzer: batch `k` of an
//! output directory uses seed [`batch_seed`]`(base, k)` and (with swarm
//! testing) the feature subset that seed draws. Each finished batch leaves
//! `batch-KKKK.tsv` (one row per program, format in
//! bench/verifier_fuzz/README.md); a batch whose file exists is skipped, so
//! an interrupted run resumes where it stopped. Every distinct disagreement
//! of a batch (class and cause) is minimised and written as a `.case` file
//! under `cases/`; `REPORT.md` sums all batch files of the directory.

use super::diff::{cause, cause_group, Class, Ours, Result, Theirs};
use super::gen::{Features, GenProgram};
use super::oracle::Oracle;
use super::{listing, minimise, Run};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The first line of every batch TSV; the column order is stable.
pub const TSV_HEADER: &str = "index\tprog_type\tclass\tkernel_verdict\tkernel_error\tbpfvet_verdict\tbpfvet_error\tkernel_insns\tbpfvet_insns\tlen\tcase";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub dir: PathBuf,
    pub base_seed: u64,
    pub batches: u64,
    pub size: u64,
    pub swarm: bool,
    /// Candidate programs tried per minimisation.
    pub minimise_tries: usize,
}

/// Features every batch has on top of its draw
/// (`BPFVET_FUZZ_FORCE_FEATURES`, batch.sh's `FORCE_FEATURES`: a bit mask
/// or names separated by commas), for runs aimed at some blocks.
fn forced_features() -> Features {
    let v = std::env::var("BPFVET_FUZZ_FORCE_FEATURES").unwrap_or_default();
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    };
    Features(parsed.unwrap_or_else(|| {
        v.split(',')
            .filter_map(|n| Features::NAMES.iter().find(|(_, name)| *name == n.trim()))
            .fold(0, |acc, (b, _)| acc | b)
    }))
}

pub fn batch_seed(base: u64, k: u64) -> u64 {
    base.wrapping_add(k.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

impl Config {
    pub fn features(&self, k: u64) -> Features {
        let drawn = if self.swarm {
            Features::swarm(batch_seed(self.base_seed, k))
        } else {
            Features::ALL
        };
        let mut features = drawn.0 | forced_features().0;
        // The host refuses tracing programs before verifying them; the
        // guest's request lines carry no struct_ops member or load
        // attributes.
        if std::env::var_os(super::guest::KERNEL_ENV).is_none() {
            features &= !Features::GUEST_TRACING;
            // Qdisc_ops is the guest's (bpf_qdisc).
            features &= !Features::QDISC;
        } else {
            features &= !(Features::STRUCT_OPS | Features::LOAD_ATTRS);
        }
        Features(features)
    }

    /// What must not change between runs into one directory.
    fn identity(&self) -> String {
        let mut id = format!(
            "base_seed={:#x}\nbatch_size={}\nswarm={}\n",
            self.base_seed, self.size, self.swarm
        );
        let forced = forced_features();
        if forced.0 != 0 {
            id += &format!("forced_features={}\n", forced.names());
        }
        id
    }

    fn tsv(&self, k: u64) -> PathBuf {
        self.dir.join(format!("batch-{k:04}.tsv"))
    }
}

/// Short class names used in the TSV.
pub fn class_key(c: Class) -> &'static str {
    match c {
        Class::Agree => "agree",
        Class::Unsound => "unsound",
        Class::Overstrict => "overstrict",
        Class::Message => "message",
        Class::Insns => "insns",
        Class::Panic => "panic",
        Class::Timeout => "timeout",
        Class::Hang => "hang",
        Class::KernelRefused => "kernel_refused",
    }
}

fn class_of_key(k: &str) -> Option<Class> {
    Class::ALL.into_iter().find(|&c| class_key(c) == k)
}

/// A TSV field: tabs and line breaks become spaces.
fn field(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

fn kernel_cols(t: &Theirs) -> (&'static str, String, String) {
    match t {
        Theirs::Accepted { insns } => (
            "accept",
            String::new(),
            insns.map_or(String::new(), |n| n.to_string()),
        ),
        Theirs::Rejected(e) => ("reject", field(e), String::new()),
        Theirs::Refused(e) => ("refused", field(e), String::new()),
    }
}

fn bpfvet_cols(o: &Ours) -> (&'static str, String, String) {
    match o {
        Ours::Accepted { insns } => ("accept", String::new(), insns.to_string()),
        Ours::Rejected(e) => ("reject", field(e), String::new()),
        Ours::Refused(e) => ("refused", field(e), String::new()),
        Ours::Timeout => ("timeout", String::new(), String::new()),
        Ours::Panic(m) => ("panic", field(m), String::new()),
        Ours::Hang => ("hang", String::new(), String::new()),
    }
}

/// The `.case` text of a (minimised) program: the kernel's verdict, error
/// and processed insns are the expectation; bpfvet's answer is a comment.
pub fn case_text(header: &str, p: &GenProgram, r: &Result) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# fuzz: {header}");
    let _ = writeln!(
        out,
        "# prog_type: {}",
        super::diff::prog_type_name(p.prog_type)
    );
    out.push_str(&super::diff::privileges_directive());
    if let Some((attach_type, section)) = p.attach {
        let _ = writeln!(out, "# attach_type: {}", attach_type.name().unwrap_or("?"));
        let _ = writeln!(out, "# section: {section}");
    }
    if p.sleepable {
        let _ = writeln!(out, "# sleepable: yes");
    }
    out.push_str(&super::diff::load_directives(p));
    let fuzz_btf = !super::gen::btf_objects::maps(std::iter::once(p.insns.as_slice())).is_empty()
        || !p.funcs.is_empty()
        || super::gen::graph_shape_blocks::needs_fuzz_btf(&p.insns)
        || super::gen::structops_blocks::names_struct_ops_map(&p.insns);
    if fuzz_btf {
        let _ = writeln!(out, "# btf: fuzz");
    }
    let mut maps: Vec<String> = super::diff::map_directives(fuzz_btf)
        .into_iter()
        .chain(super::gen::prog_blocks::case_maps(&p.insns, fuzz_btf))
        .collect();
    maps.extend(super::gen::load_blocks::case_maps(&p.insns, maps.len()));
    maps.extend(super::gen::graph_shape_blocks::case_maps(
        &p.insns,
        maps.len(),
    ));
    maps.extend(super::gen::structops_blocks::case_maps(
        &p.insns,
        maps.len(),
    ));
    maps.extend(super::gen::tailmap_blocks::case_maps(&p.insns, maps.len()));
    if let Some(m) = &p.struct_ops {
        let _ = writeln!(
            out,
            "# struct_ops: {}",
            super::gen::structops_blocks::case_directive(m)
        );
    }
    for m in maps {
        let _ = writeln!(out, "# map: {m}");
    }
    if p.funcs.is_empty() {
        let funcs = super::diff::func_info(&p.insns, p.prog_btf);
        for (k, f) in funcs.iter().enumerate() {
            let _ = writeln!(out, "# func: {} f{k} static int", f.insn_off);
        }
    } else {
        // Named after their FUNC in the fuzz BTF, which `# btf: fuzz`
        // cases look up by name.
        for f in super::diff::program_func_info(p) {
            let _ = writeln!(out, "# func: {} {} static int", f.insn_off, f.name);
        }
    }
    out.push_str(&super::diff::expectation(r));
    out.push_str(&listing(p));
    out
}

/// Minimises one program per distinct (class, cause) of the run and
/// writes it as a case; returns the case file name per program index.
fn write_cases(kernel: &Oracle, cfg: &Config, k: u64, run: &Run) -> BTreeMap<usize, String> {
    let mut first: BTreeMap<(Class, String), usize> = BTreeMap::new();
    for (i, r) in run.results.iter().enumerate() {
        if matches!(r.class, Class::Agree | Class::KernelRefused) {
            continue;
        }
        first.entry((r.class, cause_group(&cause(r)))).or_insert(i);
    }
    let dir = cfg.dir.join("cases");
    let _ = std::fs::create_dir_all(&dir);
    let mut names = BTreeMap::new();
    for ((class, _), i) in first {
        let p = &run.programs[i];
        let key = cause(&run.results[i]);
        // A hang leaves a thread running per try; timeouts cost a second
        // each: keep those unminimised.
        let small = match class {
            Class::Hang | Class::Timeout | Class::Panic => p.clone(),
            _ => minimise::minimise(kernel, p, class, &key, cfg.minimise_tries),
        };
        let r = super::diff::diff_one(kernel, &small);
        let name = format!("b{k:04}-{i:05}-{}.case", class_key(class));
        let header = format!(
            "batch {k} (seed {:#x}) program {i}, class {}, {} of {} insns kept",
            batch_seed(cfg.base_seed, k),
            class_key(class),
            small.insns.len(),
            p.insns.len()
        );
        let _ = std::fs::write(dir.join(&name), case_text(&header, &small, &r));
        names.insert(i, name);
    }
    names
}

fn tsv_text(run: &Run, cases: &BTreeMap<usize, String>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{TSV_HEADER}");
    for (i, (p, r)) in run.programs.iter().zip(&run.results).enumerate() {
        let (kv, ke, ki) = kernel_cols(&r.theirs);
        let (bv, be, bi) = bpfvet_cols(&r.ours);
        let _ = writeln!(
            out,
            "{i}\t{}\t{}\t{kv}\t{ke}\t{bv}\t{be}\t{ki}\t{bi}\t{}\t{}",
            super::diff::prog_type_name(p.prog_type),
            class_key(r.class),
            p.insns.len(),
            cases.get(&i).map_or("", |s| s.as_str())
        );
    }
    out
}

/// Runs every batch of `cfg` not yet in its directory, then writes
/// REPORT.md. Errors are I/O errors or a directory made with another
/// configuration.
pub fn run_batches(kernel: &Oracle, cfg: &Config) -> std::result::Result<(), String> {
    std::fs::create_dir_all(&cfg.dir).map_err(|e| format!("{}: {e}", cfg.dir.display()))?;
    let conf = cfg.dir.join("run.conf");
    match std::fs::read_to_string(&conf) {
        Ok(old) if old != cfg.identity() => {
            return Err(format!(
                "{} was made with another configuration:\n{old}",
                conf.display()
            ))
        }
        Ok(_) => {}
        Err(_) => std::fs::write(&conf, cfg.identity()).map_err(|e| e.to_string())?,
    }
    let started = Instant::now();
    let mut ran = 0u64;
    let todo = (0..cfg.batches).filter(|&k| !cfg.tsv(k).exists()).count() as u64;
    for k in 0..cfg.batches {
        let path = cfg.tsv(k);
        if path.exists() {
            continue;
        }
        let seed = batch_seed(cfg.base_seed, k);
        let features = cfg.features(k);
        let run = super::run(kernel, seed, cfg.size, features);
        let cases = write_cases(kernel, cfg, k, &run);
        let tmp = path.with_extension("tsv.part");
        std::fs::write(&tmp, tsv_text(&run, &cases)).map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, &path).map_err(|e| e.to_string())?;
        ran += 1;
        let per = started.elapsed() / ran as u32;
        let mut line = format!(
            "batch {k} ({ran}/{todo}, seed {seed:#x}, {}):",
            features.names()
        );
        for c in Class::ALL {
            let n = run.count(c);
            if n > 0 {
                let _ = write!(line, " {} {n}", class_key(c));
            }
        }
        let _ = write!(
            line,
            "; {:.0?} so far, about {:.0?} left",
            started.elapsed(),
            per * (todo - ran) as u32
        );
        println!("{line}");
    }
    let report = report(cfg)?;
    std::fs::write(cfg.dir.join("REPORT.md"), report).map_err(|e| e.to_string())?;
    println!("wrote {}", cfg.dir.join("REPORT.md").display());
    Ok(())
}

/// One TSV row, as read back.
pub struct Row {
    pub class: Class,
    pub kernel_error: String,
    pub bpfvet_error: String,
    pub case: String,
}

/// Reads a batch TSV, or any TSV whose first columns are the batch's.
pub fn read_tsv(path: &Path) -> std::result::Result<Vec<Row>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rows = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 11 {
            return Err(format!("{}: short row {line:?}", path.display()));
        }
        let class =
            class_of_key(f[2]).ok_or_else(|| format!("{}: class {:?}", path.display(), f[2]))?;
        rows.push(Row {
            class,
            kernel_error: f[4].to_string(),
            bpfvet_error: f[6].to_string(),
            case: f[10].to_string(),
        });
    }
    Ok(rows)
}

/// Which kernel decided and how it ran, as batch.sh set it up: a run in a
/// guest with its JIT or CPU mitigations off is labelled so.
fn kernel_side() -> String {
    let kernel = match std::env::var(super::guest::KERNEL_ENV) {
        Ok(k) => {
            let jit = std::env::var(super::guest::JIT_ENV).unwrap_or_else(|_| "1".into());
            let mitigations = bpfvet_verifier::cpu_mitigations_off();
            format!(
                "the lockdown-free guest {k} (JIT {}, CPU mitigations {})",
                if jit == "0" { "off" } else { "on" },
                if mitigations { "off" } else { "on" }
            )
        }
        Err(_) => "this host".to_string(),
    };
    format!(
        "Kernel side: {kernel}; programs loaded at privileges {}.",
        super::diff::fuzz_privileges()
    )
}

/// REPORT.md: counts per batch and in total, then every distinct
/// disagreement (class and cause) with its count and a case file.
pub fn report(cfg: &Config) -> std::result::Result<String, String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# bpfvet verifier vs host kernel: fuzz batches\n\n{} batches of {} programs, base seed {:#x}, swarm testing {}.\n",
        cfg.batches,
        cfg.size,
        cfg.base_seed,
        if cfg.swarm { "on" } else { "off" }
    );
    let _ = writeln!(out, "{}\n", kernel_side());
    let mut head = "| batch | seed | features |".to_string();
    let mut rule = "|---|---|---|".to_string();
    for c in Class::ALL {
        let _ = write!(head, " {} |", class_key(c));
        rule.push_str("---:|");
    }
    let _ = writeln!(out, "{head}\n{rule}");
    let mut totals: BTreeMap<Class, usize> = BTreeMap::new();
    let mut causes = Causes::new();
    let mut done = 0;
    for k in 0..cfg.batches {
        let Ok(rows) = read_tsv(&cfg.tsv(k)) else {
            continue;
        };
        done += 1;
        let mut line = format!(
            "| {k} | {:#x} | {} |",
            batch_seed(cfg.base_seed, k),
            cfg.features(k).names()
        );
        for c in Class::ALL {
            let n = rows.iter().filter(|r| r.class == c).count();
            *totals.entry(c).or_default() += n;
            let _ = write!(line, " {n} |");
        }
        let _ = writeln!(out, "{line}");
        tally_causes(rows, &mut causes);
    }
    let mut line = "| **total** | | |".to_string();
    for c in Class::ALL {
        let _ = write!(line, " {} |", totals.get(&c).copied().unwrap_or(0));
    }
    let _ = writeln!(
        out,
        "{line}\n\n{done} of {} batches finished.\n",
        cfg.batches
    );
    causes_section(causes, &mut out);
    Ok(out)
}

/// Disagreements by (class, blanked cause): programs and a case file.
pub type Causes = BTreeMap<(Class, String), (usize, String)>;

/// Adds the disagreements of `rows` to `causes`.
pub fn tally_causes(rows: Vec<Row>, causes: &mut Causes) {
    for r in rows {
        if r.class == Class::Agree {
            continue;
        }
        let key = match r.class {
            Class::Unsound | Class::KernelRefused => cause_group(&r.kernel_error),
            Class::Overstrict => cause_group(&r.bpfvet_error),
            _ => cause_group(&format!("{} | {}", r.kernel_error, r.bpfvet_error)),
        };
        let e = causes.entry((r.class, key)).or_default();
        e.0 += 1;
        if e.1.is_empty() && !r.case.is_empty() {
            e.1 = r.case;
        }
    }
}

/// The "Disagreements by cause" section of a report.
pub fn causes_section(causes: Causes, out: &mut String) {
    let _ = writeln!(
        out,
        "## Disagreements by cause\n\nCause: the kernel's error for unsound accepts and kernel refusals, bpfvet's for overstrict rejections, `kernel | bpfvet` otherwise (numbers blanked). The case file (under `cases/`) is the minimised first program of that cause in some batch.\n\n| class | programs | cause | case |\n|---|---:|---|---|"
    );
    let mut sorted: Vec<_> = causes.into_iter().collect();
    sorted.sort_by_key(|((c, _), (n, _))| (*c, std::cmp::Reverse(*n)));
    for ((c, key), (n, case)) in sorted {
        let _ = writeln!(
            out,
            "| {} | {n} | `{}` | {} |",
            class_key(c),
            key.replace('|', "\\|").replace('`', "'"),
            case
        );
    }
}

/// The kernel's answer as a TSV row recorded it.
fn theirs_of_row(verdict: &str, error: &str, insns: &str) -> Theirs {
    match verdict {
        "accept" => Theirs::Accepted {
            insns: insns.parse().ok(),
        },
        "reject" => Theirs::Rejected(error.to_string()),
        _ => Theirs::Refused(error.to_string()),
    }
}

/// bpfvet (as built now) on every program of the directory's finished
/// batches, classified against the kernel answers the TSVs hold: counts
/// per class and the disagreements by cause, as a report section; each
/// batch's rows so classified go to `rescore-KKKK.tsv`.
pub fn rescore(cfg: &Config) -> std::result::Result<String, String> {
    let mut totals: BTreeMap<Class, usize> = BTreeMap::new();
    let mut causes = Causes::new();
    let mut changed = 0usize;
    for k in 0..cfg.batches {
        let path = cfg.tsv(k);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let seed = batch_seed(cfg.base_seed, k);
        let features = cfg.features(k);
        let mut rows = Vec::new();
        let mut tsv = format!("{TSV_HEADER}\n");
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split('\t').collect();
            let (Some(i), Some(old)) = (f.first().and_then(|i| i.parse::<u64>().ok()), f.get(2))
            else {
                continue;
            };
            let theirs = theirs_of_row(f[3], f[4], f.get(7).copied().unwrap_or(""));
            let p = super::gen::program_with(seed, i, features);
            let obj = std::sync::Arc::new(super::diff::object(std::slice::from_ref(&p)));
            let ours = super::diff::run_ours(&obj, 0);
            let class = super::diff::classify(&ours, &theirs);
            changed += usize::from(class_key(class) != *old);
            *totals.entry(class).or_default() += 1;
            let (bv, be, bi) = bpfvet_cols(&ours);
            let _ = writeln!(
                tsv,
                "{i}\t{}\t{}\t{}\t{}\t{bv}\t{be}\t{}\t{bi}\t{}\t{}",
                f.get(1).unwrap_or(&""),
                class_key(class),
                f[3],
                f[4],
                f.get(7).unwrap_or(&""),
                f.get(9).unwrap_or(&""),
                f.get(10).unwrap_or(&"")
            );
            rows.push(Row {
                class,
                kernel_error: field(f[4]),
                bpfvet_error: be,
                case: f.get(10).unwrap_or(&"").to_string(),
            });
        }
        tally_causes(rows, &mut causes);
        // The batch's rows with bpfvet's columns as now (error_sites.py
        // reads it like a batch TSV).
        let _ = std::fs::write(cfg.dir.join(format!("rescore-{k:04}.tsv")), tsv);
    }
    let mut out = String::from("| class | programs |\n|---|---:|\n");
    for (c, n) in &totals {
        let _ = writeln!(out, "| {} | {n} |", class_key(*c));
    }
    let _ = writeln!(out, "\n{changed} programs changed class.\n");
    causes_section(causes, &mut out);
    Ok(out)
}
