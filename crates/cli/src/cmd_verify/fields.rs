//! veristat's statistics: their column headers, names and aliases, default
//! sort direction and alignment, and the `-e`/`-s` spec syntax
//! (`name[_a|_b|_diff|_pct][^|v]`, `|name|` for absolute values).

use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub enum Stat {
    File,
    Prog,
    Verdict,
    Duration,
    TotalInsns,
    TotalStates,
    PeakStates,
    MaxStatesPerInsn,
    MarkRead,
    ProgSize,
    JitedSize,
    StackDepth,
    ProgType,
    AttachType,
    MemPeak,
}

pub const STAT_COUNT: usize = 15;

pub struct StatDef {
    /// Column header in tables.
    pub header: &'static str,
    /// The first name is the CSV column name; the rest are aliases.
    pub names: &'static [&'static str],
    pub asc_by_default: bool,
    pub left_aligned: bool,
}

impl Stat {
    pub const ALL: [Stat; STAT_COUNT] = [
        Stat::File,
        Stat::Prog,
        Stat::Verdict,
        Stat::Duration,
        Stat::TotalInsns,
        Stat::TotalStates,
        Stat::PeakStates,
        Stat::MaxStatesPerInsn,
        Stat::MarkRead,
        Stat::ProgSize,
        Stat::JitedSize,
        Stat::StackDepth,
        Stat::ProgType,
        Stat::AttachType,
        Stat::MemPeak,
    ];

    pub fn def(self) -> StatDef {
        let d = |header, names, asc_by_default, left_aligned| StatDef {
            header,
            names,
            asc_by_default,
            left_aligned,
        };
        match self {
            Stat::File => d("File", &["file_name", "filename", "file"], true, true),
            Stat::Prog => d("Program", &["prog_name", "progname", "prog"], true, true),
            // Ascending puts failures (0) before successes (1).
            Stat::Verdict => d("Verdict", &["verdict"], true, true),
            Stat::Duration => d("Duration (us)", &["duration", "dur"], false, false),
            Stat::TotalInsns => d("Insns", &["total_insns", "insns"], false, false),
            Stat::TotalStates => d("States", &["total_states", "states"], false, false),
            Stat::PeakStates => d("Peak states", &["peak_states"], false, false),
            Stat::MaxStatesPerInsn => d(
                "Max states per insn",
                &["max_states_per_insn"],
                false,
                false,
            ),
            Stat::MarkRead => d(
                "Max mark read length",
                &["max_mark_read_len", "mark_read"],
                false,
                false,
            ),
            Stat::ProgSize => d("Program size", &["prog_size"], false, false),
            Stat::JitedSize => d("Jited size", &["prog_size_jited"], false, false),
            Stat::StackDepth => d("Stack depth", &["stack_depth", "stack"], false, false),
            Stat::ProgType => d("Program type", &["prog_type"], false, false),
            Stat::AttachType => d("Attach type", &["attach_type"], false, false),
            Stat::MemPeak => d("Peak memory (MiB)", &["mem_peak"], false, false),
        }
    }

    pub fn csv_name(self) -> &'static str {
        self.def().names[0]
    }

    /// File and program name identify a row; they have no A/B/DIFF columns.
    pub fn is_key(self) -> bool {
        matches!(self, Stat::File | Stat::Prog)
    }

    /// Stats printed as words (verdict, type names) and compared as
    /// MATCH/MISMATCH rather than by difference.
    pub fn is_text(self) -> bool {
        matches!(
            self,
            Stat::File | Stat::Prog | Stat::Verdict | Stat::ProgType | Stat::AttachType
        )
    }

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn from_name(name: &str) -> Option<Stat> {
        Stat::ALL
            .into_iter()
            .find(|s| s.def().names.contains(&name))
    }
}

impl fmt::Display for Stat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.csv_name())
    }
}

/// Which of the A, B, DIFF and percent values of a compared stat is meant.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Variant {
    A,
    B,
    Diff,
    Pct,
}

/// One entry of an `-e` or `-s` list.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct StatSpec {
    pub stat: Stat,
    /// Without a suffix, B (the comparison side) as veristat assumes.
    pub variant: Variant,
    pub asc: bool,
    pub abs: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    #[error("unrecognized stat name '{0}'")]
    UnknownStat(String),
}

