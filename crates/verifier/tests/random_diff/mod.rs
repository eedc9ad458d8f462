//! Differential fuzzing of bpfvet against the host kernel's verifier:
//! generator ([`gen`]), the two verdicts and their class ([`diff`]),
//! shrinking of findings ([`minimise`]) and the FINDINGS.md report.

pub mod batch;
pub mod corrupt;
pub mod diff;
pub mod gen;
pub mod guest;
pub mod minimise;
pub mod mutate;
pub mod oracle;

use bpfvet_isa::disasm::{disasm_program, NoSymbols};
use diff::{
    cause, cause_group, diff, object, ours_text, prog_type_name, theirs_text, Class, Result,
};
use gen::GenProgram;
use oracle::Oracle;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

/// Every program of a run with its result.
pub struct Run {
    pub seed: u64,
    pub programs: Vec<GenProgram>,
    pub results: Vec<Result>,
}

impl Run {
    pub fn count(&self, c: Class) -> usize {
        self.results.iter().filter(|r| r.class == c).count()
    }

    /// Indexes of the programs of one class.
    pub fn of(&self, c: Class) -> Vec<usize> {
        (0..self.results.len())
            .filter(|&i| self.results[i].class == c)
            .collect()
    }

    pub fn kernel_accepted(&self) -> usize {
        self.results
            .iter()
            .filter(|r| matches!(r.theirs, diff::Theirs::Accepted { .. }))
            .count()
    }
}

/// Generates `n` programs from `seed` with `features` and runs both
/// verifiers on each.
pub fn run(kernel: &Oracle, seed: u64, n: u64, features: gen::Features) -> Run {
    let programs: Vec<GenProgram> = (0..n)
        .map(|i| gen::program_with(seed, i, features))
        .collect();
    let obj = Arc::new(object(&programs));
    let results = (0..programs.len())
        .map(|i| {
            let started = std::time::Instant::now();
            // A guest gets one object per program (the request carries one
            // program), and bpfvet the same object.
            let r = if kernel.is_guest() {
                diff::diff_one(kernel, &programs[i])
            } else {
                diff(kernel, &obj, i)
            };
            let took = started.elapsed();
            if took > std::time::Duration::from_secs(1) {
                eprintln!("slow: #{i} took {took:?} ({:?})", r.class);
            }
            r
        })
        .collect();
    Run {
        seed,
        programs,
        results,
    }
}

/// The program in the kernel's log syntax, or, when our decoder refuses
/// it, one raw `code dst src off imm` line per slot.
pub fn listing(p: &GenProgram) -> String {
    disasm_program(&p.insns, &NoSymbols).unwrap_or_else(|e| {
        let mut out = format!("(not decodable: {e}; raw slots)\n");
        for (i, ins) in p.insns.iter().enumerate() {
            let _ = writeln!(
                out,
                "{i}: code={:#04x} dst=r{} src=r{} off={} imm={}",
                ins.code, ins.dst, ins.src, ins.off, ins.imm
            );
        }
        out
    })
}

fn counts_table(run: &Run, out: &mut String) {
    let n = run.results.len();
    let _ = writeln!(out, "| class | programs |\n|---|---|");
    for c in Class::ALL {
        let _ = writeln!(out, "| {} | {} |", c.name(), run.count(c));
    }
    let acc = run.kernel_accepted();
    let _ = writeln!(
        out,
        "\nKernel acceptance: {acc} of {n} ({:.0}%).",
        100.0 * acc as f64 / n.max(1) as f64
    );
}

/// One minimised example per distinct cause of `class`, with counts.
fn findings_section(
    kernel: &Oracle,
    run: &Run,
    class: Class,
    limit: usize,
    tries: usize,
    out: &mut String,
) {
    let mut by_cause: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for i in run.of(class) {
        by_cause
            .entry(cause_group(&cause(&run.results[i])))
            .or_default()
            .push(i);
    }
    let mut causes: Vec<(String, Vec<usize>)> = by_cause.into_iter().collect();
    causes.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    let _ = writeln!(
        out,
        "\n## {} — {} programs, {} distinct causes\n",
        class.name(),
        run.count(class),
        causes.len()
    );
    for (group, idx) in causes.iter().take(limit) {
        let first = idx[0];
        let p = &run.programs[first];
        let key = cause(&run.results[first]);
        let small = minimise::minimise(kernel, p, class, &key, tries);
        let r = diff::diff_one(kernel, &small);
        let _ = writeln!(
            out,
            "### `{group}` — {} programs (first: #{first}, {})\n\nMinimised to {} insns (from {}):\n\n```\n{}```\n\n- kernel: {}\n- bpfvet: {}\n",
            idx.len(),
            prog_type_name(p.prog_type),
            small.insns.len(),
            p.insns.len(),
            listing(&small),
            theirs_text(&r.theirs),
            ours_text(&r.ours),
        );
    }
    if causes.len() > limit {
        let _ = writeln!(out, "Further causes (not minimised):\n");
        for (group, idx) in causes.iter().skip(limit) {
            let _ = writeln!(out, "- {} × `{group}` (e.g. #{})", idx.len(), idx[0]);
        }
    }
}

