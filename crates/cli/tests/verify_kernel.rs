//! `bpfvet verify --backend kernel` on the project's programs (tests/progs),
//! and the round trip of its CSV through `-R` and `-C`. Needs root and the
//! bpf() syscall; prints SKIP otherwise.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bpfvet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .arg("verify")
        .args(args)
        .output()
        .expect("run bpfvet")
}

fn progs_dir() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/progs")
        .display()
        .to_string()
}

/// Runs the kernel backend, or None (after printing SKIP) where it is missing.
fn kernel_run(args: &[&str]) -> Option<Output> {
    let o = bpfvet(args);
    let err = String::from_utf8_lossy(&o.stderr);
    if let Some(line) = err
        .lines()
        .find(|l| l.contains("kernel backend unavailable"))
    {
        println!("SKIP: {line}");
        return None;
    }
    Some(o)
}

#[test]
fn kernel_backend_csv_round_trips() {
    let dir = progs_dir();
    let Some(o) = kernel_run(&[
        "--backend",
        "kernel",
        "-q",
        "-o",
        "csv",
        "-f",
        "!stress_backtrack*",
        "-f",
        "!loops*",
        &dir,
    ]) else {
        return;
    };
    let csv = String::from_utf8(o.stdout).unwrap();
    // Some programs are rejected on purpose: exit 1.
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(
        header[..5],
        [
            "file_name",
            "prog_name",
            "verdict",
            "duration",
            "total_insns"
        ]
    );
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert!(rows.len() > 20, "{} rows", rows.len());
    // Refused before reaching the kernel's verifier: an extern the loader
    // cannot resolve, a section that names no program type.
    let refused = ["xdp_calls_memcpy", "prog_in_unknown_section"];
    for r in &rows {
        let expect = if r[0].starts_with("reject_") || refused.contains(&r[1]) {
            "failure"
        } else {
            "success"
        };
        assert_eq!(r[2], expect, "{}/{}", r[0], r[1]);
    }
    // SEEDS.md 1d: the state stress program, measured independently.
    let stress = rows
        .iter()
        .find(|r| r[1] == "state_stress")
        .expect("state_stress row");
    assert_eq!((stress[4], stress[5]), ("14456", "1247"));
    assert_eq!(stress[11], "socket_filter");

    let tmp = std::env::temp_dir().join(format!("bpfvet-verify-kernel-{}.csv", std::process::id()));
    std::fs::write(&tmp, &csv).unwrap();
    let path = tmp.display().to_string();
    let replay = bpfvet(&["-R", &path, "-o", "csv"]);
    assert_eq!(String::from_utf8_lossy(&replay.stdout), csv);
    let cmp = bpfvet(&[
        "-C",
        &path,
        &path,
        "-o",
        "csv",
        "-e",
        "file,prog,verdict,insns,states",
    ]);
    assert_eq!(cmp.status.code(), Some(0));
    let text = String::from_utf8(cmp.stdout).unwrap();
    assert_eq!(text.lines().count(), rows.len() + 1);
    assert_eq!(text.matches(",MATCH,").count(), rows.len());
    assert_eq!(text.matches("+0 (+0.00%)").count(), 2 * rows.len());
    std::fs::remove_file(&tmp).unwrap();
}

#[test]
fn refusals_are_named_and_table_is_veristat_shaped() {
    let dir = progs_dir();
    let Some(o) = kernel_run(&[
        "--backend",
        "kernel",
        "-f",
        "reject_uninit*/",
        "-f",
        "socket_filter*/",
        &dir,
    ]) else {
        return;
    };
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("File "), "{out}");
    assert!(lines[0].ends_with("Peak states"));
    assert!(lines[1].starts_with("---"));
    assert!(out.contains("xdp_uninit_reg"));
    assert!(out.contains("sock_ldabs_ssh"));
    assert!(lines
        .last()
        .unwrap()
        .starts_with("Done. Processed 2 files, 3 programs. Skipped "));
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn both_backends_side_by_side() {
    let dir = progs_dir();
    let Some(o) = kernel_run(&[
        "--backend",
        "both",
        "-o",
        "csv",
        "-e",
        "file,prog,verdict,insns",
        "-f",
        "stress_states*/",
        &dir,
    ]) else {
        return;
    };
    let out = String::from_utf8(o.stdout).unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "file_name,prog_name,verdict_bpfvet,verdict_kernel,verdict_diff,\
         total_insns_bpfvet,total_insns_kernel,total_insns_diff"
    );
    // The kernel's figure is fixed (SEEDS.md 1d); the DIFF cell says whether
    // bpfvet agrees, MATCH or MISMATCH with the difference.
    let cells: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(cells[..2], ["stress_states.bpf.o", "state_stress"]);
    assert_eq!(cells[6], "14456");
    assert!(
        cells[7] == "MATCH" || cells[7].starts_with("MISMATCH "),
        "{}",
        cells[7]
    );
    assert_eq!(cells[7] == "MATCH", cells[5] == "14456");
    assert!(err.contains("Programs: 1. Verdict agreement: "), "{err}");
    assert!(err.contains("kernel total verification time: "), "{err}");
}

#[test]
fn iproute2_map_in_map_creates_and_verifies_on_both_backends() {
    // The outer map can only be created with the inner template that the
    // object loader links from iproute2's inner_id.
    let obj = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../object/tests/data/iproute2_map_in_map.bpf.o")
        .display()
        .to_string();
    let Some(o) = kernel_run(&["--backend", "both", "-o", "csv", "-e", "prog,verdict", &obj])
    else {
        return;
    };
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "prog_name,verdict_bpfvet,verdict_kernel,verdict_diff\ntc_tenant_slot,success,success,MATCH\n",
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}
