//! `verify --backend kernel=6.18` end to end: a Debian 6.18 kernel booted
//! under QEMU verifies a few programs of tests/progs. Prints SKIP where
//! QEMU is missing or the kernel is neither cached nor downloadable.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bpfvet() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bpfvet"))
}

fn progs(names: &[&str]) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs");
    names.iter().map(|n| dir.join(n)).collect()
}

fn run(args: &[&str], objs: &[PathBuf], env: &[(&str, &str)]) -> Output {
    let mut cmd = bpfvet();
    cmd.args(args).args(objs);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("runs bpfvet")
}

/// Why the guest cannot be booted here, or None.
fn unavailable() -> Option<String> {
    match Command::new("qemu-system-x86_64").arg("--version").output() {
        Ok(o) if o.status.success() => {}
        _ => return Some("qemu-system-x86_64 not installed".into()),
    }
    // Fetches the kernel into the cache when missing (apt, Debian's mirror).
    let out = run(
        &["verify", "--backend", "kernel=6.18", "-q", "-o", "csv"],
        &progs(&["calls.bpf.o"]),
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("kernel 6.18: ") && (err.contains("apt") || err.contains("Debian has no")) {
        return Some(format!(
            "kernel 6.18 not cached and not fetched: {}",
            err.trim()
        ));
    }
    None
}

fn csv_rows(out: &Output) -> Vec<Vec<String>> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn a_debian_guest_verifies_like_the_host_kernel_and_survives_a_crash() {
    if let Some(why) = unavailable() {
        println!("SKIP: guest kernel backend: {why}");
        return;
    }
    let objs = progs(&["calls.bpf.o", "reject_uninit_reg.bpf.o", "callbacks.bpf.o"]);
    let emit = ["-o", "csv", "-e", "file,prog,verdict,insns"];
    let guest = run(
        &[&["verify", "--backend", "kernel=6.18"][..], &emit].concat(),
        &objs,
        &[],
    );
    let err = String::from_utf8_lossy(&guest.stderr);
    assert_eq!(
        guest.status.code(),
        Some(1),
        "one program is rejected: {err}"
    );
    let rows = csv_rows(&guest);
    assert_eq!(rows.len(), 5, "{rows:?}");
    let row = |prog: &str| rows.iter().find(|r| r[1] == prog).expect(prog).clone();
    assert_eq!(row("xdp_calls")[2], "success");
    assert!(row("xdp_calls")[3].parse::<u64>().unwrap() > 0);
    assert_eq!(row("xdp_uninit_reg")[2], "failure");
    // The rejection is reported as the host kernel backend reports it.
    assert!(
        err.lines().any(|l| l
            .strip_prefix("bpfvet: reject_uninit_reg.bpf.o/xdp_uninit_reg (kernel): ")
            .is_some_and(|e| e.ends_with("R2 !read_ok"))),
        "{err}"
    );
    assert!(
        err.contains("(6.18."),
        "the note names the guest's release: {err}"
    );

    // Where the host kernel can verify, the same kernel version in a guest
    // gives the same rows.
    let host = run(
        &[&["verify", "--backend", "kernel"][..], &emit].concat(),
        &objs,
        &[],
    );
    let host_err = String::from_utf8_lossy(&host.stderr);
    let host_release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    if host_err.contains("kernel backend unavailable") || !host_release.starts_with("6.18") {
        println!("SKIP: guest vs host rows: the host kernel is not a usable 6.18");
    } else {
        assert_eq!(csv_rows(&host), rows);
    }

    // The agent dies on the fourth program (in batch order: calls,
    // reject_uninit_reg, then callbacks' second): it alone is reported
    // lost, by name, and a second boot verifies the rest.
    let crashed = run(
        &[&["verify", "--backend", "kernel=6.18"][..], &emit].concat(),
        &objs,
        &[("BPFVET_GUEST_CRASH_AT", "3")],
    );
    let err = String::from_utf8_lossy(&crashed.stderr);
    let again = csv_rows(&crashed);
    assert_eq!(again.len(), rows.len());
    let lost: Vec<usize> = (0..rows.len()).filter(|&i| again[i] != rows[i]).collect();
    assert_eq!(lost.len(), 1, "one program differs: {again:?}");
    let name = format!("{}/{}", again[lost[0]][0], again[lost[0]][1]);
    assert_eq!(name, "callbacks.bpf.o/xdp_for_each");
    assert_eq!(again[lost[0]][2], "failure");
    assert!(err.contains(&format!("{name} lost")), "{err}");
    assert!(err.contains("in 2 boot(s)"), "{err}");
}

#[test]
fn the_matrix_names_each_kernel_and_the_first_that_accepts() {
    if let Some(why) = unavailable() {
        println!("SKIP: guest kernel backend: {why}");
        return;
    }
    let out = run(
        &["verify", "--kernels", "bpfvet,6.18", "-o", "json"],
        &progs(&["calls.bpf.o", "reject_uninit_reg.bpf.o"]),
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let list = v.as_array().expect("a list");
    assert_eq!(list.len(), 2);
    let calls = list.iter().find(|r| r["prog"] == "xdp_calls").unwrap();
    assert_eq!(calls["kernels"]["6.18"]["verdict"], "success");
    assert_eq!(calls["first_accepting"], "6.18");
    let uninit = list.iter().find(|r| r["prog"] == "xdp_uninit_reg").unwrap();
    assert_eq!(uninit["kernels"]["6.18"]["error"], "R2 !read_ok");
    assert_eq!(uninit["first_accepting"], serde_json::Value::Null);
}
