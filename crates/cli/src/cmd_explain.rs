//! `bpfvet explain`: where the verifier spends its work on a program and
//! why it fails: cost per C line and per instruction with the loops they
//! belong to, the reasons checkpoints fail to prune, and the path to a
//! rejection. Text for the terminal, JSON, or one self-contained HTML file.

mod html;
mod path;
mod text;

use crate::cmd_verify::{input, prog_types};
use anyhow::{bail, Context};
use bpfvet_isa::disasm::{write_log_line, NoSymbols};
use bpfvet_object::{Object, Program};
use bpfvet_verifier::explain::{InsnCost, Profile};
use bpfvet_verifier::Verdict;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Html,
}

#[derive(clap::Args)]
pub struct Args {
    /// The object file.
    object: PathBuf,
    /// The program to explain (a glob on its name); every program of the
    /// object when not given (HTML needs exactly one).
    #[arg(long)]
    prog: Option<String>,
    #[arg(
        short = 'o',
        long = "output-format",
        value_enum,
        default_value = "text"
    )]
    format: Format,
    /// Write the report to FILE instead of stdout.
    #[arg(long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
    /// How many hot lines, instructions and checkpoints the text shows.
    #[arg(short = 'n', long = "top-n", default_value_t = 10)]
    top_n: usize,
    /// Program types, as for `bpfvet verify --prog-type`.
    #[arg(long = "prog-type", value_parser = prog_types::parse_rule)]
    prog_type: Vec<prog_types::ProgTypeRule>,
    /// A file of `--prog-type` rules, as for `bpfvet verify --prog-types`.
    #[arg(long = "prog-types", value_name = "FILE")]
    prog_types: Option<PathBuf>,
}

