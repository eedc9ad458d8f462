//! `-f` filters as veristat reads them: `<glob>` (file or program name),
//! `<file-glob>/<prog-glob>`, stat predicates `<stat><op><value>` with ops
//! `== != <> <= < >= > =` and values that are integers or
//! success/failure/match/mismatch words; `!` negates, `@path` reads one
//! filter per line (`#` comments).

use super::compare::Joined;
use super::fields::{parse_stat_ref, Stat, Variant};
use super::row::Row;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filter {
    Name {
        /// Matches either the file or the program name.
        any: Option<String>,
        file: Option<String>,
        prog: Option<String>,
    },
    Stat {
        stat: Stat,
        variant: Variant,
        op: Op,
        value: i64,
        abs: bool,
    },
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FilterError {
    #[error("unrecognized stat name in filter '{0}'")]
    UnknownStat(String),
    #[error("non-integer stat in filter '{0}'")]
    NotNumeric(String),
    #[error("invalid integer value in filter '{0}'")]
    BadValue(String),
    #[error("invalid filter '{0}'")]
    Empty(String),
    #[error("cannot read filters from '{path}': {err}")]
    File { path: String, err: String },
}

/// Operators in the order that keeps `<` from matching inside `<>`.
const OPERATORS: [(&str, Op); 8] = [
    ("==", Op::Eq),
    ("!=", Op::Ne),
    ("<>", Op::Ne),
    ("<=", Op::Le),
    ("<", Op::Lt),
    (">=", Op::Ge),
    (">", Op::Gt),
    ("=", Op::Eq),
];

pub fn parse_filter(text: &str) -> Result<Filter, FilterError> {
    for (sym, op) in OPERATORS {
        let Some(pos) = text.find(sym) else { continue };
        let (stat, variant, abs) = parse_stat_ref(&text[..pos])
            .ok_or_else(|| FilterError::UnknownStat(text.to_string()))?;
        if stat.is_key() {
            return Err(FilterError::NotNumeric(text.to_string()));
        }
        let rhs = &text[pos + sym.len()..];
        let value = match rhs.to_ascii_lowercase().as_str() {
            "true" | "t" | "success" | "succ" | "s" | "match" | "m" => 1,
            "false" | "f" | "failure" | "fail" | "mismatch" | "mis" => 0,
            _ => match stat {
                Stat::ProgType | Stat::AttachType => super::row::parse_value(stat, rhs)
                    .map_err(|_| FilterError::BadValue(text.to_string()))?,
                _ => rhs
                    .parse()
                    .map_err(|_| FilterError::BadValue(text.to_string()))?,
            },
        };
        return Ok(Filter::Stat {
            stat,
            variant,
            op,
            value,
            abs,
        });
    }
    let glob = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let f = match text.split_once('/') {
        None => Filter::Name {
            any: glob(text),
            file: None,
            prog: None,
        },
        Some((file, prog)) => Filter::Name {
            any: None,
            file: glob(file),
            prog: glob(prog),
        },
    };
    match &f {
        Filter::Name {
            any: None,
            file: None,
            prog: None,
        } => Err(FilterError::Empty(text.to_string())),
        _ => Ok(f),
    }
}

/// `*` matches any run of characters; everything else matches itself.
pub fn glob_matches(text: &str, pat: &str) -> bool {
    let (t, p) = (text.as_bytes(), pat.as_bytes());
    // Iterative wildcard matching with one backtrack point.
    let (mut ti, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            ti += 1;
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[derive(Clone, Debug, Default)]
pub struct Filters {
    pub allow: Vec<Filter>,
    pub deny: Vec<Filter>,
}

impl Filters {
    /// Adds one `-f` argument (`!expr`, `@file` or `expr`).
    pub fn add(&mut self, arg: &str) -> Result<(), FilterError> {
        if let Some(path) = arg.strip_prefix('@') {
            let text = std::fs::read_to_string(path).map_err(|e| FilterError::File {
                path: path.to_string(),
                err: e.to_string(),
            })?;
            for line in text.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                self.add_one(line)?;
            }
            return Ok(());
        }
        self.add_one(arg)
    }

    fn add_one(&mut self, expr: &str) -> Result<(), FilterError> {
        match expr.strip_prefix('!') {
            Some(rest) => self.deny.push(parse_filter(rest)?),
            None => self.allow.push(parse_filter(expr)?),
        }
        Ok(())
    }

    /// Name filters: `prog` None asks whether the file may hold matches.
    pub fn allows_name(&self, file: &str, prog: Option<&str>) -> bool {
        let matches = |f: &Filter, may: bool| match f {
            Filter::Name {
                any,
                file: fg,
                prog: pg,
            } => {
                if let Some(g) = any {
                    return glob_matches(file, g) || prog.map_or(may, |p| glob_matches(p, g));
                }
                let file_ok = fg.as_deref().is_none_or(|g| glob_matches(file, g));
                let prog_ok = match (pg, prog) {
                    (None, _) => true,
                    (Some(g), Some(p)) => glob_matches(p, g),
                    (Some(_), None) => may,
                };
                file_ok && prog_ok
            }
            Filter::Stat { .. } => false,
        };
        // A deny filter on a program glob cannot exclude a whole file.
        if self.deny.iter().any(|f| matches(f, false)) {
            return false;
        }
        let names: Vec<&Filter> = self
            .allow
            .iter()
            .filter(|f| matches!(f, Filter::Name { .. }))
            .collect();
        names.is_empty() || names.iter().any(|f| matches(f, true))
    }

    fn allows_by_stats(&self, value: impl Fn(Stat, Variant) -> f64) -> bool {
        let hit = |f: &Filter| match f {
            Filter::Stat {
                stat,
                variant,
                op,
                value: want,
                abs,
            } => {
                let mut v = value(*stat, *variant);
                if *abs {
                    v = v.abs();
                }
                let w = *want as f64;
                const EPS: f64 = 1e-9;
                match op {
                    Op::Eq => (v - w).abs() < EPS,
                    Op::Ne => (v - w).abs() >= EPS,
                    Op::Lt => v < w - EPS,
                    Op::Le => v <= w + EPS,
                    Op::Gt => v > w + EPS,
                    Op::Ge => v >= w - EPS,
                }
            }
            Filter::Name { .. } => false,
        };
        if self.deny.iter().any(hit) {
            return false;
        }
        let stat_allows: Vec<&Filter> = self
            .allow
            .iter()
            .filter(|f| matches!(f, Filter::Stat { .. }))
            .collect();
        stat_allows.is_empty() || stat_allows.into_iter().any(hit)
    }

    /// Stat predicates on a single result (variants are ignored).
    pub fn allows_row(&self, row: &Row) -> bool {
        self.allows_by_stats(|s, _| row.get(s).unwrap_or(0) as f64)
    }

    /// Stat predicates on a compared pair.
    pub fn allows_joined(&self, j: &Joined) -> bool {
        self.allows_by_stats(|s, v| j.number(s, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_matches("xdp_prog", "xdp*"));
        assert!(glob_matches("xdp_prog", "*prog"));
        assert!(glob_matches("xdp_prog", "*_*"));
        assert!(glob_matches("abc", "abc"));
        assert!(glob_matches("", "*"));
        assert!(!glob_matches("abc", "ab"));
        assert!(!glob_matches("xdp_prog", "tc*"));
        assert!(glob_matches("aaab", "*a*b"));
    }

    #[test]
    fn parses_stat_predicates() {
        assert_eq!(
            parse_filter("insns>100000"),
            Ok(Filter::Stat {
                stat: Stat::TotalInsns,
                variant: Variant::B,
                op: Op::Gt,
                value: 100000,
                abs: false
            })
        );
        let Ok(Filter::Stat { op, value, .. }) = parse_filter("verdict=failure") else {
            panic!()
        };
        assert_eq!((op, value), (Op::Eq, 0));
        let Ok(Filter::Stat {
            op, variant, abs, ..
        }) = parse_filter("|insns_pct|<>5")
        else {
            panic!()
        };
        assert_eq!((op, variant, abs), (Op::Ne, Variant::Pct, true));
        let Ok(Filter::Stat { op, .. }) = parse_filter("states<=3") else {
            panic!()
        };
        assert_eq!(op, Op::Le);
        assert!(matches!(
            parse_filter("bogus>1"),
            Err(FilterError::UnknownStat(_))
        ));
        assert!(matches!(
            parse_filter("insns>lots"),
            Err(FilterError::BadValue(_))
        ));
        assert!(matches!(
            parse_filter("file=3"),
            Err(FilterError::NotNumeric(_))
        ));
        assert!(matches!(parse_filter("/"), Err(FilterError::Empty(_))));
    }

    #[test]
    fn name_filters_allow_and_deny() {
        let mut f = Filters::default();
        f.add("cilium*/*handle*").unwrap();
        f.add("!*/handle_ipv6").unwrap();
        assert!(f.allows_name("cilium_lb.o", None));
        assert!(!f.allows_name("ovs.o", None));
        assert!(f.allows_name("cilium_lb.o", Some("handle_ipv4")));
        assert!(!f.allows_name("cilium_lb.o", Some("handle_ipv6")));
        assert!(!f.allows_name("cilium_lb.o", Some("other")));

        let mut any = Filters::default();
        any.add("xdp*").unwrap();
        assert!(any.allows_name("xdp_fw.o", Some("anything")));
        assert!(any.allows_name("tc.o", Some("xdp_main")));
        assert!(!any.allows_name("tc.o", Some("tc_main")));
    }

    #[test]
    fn stat_filters_on_rows() {
        let mut r = Row::new("a.o", "p");
        r.set(Stat::TotalInsns, 150_000);
        r.set(Stat::Verdict, 1);
        let mut f = Filters::default();
        f.add("insns>100000").unwrap();
        assert!(f.allows_row(&r));
        r.set(Stat::TotalInsns, 10);
        assert!(!f.allows_row(&r));

        let mut deny = Filters::default();
        deny.add("!verdict=success").unwrap();
        assert!(!deny.allows_row(&r));
        r.set(Stat::Verdict, 0);
        assert!(deny.allows_row(&r));
    }

    #[test]
    fn filter_file() {
        let dir = std::env::temp_dir().join(format!("bpfvet-filter-{}", std::process::id()));
        std::fs::write(&dir, "# comment\n\nxdp*\n!insns<10\n").unwrap();
        let mut f = Filters::default();
        f.add(&format!("@{}", dir.display())).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(f.allow.len(), 1);
        assert_eq!(f.deny.len(), 1);
        assert!(Filters::default().add("@/nonexistent/file").is_err());
    }
}
