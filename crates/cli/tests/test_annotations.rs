//! `bpfvet test` reads selftest-style annotations (BTF decl tags) and checks
//! verdicts, log messages in order, retvals and skips the unprivileged mode;
//! two annotations of the fixture are wrong on purpose and must fail. With
//! root and bpf(2) the same expectations are checked against the kernel.

use std::process::{Command, Output};

fn fixture() -> String {
    fixture_named("annotated")
}

fn fixture_named(name: &str) -> String {
    format!(
        "{}/tests/fixtures/annotated/{name}.bpf.o",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn bpfvet_test(backend: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .args(["test", "--backend", backend, &fixture()])
        .output()
        .expect("run bpfvet")
}

fn lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn check(o: &Output) {
    let out = lines(o);
    let expected_start = [
        "PASS annotated.bpf.o/returns_seven",
        "PASS annotated.bpf.o/reads a register never written",
        "PASS annotated.bpf.o/scalar_deref",
        "PASS annotated.bpf.o/logged_at_level_two",
        "PASS annotated.bpf.o/privileged_only",
        "SKIP annotated.bpf.o/privileged_only (unpriv): unprivileged mode",
        "FAIL annotated.bpf.o/wrong_verdict: expected success, the program was rejected: R3 !read_ok",
        "FAIL annotated.bpf.o/wrong_message: message not in the log: 'no such message'",
        "5 passed, 2 failed, 1 skipped",
    ];
    assert_eq!(out.len(), expected_start.len(), "{out:#?}");
    for (line, want) in out.iter().zip(expected_start) {
        assert!(
            line.starts_with(want),
            "{line:?} should start with {want:?}"
        );
    }
    // The auxiliary program is loaded, never a test of its own.
    assert!(!out.iter().any(|l| l.contains("helper_program")));
    assert_eq!(o.status.code(), Some(1), "a failed test exits 1");
}

#[test]
fn annotations_checked_on_bpfvet() {
    check(&bpfvet_test("bpfvet"));
}

#[test]
fn annotations_checked_on_the_kernel() {
    let o = bpfvet_test("kernel");
    let err = String::from_utf8_lossy(&o.stderr);
    if let Some(line) = err
        .lines()
        .find(|l| l.contains("kernel backend unavailable"))
    {
        println!("SKIP: {line}");
        return;
    }
    check(&o);
}

#[test]
fn objects_without_annotations_are_a_usage_error() {
    let progs = format!(
        "{}/../../tests/progs/calls.bpf.o",
        env!("CARGO_MANIFEST_DIR")
    );
    let o = Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .args(["test", &progs])
        .output()
        .expect("run bpfvet");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no annotated test objects"));
}

/// LSM programs: the hook's prototype decides the return range (errno,
/// boolean or void hooks), the previous result read from the context lies
/// in that range, disabled hooks are rejected, and the hooks' pointer
/// arguments are trusted (a member the kernel lists as trusted-or-NULL
/// must be checked); every annotation of the fixture must hold on bpfvet.
#[test]
fn lsm_return_ranges_disabled_hooks_and_trusted_args() {
    let o = Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .args(["test", &fixture_named("lsm")])
        .output()
        .expect("run bpfvet");
    let out = lines(&o);
    assert_eq!(
        out.last().map(String::as_str),
        Some("7 passed, 0 failed, 0 skipped"),
        "{out:#?}"
    );
    assert_eq!(o.status.code(), Some(0));
}
