//! One self-contained HTML file: inline CSS and script, no network. The
//! source annotated by cost, sortable tables of hot lines, loops and
//! instructions, the prune-miss reasons and the failing path. Everything
//! is aggregated per line and instruction, so the page stays small for
//! programs of 10^6 processed instructions.

use super::{pct, Report, Source};
use std::collections::HashMap;
use std::fmt::Write;

/// Hot instructions listed at most.
const MAX_INSN_ROWS: usize = 500;

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// Heat from 0 (cold) to 1 (the hottest line), on a log scale so that
/// lines of a few instructions still show.
fn heat(v: u64, max: u64) -> f64 {
    if v == 0 || max == 0 {
        0.0
    } else {
        ((v as f64).ln_1p() / (max as f64).ln_1p()).clamp(0.05, 1.0)
    }
}

const STYLE: &str = r#"
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em}
td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{cursor:pointer;background:#f4f4f4;user-select:none;position:sticky;top:0}
th.sorted-asc::after{content:" \25B2"}th.sorted-desc::after{content:" \25BC"}
td.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre,.src{font-family:ui-monospace,Menlo,Consolas,monospace}
.summary td{border:none;padding:1px 10px 1px 0}
.bad{color:#b00020;font-weight:bold}.good{color:#1b5e20;font-weight:bold}
.src{font-size:.8em;border:1px solid #ddd;max-height:40em;overflow:auto}
.src div{white-space:pre;display:flex}
.src .ln{width:4em;text-align:right;color:#999;padding-right:.6em;flex:none}
.src .cnt{width:7em;text-align:right;padding-right:.6em;color:#555;flex:none}
.src .txt{flex:1}
.src .hit{outline:2px solid #f57c00}
.src .fail{background:#ffcdd2}
.reason{color:#555}
.path td{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.95em}
.path tr.last td{background:#ffcdd2}
.branch{color:#6a1b9a}
.state{color:#37474f;max-width:50em;word-break:break-all}
"#;

const SCRIPT: &str = r#"
(function () {
  function cellValue(row, col, numeric) {
    var cell = row.cells[col];
    var v = cell ? (cell.getAttribute('data-v') || cell.textContent) : '';
    return numeric ? parseFloat(v) || 0 : v.toLowerCase();
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    var heads = table.querySelectorAll('th');
    heads.forEach(function (th, col) {
      th.addEventListener('click', function () {
        var numeric = th.getAttribute('data-type') === 'num';
        var desc = !th.classList.contains('sorted-desc');
        heads.forEach(function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
        th.classList.add(desc ? 'sorted-desc' : 'sorted-asc');
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, col, numeric), y = cellValue(b, col, numeric);
          var c = x < y ? -1 : x > y ? 1 : 0;
          return desc ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  document.querySelectorAll('[data-goto]').forEach(function (el) {
    el.addEventListener('click', function (ev) {
      var target = document.getElementById(el.getAttribute('data-goto'));
      if (!target) { return; }
      ev.preventDefault();
      document.querySelectorAll('.src .hit').forEach(function (h) { h.classList.remove('hit'); });
      target.classList.add('hit');
      target.scrollIntoView({block: 'center'});
    });
  });
  // Each source pane opens at its hottest line.
  var seen = {};
  document.querySelectorAll('#hot-lines tbody a[data-goto]').forEach(function (a) {
    var line = document.getElementById(a.getAttribute('data-goto'));
    var pane = line && line.parentNode;
    if (!pane || seen[pane.id]) { return; }
    seen[pane.id] = true;
    pane.scrollTop = Math.max(0, line.offsetTop - pane.offsetTop - pane.clientHeight / 3);
  });
  // Tells a headless check that the script ran to its end.
  document.body.setAttribute('data-report-ready', '1');
})();
"#;

fn line_id(file: &str, line: u32) -> String {
    let clean: String = file
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("L-{clean}-{line}")
}

pub fn render(r: &Report, sources: &[Source]) -> String {
    let total = r.processed_insns;
    let mut o = String::new();
    let title = format!("bpfvet explain: {}/{}", r.file, r.prog);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    let class = if r.verdict == "accepted" {
        "good"
    } else {
        "bad"
    };
    let _ = write!(
        o,
        "<table class=\"summary\"><tr><td>verdict</td><td class=\"{class}\">{}</td></tr>",
        esc(&r.verdict)
    );
    if let Some(e) = &r.error {
        let at = r
            .error_insn
            .map_or(String::new(), |i| format!("insn {i}: "));
        let _ = write!(
            o,
            "<tr><td>error</td><td class=\"bad\">{}</td></tr>",
            esc(&format!("{at}{e}"))
        );
    }
    for (k, v) in [
        ("processed insns", r.processed_insns),
        ("states", r.states),
        ("prune hits", r.prune_hits),
        ("prune misses", r.prune_misses),
        ("precision walks", r.precision_walks),
    ] {
        let _ = write!(o, "<tr><td>{k}</td><td>{v}</td></tr>");
    }
    o.push_str("</table>\n");

    // Hot lines.
    let _ = write!(
        o,
        "<h2>Hot lines</h2><p>Every source line with instructions; click a header to sort, a line to see it in the source.</p>\
         <table class=\"sortable\" id=\"hot-lines\"><thead><tr>\
         <th data-type=\"str\">line</th><th data-type=\"num\">processed insns</th><th data-type=\"num\">%</th>\
         <th data-type=\"num\">states</th><th data-type=\"num\">prune hits</th><th data-type=\"num\">prune misses</th>\
         <th data-type=\"num\">precision walks</th><th data-type=\"num\">loop</th><th data-type=\"str\">source</th>\
         </tr></thead><tbody>"
    );
    for l in &r.lines {
        let _ = write!(
            o,
            "<tr><td><a href=\"#{id}\" data-goto=\"{id}\">{}:{}</a></td><td class=\"n\">{}</td><td class=\"n\">{:.1}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td><code>{}</code></td></tr>",
            esc(&l.file),
            l.line,
            l.processed_insns,
            pct(l.processed_insns, total),
            l.states,
            l.prune_hits,
            l.prune_misses,
            l.precision_walks,
            l.loop_id.unwrap_or(0),
            l.loop_id.map_or("-".into(), |i| i.to_string()),
            esc(&l.text),
            id = line_id(&l.file, l.line),
        );
    }
    o.push_str("</tbody></table>\n");

    // Annotated source.
    let cost: HashMap<(&str, u32), u64> = r
        .lines
        .iter()
        .map(|l| ((l.file.as_str(), l.line), l.processed_insns))
        .collect();
    let max = r.lines.iter().map(|l| l.processed_insns).max().unwrap_or(0);
    let fail_line = r
        .failing_path
        .as_ref()
        .and_then(|p| p.steps.last())
        .map(|s| (s.file.as_str(), s.line));
    for (k, s) in sources.iter().enumerate() {
        let _ = write!(
            o,
            "<h2>Source: {}</h2><div class=\"src\" id=\"src-{k}\">",
            esc(&s.file)
        );
        for (n, text) in &s.lines {
            let c = cost.get(&(s.file.as_str(), *n)).copied().unwrap_or(0);
            let h = heat(c, max);
            let style = if h > 0.0 {
                format!(" style=\"background:rgba(255,87,34,{:.2})\"", h * 0.55)
            } else {
                String::new()
            };
            let fail = if fail_line == Some((s.file.as_str(), *n)) {
                " class=\"fail\""
            } else {
                ""
            };
            let count = if c > 0 { c.to_string() } else { String::new() };
            let _ = write!(
                o,
                "<div id=\"{}\"{fail}><span class=\"ln\">{n}</span><span class=\"cnt\"{style}>{count}</span><span class=\"txt\">{}</span></div>",
                line_id(&s.file, *n),
                esc(text)
            );
        }
        o.push_str("</div>\n");
    }

    // Loops.
    if !r.loops.is_empty() {
        o.push_str(
            "<h2>Loops</h2><table class=\"sortable\"><thead><tr><th data-type=\"num\">loop</th>\
             <th data-type=\"num\">first insn</th><th data-type=\"num\">last insn</th><th data-type=\"str\">lines</th>\
             <th data-type=\"num\">processed insns</th><th data-type=\"num\">%</th><th data-type=\"str\">header insns</th><th data-type=\"num\">header reached</th>\
             <th data-type=\"num\">states</th><th data-type=\"num\">prune misses</th></tr></thead><tbody>",
        );
        for lp in &r.loops {
            let _ = write!(
                o,
                "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{:.1}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                lp.id,
                lp.first_insn,
                lp.last_insn,
                esc(&lp.lines),
                lp.processed_insns,
                pct(lp.processed_insns, total),
                lp.entries(),
                lp.head_visits,
                lp.states,
                lp.prune_misses
            );
        }
        o.push_str("</tbody></table>\n");
    }

    // Prune misses.
    if !r.miss_reasons.is_empty() {
        o.push_str(
            "<h2>Top prune-miss reasons</h2><table class=\"sortable\"><thead><tr><th data-type=\"num\">misses</th>\
             <th data-type=\"num\">%</th><th data-type=\"str\">first difference</th><th data-type=\"num\">checkpoints</th></tr></thead><tbody>",
        );
        for m in r.miss_reasons.iter().take(100) {
            let _ = write!(
                o,
                "<tr><td class=\"n\">{}</td><td class=\"n\">{:.1}</td><td>{}</td><td class=\"n\">{}</td></tr>",
                m.count,
                pct(m.count, r.prune_misses),
                esc(&m.what),
                m.checkpoints
            );
        }
        o.push_str("</tbody></table>\n");
    }
    if !r.checkpoints.is_empty() {
        o.push_str(
            "<h2>Why pruning failed</h2><p>Per checkpoint instruction: the first difference that made the comparison with a saved state fail.</p>\
             <table class=\"sortable\"><thead><tr><th data-type=\"num\">insn</th><th data-type=\"str\">line</th>\
             <th data-type=\"num\">misses</th><th data-type=\"num\">hits</th><th data-type=\"num\">states</th>\
             <th data-type=\"str\">top reasons</th></tr></thead><tbody>",
        );
        for c in r.checkpoints.iter().take(200) {
            let mut reasons = String::new();
            for m in &c.reasons {
                let _ = write!(reasons, "<div><b>{}&times;</b> {}", m.count, esc(&m.what));
                if !m.old.is_empty() || !m.cur.is_empty() {
                    let _ = write!(
                        reasons,
                        " <span class=\"reason\">old <code>{}</code> vs cur <code>{}</code></span>",
                        esc(&m.old),
                        esc(&m.cur)
                    );
                }
                reasons.push_str("</div>");
            }
            let _ = write!(
                o,
                "<tr><td class=\"n\">{}</td><td><a href=\"#{id}\" data-goto=\"{id}\">{}:{}</a></td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td>{reasons}</td></tr>",
                c.insn,
                esc(&c.file),
                c.line,
                c.misses,
                c.hits,
                c.states,
                id = line_id(&c.file, c.line),
            );
        }
        o.push_str("</tbody></table>\n");
    }

    // Failing path.
    if let Some(p) = &r.failing_path {
        o.push_str("<h2>Failing path</h2>");
        if p.omitted_steps > 0 {
            let _ = write!(o, "<p>{} earlier steps not shown.</p>", p.omitted_steps);
        }
        o.push_str(
            "<table class=\"path\"><thead><tr><th>line</th><th>insn</th><th>branch</th><th>state after</th></tr></thead><tbody>",
        );
        let n = p.steps.len();
        for (k, s) in p.steps.iter().enumerate() {
            let last = if k + 1 == n { " class=\"last\"" } else { "" };
            let _ = write!(
                o,
                "<tr{last}><td><a href=\"#{id}\" data-goto=\"{id}\" title=\"{}\">{}:{}</a></td><td>{}: {}</td>\
                 <td class=\"branch\">{}</td><td class=\"state\">{}</td></tr>",
                esc(&s.source),
                esc(&s.file),
                s.line,
                s.insn,
                esc(&s.text),
                esc(s.branch.as_deref().unwrap_or("")),
                esc(&s.state),
                id = line_id(&s.file, s.line),
            );
        }
        o.push_str("</tbody></table>");
        if !p.details.is_empty() || r.error.is_some() {
            o.push_str("<pre class=\"bad\">");
            for d in &p.details {
                let _ = writeln!(o, "{}", esc(d));
            }
            if let Some(e) = &r.error {
                let _ = writeln!(o, "{}", esc(e));
            }
            o.push_str("</pre>\n");
        }
    }

    // Hot instructions.
    let _ = write!(
        o,
        "<h2>Hot instructions</h2><table class=\"sortable\"><thead><tr><th data-type=\"num\">insn</th>\
         <th data-type=\"str\">instruction</th><th data-type=\"str\">line</th><th data-type=\"num\">processed</th>\
         <th data-type=\"num\">states</th><th data-type=\"num\">prune hits</th><th data-type=\"num\">prune misses</th>\
         <th data-type=\"num\">precision walks</th><th data-type=\"num\">loop</th></tr></thead><tbody>"
    );
    for i in r.insns.iter().take(MAX_INSN_ROWS) {
        let _ = write!(
            o,
            "<tr><td class=\"n\">{}</td><td><code>{}</code></td><td><a href=\"#{id}\" data-goto=\"{id}\">{}:{}</a></td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\" data-v=\"{}\">{}</td></tr>",
            i.insn,
            esc(&i.text),
            esc(&i.file),
            i.line,
            i.processed_insns,
            i.states,
            i.prune_hits,
            i.prune_misses,
            i.precision_walks,
            i.loop_id.unwrap_or(0),
            i.loop_id.map_or("-".into(), |x| x.to_string()),
            id = line_id(&i.file, i.line),
        );
    }
    o.push_str("</tbody></table>\n");
    let _ = write!(o, "<script>{SCRIPT}</script>\n</body></html>\n");
    o
}
