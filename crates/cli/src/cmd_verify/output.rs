//! Printing results as veristat does — an aligned table (two-space column
//! gap, dashes under the header and after the last row) or CSV — and as
//! JSON, for plain results and for compared pairs.

use super::compare::{self, Joined};
use super::csv_io;
use super::fields::Stat;
use super::row::Row;
use serde_json::{json, Map, Value};
use std::io::{self, Write};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Json,
}

/// Shown in tables for a figure that was not measured.
const MISSING: &str = "-";

struct Column {
    header: String,
    /// veristat left-aligns every header in comparisons, and in plain
    /// tables only the text columns.
    header_left: bool,
    left: bool,
    cells: Vec<String>,
}

/// `closing`: dashes again after the last row (veristat's plain tables
/// have them, its comparison tables do not).
fn print_table(out: &mut impl Write, cols: &[Column], closing: bool) -> io::Result<()> {
    let widths: Vec<usize> = cols
        .iter()
        .map(|c| {
            c.cells
                .iter()
                .map(|s| s.chars().count())
                .chain([c.header.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let underline = || {
        widths
            .iter()
            .map(|&w| "-".repeat(w))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let line = |cells: Vec<(&str, bool)>| {
        cells
            .iter()
            .zip(&widths)
            .map(|((s, left), &w)| {
                if *left {
                    format!("{s:<w$}")
                } else {
                    format!("{s:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    writeln!(
        out,
        "{}",
        line(
            cols.iter()
                .map(|c| (c.header.as_str(), c.header_left))
                .collect()
        )
    )?;
    writeln!(out, "{}", underline())?;
    let n = cols.first().map_or(0, |c| c.cells.len());
    for i in 0..n {
        writeln!(
            out,
            "{}",
            line(cols.iter().map(|c| (c.cells[i].as_str(), c.left)).collect())
        )?;
    }
    if closing && n > 0 {
        writeln!(out, "{}", underline())?;
    }
    Ok(())
}

/// A table of text cells, every column left-aligned but numbers.
pub fn write_text_table(
    out: &mut impl Write,
    headers: &[String],
    rows: &[Vec<String>],
) -> io::Result<()> {
    let cols: Vec<Column> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let cells: Vec<String> = rows.iter().map(|r| r[i].clone()).collect();
            let numeric = cells
                .iter()
                .all(|c| c == MISSING || c.parse::<i64>().is_ok());
            Column {
                header: h.clone(),
                header_left: true,
                left: !numeric,
                cells,
            }
        })
        .collect();
    print_table(out, &cols, true)
}

pub fn write_rows(
    out: &mut impl Write,
    fmt: Format,
    rows: &[Row],
    stats: &[Stat],
) -> io::Result<()> {
    match fmt {
        Format::Table => {
            let cols: Vec<Column> = stats
                .iter()
                .map(|&s| Column {
                    header: s.def().header.to_string(),
                    header_left: s.def().left_aligned,
                    left: s.is_text(),
                    cells: rows.iter().map(|r| r.text(s, MISSING)).collect(),
                })
                .collect();
            print_table(out, &cols, true)
        }
        Format::Csv => {
            csv_io::write_header(out, stats)?;
            rows.iter()
                .try_for_each(|r| csv_io::write_row(out, r, stats))
        }
        Format::Json => {
            let list: Vec<Value> = rows.iter().map(|r| row_json(r, stats)).collect();
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&list).unwrap_or_default()
            )
        }
    }
}

fn stat_json(row: &Row, s: Stat) -> Value {
    match (s, row.get(s)) {
        (Stat::File, _) => json!(row.file),
        (Stat::Prog, _) => json!(row.prog),
        (_, None) => Value::Null,
        (s, Some(_)) if s.is_text() => json!(row.text(s, MISSING)),
        (_, Some(v)) => json!(v),
    }
}

fn row_json(row: &Row, stats: &[Stat]) -> Value {
    let mut m = Map::new();
    for &s in stats {
        m.insert(s.csv_name().to_string(), stat_json(row, s));
    }
    if let Some(r) = &row.reason {
        m.insert("reason".into(), json!(r));
    }
    if let Some(r) = &row.rejection {
        m.insert(
            "error".into(),
            json!({ "message": r.error, "detail": r.detail, "insn": r.insn, "source": r.source }),
        );
    }
    if let Some(l) = &row.log {
        m.insert("log".into(), json!(l));
    }
    Value::Object(m)
}

/// Column suffixes: veristat's `(A)/(B)/(DIFF)` in tables and
/// `_base/_comp/_diff` in CSV, or backend names for `--backend both`.
pub struct SideNames {
    pub table: [&'static str; 3],
    pub csv: [&'static str; 3],
    /// CSV numeric DIFF cells as a plain signed number (empty when not
    /// comparable) instead of veristat's `+N (+P%)`.
    pub plain_csv_diff: bool,
}

pub const COMPARE_SIDES: SideNames = SideNames {
    table: [" (A)", " (B)", " (DIFF)"],
    csv: ["_base", "_comp", "_diff"],
    plain_csv_diff: false,
};

/// Table layout of compared rows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A, B and DIFF of every stat.
    Full,
    /// A and B side by side; DIFF only for text stats (the verdict).
    Compact,
}

fn key_text(j: &Joined, s: Stat) -> String {
    if s == Stat::File {
        j.file.clone()
    } else {
        j.prog.clone()
    }
}

pub fn write_joined(
    out: &mut impl Write,
    fmt: Format,
    rows: &[Joined],
    stats: &[Stat],
    sides: &SideNames,
    layout: Layout,
) -> io::Result<()> {
    match fmt {
        Format::Table => {
            let mut cols = Vec::new();
            for &s in stats {
                if s.is_key() {
                    cols.push(Column {
                        header: s.def().header.to_string(),
                        header_left: true,
                        left: true,
                        cells: rows.iter().map(|j| key_text(j, s)).collect(),
                    });
                    continue;
                }
                let cells: Vec<[String; 3]> = rows.iter().map(|j| j.cells(s, MISSING)).collect();
                let shown = if layout == Layout::Compact && !s.is_text() {
                    2
                } else {
                    3
                };
                for k in 0..shown {
                    cols.push(Column {
                        header: format!("{}{}", s.def().header, sides.table[k]),
                        header_left: true,
                        left: s.is_text(),
                        cells: cells.iter().map(|c| c[k].clone()).collect(),
                    });
                }
            }
            print_table(out, &cols, false)
        }
        Format::Csv => {
            let mut header = Vec::new();
            for &s in stats {
                if s.is_key() {
                    header.push(s.csv_name().to_string());
                } else {
                    header.extend(
                        sides
                            .csv
                            .iter()
                            .map(|sfx| format!("{}{}", s.csv_name(), sfx)),
                    );
                }
            }
            writeln!(out, "{}", header.join(","))?;
            for j in rows {
                let mut cells = Vec::new();
                for &s in stats {
                    match s {
                        Stat::File | Stat::Prog => cells.push(key_text(j, s)),
                        _ => {
                            let mut c = j.cells(s, "0");
                            if sides.plain_csv_diff && !s.is_text() {
                                c[2] = j.diff_number(s).map_or(String::new(), |d| format!("{d:+}"));
                            }
                            cells.extend(c);
                        }
                    }
                }
                writeln!(out, "{}", cells.join(","))?;
            }
            Ok(())
        }
        Format::Json => {
            // The CSV's keys; DIFFs as numbers (null when not comparable),
            // with the percent change under `<stat>_pct`.
            let list: Vec<Value> = rows
                .iter()
                .map(|j| {
                    let mut m = Map::new();
                    m.insert("file_name".into(), json!(j.file));
                    m.insert("prog_name".into(), json!(j.prog));
                    for &s in stats.iter().filter(|s| !s.is_key()) {
                        let side =
                            |r: &Option<Row>| r.as_ref().map_or(Value::Null, |r| stat_json(r, s));
                        let name = s.csv_name();
                        m.insert(format!("{name}{}", sides.csv[0]), side(&j.a));
                        m.insert(format!("{name}{}", sides.csv[1]), side(&j.b));
                        let diff_key = format!("{name}{}", sides.csv[2]);
                        if s.is_text() {
                            m.insert(diff_key, json!(j.diff_word(s)));
                        } else {
                            let d = j.diff_number(s);
                            m.insert(diff_key, json!(d));
                            let a = j.a.as_ref().and_then(|r| r.get(s));
                            let p = d.zip(a).map(|(d, a)| compare::pct(a, a + d));
                            m.insert(format!("{name}_pct"), json!(p));
                        }
                    }
                    for (sfx, side) in [(sides.csv[0], &j.a), (sides.csv[1], &j.b)] {
                        if let Some(r) = side.as_ref().and_then(|r| r.reason.as_ref()) {
                            m.insert(format!("reason{sfx}"), json!(r));
                        }
                    }
                    Value::Object(m)
                })
                .collect();
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&list).unwrap_or_default()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::compare::join;
    use super::*;

    fn sample() -> Vec<Row> {
        let mut a = Row::new("prog.bpf.o", "xdp_main");
        a.set(Stat::Verdict, 1);
        a.set(Stat::TotalInsns, 21547);
        vec![a]
    }

    #[test]
    fn table_layout_matches_veristat() {
        let mut out = Vec::new();
        let stats = [
            Stat::File,
            Stat::Prog,
            Stat::Verdict,
            Stat::TotalInsns,
            Stat::Duration,
        ];
        write_rows(&mut out, Format::Table, &sample(), &stats).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "File        Program   Verdict  Insns  Duration (us)"
        );
        assert_eq!(
            lines[1],
            "----------  --------  -------  -----  -------------"
        );
        assert_eq!(
            lines[2],
            "prog.bpf.o  xdp_main  success  21547              -"
        );
        assert_eq!(lines[3], lines[1]);
    }

    #[test]
    fn compare_csv_header_and_cells() {
        let mut b = sample();
        b[0].set(Stat::TotalInsns, 20920);
        let j = join(sample(), b);
        let mut out = Vec::new();
        write_joined(
            &mut out,
            Format::Csv,
            &j,
            &[Stat::File, Stat::Prog, Stat::Verdict, Stat::TotalInsns],
            &COMPARE_SIDES,
            Layout::Full,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "file_name,prog_name,verdict_base,verdict_comp,verdict_diff,total_insns_base,total_insns_comp,total_insns_diff\n\
             prog.bpf.o,xdp_main,success,success,MATCH,21547,20920,-627 (-2.91%)\n"
        );
    }

    #[test]
    fn json_keeps_unmeasured_as_null_and_reason() {
        let mut rows = sample();
        rows[0].set(Stat::Verdict, 0);
        rows[0].reason = Some("refused: not modelled by bpfvet: x".into());
        let mut out = Vec::new();
        write_rows(
            &mut out,
            Format::Json,
            &rows,
            &[Stat::Prog, Stat::Verdict, Stat::MemPeak],
        )
        .unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v[0]["verdict"], "refused");
        assert_eq!(v[0]["mem_peak"], Value::Null);
        assert_eq!(v[0]["reason"], "refused: not modelled by bpfvet: x");
    }
}
