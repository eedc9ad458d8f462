//! One program's result: the stat values veristat keeps (all integers,
//! verdict 1/0 and types as their UAPI numbers), plus what veristat has no
//! column for: why a program was refused, and its log.

use super::fields::{Stat, STAT_COUNT};
use bpfvet_isa::uapi::{AttachType, ProgType};

/// The verdict of a program that was not verified, and the prefix of its
/// reason.
pub const REFUSED: &str = "refused";

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub file: String,
    pub prog: String,
    /// Indexed by `Stat::index`; None = not measured. File/Prog unused.
    pub values: [Option<i64>; STAT_COUNT],
    /// For programs the kernel refused without verifying, or that could not
    /// be run: the named reason.
    pub reason: Option<String>,
    /// Why the verifier rejected the program.
    pub rejection: Option<Rejection>,
    pub log: Option<String>,
}

/// A verifier's rejection: its error line and, where known, the
/// instruction and the C source line (from line_info) it concerns.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rejection {
    pub error: String,
    /// The verifier's line before the error naming what failed (which
    /// access, which register and its state).
    pub detail: Option<String>,
    pub insn: Option<usize>,
    /// `file.c:42: <source text>`.
    pub source: Option<String>,
}

impl Rejection {
    /// `insn 12: <error>` and, on indented lines, the detail and the
    /// source line.
    pub fn explain(&self) -> String {
        let mut s = match self.insn {
            Some(i) => format!("insn {i}: {}", self.error),
            None => self.error.clone(),
        };
        if let Some(d) = &self.detail {
            s.push_str("\n    ");
            s.push_str(d);
        }
        if let Some(src) = &self.source {
            s.push_str("\n    ");
            s.push_str(src);
        }
        s
    }
}

impl Row {
    pub fn new(file: &str, prog: &str) -> Row {
        Row {
            file: file.to_string(),
            prog: prog.to_string(),
            ..Default::default()
        }
    }

    pub fn get(&self, stat: Stat) -> Option<i64> {
        self.values[stat.index()]
    }

    pub fn set(&mut self, stat: Stat, v: impl Into<Option<i64>>) {
        self.values[stat.index()] = v.into();
    }

    pub fn succeeded(&self) -> bool {
        self.get(Stat::Verdict) == Some(1)
    }

    /// Not verified at all: the loader, bpfvet (a feature it does not
    /// model) or the host (e.g. lockdown) declined it. Its verdict value
    /// is 0, so that it never counts as a pass.
    pub fn refused(&self) -> bool {
        self.reason
            .as_deref()
            .is_some_and(|r| r.starts_with(REFUSED))
    }

    /// The value as veristat's CSV has it (a refusal is a failure).
    pub fn csv_text(&self, stat: Stat, missing: &str) -> String {
        match (stat, self.get(stat)) {
            (Stat::Verdict, Some(v)) => value_text(stat, v),
            _ => self.text(stat, missing),
        }
    }

    /// The value as veristat prints it; unmeasured numbers as `missing`.
    pub fn text(&self, stat: Stat, missing: &str) -> String {
        match stat {
            Stat::File => self.file.clone(),
            Stat::Prog => self.prog.clone(),
            Stat::Verdict if self.refused() => REFUSED.to_string(),
            _ => match self.get(stat) {
                Some(v) => value_text(stat, v),
                None => missing.to_string(),
            },
        }
    }
}

/// A stat value as text: verdict words, type names, or the number.
pub fn value_text(stat: Stat, v: i64) -> String {
    let as_u32 = u32::try_from(v).ok();
    match stat {
        Stat::Verdict => if v != 0 { "success" } else { "failure" }.to_string(),
        Stat::ProgType => as_u32
            .and_then(|n| ProgType(n).name())
            .map_or_else(|| v.to_string(), str::to_string),
        Stat::AttachType => as_u32
            .and_then(|n| AttachType(n).name())
            .map_or_else(|| v.to_string(), str::to_string),
        _ => v.to_string(),
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ValueError {
    #[error("unrecognized verification verdict '{0}'")]
    Verdict(String),
    #[error("unrecognized {stat} '{text}'")]
    Name { stat: Stat, text: String },
    #[error("failed to parse '{0}' as integer")]
    Integer(String),
}

/// Parses a CSV cell back into a stat value (the inverse of `value_text`).
pub fn parse_value(stat: Stat, text: &str) -> Result<i64, ValueError> {
    let name_err = || ValueError::Name {
        stat,
        text: text.to_string(),
    };
    match stat {
        Stat::Verdict => match text {
            "success" => Ok(1),
            "failure" | REFUSED => Ok(0),
            _ => Err(ValueError::Verdict(text.to_string())),
        },
        Stat::ProgType => ProgType::from_name(text)
            .map(|t| t.0 as i64)
            .or_else(|| text.parse().ok())
            .ok_or_else(name_err),
        Stat::AttachType => AttachType::from_name(text)
            .map(|t| t.0 as i64)
            .or_else(|| text.parse().ok())
            .ok_or_else(name_err),
        _ => text
            .trim()
            .parse()
            .map_err(|_| ValueError::Integer(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_text() {
        for (stat, v) in [
            (Stat::Verdict, 1),
            (Stat::Verdict, 0),
            (Stat::ProgType, 6),
            (Stat::AttachType, 0),
            (Stat::TotalInsns, 123_456),
        ] {
            assert_eq!(parse_value(stat, &value_text(stat, v)), Ok(v), "{stat}");
        }
        assert_eq!(value_text(Stat::ProgType, 6), "xdp");
        assert_eq!(value_text(Stat::AttachType, 0), "cgroup_inet_ingress");
        assert!(parse_value(Stat::Verdict, "ok").is_err());
        assert!(parse_value(Stat::TotalInsns, "12x").is_err());
    }
}
