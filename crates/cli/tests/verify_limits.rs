//! `bpfvet verify --timeout / --max-memory`: the bpfvet verifier stops a
//! program that exceeds them and reports it as a failure with the limit
//! named, instead of running on.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The biggest of the project's programs: about 670k processed insns and
/// thousands of states, so both limits below are far exceeded.
fn stress_object() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/progs/stress_backtrack.bpf.o")
        .display()
        .to_string()
}

fn verify(extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .args(["verify", "-o", "csv", "-e", "prog,verdict"])
        .args(extra)
        .arg(stress_object())
        .output()
        .expect("run bpfvet")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn without_limits_the_stress_program_verifies() {
    let o = verify(&[]);
    assert_eq!(
        text(&o.stdout),
        "prog_name,verdict\nbacktrack_stress,success\n"
    );
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn memory_limit_stops_verification() {
    let o = verify(&["--max-memory", "64K"]);
    assert_eq!(
        text(&o.stdout),
        "prog_name,verdict\nbacktrack_stress,failure\n"
    );
    assert!(
        text(&o.stderr).contains("limit: verifier state memory exceeds the limit of 65536 bytes"),
        "stderr: {}",
        text(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn timeout_stops_verification() {
    // The program needs hundreds of milliseconds even in a release build.
    let o = verify(&["--timeout", "1ms"]);
    assert_eq!(
        text(&o.stdout),
        "prog_name,verdict\nbacktrack_stress,failure\n"
    );
    assert!(
        text(&o.stderr).contains("limit: verification timed out after 1 ms"),
        "stderr: {}",
        text(&o.stderr)
    );
}

#[test]
fn bad_limit_values_are_refused() {
    for (flag, value, why) in [
        ("--timeout", "0", "must be positive"),
        ("--timeout", "3 days", "unknown unit"),
        ("--timeout", "soon", "is not a duration"),
        ("--max-memory", "3X", "unknown unit"),
        ("--max-memory", "0", "must be positive"),
        ("--max-memory", "99999999999999999999G", "is not a size"),
    ] {
        let o = verify(&[flag, value]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        assert!(
            text(&o.stderr).contains(why),
            "{flag} {value}: {}",
            text(&o.stderr)
        );
    }
}
