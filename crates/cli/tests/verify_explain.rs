//! `bpfvet verify` explains each rejection on stderr: the instruction, the
//! verifier's error and the C source line that line_info names for it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn progs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs")
}

/// The explanation notes of a run: (program, "insn N: error", source line).
fn explanations(args: &[&str]) -> Vec<(String, String, Option<String>)> {
    let out = Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .arg("verify")
        .args(args)
        .output()
        .expect("run bpfvet");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines: Vec<&str> = stderr.lines().collect();
    let mut found = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l.strip_prefix("bpfvet: ") else {
            continue;
        };
        let Some((prog, explanation)) = rest.split_once(" (bpfvet): ") else {
            continue;
        };
        // Indented lines follow: the verifier's detail line, then the
        // source line (`file.c:42: text`).
        let source = lines[i + 1..]
            .iter()
            .map_while(|n| n.strip_prefix("    "))
            .find(|n| {
                n.split_once(": ")
                    .and_then(|(place, _)| place.rsplit_once(':'))
                    .is_some_and(|(file, line)| file.ends_with(".c") && line.parse::<u32>().is_ok())
            })
            .map(str::to_string);
        found.push((prog.to_string(), explanation.to_string(), source));
    }
    found
}

/// `file.c:42: text` names line 42 of tests/progs/file.c, whose text it is.
fn assert_source_line_is_real(dir: &Path, source: &str) {
    let (place, text) = source.split_once(": ").expect("file:line: text");
    let (file, line) = place.rsplit_once(':').expect("file:line");
    let line: usize = line.parse().expect("line number");
    let c = std::fs::read_to_string(dir.join(file)).expect("C source exists");
    let actual = c.lines().nth(line - 1).expect("line exists").trim();
    assert_eq!(actual, text.trim(), "{source}");
}

#[test]
fn every_rejected_program_is_explained_on_its_source_line() {
    let dir = progs_dir();
    let found = explanations(&[dir.to_str().expect("utf-8 path"), "-f", "reject*"]);
    let rejects = std::fs::read_dir(&dir)
        .expect("tests/progs")
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("reject_") && n.ends_with(".bpf.o")
        })
        .count();
    assert_eq!(
        found.len(),
        rejects,
        "one explanation per reject_* object: {found:#?}"
    );
    let mut with_source = 0;
    for (prog, explanation, source) in &found {
        // Limits are reported as such; verifier errors name their insn.
        assert!(
            explanation.starts_with("insn ")
                || explanation.starts_with("limit: ")
                || explanation.starts_with("combined stack size"),
            "{prog}: {explanation}"
        );
        if let Some(s) = source {
            assert_source_line_is_real(&dir, s);
            with_source += 1;
        }
    }
    // Only whole-program errors (stack size, the insn limit) have no line:
    // every error at an instruction has one.
    let whole_program = found
        .iter()
        .filter(|(_, e, _)| !e.starts_with("insn "))
        .count();
    assert!(with_source + whole_program >= found.len(), "{found:#?}");
}

#[test]
fn packet_access_without_bounds_check_is_explained() {
    let obj = progs_dir().join("reject_pkt_oob.bpf.o");
    let found = explanations(&[obj.to_str().expect("utf-8 path")]);
    assert_eq!(found.len(), 1, "{found:#?}");
    let (prog, explanation, source) = &found[0];
    assert_eq!(prog, "reject_pkt_oob.bpf.o/xdp_no_bounds_check");
    // The load of eth->h_proto (insn 1) from an unchecked packet pointer.
    assert_eq!(explanation, "insn 1: R1 offset is outside of the packet");
    // The kernel's detail line names the access and the register.
    let out = Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .args(["verify", obj.to_str().expect("utf-8 path")])
        .output()
        .expect("run bpfvet");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\n    invalid access to packet, off=12 size=1, R1(id=0,off=12,r=0)\n"),
        "{stderr}"
    );
    assert!(
        source
            .as_deref()
            .is_some_and(|s| s.contains("eth->h_proto")),
        "{source:?}"
    );
}

#[test]
fn quiet_suppresses_explanations() {
    let obj = progs_dir().join("reject_pkt_oob.bpf.o");
    assert!(explanations(&["-q", obj.to_str().expect("utf-8 path")]).is_empty());
}

#[test]
fn kernel_rejection_names_its_instruction_and_source_line() {
    let obj = progs_dir().join("reject_pkt_oob.bpf.o");
    let out = Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .args([
            "verify",
            "--backend",
            "both",
            obj.to_str().expect("utf-8 path"),
        ])
        .output()
        .expect("run bpfvet");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(line) = stderr
        .lines()
        .find(|l| l.contains("kernel backend unavailable"))
    {
        println!("SKIP: {line}");
        return;
    }
    // The kernel's stats-only log names no instruction: bpfvet loads the
    // rejected program again at level 1 to find it, and its C line.
    let kernel: Vec<&str> = stderr
        .lines()
        .skip_while(|l| !l.contains(" (kernel): "))
        .take_while(|l| l.contains(" (kernel): ") || l.starts_with("    "))
        .collect();
    assert_eq!(
        kernel.first().copied(),
        Some("bpfvet: reject_pkt_oob.bpf.o/xdp_no_bounds_check (kernel): insn 1: R1 offset is outside of the packet"),
        "{stderr}"
    );
    let source = kernel
        .iter()
        .find_map(|l| l.strip_prefix("    ").filter(|l| l.contains(".c:")))
        .expect("a source line");
    assert!(source.contains("eth->h_proto"), "{source}");
    assert_source_line_is_real(&progs_dir(), source);
}
