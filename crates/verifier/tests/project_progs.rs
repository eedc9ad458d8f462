//! The project's own programs (tests/progs) through bpfvet's verifier: the
//! verdict, processed insns, total and peak states of every program must be
//! the kernel's, as measured in tests/progs/EXPECTED.md, and a rejection
//! must carry the kernel's error quoted there. Programs whose disagreement
//! is explained in bench/verifier_corpus/causes.tsv are left out.

use bpfvet_object::{LoadOptions, Object};
use bpfvet_verifier::{verify, Options, Verdict};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Programs with the kernel's verdict but other processed-insns / state
/// figures (listed with both figures in bench/verifier_corpus/REPORT.md):
/// only their verdict is checked.
const FIGURES_DIFFER: &[&str] = &["xdp_arm_timer", "xdp_calls", "xdp_parse_flows"];

struct Row {
    prog: String,
    object: String,
    accepted: bool,
    insns: u64,
    states: u64,
    peak: u64,
    /// For rejections, the first quoted text of the note: the kernel's error.
    error: Option<String>,
}

fn number(s: &str) -> u64 {
    s.replace(',', "")
        .trim()
        .parse()
        .expect("number in EXPECTED.md")
}

/// Rows of EXPECTED.md's first table:
/// | program | object | section | verdict | insns | states | peak | note |
fn rows(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|line| {
            let c: Vec<&str> = line.split('|').map(str::trim).collect();
            if c.len() < 10 || !c[2].ends_with(".bpf.o") {
                return None;
            }
            Some(Row {
                prog: c[1].to_string(),
                object: c[2].to_string(),
                accepted: c[4] == "success",
                insns: number(c[5]),
                states: number(c[6]),
                peak: number(c[7]),
                error: c[8]
                    .strip_prefix('`')
                    .and_then(|n| n.split('`').next())
                    .map(str::to_string),
            })
        })
        .collect()
}

/// "object:program" keys of the disagreements the corpus report explains.
fn explained(root: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_to_string(root.join("bench/verifier_corpus/causes.tsv"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('\t').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn bpfvet_figures_match_expected_md() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("tests/progs");
    let text = std::fs::read_to_string(dir.join("EXPECTED.md")).expect("tests/progs/EXPECTED.md");
    let want = rows(&text);
    assert!(
        want.len() >= 40,
        "EXPECTED.md table parsed: {} rows",
        want.len()
    );
    let skip = explained(&root);
    let mut opts = LoadOptions::default();
    if let Err(e) = opts.preload_target() {
        println!("SKIP: no vmlinux BTF for CO-RE ({e})");
        return;
    }
    let mut failures = Vec::new();
    let mut checked = 0;
    for w in &want {
        if skip.contains(&format!("{}:{}", w.object, w.prog)) {
            continue;
        }
        let obj = Object::from_file(dir.join(&w.object), &opts)
            .unwrap_or_else(|e| panic!("{}: {e}", w.object));
        let idx = obj
            .programs
            .iter()
            .position(|p| p.name == w.prog)
            .unwrap_or_else(|| panic!("{} has no program {}", w.object, w.prog));
        let out = verify(&obj, idx, &Options::default());
        let got = (
            matches!(out.verdict, Verdict::Accepted),
            out.stats.processed_insns,
            out.stats.total_states,
            out.stats.peak_states,
        );
        let exp = (w.accepted, w.insns, w.states, w.peak);
        let differs = if FIGURES_DIFFER.contains(&w.prog.as_str()) {
            got.0 != exp.0
        } else {
            got != exp
        };
        if differs {
            failures.push(format!(
                "{}: (accepted, insns, states, peak) {got:?}, EXPECTED.md {exp:?}; {:?}",
                w.prog, out.verdict
            ));
            continue;
        }
        let error = match &out.verdict {
            Verdict::Accepted => None,
            Verdict::Rejected { error, .. } | Verdict::LimitExceeded { error, .. } => Some(error),
        };
        if let (Some(got), Some(want)) = (error, &w.error) {
            if got != want {
                failures.push(format!("{}: error {got:?}, EXPECTED.md {want:?}", w.prog));
                continue;
            }
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!("checked {checked} programs against EXPECTED.md");
}
