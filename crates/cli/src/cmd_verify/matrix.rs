//! `--kernels`: one row per program with each kernel's verdict and
//! processed insns, the first kernel (in the order listed) that accepts
//! it, and the error texts where the rejecting kernels disagree.

use super::fields::Stat;
use super::output::{self, Format};
use super::row::Row;
use serde_json::{json, Value};
use std::io::{self, Write};

/// The side of `--kernels` that is bpfvet's verifier, not a kernel.
pub const BPFVET: &str = "bpfvet";

/// One listed verifier and its rows, all sides in the same program order.
pub struct Side {
    pub label: String,
    pub rows: Vec<Row>,
}

/// What a side said about a program: `success`, `failure`, `refused`.
fn verdict(r: &Row) -> String {
    r.text(Stat::Verdict, "-")
}

/// The error line of a rejection, else the reason it was not verified.
fn error_text(r: &Row) -> Option<String> {
    if r.succeeded() {
        return None;
    }
    r.rejection
        .as_ref()
        .map(|j| j.error.clone())
        .or_else(|| r.reason.clone())
}

/// First kernel (not bpfvet) that accepts program `i`.
fn first_accepting(sides: &[Side], i: usize) -> Option<&str> {
    sides
        .iter()
        .filter(|s| s.label != BPFVET)
        .find(|s| s.rows[i].succeeded())
        .map(|s| s.label.as_str())
}

/// The rejecting sides' errors: the text once when they agree, else
/// `label: text` for each, joined by ` | `.
fn errors(sides: &[Side], i: usize) -> (String, bool) {
    let errs: Vec<(&str, String)> = sides
        .iter()
        .filter_map(|s| Some((s.label.as_str(), error_text(&s.rows[i])?)))
        .collect();
    let differ = errs.iter().any(|(_, e)| *e != errs[0].1);
    let text = if differ {
        errs.iter()
            .map(|(l, e)| format!("{l}: {e}"))
            .collect::<Vec<_>>()
            .join(" | ")
    } else {
        errs.first().map(|(_, e)| e.clone()).unwrap_or_default()
    };
    (text, differ)
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn write(out: &mut impl Write, format: Format, sides: &[Side]) -> io::Result<()> {
    let n = sides.first().map_or(0, |s| s.rows.len());
    let insns = |r: &Row| r.get(Stat::TotalInsns);
    match format {
        Format::Json => {
            let list: Vec<Value> = (0..n)
                .map(|i| {
                    let r0 = &sides[0].rows[i];
                    let per: serde_json::Map<String, Value> = sides
                        .iter()
                        .map(|s| {
                            let r = &s.rows[i];
                            (
                                s.label.clone(),
                                json!({
                                    "verdict": verdict(r),
                                    "insns": insns(r),
                                    "error": error_text(r),
                                }),
                            )
                        })
                        .collect();
                    let (_, differ) = errors(sides, i);
                    json!({
                        "file": r0.file,
                        "prog": r0.prog,
                        "kernels": per,
                        "first_accepting": first_accepting(sides, i),
                        "errors_differ": differ,
                    })
                })
                .collect();
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&list).unwrap_or_default()
            )
        }
        Format::Table | Format::Csv => {
            let csv = format == Format::Csv;
            let mut headers = vec!["file_name".to_string(), "prog_name".to_string()];
            if !csv {
                headers = vec!["File".into(), "Program".into()];
            }
            for s in sides {
                if csv {
                    headers.push(format!("verdict_{}", s.label));
                    headers.push(format!("total_insns_{}", s.label));
                } else {
                    headers.push(format!("Verdict ({})", s.label));
                    headers.push(format!("Insns ({})", s.label));
                }
            }
            headers.push(
                if csv {
                    "first_accepting"
                } else {
                    "First accepting"
                }
                .into(),
            );
            headers.push(if csv { "errors" } else { "Errors" }.into());
            let rows: Vec<Vec<String>> = (0..n)
                .map(|i| {
                    let r0 = &sides[0].rows[i];
                    let mut cells = vec![r0.file.clone(), r0.prog.clone()];
                    for s in sides {
                        let r = &s.rows[i];
                        cells.push(verdict(r));
                        cells.push(insns(r).map_or("-".into(), |v| v.to_string()));
                    }
                    cells.push(first_accepting(sides, i).unwrap_or("-").to_string());
                    cells.push(errors(sides, i).0);
                    cells
                })
                .collect();
            if csv {
                writeln!(out, "{}", headers.join(","))?;
                for r in rows {
                    let cells: Vec<String> = r.iter().map(|c| csv_cell(c)).collect();
                    writeln!(out, "{}", cells.join(","))?;
                }
                Ok(())
            } else {
                output::write_text_table(out, &headers, &rows)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd_verify::row::Rejection;

    fn row(prog: &str, ok: bool, insns: i64, error: Option<&str>) -> Row {
        let mut r = Row::new("a.o", prog);
        r.set(Stat::Verdict, ok as i64);
        r.set(Stat::TotalInsns, insns);
        r.rejection = error.map(|e| Rejection {
            error: e.into(),
            ..Default::default()
        });
        r
    }

    fn sides() -> Vec<Side> {
        vec![
            Side {
                label: "6.1".into(),
                rows: vec![
                    row("p", false, 10, Some("unknown func bpf_loop#181")),
                    row("q", false, 3, Some("R1 invalid mem access 'scalar'")),
                ],
            },
            Side {
                label: "6.18".into(),
                rows: vec![
                    row("p", true, 25, None),
                    row("q", false, 3, Some("R1 invalid mem access 'scalar'")),
                ],
            },
        ]
    }

    #[test]
    fn csv_has_per_kernel_columns_first_acceptor_and_errors() {
        let mut out = Vec::new();
        write(&mut out, Format::Csv, &sides()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "file_name,prog_name,verdict_6.1,total_insns_6.1,verdict_6.18,total_insns_6.18,first_accepting,errors"
        );
        assert_eq!(
            lines[1],
            "a.o,p,failure,10,success,25,6.18,unknown func bpf_loop#181"
        );
        assert_eq!(
            lines[2],
            "a.o,q,failure,3,failure,3,-,R1 invalid mem access 'scalar'"
        );
    }

    #[test]
    fn differing_errors_are_named_by_kernel() {
        let mut s = sides();
        s[1].rows[1].rejection.as_mut().unwrap().error = "R1 type=scalar expected=fp".into();
        assert_eq!(
            errors(&s, 1),
            (
                "6.1: R1 invalid mem access 'scalar' | 6.18: R1 type=scalar expected=fp".into(),
                true
            )
        );
        let mut out = Vec::new();
        write(&mut out, Format::Json, &s).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v[0]["first_accepting"], "6.18");
        assert_eq!(v[0]["kernels"]["6.1"]["insns"], 10);
        assert_eq!(v[1]["errors_differ"], true);
        assert_eq!(v[1]["first_accepting"], Value::Null);
    }

    #[test]
    fn bpfvet_is_never_the_first_accepting_kernel() {
        let s = vec![
            Side {
                label: BPFVET.into(),
                rows: vec![row("p", true, 5, None)],
            },
            Side {
                label: "6.18".into(),
                rows: vec![row("p", false, 5, Some("x"))],
            },
        ];
        assert_eq!(first_accepting(&s, 0), None);
    }
}
