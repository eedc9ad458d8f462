//! `bpfvet verify --privileges`: the loader's capabilities change the
//! verdict (a reduced level may not load an XDP program at all, a socket
//! filter loads at every level); on the kernel backend the host agrees.

use std::process::{Command, Output};

fn verify(args: &[&str]) -> Output {
    let progs = format!("{}/../../tests/progs", env!("CARGO_MANIFEST_DIR"));
    Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .arg("verify")
        .args(args)
        .arg(format!("{progs}/socket_filter.bpf.o"))
        .arg(format!("{progs}/xdp_parser.bpf.o"))
        .output()
        .expect("run bpfvet")
}

/// (program, verdict) rows of a CSV run.
fn verdicts(o: &Output) -> Vec<(String, String)> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| {
            let (p, v) = l.split_once(',')?;
            Some((p.to_string(), v.to_string()))
        })
        .collect()
}

#[test]
fn reduced_levels_refuse_xdp_and_keep_socket_filters() {
    let csv = ["-o", "csv", "-e", "prog,verdict"];
    let root = verdicts(&verify(&csv));
    assert!(
        root.len() >= 3 && root.iter().all(|(_, v)| v == "success"),
        "{root:?}"
    );
    for level in ["bpf", "unprivileged"] {
        let out = verify(&[&csv[..], &["--privileges", level]].concat());
        let rows = verdicts(&out);
        assert_eq!(rows.len(), root.len(), "{level}");
        for (prog, verdict) in &rows {
            let want = if prog.starts_with("xdp_") {
                "failure"
            } else {
                "success"
            };
            assert_eq!(verdict, want, "{level} {prog}");
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("bpf_prog_load: EPERM"), "{level}: {stderr}");
    }
}

#[test]
fn both_backends_agree_at_each_level() {
    for level in ["bpf", "unprivileged"] {
        let out = verify(&[
            "--backend",
            "both",
            "--privileges",
            level,
            "-o",
            "csv",
            "-e",
            "prog,verdict",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("kernel backend unavailable") {
            println!("SKIP: {level}: {stderr}");
            continue;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert!(!rows.is_empty(), "{level}: {stderr}");
        assert!(rows.iter().all(|r| r.ends_with("MATCH")), "{level}: {text}");
    }
}

#[test]
fn an_unknown_level_is_a_usage_error() {
    let out = verify(&["--privileges", "admin"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown privilege level"));
}
