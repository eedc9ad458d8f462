//! `bpfvet run --jit`: native code gives the kernel's verdicts
//! (tests/progs/EXPECTED.md) and says it ran natively; without the flag
//! the interpreter runs.

use std::path::PathBuf;
use std::process::Command;

fn progs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs")
}

/// (stdout, stderr) of `bpfvet run` on `object`/`prog` with `frame`.
fn run(object: &str, prog: &str, frame: &str, jit: bool) -> (String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bpfvet"));
    cmd.arg("run")
        .arg(progs().join(object))
        .args(["--prog", prog, "--data-in"])
        .arg(progs().join("packets").join(frame));
    if jit {
        cmd.arg("--jit");
    }
    let out = cmd.output().expect("run bpfvet");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn jit_gives_the_kernels_verdicts() {
    // EXPECTED.md: xdp_collatz returns 1 on raw_collatz27, 2 elsewhere;
    // xdp_calls returns 1 on IPv6 frames, 2 on the others.
    for (object, prog, frame, retval) in [
        (
            "loops.bpf.o",
            "xdp_collatz",
            "raw_collatz27.bin",
            "retval: 1 XDP_DROP",
        ),
        (
            "loops.bpf.o",
            "xdp_collatz",
            "v4_tcp80.bin",
            "retval: 2 XDP_PASS",
        ),
        (
            "calls.bpf.o",
            "xdp_calls",
            "v6_udp53.bin",
            "retval: 1 XDP_DROP",
        ),
        (
            "calls.bpf.o",
            "xdp_calls",
            "v4_tcp80.bin",
            "retval: 2 XDP_PASS",
        ),
    ] {
        let (out, err) = run(object, prog, frame, true);
        assert!(out.starts_with(retval), "{prog} {frame}: {out}");
        assert!(err.contains("native code"), "{prog}: {err}");
        let (out, err) = run(object, prog, frame, false);
        assert!(out.starts_with(retval), "{prog} {frame} interpreted: {out}");
        assert!(!err.contains("JIT"), "{err}");
    }
}
