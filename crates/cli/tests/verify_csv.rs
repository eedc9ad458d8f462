//! `bpfvet verify -C` and `-R` on CSV files in veristat's format (the
//! fixtures are written by hand from veristat's documented CSV layout), and
//! the round trip of bpfvet's own CSV through both.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

fn bpfvet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .arg("verify")
        .args(args)
        .output()
        .expect("run bpfvet")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn compare_reads_veristat_csv() {
    let (a, b) = (fixture("veristat_base.csv"), fixture("veristat_comp.csv"));
    let o = bpfvet(&["-C", &a, &b, "-o", "csv", "-e", "file,prog,verdict,insns"]);
    assert_eq!(
        stdout(&o),
        "file_name,prog_name,verdict_base,verdict_comp,verdict_diff,total_insns_base,total_insns_comp,total_insns_diff\n\
         pyperf600.bpf.o,on_event,success,success,MATCH,533147,533147,+0 (+0.00%)\n\
         strobemeta.bpf.o,on_event,success,success,MATCH,21547,20920,-627 (-2.91%)\n\
         tc_new.bpf.o,handle,N/A,success,N/A,N/A,1000,N/A\n\
         xdp_synproxy_kern.bpf.o,syncookie_tc,success,N/A,N/A,13274,N/A,N/A\n\
         xdp_synproxy_kern.bpf.o,syncookie_xdp,failure,success,MISMATCH,12876,13300,+424 (+3.29%)\n",
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A verdict mismatch makes the comparison exit 1.
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn compare_table_has_a_b_diff_columns() {
    let (a, b) = (fixture("veristat_base.csv"), fixture("veristat_comp.csv"));
    let o = bpfvet(&["-C", &a, &b, "-e", "prog,insns", "-f", "strobe*"]);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "Program   Insns (A)  Insns (B)  Insns (DIFF)");
    assert_eq!(lines[1], "--------  ---------  ---------  -------------");
    assert_eq!(lines[2], "on_event      21547      20920  -627 (-2.91%)");
    // As veristat: no closing dashes under a comparison table.
    assert_eq!(lines.len(), 3);
}

#[test]
fn compare_filters_and_sorts_on_variants() {
    let (a, b) = (fixture("veristat_base.csv"), fixture("veristat_comp.csv"));
    let progs = |o: &Output| -> Vec<String> {
        stdout(o)
            .lines()
            .skip(1)
            .map(|l| l.split(',').take(2).collect::<Vec<_>>().join("/"))
            .collect()
    };
    let o = bpfvet(&[
        "-C",
        &a,
        &b,
        "-o",
        "csv",
        "-e",
        "file,prog,insns",
        "-f",
        "insns_diff<0",
    ]);
    // As in veristat, a side that lacks the program counts as the lowest
    // value, so "less than" predicates on diffs also select them.
    assert_eq!(
        progs(&o),
        [
            "strobemeta.bpf.o/on_event",
            "tc_new.bpf.o/handle",
            "xdp_synproxy_kern.bpf.o/syncookie_tc"
        ]
    );
    let o = bpfvet(&[
        "-C",
        &a,
        &b,
        "-o",
        "csv",
        "-e",
        "file,prog,insns",
        "-f",
        "insns_pct>3",
    ]);
    assert_eq!(progs(&o), ["xdp_synproxy_kern.bpf.o/syncookie_xdp"]);
    let o = bpfvet(&[
        "-C",
        &a,
        &b,
        "-o",
        "csv",
        "-e",
        "file,prog,insns",
        "-f",
        "!verdict_diff=mismatch",
        "-f",
        "verdict_a=success",
    ]);
    // syncookie_tc has no B side: its verdict diff is not "mismatch".
    assert_eq!(
        progs(&o),
        [
            "pyperf600.bpf.o/on_event",
            "strobemeta.bpf.o/on_event",
            "xdp_synproxy_kern.bpf.o/syncookie_tc"
        ]
    );
    // Descending diff; programs missing on one side sort last.
    let o = bpfvet(&[
        "-C",
        &a,
        &b,
        "-o",
        "csv",
        "-e",
        "file,prog,insns",
        "-s",
        "insns_diff",
    ]);
    assert_eq!(
        progs(&o),
        [
            "xdp_synproxy_kern.bpf.o/syncookie_xdp",
            "pyperf600.bpf.o/on_event",
            "strobemeta.bpf.o/on_event",
            "tc_new.bpf.o/handle",
            "xdp_synproxy_kern.bpf.o/syncookie_tc",
        ]
    );
    let o = bpfvet(&[
        "-C",
        &a,
        &b,
        "-o",
        "csv",
        "-e",
        "file,prog,insns",
        "-s",
        "insns_diff",
        "-n",
        "1",
    ]);
    assert_eq!(progs(&o), ["xdp_synproxy_kern.bpf.o/syncookie_xdp"]);
}

#[test]
fn compare_refuses_different_columns() {
    let o = bpfvet(&[
        "-C",
        &fixture("veristat_base.csv"),
        &fixture("veristat_6.12.csv"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("stats composition differs"));
}

#[test]
fn replay_filters_sorts_and_reformats() {
    let o = bpfvet(&[
        "-R",
        &fixture("veristat_base.csv"),
        "-o",
        "csv",
        "-e",
        "file,prog,insns,prog_type",
        "-f",
        "verdict=success",
        "-s",
        "insns^",
    ]);
    assert_eq!(
        stdout(&o),
        "file_name,prog_name,total_insns,prog_type\n\
         xdp_synproxy_kern.bpf.o,syncookie_tc,13274,sched_cls\n\
         strobemeta.bpf.o,on_event,21547,raw_tracepoint\n\
         pyperf600.bpf.o,on_event,533147,raw_tracepoint\n"
    );
    // The older 9-column format replays too.
    let o = bpfvet(&["-R", &fixture("veristat_6.12.csv"), "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[1]["prog_name"], "syncookie_xdp");
    assert_eq!(v[1]["verdict"], "failure");
    assert_eq!(v[1]["max_mark_read_len"], 3);
}

#[test]
fn bpfvet_csv_round_trips_through_replay_and_compare() {
    let dir = std::env::temp_dir().join(format!("bpfvet-verify-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ours = dir.join("ours.csv");
    let o = bpfvet(&["-R", &fixture("veristat_base.csv"), "-o", "csv"]);
    std::fs::write(&ours, &o.stdout).unwrap();
    let ours = ours.display().to_string();
    // bpfvet writes veristat's header and values: the same bytes come back.
    assert_eq!(
        stdout(&o),
        std::fs::read_to_string(fixture("veristat_base.csv")).unwrap()
    );
    let again = bpfvet(&["-R", &ours, "-o", "csv"]);
    assert_eq!(again.stdout, o.stdout);
    let cmp = bpfvet(&["-C", &ours, &fixture("veristat_base.csv"), "-o", "csv"]);
    assert_eq!(cmp.status.code(), Some(0));
    let text = stdout(&cmp);
    assert_eq!(text.lines().count(), 5);
    assert!(!text.contains("MISMATCH"));
    assert_eq!(text.matches("+0 (+0.00%)").count(), 4 * 10);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_arguments_exit_2() {
    let o = bpfvet(&["-C", &fixture("veristat_base.csv")]);
    assert_eq!(o.status.code(), Some(2));
    let o = bpfvet(&["-R", &fixture("veristat_base.csv"), "-e", "bogus"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unrecognized stat name 'bogus'"));
    let o = bpfvet(&["-R", &fixture("veristat_base.csv"), "-f", "insns>lots"]);
    assert_eq!(o.status.code(), Some(2));
    let o = bpfvet(&["--prog-type", "bogus", &fixture("veristat_base.csv")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown program type 'bogus'"));
    let o = bpfvet(&["-R", "/nonexistent.csv"]);
    assert_eq!(o.status.code(), Some(2));
}
