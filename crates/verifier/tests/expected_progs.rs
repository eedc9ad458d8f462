//! bpfvet's verifier on the project's programs (tests/progs) against the
//! kernel's figures recorded in tests/progs/EXPECTED.md: the verdict, the
//! error text of a rejection, processed insns, total_states and
//! peak_states must all be the kernel's. The few programs where bpfvet is
//! known to differ are listed with the cause; they are reported, not
//! asserted, and the list must not hide a program that now agrees.

use bpfvet_object::{LoadOptions, Object};
use bpfvet_verifier::{verify, Options, Verdict};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Known disagreements with the kernel, and why.
const KNOWN: &[(&str, &str)] = &[];

struct Row {
    object: String,
    accepted: bool,
    insns: u64,
    states: u64,
    peak: u64,
    /// The backticked strings of the note: the kernel's last log line
    /// first, then lines near it (the error of an infinite loop is printed
    /// before the states).
    errors: Vec<String>,
}

fn number(s: &str) -> u64 {
    s.replace(',', "")
        .trim()
        .parse()
        .expect("number in EXPECTED.md")
}

/// `| program | object | section | verdict | insns | states | peak | note |`
fn rows(text: &str) -> BTreeMap<String, Row> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let c: Vec<&str> = line.split('|').map(str::trim).collect();
        // "-": libbpf did not load it (objects built for other loaders),
        // so the kernel gave no figures to compare with.
        if c.len() < 10 || !c[2].ends_with(".bpf.o") || c[5] == "-" {
            continue;
        }
        let errors = c[8]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        out.insert(
            c[1].to_string(),
            Row {
                object: c[2].to_string(),
                accepted: c[4] == "success",
                insns: number(c[5]),
                states: number(c[6]),
                peak: number(c[7]),
                errors,
            },
        );
    }
    out
}

#[test]
fn verifier_figures_match_expected_md() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs");
    let text = std::fs::read_to_string(dir.join("EXPECTED.md")).expect("EXPECTED.md");
    let rows = rows(&text);
    assert!(
        rows.len() > 40,
        "EXPECTED.md table parsed: {} rows",
        rows.len()
    );
    assert!(rows.contains_key("xdp_iter_num"));
    let mut objects: BTreeMap<String, Object> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut agreeing_known = Vec::new();
    for (name, row) in &rows {
        let obj = objects.entry(row.object.clone()).or_insert_with(|| {
            Object::from_file(dir.join(&row.object), &LoadOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", row.object))
        });
        let Some(idx) = obj.programs.iter().position(|p| &p.name == name) else {
            failures.push(format!("{name}: no such program in {}", row.object));
            continue;
        };
        let out = verify(obj, idx, &Options::default());
        let (accepted, error) = match &out.verdict {
            Verdict::Accepted => (true, None),
            Verdict::Rejected { error, .. }
            | Verdict::LimitExceeded { error, .. }
            | Verdict::Unsupported { what: error, .. } => (false, Some(error.clone())),
        };
        let s = &out.stats;
        let got = (accepted, s.processed_insns, s.total_states, s.peak_states);
        let want = (row.accepted, row.insns, row.states, row.peak);
        let error_ok = accepted
            || row.errors.is_empty()
            || error.as_ref().is_some_and(|e| row.errors.contains(e));
        let agrees = got == want && error_ok;
        match KNOWN.iter().find(|(k, _)| k == name) {
            Some((_, why)) if !agrees => {
                println!("known: {name}: got {got:?} {error:?}, kernel {want:?} ({why})");
            }
            Some(_) => agreeing_known.push(name.clone()),
            None if !agrees => failures.push(format!(
                "{name}: (accepted, insns, states, peak) = {got:?} error {error:?}; kernel {want:?} error {:?}",
                row.errors.first()
            )),
            None => {}
        }
    }
    assert!(
        agreeing_known.is_empty(),
        "now agree with the kernel, remove from KNOWN: {agreeing_known:?}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
