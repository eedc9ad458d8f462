//! `bpfvet conformance-plugin` started the way bpf_conformance's runner
//! starts a plugin: `PLUGIN [MEMORY] PLUGIN_OPTIONS... [--elf]`, the
//! program (or ELF object) hex-encoded on stdin.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The runner's memory encoding: two spaces after each byte.
const MEMORY: &str = "01  00  00  00  05  00  00  00  ";

fn plugin(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bpfvet");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    child.wait_with_output().expect("bpfvet ends")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The runner's ELF of `ldxw %r0, [%r1+4]; add %r0, %r2; exit` (.text,
/// function `main`), hex-encoded as it sends it.
fn sum_elf_hex() -> String {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance/sum.elf.hex");
    std::fs::read_to_string(p).expect("fixture")
}

#[test]
fn hex_elf_after_the_memory_with_options_last() {
    let hex = sum_elf_hex() + "\n";
    for options in [
        &["conformance-plugin"][..],
        &["conformance-plugin", "--jit"],
    ] {
        let mut args = vec![MEMORY];
        args.extend_from_slice(options);
        args.push("--elf");
        let out = plugin(&args, hex.as_bytes());
        assert!(out.status.success(), "{options:?}: {}", text(&out.stderr));
        // 5 read at offset 4, plus the length 8.
        assert_eq!(text(&out.stdout), "d\n", "{options:?}");
        assert_eq!(text(&out.stderr), "", "{options:?}");
    }
}

#[test]
fn raw_elf_is_still_accepted() {
    let hex = sum_elf_hex();
    let raw: Vec<u8> = hex
        .split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).expect("hex"))
        .collect();
    let out = plugin(&["conformance-plugin", "--elf", MEMORY], &raw);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "d\n");
}

/// `r10 = 5; r0 = 1; exit`: the JIT keeps r10 the frame pointer, so it
/// declines the program, which then runs on the interpreter, said on
/// stderr; with --jit-only the run fails instead.
#[test]
fn a_declined_program_falls_back_and_says_so() {
    let prog = "b7 0a 00 00 05 00 00 00 b7 00 00 00 01 00 00 00 95 00 00 00 00 00 00 00\n";
    let out = plugin(&["conformance-plugin", "--jit"], prog.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "1\n");
    assert!(
        text(&out.stderr).contains("declined") && text(&out.stderr).contains("interpreter"),
        "{}",
        text(&out.stderr)
    );
    let out = plugin(
        &["conformance-plugin", "--jit", "--jit-only"],
        prog.as_bytes(),
    );
    assert!(!out.status.success());
    assert_eq!(text(&out.stdout), "");
    assert!(text(&out.stderr).contains("r10"), "{}", text(&out.stderr));
    // Without --jit nothing is said.
    let out = plugin(&["conformance-plugin"], prog.as_bytes());
    assert_eq!(
        (text(&out.stdout), text(&out.stderr)),
        ("1\n".into(), "".into())
    );
}
