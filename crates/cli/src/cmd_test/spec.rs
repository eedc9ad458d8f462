//! A test's expectations, read the way the kernel selftests' test_loader
//! reads them: BTF decl tags `comment:test_*` on the program's FUNC (the
//! `__success`, `__failure`, `__msg`, `__flag`, ... macros of bpf_misc.h).

use bpfvet_isa::Privileges;
use bpfvet_object::btf::{Btf, Kind};

/// Expectations of one privilege mode.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expect {
    pub failure: bool,
    /// Patterns that must appear in the verifier log, in this order.
    pub msgs: Vec<String>,
    /// BPF_PROG_TEST_RUN's retval after a successful load, when given.
    pub retval: Option<i32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TestSpec {
    /// `__description`, else the program name.
    pub name: String,
    pub privileged: Option<Expect>,
    /// Unprivileged expectations (`__*_unpriv`), checked by `bpfvet test
    /// --privileges unprivileged|both`.
    pub unprivileged: Option<Expect>,
    /// The capabilities of the unprivileged run: none, or those
    /// `__caps_unpriv` gives back (Err: a set bpfvet has no level for).
    pub unpriv_level: Result<Privileges, String>,
    /// `__xlated_unpriv` / `__jited_unpriv`, or the privileged ones.
    pub unchecked_unpriv: Vec<&'static str>,
    /// Loaded along with the tests of the object, not a test itself.
    pub auxiliary: bool,
    pub log_level: u32,
    /// `__flag`s: set bits and cleared bits of prog_flags.
    pub flags_set: u32,
    pub flags_cleared: u32,
    /// Architectures named by `__arch_*`; empty means every one.
    pub arches: Vec<String>,
    /// `__xlated` / `__jited` patterns: checks of the rewritten or
    /// compiled program, which bpfvet does not produce.
    pub unchecked: Vec<&'static str>,
}

/// test_loader's named retvals.
const POINTER_VALUE: i32 = 0xcafe4a1;
const TEST_DATA_LEN: i32 = 64;

const TAG: &str = "comment:test_";

/// Whether any FUNC of the object carries a test annotation: such an
/// object is a test_loader object, where every program is a test.
pub fn has_annotations(btf: &Btf) -> bool {
    (1..btf.len()).any(|id| {
        btf.type_by_id(id).is_some_and(|t| {
            t.kind == Kind::DeclTag
                && t.decl_tag_component() == Some(-1)
                && btf.name(t).starts_with(TAG)
        })
    })
}

