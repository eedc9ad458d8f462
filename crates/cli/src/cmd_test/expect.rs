//! Matching expected messages against a verifier log as test_loader does:
//! each pattern is found after the previous match; a pattern is verbatim
//! text with POSIX extended regular expressions between `{{` and `}}`.

use regex::Regex;

pub enum Pattern {
    Text(String),
    Regex(Regex),
}

impl Pattern {
    pub fn compile(pattern: &str) -> Result<Pattern, String> {
        if !pattern.contains("{{") {
            return Ok(Pattern::Text(pattern.to_string()));
        }
        let mut re = String::new();
        let mut rest = pattern;
        while let Some(start) = rest.find("{{") {
            re.push_str(&regex::escape(&rest[..start]));
            let after = &rest[start + 2..];
            let end = after.find("}}").ok_or_else(|| {
                format!("pattern '{pattern}' opens '{{{{' without closing '}}}}'")
            })?;
            re.push_str(&after[..end]);
            rest = &after[end + 2..];
        }
        re.push_str(&regex::escape(rest));
        // REG_NEWLINE: `.` and bracket expressions do not match a newline,
        // `^`/`$` match at line boundaries.
        Regex::new(&format!("(?m){re}"))
            .map(Pattern::Regex)
            .map_err(|e| format!("pattern '{pattern}': {e}"))
    }

    /// End of the first match in `log`, if any.
    fn find_end(&self, log: &str) -> Option<usize> {
        match self {
            Pattern::Text(t) => log.find(t.as_str()).map(|i| i + t.len()),
            Pattern::Regex(r) => r.find(log).map(|m| m.end()),
        }
    }
}

/// The first pattern of `patterns` not found, in order, in `log`.
pub fn first_missing<'p>(log: &str, patterns: &'p [String]) -> Result<Option<&'p str>, String> {
    let mut rest = log;
    for p in patterns {
        match Pattern::compile(p)?.find_end(rest) {
            Some(end) => rest = &rest[end..],
            None => return Ok(Some(p)),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pats(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn messages_match_in_order() {
        let log = "0: (b7) r0 = 0\nR1 invalid mem access 'scalar'\nprocessed 2 insns\n";
        assert_eq!(
            first_missing(log, &pats(&["r0 = 0", "invalid mem"])),
            Ok(None)
        );
        assert_eq!(
            first_missing(log, &pats(&["invalid mem", "r0 = 0"])),
            Ok(Some("r0 = 0"))
        );
    }

    #[test]
    fn regex_parts_between_braces_and_literal_rest() {
        let log = "R1 min value is outside (off=12)\n";
        assert_eq!(first_missing(log, &pats(&["off={{[0-9]+}})"])), Ok(None));
        assert_eq!(
            first_missing(log, &pats(&["off={{[a-z]+}})"])),
            Ok(Some("off={{[a-z]+}})"))
        );
        // Outside braces, regex metacharacters are literal.
        assert_eq!(
            first_missing(log, &pats(&["(off=1.)"])),
            Ok(Some("(off=1.)"))
        );
        assert!(first_missing(log, &pats(&["{{[0-9"])).is_err());
    }

    #[test]
    fn dot_does_not_cross_lines() {
        let log = "a\nb\n";
        assert_eq!(first_missing(log, &pats(&["{{a.b}}"])), Ok(Some("{{a.b}}")));
    }
}
