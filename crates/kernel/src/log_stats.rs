//! The statistics the verifier prints at the end of its log with the stats
//! log level (4): "verification time N usec", "stack depth A+B+...", and
//! "processed N insns (limit L) max_states_per_insn M total_states T
//! peak_states P mark_read R".

/// Figures read from a verifier log. A field is None when its line is absent
/// (e.g. the kernel refused the program before the verifier ran).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogStats {
    pub processed_insns: Option<u64>,
    pub insn_limit: Option<u64>,
    pub max_states_per_insn: Option<u64>,
    pub total_states: Option<u64>,
    pub peak_states: Option<u64>,
    pub mark_read: Option<u64>,
    pub verification_time_usec: Option<u64>,
    /// Stack depth of each subprogram, entry first.
    pub stack_depths: Option<Vec<u64>>,
}

impl LogStats {
    /// True when the log carries the "processed ... insns" line, i.e. the
    /// program reached the verifier proper.
    pub fn has_processed_line(&self) -> bool {
        self.processed_insns.is_some()
    }

    /// Total stack depth over all subprograms, as veristat reports it.
    pub fn stack_depth(&self) -> Option<u64> {
        self.stack_depths.as_ref().map(|d| d.iter().sum())
    }
}

/// Parses the stats lines. The last occurrence of each line wins, so a log
/// that was rotated (only its tail kept) still yields the figures.
pub fn parse_log_stats(log: &str) -> LogStats {
    let mut s = LogStats::default();
    for line in log.lines() {
        let line = line.trim_end();
        if let Some(rest) = line.strip_prefix("verification time ") {
            if let Some(n) = rest.strip_suffix(" usec").and_then(|n| n.parse().ok()) {
                s.verification_time_usec = Some(n);
            }
        } else if let Some(rest) = line.strip_prefix("stack depth ") {
            let depths: Option<Vec<u64>> = rest.split('+').map(|d| d.parse().ok()).collect();
            if let Some(d) = depths {
                s.stack_depths = Some(d);
            }
        } else if line.starts_with("processed ") {
            parse_processed_line(line, &mut s);
        }
    }
    s
}

/// Reads the "processed" line by keyword, so fields added or dropped by a
/// kernel version do not shift the others.
fn parse_processed_line(line: &str, s: &mut LogStats) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut processed = None;
    for (i, w) in words.iter().enumerate() {
        let next = words
            .get(i + 1)
            .map(|n| n.trim_matches(|c| c == '(' || c == ')'));
        let num = next.and_then(|n| n.parse::<u64>().ok());
        match *w {
            "processed" => processed = num,
            "(limit" => {
                s.insn_limit = words
                    .get(i + 1)
                    .and_then(|n| n.trim_end_matches(')').parse().ok())
            }
            "max_states_per_insn" => s.max_states_per_insn = num,
            "total_states" => s.total_states = num,
            "peak_states" => s.peak_states = num,
            "mark_read" => s.mark_read = num,
            _ => {}
        }
    }
    if processed.is_some() {
        s.processed_insns = processed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_stats_line() {
        let log = "func#0 @0\n0: R1=ctx() R10=fp0\nverification time 42 usec\nstack depth 8+0+16\n\
                   processed 14456 insns (limit 1000000) max_states_per_insn 4 total_states 1247 peak_states 1247 mark_read 3\n";
        let s = parse_log_stats(log);
        assert_eq!(s.processed_insns, Some(14456));
        assert_eq!(s.insn_limit, Some(1_000_000));
        assert_eq!(s.max_states_per_insn, Some(4));
        assert_eq!(s.total_states, Some(1247));
        assert_eq!(s.peak_states, Some(1247));
        assert_eq!(s.mark_read, Some(3));
        assert_eq!(s.verification_time_usec, Some(42));
        assert_eq!(s.stack_depths, Some(vec![8, 0, 16]));
        assert_eq!(s.stack_depth(), Some(24));
        assert!(s.has_processed_line());
    }

    #[test]
    fn empty_or_foreign_log_has_no_stats() {
        assert_eq!(parse_log_stats(""), LogStats::default());
        let s = parse_log_stats("processed foo insns\nstack depth x+1\nverification time usec\n");
        assert!(!s.has_processed_line());
        assert_eq!(s.stack_depths, None);
        assert_eq!(s.verification_time_usec, None);
    }

    #[test]
    fn line_without_mark_read_still_parses() {
        let s = parse_log_stats(
            "processed 7 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0\n",
        );
        assert_eq!(s.processed_insns, Some(7));
        assert_eq!(s.peak_states, Some(0));
        assert_eq!(s.mark_read, None);
    }
}
