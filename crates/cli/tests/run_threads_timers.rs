//! `bpfvet run --threads N` and `--advance-time`: each thread is a CPU of
//! its own (per-CPU map slots show every thread's runs), and timers armed by
//! the run fire on the virtual clock as far as it is advanced.

use std::path::PathBuf;
use std::process::{Command, Output};

fn progs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs")
}

fn bpfvet(object: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .arg("run")
        .arg(progs().join(object))
        .arg("--data-in")
        .arg(progs().join("packets/v4_tcp80.bin"))
        .args(args)
        .output()
        .expect("run bpfvet")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value bytes `--maps-dump` printed for `key` of `map`.
fn dumped(text: &str, map: &str, key: &str) -> String {
    let section = text
        .split("map ")
        .find(|s| s.starts_with(map))
        .unwrap_or_else(|| panic!("map {map} in {text}"));
    let line = section
        .lines()
        .find(|l| l.trim_start().starts_with(key))
        .unwrap_or_else(|| panic!("key {key} of {map} in {text}"));
    line.split("=> ").nth(1).expect("value").to_string()
}

#[test]
fn threads_run_on_cpus_of_their_own() {
    for jit in [false, true] {
        let mut args = vec!["--threads", "3", "--repeat", "50", "--maps-dump"];
        if jit {
            args.push("--jit");
        }
        let text = stdout(&bpfvet("maps_misc.bpf.o", &args));
        for cpu in 0..3 {
            assert!(
                text.contains(&format!("thread {cpu} (cpu {cpu}): retval 2,")),
                "{text}"
            );
        }
        assert!(text.contains("total: 3 threads x 50 runs in"), "{text}");
        // cpu_counts[len % 4] (54 % 4 = 2) counts each CPU's runs in its
        // own slot: 50 on each of the 3 CPUs of the run.
        let fifty = "32 00 00 00 00 00 00 00";
        assert_eq!(
            dumped(&text, "cpu_counts", "02 00 00 00"),
            [fifty; 3].join(" "),
            "{text}"
        );
    }
}

#[test]
fn advance_time_fires_timers_up_to_the_clock() {
    // timer_rearm: a 1 ms timer whose callback re-arms it until it has
    // fired 4 times (the frame is longer than 4 bytes).
    let fired = |args: &[&str]| {
        let text = stdout(&bpfvet("timer_rearm.bpf.o", args));
        // struct timer_value: 16-byte bpf_timer, fired, limit.
        let v = dumped(&text, "rearm_timers", "00 00 00 00");
        (u8::from_str_radix(&v[48..50], 16).unwrap(), text)
    };
    assert_eq!(
        fired(&["--maps-dump"]).0,
        0,
        "no clock advance, no callback"
    );
    let (n, text) = fired(&["--maps-dump", "--advance-time", "2500us"]);
    assert_eq!(n, 2, "{text}");
    assert!(text.contains("2 callbacks ran, 1 still armed"), "{text}");
    assert_eq!(
        fired(&["--maps-dump", "--advance-time", "1s", "--jit"]).0,
        4
    );
    let bad = bpfvet("timer_rearm.bpf.o", &["--advance-time", "5 weeks"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown unit"));
}
