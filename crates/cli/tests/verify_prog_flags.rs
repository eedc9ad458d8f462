//! `bpfvet verify --prog-flags`: BPF_F_TEST_STATE_FREQ makes a checkpoint at
//! every prune point (more states, same verdicts), on bpfvet as on the
//! kernel; BPF_F_STRICT_ALIGNMENT rejects a misaligned packet load the
//! kernel accepts without it (BPF_F_ANY_ALIGNMENT overrides it); flags
//! bpfvet does not model are refused by name; unknown names are a usage
//! error.

use std::process::{Command, Output};

fn verify(args: &[&str]) -> Output {
    verify_object("loops.bpf.o", args)
}

fn verify_object(name: &str, args: &[&str]) -> Output {
    let obj = format!("{}/../../tests/progs/{name}", env!("CARGO_MANIFEST_DIR"));
    Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .arg("verify")
        .args(args)
        .arg(obj)
        .output()
        .expect("run bpfvet")
}

/// (program, verdict, states) rows of a CSV run; for `both`, the states of
/// each side.
fn rows(o: &Output) -> Vec<Vec<String>> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn state_freq_adds_checkpoints_as_the_kernel_does() {
    let csv = ["-o", "csv", "-e", "prog,verdict,states"];
    let plain = rows(&verify(&csv));
    let freq = rows(&verify(
        &[&csv[..], &["--prog-flags", "BPF_F_TEST_STATE_FREQ"]].concat(),
    ));
    assert_eq!(plain.len(), freq.len());
    let states = |r: &Vec<String>| r[2].parse::<u64>().expect("states");
    assert!(
        plain.iter().zip(&freq).all(|(a, b)| a[1] == b[1]),
        "same verdicts"
    );
    assert!(
        plain.iter().zip(&freq).any(|(a, b)| states(b) > states(a)),
        "more states with a checkpoint at every prune point: {plain:?} {freq:?}"
    );
    let both = verify(&[
        "--backend",
        "both",
        "-o",
        "csv",
        "-e",
        "prog,verdict,states",
        "--prog-flags",
        "BPF_F_TEST_STATE_FREQ",
    ]);
    if String::from_utf8_lossy(&both.stderr).contains("kernel backend unavailable") {
        println!("SKIP: kernel backend unavailable");
        return;
    }
    for r in rows(&both) {
        // prog, verdict (bpfvet, kernel, diff), states (bpfvet, kernel, diff)
        assert_eq!(r[1], r[2], "verdicts of {}", r[0]);
        assert_eq!(r[4], r[5], "states of {}", r[0]);
    }
}

/// xdp_signed_ops loads 4 bytes at offset 4 of the packet: aligned on
/// the wire, misaligned past the 2 bytes of NET_IP_ALIGN the strict check
/// assumes.
#[test]
fn strict_alignment_rejects_a_misaligned_packet_load() {
    let run = |backend: &str, flags: Option<&str>| {
        let mut args = vec!["--backend", backend, "-f", "*/xdp_signed_ops"];
        if let Some(f) = flags {
            args.extend(["--prog-flags", f]);
        }
        verify_object("v4_insns.bpf.o", &args)
    };
    const MISALIGNED: &str = "insn 6: misaligned packet access off 2+0+0+4 size 4";
    for backend in ["bpfvet", "kernel"] {
        let strict = run(backend, Some("BPF_F_STRICT_ALIGNMENT"));
        let err = String::from_utf8_lossy(&strict.stderr);
        if backend == "kernel" && err.contains("kernel backend unavailable") {
            println!("SKIP: kernel backend unavailable");
            return;
        }
        assert_eq!(strict.status.code(), Some(1), "{backend}: {err}");
        assert!(err.contains(MISALIGNED), "{backend}: {err}");
        for flags in [None, Some("BPF_F_STRICT_ALIGNMENT|BPF_F_ANY_ALIGNMENT")] {
            let o = run(backend, flags);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{backend} {flags:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

#[test]
fn unmodelled_flags_are_refused_by_name() {
    let o = verify(&["--prog-flags", "BPF_F_TEST_REG_INVARIANTS", "-o", "csv"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("refused: not modelled by bpfvet: program flag BPF_F_TEST_REG_INVARIANTS"),
        "{err}"
    );
}

#[test]
fn unknown_flag_names_are_usage_errors() {
    let o = verify(&["--prog-flags", "BPF_F_NO_SUCH_FLAG"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("unknown program flag 'BPF_F_NO_SUCH_FLAG'")
    );
}