/// What `bpfvet verify --explain` passes on.
pub struct Selection<'a> {
    pub paths: &'a [PathBuf],
    pub allows: &'a dyn Fn(&str, &str) -> bool,
    pub type_rules: Vec<prog_types::ProgTypeRule>,
    pub top_n: usize,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut type_rules = args.prog_type.clone();
    if let Some(path) = &args.prog_types {
        type_rules.extend(prog_types::read_rules(path)?);
    }
    let obj = open(&args.object, &type_rules)?;
    let name = input::display_name(&args.object);
    if obj.programs.is_empty() {
        bail!(
            "{name}: no programs: no function is in a program section (--prog-type \
             '.text=TYPE' explains the global ones of an object without SEC())"
        );
    }
    let progs: Vec<usize> = (0..obj.programs.len())
        .filter(|&i| {
            args.prog
                .as_deref()
                .is_none_or(|g| crate::cmd_verify::filter::glob_matches(&obj.programs[i].name, g))
        })
        .collect();
    if progs.is_empty() {
        let names: Vec<&str> = obj.programs.iter().map(|p| p.name.as_str()).collect();
        bail!(
            "{name}: no program matches '{}' (programs: {})",
            args.prog.as_deref().unwrap_or("*"),
            names.join(", ")
        );
    }
    if args.format == Format::Html && progs.len() > 1 {
        let names: Vec<&str> = progs
            .iter()
            .map(|&i| obj.programs[i].name.as_str())
            .collect();
        bail!(
            "{name}: an HTML report explains one program: choose one with --prog ({})",
            names.join(", ")
        );
    }
    let reports: Vec<Report> = progs
        .iter()
        .map(|&i| build_report(&name, &obj, i))
        .collect();
    let rendered = match args.format {
        Format::Text => reports
            .iter()
            .map(|r| text::render(r, args.top_n))
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Json => {
            let v = if reports.len() == 1 {
                serde_json::to_string_pretty(&reports[0])?
            } else {
                serde_json::to_string_pretty(&reports)?
            };
            v + "\n"
        }
        Format::Html => html::render(&reports[0], &sources(&reports[0], &args.object)),
    };
    match &args.out {
        Some(p) => {
            std::fs::write(p, rendered).with_context(|| format!("writing {}", p.display()))?
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(rendered.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(exit_code(&reports))
}

/// `bpfvet verify --explain`: the text report of every selected program.
pub fn run_selection(sel: &Selection) -> anyhow::Result<ExitCode> {
    let inputs = input::expand_inputs(sel.paths)?;
    let mut reports = Vec::new();
    let mut out = std::io::stdout().lock();
    for inp in &inputs {
        let name = input::display_name(&inp.path);
        let obj = match open(&inp.path, &sel.type_rules) {
            Ok(o) => o,
            Err(e) if inp.named => return Err(e),
            Err(_) => continue,
        };
        for i in 0..obj.programs.len() {
            if !(sel.allows)(&name, &obj.programs[i].name) {
                continue;
            }
            let r = build_report(&name, &obj, i);
            writeln!(out, "{}", text::render(&r, sel.top_n))?;
            reports.push(r);
        }
    }
    out.flush()?;
    Ok(exit_code(&reports))
}

fn exit_code(reports: &[Report]) -> ExitCode {
    ExitCode::from(reports.iter().any(|r| r.verdict != "accepted") as u8)
}

fn open(path: &Path, type_rules: &[prog_types::ProgTypeRule]) -> anyhow::Result<Object> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if let Some(why) = input::not_bpf_object_reason(&bytes) {
        bail!("'{}' is not a BPF object file: {why}", path.display());
    }
    let mut opts = bpfvet_object::LoadOptions {
        text_programs: prog_types::types_text(type_rules),
        ..Default::default()
    };
    opts.preload_target()
        .context("reading the CO-RE target BTF")?;
    let mut obj = bpfvet_object::Object::parse(&bytes, path, &opts)?;
    prog_types::apply(type_rules, &mut obj, &path.to_string_lossy());
    bpfvet_verifier::preload_kernel_btf();
    Ok(obj)
}

/// Everything a report shows, for one program.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub file: String,
    pub prog: String,
    /// accepted, rejected, limit or refused.
    pub verdict: String,
    pub error: Option<String>,
    pub error_insn: Option<usize>,
    pub processed_insns: u64,
    pub states: u64,
    pub prune_hits: u64,
    pub prune_misses: u64,
    pub precision_walks: u64,
    /// Every source line with instructions, hottest first; their
    /// processed_insns sum to the program's.
    pub lines: Vec<LineCost>,
    /// Runs of nearby source lines with work, hottest first: where the
    /// work is when it is spread thinly over many lines.
    pub regions: Vec<Region>,
    /// Every processed instruction, hottest first.
    pub insns: Vec<InsnRow>,
    pub loops: Vec<LoopCost>,
    /// Checkpoints with failed comparisons, most misses first.
    pub checkpoints: Vec<Checkpoint>,
    /// The first differences over all checkpoints, most frequent first.
    pub miss_reasons: Vec<ReasonTotal>,
    pub failing_path: Option<path::FailingPath>,
    /// The line info the report used (BTF's, else DWARF's).
    #[serde(skip)]
    pub line_info: Vec<bpfvet_object::LineInfo>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LineCost {
    /// The file's base name; "?" for instructions without line info.
    pub file: String,
    pub line: u32,
    pub text: String,
    pub processed_insns: u64,
    pub states: u64,
    pub prune_hits: u64,
    pub prune_misses: u64,
    pub precision_walks: u64,
    /// The line's instructions.
    pub insns: Vec<usize>,
    /// The loop most of its instructions belong to.
    #[serde(rename = "loop")]
    pub loop_id: Option<u32>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Region {
    pub file: String,
    pub first_line: u32,
    pub last_line: u32,
    pub processed_insns: u64,
    /// Lines with work in it.
    pub lines: usize,
}

/// Source lines this far apart or nearer (blank lines, comments, braces
/// between them) belong to one region.
const REGION_GAP: u32 = 5;

fn regions(lines: &[LineCost]) -> Vec<Region> {
    let mut worked: Vec<&LineCost> = lines
        .iter()
        .filter(|l| l.processed_insns > 0 && l.line != 0)
        .collect();
    worked.sort_by(|a, b| a.file.cmp(&b.file).then(a.line.cmp(&b.line)));
    let mut out: Vec<Region> = Vec::new();
    for l in worked {
        match out.last_mut() {
            Some(r) if r.file == l.file && l.line <= r.last_line + REGION_GAP => {
                r.last_line = l.line;
                r.processed_insns += l.processed_insns;
                r.lines += 1;
            }
            _ => out.push(Region {
                file: l.file.clone(),
                first_line: l.line,
                last_line: l.line,
                processed_insns: l.processed_insns,
                lines: 1,
            }),
        }
    }
    out.sort_by_key(|r| std::cmp::Reverse(r.processed_insns));
    out
}

#[derive(Clone, Debug, Serialize)]
pub struct InsnRow {
    pub insn: usize,
    pub text: String,
    pub file: String,
    pub line: u32,
    pub processed_insns: u64,
    pub states: u64,
    pub prune_hits: u64,
    pub prune_misses: u64,
    pub precision_walks: u64,
    #[serde(rename = "loop")]
    pub loop_id: Option<u32>,
}

/// `part` as a percentage of `total` (0 when there is no total).
fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LoopCost {
    pub id: u32,
    pub first_insn: usize,
    pub last_insn: usize,
    /// Source lines of its instructions, as `file:first-last`.
    pub lines: String,
    /// Instructions processed inside the loop, over all paths.
    pub processed_insns: u64,
    /// Instructions paths enter the loop by (its headers).
    pub entry_insns: Vec<usize>,
    /// Times paths reached the loop's headers: its iterations over all
    /// paths.
    pub head_visits: u64,
    pub states: u64,
    pub prune_misses: u64,
}

impl LoopCost {
    /// The header instructions, as the reports list them (`12,40`).
    fn entries(&self) -> String {
        let ids: Vec<String> = self.entry_insns.iter().map(|i| i.to_string()).collect();
        ids.join(",")
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Checkpoint {
    pub insn: usize,
    pub file: String,
    pub line: u32,
    pub misses: u64,
    pub hits: u64,
    pub states: u64,
    pub reasons: Vec<MissReason>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ReasonTotal {
    pub what: String,
    pub count: u64,
    /// Checkpoint instructions where it was seen.
    pub checkpoints: usize,
}

/// The first difference that failed a comparison, and how often.
#[derive(Clone, Debug, Serialize)]
pub struct MissReason {
    /// Which register or stack slot, and what kind of value.
    pub what: String,
    pub count: u64,
    /// The checkpoint's value was precise (an imprecise scalar would have
    /// matched).
    pub precise: bool,
    /// The first such miss's checkpoint and current values.
    pub old: String,
    pub cur: String,
}

/// Line info from the object's DWARF line table, with each line's text
/// where the source file can be read.
fn dwarf_line_info(obj: &Object, prog: &Program) -> Vec<bpfvet_object::LineInfo> {
    let Ok(bytes) = std::fs::read(&obj.path) else {
        return Vec::new();
    };
    let mut lines = bpfvet_object::dwarf_lines::dwarf_line_info(&bytes, prog);
    let dir = obj.path.parent().unwrap_or(Path::new("."));
    let mut files: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    for l in &mut lines {
        let text = files.entry(l.file_name.clone()).or_insert_with(|| {
            [
                PathBuf::from(&l.file_name),
                dir.join(base_name(&l.file_name)),
            ]
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
            .map(|t| t.lines().map(str::to_string).collect())
        });
        if let Some(t) = text {
            l.line_text = t
                .get((l.line as usize).wrapping_sub(1))
                .cloned()
                .unwrap_or_default();
        }
    }
    lines
}

/// Where instruction `i` comes from: the line_info entry covering it.
fn line_index(prog: &Program, i: usize) -> Option<usize> {
    prog.line_info
        .partition_point(|l| l.insn_off as usize <= i)
        .checked_sub(1)
}

fn base_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// The place of instruction `i`: (file, line, text), ("?", 0, "") without.
fn place(prog: &Program, i: usize) -> (String, u32, String) {
    match line_index(prog, i) {
        Some(k) => {
            let l = &prog.line_info[k];
            (
                base_name(&l.file_name),
                l.line,
                l.line_text.trim().to_string(),
            )
        }
        None => ("?".into(), 0, String::new()),
    }
}

fn disasm(prog: &Program) -> Vec<String> {
    let mut text = vec![String::new(); prog.insns.len()];
    if let Ok(decoded) = bpfvet_isa::decode_program(&prog.insns) {
        for l in decoded {
            let mut s = String::new();
            let _ = write_log_line(&mut s, l.pc, &l.insn, &NoSymbols);
            if let Some(t) = text.get_mut(l.pc) {
                // Without the "N: " the log line starts with.
                *t = s.split_once(": ").map_or(s.clone(), |(_, r)| r.to_string());
            }
        }
    }
    text
}

fn most_common(ids: impl Iterator<Item = u32>) -> Option<u32> {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for id in ids.filter(|&i| i != 0) {
        *counts.entry(id).or_default() += 1;
    }
    counts.into_iter().max_by_key(|&(_, n)| n).map(|(id, _)| id)
}

pub fn build_report(file: &str, obj: &Object, idx: usize) -> Report {
    let prog = &obj.programs[idx];
    let mut report = Report {
        file: file.to_string(),
        prog: prog.name.clone(),
        verdict: "refused".into(),
        error: None,
        error_insn: None,
        processed_insns: 0,
        states: 0,
        prune_hits: 0,
        prune_misses: 0,
        precision_walks: 0,
        lines: Vec::new(),
        regions: Vec::new(),
        insns: Vec::new(),
        loops: Vec::new(),
        checkpoints: Vec::new(),
        miss_reasons: Vec::new(),
        failing_path: None,
        line_info: Vec::new(),
    };
    if let Some(why) = &prog.refused {
        report.error = Some(format!("the object loader refused this program: {why}"));
        return report;
    }
    let opts = bpfvet_verifier::Options::default();
    let (outcome, profile) = bpfvet_verifier::verify_explained(obj, idx, &opts);
    let (verdict, error, insn) = match &outcome.verdict {
        Verdict::Accepted => ("accepted", None, None),
        Verdict::Rejected { error, insn, .. } => ("rejected", Some(error.clone()), *insn),
        Verdict::LimitExceeded { error, insn, .. } => ("limit", Some(error.clone()), *insn),
        Verdict::Unsupported { what, insn } => (
            "refused",
            Some(format!("not modelled by bpfvet: {what}")),
            *insn,
        ),
    };
    report.verdict = verdict.into();
    report.error = error;
    report.error_insn = insn;
    let total = profile.total();
    report.processed_insns = outcome.stats.processed_insns;
    report.states = total.states;
    report.prune_hits = total.prune_hits;
    report.prune_misses = total.prune_misses;
    report.precision_walks = total.precision_walks;
    let texts = disasm(prog);
    // Objects built without BTF line info may still have DWARF's.
    let with_dwarf;
    let prog = if prog.line_info.is_empty() {
        with_dwarf = Program {
            line_info: dwarf_line_info(obj, prog),
            ..prog.clone()
        };
        &with_dwarf
    } else {
        prog
    };
    report.line_info = prog.line_info.clone();
    fill_costs(&mut report, prog, &profile, &texts);
    if matches!(
        outcome.verdict,
        Verdict::Rejected { .. } | Verdict::LimitExceeded { .. }
    ) {
        report.failing_path = path::failing_path(obj, idx, prog, &texts, report.error.as_deref());
    }
    report
}

fn fill_costs(report: &mut Report, prog: &Program, profile: &Profile, texts: &[String]) {
    let loop_of = |i: usize| profile.loop_of.get(i).copied().unwrap_or(0);
    // Lines, keyed by line_info entry's (file, line); None: no line info.
    let mut lines: BTreeMap<(String, u32), LineCost> = BTreeMap::new();
    for (i, c) in profile.insns.iter().enumerate() {
        let (file, line, text) = place(prog, i);
        let e = lines
            .entry((file.clone(), line))
            .or_insert_with(|| LineCost {
                file,
                line,
                text,
                processed_insns: 0,
                states: 0,
                prune_hits: 0,
                prune_misses: 0,
                precision_walks: 0,
                insns: Vec::new(),
                loop_id: None,
            });
        e.processed_insns += c.processed;
        e.states += c.states;
        e.prune_hits += c.prune_hits;
        e.prune_misses += c.prune_misses;
        e.precision_walks += c.precision_walks;
        e.insns.push(i);
        if c.processed > 0 {
            report.insns.push(insn_row(prog, i, c, texts, loop_of(i)));
        }
    }
    let mut lines: Vec<LineCost> = lines.into_values().collect();
    for l in &mut lines {
        l.loop_id = most_common(l.insns.iter().map(|&i| loop_of(i)));
    }
    lines.sort_by(|a, b| {
        b.processed_insns
            .cmp(&a.processed_insns)
            .then(a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });
    report.regions = regions(&lines);
    report.lines = lines;
    report.insns.sort_by(|a, b| {
        b.processed_insns
            .cmp(&a.processed_insns)
            .then(a.insn.cmp(&b.insn))
    });

    // Loops: the instructions of each strongly connected component.
    let mut loops: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for i in 0..profile.insns.len() {
        if loop_of(i) != 0 {
            loops.entry(loop_of(i)).or_default().push(i);
        }
    }
    for (id, members) in loops {
        let mut cost = InsnCost::default();
        for &i in &members {
            cost.add(&profile.insns[i]);
        }
        let first = members[0];
        let last = *members.last().unwrap_or(&first);
        // Entered from outside at its headers; a loop only entered by a
        // call (a subprogram that is all loop) counts from its first insn.
        let mut entries: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| profile.loop_entry.get(i).copied().unwrap_or(false))
            .collect();
        if entries.is_empty() {
            entries.push(first);
        }
        let places: Vec<(String, u32)> = members
            .iter()
            .map(|&i| place(prog, i))
            .filter(|p| p.1 != 0)
            .map(|(f, l, _)| (f, l))
            .collect();
        let lines = match (
            places.iter().map(|p| p.1).min(),
            places.iter().map(|p| p.1).max(),
        ) {
            (Some(lo), Some(hi)) => format!("{}:{lo}-{hi}", places[0].0),
            _ => "?".into(),
        };
        report.loops.push(LoopCost {
            id,
            first_insn: first,
            last_insn: last,
            lines,
            processed_insns: cost.processed,
            head_visits: entries.iter().map(|&i| profile.insns[i].processed).sum(),
            entry_insns: entries,
            states: cost.states,
            prune_misses: cost.prune_misses,
        });
    }
    report.loops.sort_by(|a, b| {
        b.processed_insns
            .cmp(&a.processed_insns)
            .then(a.id.cmp(&b.id))
    });

    // Checkpoints: the miss reasons of each instruction, most frequent first.
    let mut totals: BTreeMap<&str, ReasonTotal> = BTreeMap::new();
    for m in &profile.misses {
        let t = totals.entry(&m.what).or_insert_with(|| ReasonTotal {
            what: m.what.clone(),
            count: 0,
            checkpoints: 0,
        });
        t.count += m.count;
        t.checkpoints += 1;
    }
    report.miss_reasons = totals.into_values().collect();
    report
        .miss_reasons
        .sort_by(|a, b| b.count.cmp(&a.count).then(a.what.cmp(&b.what)));
    let mut by_insn: BTreeMap<usize, Vec<MissReason>> = BTreeMap::new();
    for m in &profile.misses {
        by_insn.entry(m.insn).or_default().push(MissReason {
            what: m.what.clone(),
            count: m.count,
            precise: m.precise,
            old: m.old.clone(),
            cur: m.cur.clone(),
        });
    }
    for (insn, mut reasons) in by_insn {
        reasons.sort_by(|a, b| b.count.cmp(&a.count).then(a.what.cmp(&b.what)));
        reasons.truncate(5);
        let c = &profile.insns[insn];
        let (file, line, _) = place(prog, insn);
        report.checkpoints.push(Checkpoint {
            insn,
            file,
            line,
            misses: c.prune_misses,
            hits: c.prune_hits,
            states: c.states,
            reasons,
        });
    }
    report
        .checkpoints
        .sort_by(|a, b| b.misses.cmp(&a.misses).then(a.insn.cmp(&b.insn)));
}

fn insn_row(prog: &Program, i: usize, c: &InsnCost, texts: &[String], loop_id: u32) -> InsnRow {
    let (file, line, _) = place(prog, i);
    InsnRow {
        insn: i,
        text: texts.get(i).cloned().unwrap_or_default(),
        file,
        line,
        processed_insns: c.processed,
        states: c.states,
        prune_hits: c.prune_hits,
        prune_misses: c.prune_misses,
        precision_walks: c.precision_walks,
        loop_id: (loop_id != 0).then_some(loop_id),
    }
}

/// One source file for the HTML view: its lines, from the file itself when
/// it can be found next to the object or where clang saw it, else the lines
/// line_info records.
pub struct Source {
    pub file: String,
    pub lines: Vec<(u32, String)>,
}

fn sources(report: &Report, object_path: &Path) -> Vec<Source> {
    let mut files: BTreeMap<String, (String, BTreeMap<u32, String>)> = BTreeMap::new();
    for l in report.line_info.iter().filter(|l| l.line > 0) {
        let e = files
            .entry(base_name(&l.file_name))
            .or_insert_with(|| (l.file_name.clone(), BTreeMap::new()));
        e.1.entry(l.line).or_insert_with(|| l.line_text.clone());
    }
    files
        .into_iter()
        .map(|(base, (full, known))| {
            let dir = object_path.parent().unwrap_or(Path::new("."));
            let candidates = [PathBuf::from(&full), dir.join(&base)];
            let text = candidates
                .iter()
                .find_map(|p| std::fs::read_to_string(p).ok())
                // The file must be the one clang compiled.
                .filter(|t| {
                    let lines: Vec<&str> = t.lines().collect();
                    known.iter().all(|(n, k)| {
                        lines
                            .get((*n as usize).wrapping_sub(1))
                            .is_some_and(|l| l.trim() == k.trim())
                    })
                });
            let lines = match text {
                Some(t) => t
                    .lines()
                    .enumerate()
                    .map(|(i, l)| (i as u32 + 1, l.to_string()))
                    .collect(),
                None => known.into_iter().collect(),
            };
            Source { file: base, lines }
        })
        .collect()
}
