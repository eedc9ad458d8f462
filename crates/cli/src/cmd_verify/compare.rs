//! `-C A.csv B.csv` (and `--backend both`): rows joined by (file, program),
//! each stat shown as A, B and DIFF — "+N (+P%)" for numbers, MATCH or
//! MISMATCH for verdicts and types, N/A when a side lacks the program.

use super::fields::{Stat, Variant};
use super::row::Row;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub struct Joined {
    pub file: String,
    pub prog: String,
    pub a: Option<Row>,
    pub b: Option<Row>,
}

/// Joins two result sets on (file, program), sorted by that key.
pub fn join(a: Vec<Row>, b: Vec<Row>) -> Vec<Joined> {
    let mut map: BTreeMap<(String, String), Joined> = BTreeMap::new();
    for (row, is_a) in a
        .into_iter()
        .map(|r| (r, true))
        .chain(b.into_iter().map(|r| (r, false)))
    {
        let e = map
            .entry((row.file.clone(), row.prog.clone()))
            .or_insert_with(|| Joined {
                file: row.file.clone(),
                prog: row.prog.clone(),
                a: None,
                b: None,
            });
        if is_a {
            e.a = Some(row);
        } else {
            e.b = Some(row);
        }
    }
    map.into_values().collect()
}

/// Percent change from `a` to `b`, with veristat's convention for a = 0.
pub fn pct(a: i64, b: i64) -> f64 {
    if a == 0 {
        match b.cmp(&0) {
            std::cmp::Ordering::Equal => 0.0,
            std::cmp::Ordering::Less => -100.0,
            std::cmp::Ordering::Greater => 100.0,
        }
    } else {
        (b - a) as f64 * 100.0 / a as f64
    }
}

impl Joined {
    fn side(&self, v: Variant) -> Option<&Row> {
        match v {
            Variant::A => self.a.as_ref(),
            _ => self.b.as_ref(),
        }
    }

    /// The number a filter or sort on `stat` with `variant` sees; a missing
    /// side sorts below everything.
    pub fn number(&self, stat: Stat, variant: Variant) -> f64 {
        let get = |r: &Row| r.get(stat).unwrap_or(0);
        match variant {
            Variant::A | Variant::B => self.side(variant).map_or(f64::MIN, |r| get(r) as f64),
            Variant::Diff | Variant::Pct => match (&self.a, &self.b) {
                (Some(a), Some(b)) if stat.is_text() => (get(a) == get(b)) as i64 as f64,
                (Some(a), Some(b)) if variant == Variant::Diff => (get(b) - get(a)) as f64,
                (Some(a), Some(b)) => pct(get(a), get(b)),
                _ => f64::MIN,
            },
        }
    }

    /// The three cells (A, B, DIFF) of a stat; `missing` is shown for a
    /// value that was not measured.
    pub fn cells(&self, stat: Stat, missing: &str) -> [String; 3] {
        let text = |r: &Option<Row>| match r {
            Some(r) => r.text(stat, missing),
            None => "N/A".to_string(),
        };
        let (a, b) = (text(&self.a), text(&self.b));
        let diff = match (&self.a, &self.b) {
            (Some(ra), Some(rb)) => match (ra.get(stat), rb.get(stat)) {
                _ if stat.is_text() => if a == b { "MATCH" } else { "MISMATCH" }.to_string(),
                (Some(x), Some(y)) => format!("{:+} ({:+.2}%)", y - x, pct(x, y)),
                _ => "N/A".to_string(),
            },
            _ => "N/A".to_string(),
        };
        [a, b, diff]
    }

    /// Both sides present with the same value of `stat`.
    pub fn same(&self, stat: Stat) -> bool {
        match (&self.a, &self.b) {
            (Some(a), Some(b)) => a.get(stat).is_some() && a.get(stat) == b.get(stat),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(file: &str, prog: &str, insns: i64, ok: bool) -> Row {
        let mut r = Row::new(file, prog);
        r.set(Stat::TotalInsns, insns);
        r.set(Stat::Verdict, ok as i64);
        r
    }

    #[test]
    fn joins_and_diffs_like_veristat() {
        let a = vec![row("x.o", "p", 21547, true), row("x.o", "only_a", 5, true)];
        let b = vec![row("x.o", "p", 20920, false), row("y.o", "only_b", 7, true)];
        let j = join(a, b);
        assert_eq!(j.len(), 3);
        let p = j.iter().find(|j| j.prog == "p").unwrap();
        assert_eq!(
            p.cells(Stat::TotalInsns, "-"),
            ["21547".to_string(), "20920".into(), "-627 (-2.91%)".into()]
        );
        assert_eq!(p.cells(Stat::Verdict, "-")[2], "MISMATCH");
        assert_eq!(p.number(Stat::TotalInsns, Variant::Diff), -627.0);
        assert!((p.number(Stat::TotalInsns, Variant::Pct) + 2.9099).abs() < 1e-3);
        assert_eq!(p.number(Stat::Verdict, Variant::Diff), 0.0);
        let only_a = j.iter().find(|j| j.prog == "only_a").unwrap();
        assert_eq!(
            only_a.cells(Stat::TotalInsns, "-"),
            ["5".to_string(), "N/A".into(), "N/A".into()]
        );
        assert_eq!(only_a.number(Stat::TotalInsns, Variant::B), f64::MIN);
    }

    #[test]
    fn percent_from_zero() {
        assert_eq!(pct(0, 0), 0.0);
        assert_eq!(pct(0, 5), 100.0);
        assert_eq!(pct(0, -5), -100.0);
        assert_eq!(pct(200, 100), -50.0);
    }
}
