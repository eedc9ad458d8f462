//! `-s` ordering of results and of compared pairs; ties always fall back
//! to file then program name, so output order is deterministic.

use super::compare::Joined;
use super::fields::{Stat, StatSpec};
use super::row::Row;
use std::cmp::Ordering;

fn directed(ord: Ordering, asc: bool) -> Ordering {
    if asc {
        ord
    } else {
        ord.reverse()
    }
}

pub fn sort_rows(rows: &mut [Row], spec: &[StatSpec]) {
    rows.sort_by(|x, y| {
        for s in spec {
            let ord = match s.stat {
                Stat::File => x.file.cmp(&y.file),
                Stat::Prog => x.prog.cmp(&y.prog),
                st => {
                    let v = |r: &Row| {
                        let v = r.get(st).unwrap_or(0);
                        if s.abs {
                            v.abs()
                        } else {
                            v
                        }
                    };
                    v(x).cmp(&v(y))
                }
            };
            let ord = directed(ord, s.asc);
            if ord != Ordering::Equal {
                return ord;
            }
        }
        (&x.file, &x.prog).cmp(&(&y.file, &y.prog))
    });
}

pub fn sort_joined(rows: &mut [Joined], spec: &[StatSpec]) {
    rows.sort_by(|x, y| {
        for s in spec {
            let ord = match s.stat {
                Stat::File => x.file.cmp(&y.file),
                Stat::Prog => x.prog.cmp(&y.prog),
                st => {
                    let v = |j: &Joined| {
                        let v = j.number(st, s.variant);
                        if s.abs {
                            v.abs()
                        } else {
                            v
                        }
                    };
                    v(x).partial_cmp(&v(y)).unwrap_or(Ordering::Equal)
                }
            };
            let ord = directed(ord, s.asc);
            if ord != Ordering::Equal {
                return ord;
            }
        }
        (&x.file, &x.prog).cmp(&(&y.file, &y.prog))
    });
}

#[cfg(test)]
mod tests {
    use super::super::compare::join;
    use super::super::fields::parse_spec_list;
    use super::*;

    fn row(file: &str, prog: &str, insns: i64) -> Row {
        let mut r = Row::new(file, prog);
        r.set(Stat::TotalInsns, insns);
        r
    }

    #[test]
    fn sorts_by_stat_then_name() {
        let mut rows = vec![row("b.o", "x", 5), row("a.o", "y", 5), row("a.o", "z", 9)];
        sort_rows(&mut rows, &parse_spec_list("insns").unwrap());
        let order: Vec<&str> = rows.iter().map(|r| r.prog.as_str()).collect();
        // Descending insns by default, ties by file then program.
        assert_eq!(order, ["z", "y", "x"]);
        sort_rows(&mut rows, &parse_spec_list("insns^,prog").unwrap());
        let order: Vec<&str> = rows.iter().map(|r| r.prog.as_str()).collect();
        assert_eq!(order, ["x", "y", "z"]);
    }

    #[test]
    fn sorts_pairs_by_absolute_diff() {
        let a = vec![
            row("f.o", "p", 100),
            row("f.o", "q", 100),
            row("f.o", "r", 100),
        ];
        let b = vec![
            row("f.o", "p", 90),
            row("f.o", "q", 150),
            row("f.o", "r", 100),
        ];
        let mut j = join(a, b);
        sort_joined(&mut j, &parse_spec_list("|insns_diff|").unwrap());
        let order: Vec<&str> = j.iter().map(|r| r.prog.as_str()).collect();
        assert_eq!(order, ["q", "p", "r"]);
    }
}
