//! The terminal report.

use super::{pct, Report};
use std::fmt::Write;

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(3)).collect();
        t.push_str("...");
        t
    }
}

/// Failing-path steps the text shows at least.
const TEXT_PATH_STEPS: usize = 40;

pub fn render(r: &Report, top: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}/{}: {}", r.file, r.prog, r.verdict);
    if let Some(e) = &r.error {
        let at = r
            .error_insn
            .map_or(String::new(), |i| format!("insn {i}: "));
        let _ = writeln!(o, "  {at}{e}");
    }
    let _ = writeln!(
        o,
        "  processed {} insns, {} states, prune hits {}, prune misses {}, precision walks {}",
        r.processed_insns, r.states, r.prune_hits, r.prune_misses, r.precision_walks
    );
    let total = r.processed_insns;

    let shown: Vec<_> = r
        .lines
        .iter()
        .filter(|l| l.processed_insns > 0)
        .take(top)
        .collect();
    let covered: u64 = shown.iter().map(|l| l.processed_insns).sum();
    if !shown.is_empty() {
        // How many of the hottest lines hold 80% of the work.
        let mut sum = 0;
        let for_80 = r
            .lines
            .iter()
            .take_while(|l| {
                let before = sum;
                sum += l.processed_insns;
                before * 5 < total * 4
            })
            .count();
        let _ = writeln!(
            o,
            "\nHot lines (top {} of {} with work: {:.1}% of processed insns; {} lines hold 80%)",
            shown.len(),
            r.lines.iter().filter(|l| l.processed_insns > 0).count(),
            pct(covered, total),
            for_80
        );
        let _ = writeln!(
            o,
            "  {:>9} {:>6} {:>7} {:>7} {:>7} {:>6} {:>5}  line",
            "insns", "%", "states", "hits", "misses", "prec", "loop"
        );
        for l in &shown {
            let _ = writeln!(
                o,
                "  {:>9} {:>5.1}% {:>7} {:>7} {:>7} {:>6} {:>5}  {}:{}: {}",
                l.processed_insns,
                pct(l.processed_insns, total),
                l.states,
                l.prune_hits,
                l.prune_misses,
                l.precision_walks,
                l.loop_id.map_or("-".into(), |i| i.to_string()),
                l.file,
                l.line,
                clip(&l.text, 60)
            );
        }
    }

    // Nearby lines together, as many as cover 80% of the work (at most
    // three times the top-N).
    let mut regions = Vec::new();
    let mut in_regions = 0;
    for g in &r.regions {
        if in_regions * 5 >= total * 4 || regions.len() >= 3 * top.max(1) {
            break;
        }
        in_regions += g.processed_insns;
        regions.push(g);
    }
    if regions.len() > 1 || regions.first().is_some_and(|g| g.lines > 1) {
        let _ = writeln!(
            o,
            "\nHot regions (nearby lines; these {} cover {:.1}% of processed insns)",
            regions.len(),
            pct(in_regions, total)
        );
        for g in regions {
            let _ = writeln!(
                o,
                "  {:>9} {:>5.1}%  {}:{}-{} ({} lines with work)",
                g.processed_insns,
                pct(g.processed_insns, total),
                g.file,
                g.first_line,
                g.last_line,
                g.lines
            );
        }
    }

    if !r.loops.is_empty() {
        let _ = writeln!(o, "\nLoops (strongly connected components)");
        for lp in r.loops.iter().take(top) {
            let _ = writeln!(
                o,
                "  loop {}: insns {}-{} ({}): {} processed insns ({:.1}%), header insn {} reached {} times, {} states, {} prune misses",
                lp.id,
                lp.first_insn,
                lp.last_insn,
                lp.lines,
                lp.processed_insns,
                pct(lp.processed_insns, total),
                lp.entries(),
                lp.head_visits,
                lp.states,
                lp.prune_misses
            );
        }
    }

    if !r.miss_reasons.is_empty() {
        let _ = writeln!(
            o,
            "\nTop prune-miss reasons (first difference, all checkpoints)"
        );
        for m in r.miss_reasons.iter().take(top) {
            let _ = writeln!(
                o,
                "  {:>9} {:>5.1}%  {}  (at {} checkpoints)",
                m.count,
                pct(m.count, r.prune_misses),
                m.what,
                m.checkpoints
            );
        }
    }

    if !r.checkpoints.is_empty() {
        let _ = writeln!(o, "\nWhy pruning failed (checkpoints with most misses)");
        for c in r.checkpoints.iter().take(top) {
            let _ = writeln!(
                o,
                "  insn {} ({}:{}): {} misses, {} hits, {} states saved",
                c.insn, c.file, c.line, c.misses, c.hits, c.states
            );
            for m in &c.reasons {
                let _ = write!(o, "    {:>7}x {}", m.count, m.what);
                if !m.old.is_empty() || !m.cur.is_empty() {
                    let _ = write!(o, ": old {} vs cur {}", clip(&m.old, 70), clip(&m.cur, 70));
                }
                let _ = writeln!(o);
            }
        }
    }

    let hot: Vec<_> = r.insns.iter().take(top).collect();
    if !hot.is_empty() {
        let _ = writeln!(o, "\nHot instructions");
        let _ = writeln!(
            o,
            "  {:>9} {:>7} {:>7} {:>7} {:>6}  insn",
            "insns", "states", "hits", "misses", "prec"
        );
        for i in hot {
            let _ = writeln!(
                o,
                "  {:>9} {:>7} {:>7} {:>7} {:>6}  {}: {}  ({}:{})",
                i.processed_insns,
                i.states,
                i.prune_hits,
                i.prune_misses,
                i.precision_walks,
                i.insn,
                i.text,
                i.file,
                i.line
            );
        }
    }

    if let Some(p) = &r.failing_path {
        let _ = writeln!(o, "\nFailing path");
        // The terminal shows the last steps, nearest the failure.
        let keep = p.steps.len().min(TEXT_PATH_STEPS.max(top * 4));
        let earlier = p.omitted_steps + p.steps.len() - keep;
        if earlier > 0 {
            let _ = writeln!(o, "  ... {earlier} earlier steps");
        }
        let mut last_line = None;
        for s in &p.steps[p.steps.len() - keep..] {
            if last_line != Some((s.file.as_str(), s.line)) {
                let _ = writeln!(o, "  {}:{}: {}", s.file, s.line, s.source);
                last_line = Some((s.file.as_str(), s.line));
            }
            let _ = write!(o, "    {}: {}", s.insn, s.text);
            if let Some(b) = &s.branch {
                let _ = write!(o, "   [{b}]");
            }
            if !s.state.is_empty() {
                let _ = write!(o, "   ; {}", clip(&s.state, 160));
            }
            let _ = writeln!(o);
        }
        for d in &p.details {
            let _ = writeln!(o, "  {d}");
        }
        if let Some(e) = &r.error {
            let _ = writeln!(o, "  {e}");
        }
    }
    o
}
