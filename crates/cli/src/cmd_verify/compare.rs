//! `-C A.csv B.csv` (and `--backend both`): rows joined by (file, program),
//! each stat shown as A, B and DIFF — "+N (+P%)" for numbers, MATCH or
//! MISMATCH for verdicts and types, N/A when a side lacks the program.

use super::fields::{Stat, Variant};
use super::row::Row;
use std::cmp::Ordering;

#[derive(Clone, Debug)]
pub struct Joined {
    pub file: String,
    pub prog: String,
    pub a: Option<Row>,
    pub b: Option<Row>,
}

/// Joins two result sets on (file, program), sorted by that key. Rows with
/// the same key (the same file name in two directories) pair up in order,
/// as veristat's merge join does.
pub fn join(mut a: Vec<Row>, mut b: Vec<Row>) -> Vec<Joined> {
    let key = |r: &Row| (r.file.clone(), r.prog.clone());
    a.sort_by_key(key);
    b.sort_by_key(key);
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    let mut out = Vec::new();
    loop {
        let order = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(x), Some(y)) => key(x).cmp(&key(y)),
        };
        let (ra, rb) = match order {
            Ordering::Less => (a.next(), None),
            Ordering::Greater => (None, b.next()),
            Ordering::Equal => (a.next(), b.next()),
        };
        out.push(pair(ra, rb));
    }
    out
}

/// Pairs two result lists produced in the same order (one run, two
/// backends), row by row.
pub fn zip(a: Vec<Row>, b: Vec<Row>) -> Vec<Joined> {
    let n = a.len().max(b.len());
    let (mut a, mut b) = (a.into_iter(), b.into_iter());
    (0..n).map(|_| pair(a.next(), b.next())).collect()
}

fn pair(a: Option<Row>, b: Option<Row>) -> Joined {
    let named = a.as_ref().or(b.as_ref());
    Joined {
        file: named.map(|r| r.file.clone()).unwrap_or_default(),
        prog: named.map(|r| r.prog.clone()).unwrap_or_default(),
        a,
        b,
    }
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

    /// Either side was not verified (see `Row::refused`).
    pub fn refused(&self) -> bool {
        self.a.as_ref().is_some_and(Row::refused) || self.b.as_ref().is_some_and(Row::refused)
    }

    /// B minus A for a numeric stat; None when a side lacks the program or
    /// the figure, or was refused (a refusal's figures measure nothing
    /// comparable).
    pub fn diff_number(&self, stat: Stat) -> Option<i64> {
        if stat.is_text() || self.refused() {
            return None;
        }
        let (a, b) = (self.a.as_ref()?, self.b.as_ref()?);
        Some(b.get(stat)? - a.get(stat)?)
    }

    /// The DIFF of a text stat: MATCH, MISMATCH, or REFUSED for a verdict
    /// that a side refused to give.
    pub fn diff_word(&self, stat: Stat) -> Option<&'static str> {
        let (a, b) = (self.a.as_ref()?, self.b.as_ref()?);
        if stat == Stat::Verdict && self.refused() {
            return Some("REFUSED");
        }
        Some(if a.text(stat, "") == b.text(stat, "") {
            "MATCH"
        } else {
            "MISMATCH"
        })
    }

    /// The three cells (A, B, DIFF) of a stat; `missing` is shown for a
    /// value that was not measured.
    pub fn cells(&self, stat: Stat, missing: &str) -> [String; 3] {
        let text = |r: &Option<Row>| match r {
            Some(r) => r.text(stat, missing),
            None => "N/A".to_string(),
        };
        let (a, b) = (text(&self.a), text(&self.b));
        let diff = if stat.is_text() {
            self.diff_word(stat).unwrap_or("N/A").to_string()
        } else {
            match (self.diff_number(stat), &self.a, &self.b) {
                (Some(d), Some(ra), _) => {
                    let x = ra.get(stat).unwrap_or(0);
                    format!("{d:+} ({:+.2}%)", pct(x, x + d))
                }
                (None, Some(_), Some(_)) => missing.to_string(),
                _ => "N/A".to_string(),
            }
        };
        [a, b, diff]
    }

    /// Both sides present, neither refused, with the same value of `stat`.
    pub fn same(&self, stat: Stat) -> bool {
        if self.refused() {
            return false;
        }
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
    fn duplicate_keys_pair_in_order() {
        let a = vec![row("t.o", "p", 1, true), row("t.o", "p", 2, true)];
        let b = vec![
            row("t.o", "p", 1, true),
            row("t.o", "p", 2, true),
            row("t.o", "p", 3, true),
        ];
        let j = join(a.clone(), b.clone());
        assert_eq!(j.len(), 3);
        assert!(j[0].same(Stat::TotalInsns) && j[1].same(Stat::TotalInsns));
        assert!(j[2].a.is_none());
        let z = zip(a, b);
        assert_eq!(z.len(), 3);
        assert_eq!(z[1].b.as_ref().unwrap().get(Stat::TotalInsns), Some(2));
    }

    #[test]
    fn percent_from_zero() {
        assert_eq!(pct(0, 0), 0.0);
        assert_eq!(pct(0, 5), 100.0);
        assert_eq!(pct(0, -5), -100.0);
        assert_eq!(pct(200, 100), -50.0);
    }
}
