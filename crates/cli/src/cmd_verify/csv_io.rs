//! veristat's CSV: a header of stat names (first name of each stat), then
//! one line per program, plain comma-separated values without quoting.
//! Unmeasured numbers are written as 0, as veristat does, because its
//! reader cannot take an empty cell.

use super::fields::Stat;
use super::row::{parse_value, Row, ValueError};
use std::io::{self, Write};
use std::path::Path;

pub fn write_header(out: &mut impl Write, stats: &[Stat]) -> io::Result<()> {
    let names: Vec<&str> = stats.iter().map(|s| s.csv_name()).collect();
    writeln!(out, "{}", names.join(","))
}

pub fn write_row(out: &mut impl Write, row: &Row, stats: &[Stat]) -> io::Result<()> {
    let cells: Vec<String> = stats.iter().map(|&s| row.csv_text(s, "0")).collect();
    writeln!(out, "{}", cells.join(","))
}

#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    #[error("cannot read '{path}': {err}")]
    Io { path: String, err: io::Error },
    #[error("'{path}' is empty")]
    Empty { path: String },
    #[error("'{path}': unrecognized stat name '{name}' in the header")]
    Header { path: String, name: String },
    #[error("'{path}' line {line}: {cells} cells for {columns} columns")]
    Columns {
        path: String,
        line: usize,
        cells: usize,
        columns: usize,
    },
    #[error("'{path}' line {line}: {err}")]
    Value {
        path: String,
        line: usize,
        err: ValueError,
    },
    #[error("'{path}' has no file_name and prog_name columns")]
    NoKey { path: String },
}

/// Reads a CSV written by veristat or bpfvet: its columns and rows.
pub fn read_csv(path: &Path) -> Result<(Vec<Stat>, Vec<Row>), CsvError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|err| CsvError::Io {
        path: p.clone(),
        err,
    })?;
    parse_csv(&text, &p)
}

pub fn parse_csv(text: &str, path: &str) -> Result<(Vec<Stat>, Vec<Row>), CsvError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or(CsvError::Empty { path: path.into() })?;
    let columns: Vec<Stat> = header
        .trim_end_matches('\r')
        .split(',')
        .map(|name| {
            Stat::from_name(name.trim()).ok_or_else(|| CsvError::Header {
                path: path.into(),
                name: name.into(),
            })
        })
        .collect::<Result<_, _>>()?;
    if !columns.contains(&Stat::File) || !columns.contains(&Stat::Prog) {
        return Err(CsvError::NoKey { path: path.into() });
    }
    let mut rows = Vec::new();
    for (i, line) in lines {
        let cells: Vec<&str> = line.trim_end_matches('\r').split(',').collect();
        if cells.len() != columns.len() {
            return Err(CsvError::Columns {
                path: path.into(),
                line: i + 1,
                cells: cells.len(),
                columns: columns.len(),
            });
        }
        let mut row = Row::default();
        for (&stat, cell) in columns.iter().zip(cells) {
            match stat {
                Stat::File => row.file = cell.to_string(),
                Stat::Prog => row.prog = cell.to_string(),
                _ => row.set(
                    stat,
                    parse_value(stat, cell).map_err(|err| CsvError::Value {
                        path: path.into(),
                        line: i + 1,
                        err,
                    })?,
                ),
            }
        }
        rows.push(row);
    }
    Ok((columns, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_is_identity() {
        let stats = super::super::fields::default_csv_stats();
        let mut r = Row::new("a.bpf.o", "handle");
        r.set(Stat::Verdict, 1);
        r.set(Stat::TotalInsns, 1234);
        r.set(Stat::ProgType, 6);
        r.set(Stat::AttachType, 37);
        let mut out = Vec::new();
        write_header(&mut out, &stats).unwrap();
        write_row(&mut out, &r, &stats).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("file_name,prog_name,verdict,duration,total_insns,"));
        assert!(text.contains("a.bpf.o,handle,success,0,1234,"));
        let (cols, rows) = parse_csv(&text, "t").unwrap();
        assert_eq!(cols, stats);
        assert_eq!(rows[0].get(Stat::TotalInsns), Some(1234));
        assert_eq!(rows[0].get(Stat::ProgType), Some(6));
        assert_eq!(rows[0].get(Stat::AttachType), Some(37));
        // Unmeasured values come back as the 0 written for them.
        assert_eq!(rows[0].get(Stat::MemPeak), Some(0));
    }

    #[test]
    fn malformed_csv_is_an_error() {
        assert!(matches!(parse_csv("", "t"), Err(CsvError::Empty { .. })));
        assert!(matches!(
            parse_csv("file_name,bogus\n", "t"),
            Err(CsvError::Header { .. })
        ));
        assert!(matches!(
            parse_csv("verdict\nsuccess\n", "t"),
            Err(CsvError::NoKey { .. })
        ));
        assert!(matches!(
            parse_csv("file_name,prog_name,verdict\na,b\n", "t"),
            Err(CsvError::Columns { .. })
        ));
        assert!(matches!(
            parse_csv("file_name,prog_name,verdict\na,b,maybe\n", "t"),
            Err(CsvError::Value { .. })
        ));
    }
}