/// Message mismatches grouped as kernel | bpfvet pairs.
fn pairs_section(run: &Run, out: &mut String) {
    let mut pairs: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for i in run.of(Class::Message) {
        pairs
            .entry(cause_group(&cause(&run.results[i])))
            .or_default()
            .push(i);
    }
    let mut pairs: Vec<_> = pairs.into_iter().collect();
    pairs.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    let _ = writeln!(
        out,
        "\n## {} — {} programs\n\n| programs | kernel | bpfvet | e.g. |\n|---|---|---|---|",
        Class::Message.name(),
        run.count(Class::Message)
    );
    for (key, idx) in pairs {
        let (k, b) = key.split_once(" | ").unwrap_or((&key, ""));
        let _ = writeln!(
            out,
            "| {} | `{}` | `{}` | #{} |",
            idx.len(),
            k.replace('|', "\\|"),
            b.replace('|', "\\|"),
            idx[0]
        );
    }
}

fn insns_section(run: &Run, out: &mut String) {
    let idx = run.of(Class::Insns);
    let _ = writeln!(
        out,
        "\n## {} — {} programs\n",
        Class::Insns.name(),
        idx.len()
    );
    let mut within10 = 0;
    for &i in &idx {
        if let (diff::Ours::Accepted { insns: a }, diff::Theirs::Accepted { insns: Some(b) }) =
            (&run.results[i].ours, &run.results[i].theirs)
        {
            if (*a as f64 - *b as f64).abs() <= 0.1 * *b as f64 {
                within10 += 1;
            }
        }
    }
    let _ = writeln!(
        out,
        "{within10} of them within 10% of the kernel's count.\n"
    );
    for &i in idx.iter().take(10) {
        let r = &run.results[i];
        let _ = writeln!(
            out,
            "- #{i} ({}): kernel {}, bpfvet {}\n\n```\n{}```",
            diff::prog_type_name(run.programs[i].prog_type),
            theirs_text(&r.theirs),
            ours_text(&r.ours),
            listing(&run.programs[i])
        );
    }
}

fn raw_section(run: &Run, class: Class, out: &mut String) {
    let idx = run.of(class);
    let _ = writeln!(out, "\n## {} — {} programs\n", class.name(), idx.len());
    for &i in idx.iter().take(5) {
        let r = &run.results[i];
        let _ = writeln!(
            out,
            "#{i} ({}): bpfvet {}; kernel {}\n\n```\n{}```\n",
            prog_type_name(run.programs[i].prog_type),
            ours_text(&r.ours),
            theirs_text(&r.theirs),
            listing(&run.programs[i])
        );
    }
}

/// The FINDINGS.md text for a run.
pub fn report(kernel: &Oracle, run: &Run) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# bpfvet verifier vs host kernel: random programs\n\nGenerated by `bench/verifier_fuzz/run.sh` (test `random_kernel_diff`, report mode). \
         {} programs, seed {:#x}, every feature block on, program types socket_filter / xdp / \
         sched_cls / cgroup_skb / kprobe / tracepoint, an ARRAY map (key 4, value 48), a HASH map \
         (key 8, value 32) and a PROG_ARRAY (4 slots). \
         Each finding's program is minimised by deleting instructions while \
         the class and the cause (the rejecting side's message) stay the same; \
         listings are in the kernel's log syntax.\n",
        run.results.len(),
        run.seed
    );
    counts_table(run, &mut out);
    findings_section(kernel, run, Class::Unsound, 40, 600, &mut out);
    findings_section(kernel, run, Class::Overstrict, 25, 600, &mut out);
    raw_section(run, Class::Panic, &mut out);
    raw_section(run, Class::Hang, &mut out);
    // Each try of a timeout costs bpfvet's full time limit.
    findings_section(kernel, run, Class::Timeout, 5, 60, &mut out);
    pairs_section(run, &mut out);
    insns_section(run, &mut out);
    out
}