/// Resolves `name`, `name_a|_b|_diff|_pct` and `|name...|`.
pub fn parse_stat_ref(text: &str) -> Option<(Stat, Variant, bool)> {
    let (name, abs) = match text.strip_prefix('|').and_then(|t| t.strip_suffix('|')) {
        Some(inner) if text.len() > 2 => (inner, true),
        _ => (text, false),
    };
    if let Some(stat) = Stat::from_name(name) {
        return Some((stat, Variant::B, abs));
    }
    let suffixes = [
        ("_a", Variant::A),
        ("_b", Variant::B),
        ("_diff", Variant::Diff),
        ("_pct", Variant::Pct),
    ];
    suffixes.into_iter().find_map(|(sfx, var)| {
        let stat = Stat::from_name(name.strip_suffix(sfx)?)?;
        Some((stat, var, abs))
    })
}

/// Parses a comma-separated spec; a trailing `^` asks ascending order and
/// one of `v V . ! _` descending.
pub fn parse_spec_list(list: &str) -> Result<Vec<StatSpec>, SpecError> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (name, order) = match item.chars().last() {
                Some('^') if item.len() > 1 => (&item[..item.len() - 1], Some(true)),
                Some('v' | 'V' | '.' | '!' | '_') if item.len() > 1 => {
                    // "insns_diff" ends in a letter that is part of the name;
                    // only strip when the rest still names a stat.
                    let stripped = &item[..item.len() - 1];
                    if parse_stat_ref(item).is_some() {
                        (item, None)
                    } else {
                        (stripped, Some(false))
                    }
                }
                _ => (item, None),
            };
            let (stat, variant, abs) =
                parse_stat_ref(name).ok_or_else(|| SpecError::UnknownStat(item.to_string()))?;
            Ok(StatSpec {
                stat,
                variant,
                asc: order.unwrap_or(stat.def().asc_by_default),
                abs,
            })
        })
        .collect()
}

/// veristat's table columns when no `-e` is given.
pub fn default_table_stats() -> Vec<Stat> {
    vec![
        Stat::File,
        Stat::Prog,
        Stat::Verdict,
        Stat::Duration,
        Stat::TotalInsns,
        Stat::TotalStates,
        Stat::PeakStates,
    ]
}

/// veristat's CSV columns when no `-e` is given: every stat, in its order
/// (which `veristat -C` requires to be the same in both files).
pub fn default_csv_stats() -> Vec<Stat> {
    vec![
        Stat::File,
        Stat::Prog,
        Stat::Verdict,
        Stat::Duration,
        Stat::TotalInsns,
        Stat::TotalStates,
        Stat::PeakStates,
        Stat::MaxStatesPerInsn,
        Stat::MarkRead,
        Stat::ProgSize,
        Stat::JitedSize,
        Stat::ProgType,
        Stat::AttachType,
        Stat::StackDepth,
        Stat::MemPeak,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_resolve() {
        assert_eq!(Stat::from_name("insns"), Some(Stat::TotalInsns));
        assert_eq!(Stat::from_name("total_insns"), Some(Stat::TotalInsns));
        assert_eq!(Stat::from_name("mark_read"), Some(Stat::MarkRead));
        assert_eq!(Stat::from_name("max_mark_read_len"), Some(Stat::MarkRead));
        assert_eq!(Stat::from_name("stack"), Some(Stat::StackDepth));
        assert_eq!(Stat::from_name("file"), Some(Stat::File));
        assert_eq!(Stat::from_name("nonsense"), None);
        assert_eq!(Stat::MarkRead.csv_name(), "max_mark_read_len");
    }

    #[test]
    fn variants_and_abs() {
        assert_eq!(
            parse_stat_ref("insns_diff"),
            Some((Stat::TotalInsns, Variant::Diff, false))
        );
        assert_eq!(
            parse_stat_ref("|states_pct|"),
            Some((Stat::TotalStates, Variant::Pct, true))
        );
        assert_eq!(
            parse_stat_ref("verdict_a"),
            Some((Stat::Verdict, Variant::A, false))
        );
        assert_eq!(
            parse_stat_ref("insns"),
            Some((Stat::TotalInsns, Variant::B, false))
        );
        assert_eq!(parse_stat_ref("insns_c"), None);
    }

    #[test]
    fn sort_order_suffixes() {
        let s = parse_spec_list("insns^,states_diffv,file").unwrap();
        assert_eq!((s[0].stat, s[0].asc), (Stat::TotalInsns, true));
        assert_eq!(
            (s[1].stat, s[1].variant, s[1].asc),
            (Stat::TotalStates, Variant::Diff, false)
        );
        assert_eq!((s[2].stat, s[2].asc), (Stat::File, true));
        // Numbers sort descending by default.
        assert!(!parse_spec_list("duration").unwrap()[0].asc);
        assert_eq!(
            parse_spec_list("insns,bogus"),
            Err(SpecError::UnknownStat("bogus".into()))
        );
    }
}