/// The spec of program `prog` (its FUNC's decl tags).
pub fn parse(btf: &Btf, prog: &str) -> Result<TestSpec, String> {
    let func = btf
        .find_by_name_kind(prog, Kind::Func)
        .ok_or_else(|| format!("no FUNC '{prog}' in the object's BTF"))?;
    let mut spec = TestSpec {
        name: prog.to_string(),
        privileged: None,
        unprivileged: None,
        unpriv_level: Ok(Privileges::Unprivileged),
        unchecked_unpriv: Vec::new(),
        auxiliary: false,
        log_level: 0,
        flags_set: 0,
        flags_cleared: 0,
        arches: Vec::new(),
        unchecked: Vec::new(),
    };
    let mut description = None;
    let mut priv_ = Expect::default();
    let mut unpriv = Expect::default();
    let (mut has_priv, mut has_unpriv) = (false, false);
    let (mut unpriv_result, mut unpriv_retval) = (false, false);
    for tag in btf.decl_tags_of(func) {
        let Some(tag) = tag.strip_prefix(TAG) else {
            continue;
        };
        let (key, value) = tag.split_once('=').unwrap_or((tag, ""));
        match key {
            "description" => description = Some(value.to_string()),
            "expect_failure" | "expect_success" => {
                priv_.failure = key == "expect_failure";
                has_priv = true;
            }
            "expect_failure_unpriv" | "expect_success_unpriv" => {
                unpriv.failure = key == "expect_failure_unpriv";
                has_unpriv = true;
                unpriv_result = true;
            }
            "auxiliary" => {
                spec.auxiliary = true;
                has_priv = true;
            }
            "auxiliary_unpriv" => {
                spec.auxiliary = true;
                has_unpriv = true;
            }
            // `<prefix>=<counter>=<text>`: the counter only keeps equal
            // messages apart.
            "expect_msg" => {
                priv_.msgs.push(after_counter(value).to_string());
                has_priv = true;
            }
            "expect_msg_unpriv" => {
                unpriv.msgs.push(after_counter(value).to_string());
                has_unpriv = true;
            }
            "expect_xlated" | "jited" => {
                spec.unchecked.push(if key == "jited" {
                    "__jited"
                } else {
                    "__xlated"
                });
                has_priv = true;
            }
            "expect_xlated_unpriv" | "jited_unpriv" => {
                let what = if key == "jited_unpriv" {
                    "__jited_unpriv"
                } else {
                    "__xlated_unpriv"
                };
                if !spec.unchecked_unpriv.contains(&what) {
                    spec.unchecked_unpriv.push(what);
                }
                has_unpriv = true;
            }
            "caps_unpriv" => {
                // Capability numbers joined by '|' (bpf_misc.h expands the
                // CAP_* names).
                let bpf = bpfvet_isa::privileges::cap::BPF.to_string();
                spec.unpriv_level = if value.trim() == bpf {
                    Ok(Privileges::Bpf)
                } else {
                    Err(format!("__caps_unpriv({value}) is no level bpfvet models"))
                };
                has_unpriv = true;
            }
            "retval" => {
                priv_.retval = Some(retval(value)?);
                has_priv = true;
            }
            "retval_unpriv" => {
                unpriv.retval = Some(retval(value)?);
                has_unpriv = true;
                unpriv_retval = true;
            }
            "log_level" => {
                spec.log_level = int(value).ok_or(format!("bad log level '{value}'"))? as u32
            }
            "prog_flags" => {
                let (clear, name) = match value.strip_prefix('!') {
                    Some(n) => (true, n),
                    None => (false, value),
                };
                let bits = bpfvet_isa::uapi::parse_prog_flags(name)?;
                if clear {
                    spec.flags_cleared |= bits;
                } else {
                    spec.flags_set |= bits;
                }
            }
            "arch" => spec.arches.push(value.to_string()),
            _ => {}
        }
    }
    if !has_priv && !has_unpriv {
        has_priv = true;
    }
    if let Some(d) = description {
        spec.name = d;
    }
    if has_unpriv {
        // An unprivileged run expects what the privileged one does unless
        // told otherwise.
        if !unpriv_result {
            unpriv.failure = priv_.failure;
        }
        if !unpriv_retval {
            unpriv.retval = priv_.retval;
        }
        if unpriv.msgs.is_empty() {
            unpriv.msgs = priv_.msgs.clone();
        }
        if spec.unchecked_unpriv.is_empty() {
            spec.unchecked_unpriv = spec.unchecked.clone();
        }
        spec.unprivileged = Some(unpriv);
    }
    if has_priv {
        spec.privileged = Some(priv_);
    }
    Ok(spec)
}

fn after_counter(value: &str) -> &str {
    value.split_once('=').map_or(value, |(_, text)| text)
}

fn int(text: &str) -> Option<i64> {
    match text.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn retval(text: &str) -> Result<i32, String> {
    match text {
        // 6.12's test_loader names it INT_MIN; 6.18's _INT_MIN.
        "INT_MIN" | "_INT_MIN" => Ok(i32::MIN),
        "POINTER_VALUE" => Ok(POINTER_VALUE),
        "TEST_DATA_LEN" => Ok(TEST_DATA_LEN),
        _ => int(text)
            .map(|v| v as i32)
            .ok_or_else(|| format!("bad retval '{text}'")),
    }
}

/// Whether a retval satisfies the expectation (POINTER_VALUE: any).
pub fn retval_matches(expected: i32, got: u32) -> bool {
    expected == POINTER_VALUE || expected == got as i32
}

#[cfg(test)]
mod tests {
    use super::retval;

    #[test]
    fn retval_names_of_both_test_loaders() {
        assert_eq!(retval("INT_MIN"), Ok(i32::MIN));
        assert_eq!(retval("_INT_MIN"), Ok(i32::MIN));
        assert_eq!(retval("TEST_DATA_LEN"), Ok(64));
        assert_eq!(retval("-1"), Ok(-1));
        assert!(retval("INT_MAX").is_err());
    }
}
