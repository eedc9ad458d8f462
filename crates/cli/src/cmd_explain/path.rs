//! The path to a rejection: the program verified again at log level 1,
//! whose log holds exactly the failing path (finished paths are dropped
//! from it), read back as steps with their source lines, register states
//! and branch decisions.

use bpfvet_isa::opcode::{op, BPF_CALL, BPF_EXIT, BPF_JA, BPF_JMP, BPF_JMP32};
use bpfvet_object::{Object, Program};
use serde::Serialize;

/// Steps kept at most: the last ones, nearest the failure.
const MAX_STEPS: usize = 400;

#[derive(Clone, Debug, Serialize)]
pub struct FailingPath {
    /// The path's instructions in order, ending at the failing one.
    pub steps: Vec<Step>,
    /// Steps before the kept ones.
    pub omitted_steps: usize,
    /// The verifier's lines between the failing instruction and its error
    /// (which access or register failed, the reference leaked, ...).
    pub details: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub insn: usize,
    pub text: String,
    pub file: String,
    pub line: u32,
    pub source: String,
    /// The registers and stack slots the instruction touched, after it.
    pub state: String,
    /// At a conditional jump: "taken" or "not taken" on this path.
    pub branch: Option<String>,
}

fn is_cond_jump(prog: &Program, i: usize) -> bool {
    prog.insns.get(i).is_some_and(|insn| {
        let cls = insn.class();
        let o = op(insn.code);
        (cls == BPF_JMP || cls == BPF_JMP32) && !matches!(o, BPF_CALL | BPF_EXIT | BPF_JA)
    })
}

/// `N: (xx) ...`: the instruction index and the rest of the line.
fn insn_line(line: &str) -> Option<(usize, &str)> {
    let (n, rest) = line.split_once(": ")?;
    let idx = n.parse().ok()?;
    rest.starts_with('(').then_some((idx, rest))
}

pub fn failing_path(
    obj: &Object,
    idx: usize,
    prog: &Program,
    texts: &[String],
    error: Option<&str>,
) -> Option<FailingPath> {
    let opts = bpfvet_verifier::Options {
        log_level: 1,
        ..Default::default()
    };
    let out = bpfvet_verifier::verify(obj, idx, &opts);
    Some(parse(&out.log, prog, texts, error?))
}

pub fn parse(log: &str, prog: &Program, texts: &[String], error: &str) -> FailingPath {
    let lines: Vec<&str> = log.lines().collect();
    let end = lines
        .iter()
        .rposition(|l| l.starts_with(error))
        .unwrap_or(lines.len());
    // Only the last steps become Steps: a path to the insn limit has
    // hundreds of thousands.
    let at: Vec<usize> = (0..end)
        .filter(|&k| insn_line(lines[k]).is_some())
        .collect();
    let omitted = at.len().saturating_sub(MAX_STEPS);
    let last_insn_line = at.last().copied();
    let mut steps: Vec<Step> = Vec::new();
    for &k in &at[omitted..] {
        let Some((i, rest)) = insn_line(lines[k]) else {
            continue;
        };
        // The state follows "; " at the state column; a taken jump prints
        // its target and the full state instead ("goto pc+3 22: R0=...").
        let state = match rest.split_once(" ; ") {
            Some((_, s)) => s.trim().to_string(),
            None => rest
                .split_once(" goto pc")
                .and_then(|(_, t)| t.split_once(": "))
                .map_or(String::new(), |(_, s)| s.trim().to_string()),
        };
        let (file, line, source) = super::place(prog, i);
        steps.push(Step {
            insn: i,
            text: texts.get(i).cloned().unwrap_or_default(),
            file,
            line,
            source,
            state,
            branch: None,
        });
    }
    for k in 0..steps.len().saturating_sub(1) {
        let (i, next) = (steps[k].insn, steps[k + 1].insn);
        if is_cond_jump(prog, i) {
            steps[k].branch = Some(if next == i + 1 { "not taken" } else { "taken" }.to_string());
        }
    }
    let details = match last_insn_line {
        Some(k) => lines[k + 1..end]
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty() && !l.starts_with("; "))
            .map(str::to_string)
            .collect(),
        // No instruction on the path (a whole-program check failed).
        None => Vec::new(),
    };
    FailingPath {
        steps,
        omitted_steps: omitted,
        details,
    }
}
