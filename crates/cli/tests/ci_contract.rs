//! bpfvet in CI: one exit-code contract for every subcommand (0 verified,
//! 1 a verdict failed, 2 usage or load error), errors that -q cannot hide,
//! files that are not BPF objects as load errors, symlink loops, `--jobs`
//! output identical to one job, host refusals as their own verdict, the
//! compact `--backend both` table, numeric `-C` JSON diffs, and `run`'s
//! error messages.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bpfvet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .args(args)
        .output()
        .expect("run bpfvet")
}

fn prog(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/progs")
        .join(name)
        .display()
        .to_string()
}

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bpfvet-ci-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An ELF64 relocatable header for x86-64: an ELF file, not a BPF object.
fn x86_object() -> Vec<u8> {
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2;
    elf[5] = 1;
    elf[6] = 1;
    elf[16] = 1;
    elf[18] = 62;
    elf
}

/// Files named on the command line that are not BPF objects.
fn bad_inputs(dir: &Path) -> Vec<(String, PathBuf)> {
    let good = std::fs::read(prog("cgroup_skb.bpf.o")).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty.o", Vec::new()),
        (
            "random.o",
            (0..4096u32)
                .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
                .collect(),
        ),
        ("text.o", b"int main(void) { return 0; }\n".to_vec()),
        ("x86.o", x86_object()),
        ("truncated.bpf.o", good[..good.len() / 3].to_vec()),
    ];
    cases
        .into_iter()
        .map(|(name, bytes)| {
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            (name.to_string(), p)
        })
        .collect()
}

#[test]
fn quiet_never_hides_a_missing_path() {
    for sub in [&["verify", "-q"][..], &["dump"], &["test", "-q"]] {
        let mut args = sub.to_vec();
        args.push("/nonexistent/bpfvet-ci.o");
        let o = bpfvet(&args);
        assert_eq!(o.status.code(), Some(2), "{sub:?}");
        assert!(
            text(&o.stderr).contains("/nonexistent/bpfvet-ci.o"),
            "{sub:?}: {}",
            text(&o.stderr)
        );
    }
}

#[test]
fn named_files_that_are_not_bpf_objects_are_load_errors() {
    let dir = scratch("bad");
    for (name, path) in bad_inputs(&dir) {
        let p = path.display().to_string();
        for sub in ["verify", "dump", "test"] {
            // dump has no -q.
            let args = if sub == "dump" {
                vec![sub, p.as_str()]
            } else {
                vec![sub, "-q", p.as_str()]
            };
            let o = bpfvet(&args);
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{sub} {name}: {err}");
            assert!(err.contains(&name), "{sub} {name}: {err}");
            assert!(!err.contains("skipping"), "{sub} {name}: {err}");
        }
        let o = bpfvet(&["run", &p]);
        assert_eq!(o.status.code(), Some(2), "run {name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_directory_without_programs_is_a_load_error() {
    let dir = scratch("emptydir");
    let d = dir.display().to_string();
    for sub in ["verify", "dump"] {
        let o = bpfvet(&[sub, &d]);
        assert_eq!(o.status.code(), Some(2), "{sub}: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains(&d), "{sub}: {}", text(&o.stderr));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exit_codes_agree_across_subcommands() {
    let ok = prog("cgroup_skb.bpf.o");
    let rejected = prog("reject_bad_return.bpf.o");
    assert_eq!(bpfvet(&["verify", "-q", &ok]).status.code(), Some(0));
    assert_eq!(bpfvet(&["verify", "-q", &rejected]).status.code(), Some(1));
    assert_eq!(bpfvet(&["dump", &ok]).status.code(), Some(0));
    assert_eq!(bpfvet(&["run", &rejected]).status.code(), Some(1));
    for sub in ["verify", "dump", "test", "run"] {
        let help = text(&bpfvet(&[sub, "--help"]).stdout);
        assert!(help.contains("Exit status:"), "{sub}: {help}");
    }
}

#[test]
fn symlink_loops_list_each_object_once() {
    let dir = scratch("loop");
    std::fs::copy(prog("cgroup_skb.bpf.o"), dir.join("a.bpf.o")).unwrap();
    std::os::unix::fs::symlink(".", dir.join("again")).unwrap();
    std::os::unix::fs::symlink(&dir, dir.join("back")).unwrap();
    std::os::unix::fs::symlink(dir.join("a.bpf.o"), dir.join("alias.o")).unwrap();
    let d = dir.display().to_string();
    let o = bpfvet(&["verify", "-o", "csv", "-e", "file,prog", &d]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert_eq!(out.lines().count(), 2, "{out}");
    let o = bpfvet(&["dump", &d]);
    assert_eq!(text(&o.stdout).matches("programs:").count(), 1);
    // A directory named twice is walked twice, as named.
    let o = bpfvet(&["verify", "-o", "csv", "-e", "file,prog", &d, &d]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).lines().count(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn jobs_give_the_output_of_one_job() {
    let dir = prog("");
    let run = |jobs: &str| {
        let o = bpfvet(&[
            "verify",
            "-j",
            jobs,
            "-o",
            "csv",
            "-e",
            "file,prog,verdict,insns,states",
            &dir,
        ]);
        (text(&o.stdout), text(&o.stderr), o.status.code())
    };
    let one = run("1");
    assert!(one.0.lines().count() > 50, "{}", one.0);
    assert_eq!(run("2"), one);
    assert_eq!(run("3"), one);
    let dump = |jobs: &str| text(&bpfvet(&["dump", "-j", jobs, &dir]).stdout);
    assert_eq!(dump("1"), dump("2"));
    let annotated = fixture("annotated");
    let test = |jobs: &str| {
        let o = bpfvet(&["test", "-j", jobs, &annotated, &annotated]);
        (text(&o.stdout), o.status.code())
    };
    assert_eq!(test("1"), test("2"));
}

#[test]
fn compare_json_diffs_are_numbers_under_the_csv_keys() {
    let o = bpfvet(&[
        "verify",
        "-C",
        "-o",
        "json",
        "-e",
        "file,prog,verdict,insns",
        &fixture("veristat_base.csv"),
        &fixture("veristat_comp.csv"),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let first = &v[0];
    for key in [
        "total_insns_base",
        "total_insns_comp",
        "total_insns_diff",
        "total_insns_pct",
        "verdict_base",
        "verdict_comp",
        "verdict_diff",
    ] {
        assert!(first.get(key).is_some(), "{key} in {first}");
    }
    assert!(first["total_insns_diff"].is_i64(), "{first}");
    assert!(first["total_insns_pct"].is_f64(), "{first}");
    let (a, b) = (
        first["total_insns_base"].as_i64().unwrap(),
        first["total_insns_comp"].as_i64().unwrap(),
    );
    assert_eq!(first["total_insns_diff"].as_i64(), Some(b - a));
}

#[test]
fn run_prints_each_error_once() {
    let dir = scratch("run");
    let empty = dir.join("empty.o");
    std::fs::write(&empty, b"").unwrap();
    let o = bpfvet(&["run", &empty.display().to_string()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(err.matches("no ELF magic").count(), 1, "{err}");
    assert_eq!(err.matches("empty.o").count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_refusal_does_not_read_as_no_verify_set() {
    let o = bpfvet(&["run", &prog("reject_bad_return.bpf.o")]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("was not run"), "{err}");
    assert!(!err.contains("--no-verify runs it anyway:"), "{err}");
    assert_eq!(err.matches("should have been in").count(), 1, "{err}");
}

#[test]
fn run_without_ctx_in_says_so() {
    let o = bpfvet(&["run", "--prog", "syscall_sum", &prog("syscall_rawtp.bpf.o")]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--ctx-in"), "{err}");
}

#[test]
fn run_needs_no_prog_for_a_one_program_object() {
    let o = bpfvet(&["run", "--data-in", "/dev/null", &prog("cgroup_skb.bpf.o")]);
    let err = text(&o.stderr);
    assert!(!err.contains("--prog"), "{err}");
    assert!(!err.contains("required"), "{err}");
    let o = bpfvet(&["run", &prog("syscall_rawtp.bpf.o")]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("--prog") && err.contains("syscall_sum"),
        "{err}"
    );
}

/// `--backend both`, or None (after printing SKIP) without the kernel.
fn both(args: &[&str]) -> Option<Output> {
    let mut all = vec!["verify", "--backend", "both"];
    all.extend_from_slice(args);
    let o = bpfvet(&all);
    let err = text(&o.stderr);
    if let Some(line) = err.lines().find(|l| l.contains("kernel backend")) {
        println!("SKIP: {line}");
        return None;
    }
    Some(o)
}

#[test]
fn refusals_are_their_own_verdict_in_both() {
    // The object loader refuses one program for both backends.
    let obj = prog("loader_extern_one_prog.bpf.o");
    let Some(o) = both(&["-o", "csv", "-e", "file,prog,verdict,insns", &obj]) else {
        return;
    };
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    let row = out
        .lines()
        .find(|l| l.contains(",xdp_calls_memcpy,"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains(",refused,refused,REFUSED,"), "{row}\n{err}");
    assert!(!out.contains("MISMATCH"), "{out}");
    // Numeric DIFF columns hold numbers or nothing.
    for line in out.lines().skip(1) {
        let diff = line.rsplit(',').next().unwrap();
        assert!(diff.is_empty() || diff.parse::<i64>().is_ok(), "{line}");
    }
    assert!(err.contains("refused: 1"), "{err}");
    assert!(err.contains("mismatches: 0"), "{err}");
    // A single-backend CSV keeps veristat's verdicts.
    let o = bpfvet(&["verify", "-o", "csv", "-e", "file,prog,verdict", &obj]);
    assert!(
        text(&o.stdout).contains(",xdp_calls_memcpy,failure"),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn both_table_is_compact_by_default() {
    let obj = prog("cgroup_skb.bpf.o");
    let Some(o) = both(&[&obj]) else {
        return;
    };
    let out = text(&o.stdout);
    let header = out.lines().next().unwrap_or_default();
    for col in [
        "Verdict (bpfvet)",
        "Verdict (kernel)",
        "Insns (bpfvet)",
        "Insns (kernel)",
    ] {
        assert!(header.contains(col), "{header}");
    }
    assert!(!header.contains("Insns (DIFF)"), "{header}");
    assert!(header.len() < 240, "{header}");
    let Some(o) = both(&["-e", "file,prog,verdict,insns", &obj]) else {
        return;
    };
    assert!(text(&o.stdout).contains("Insns (DIFF)"));
}

#[test]
fn kernel_btf_is_not_charged_to_the_first_program() {
    if std::fs::metadata("/sys/kernel/btf/vmlinux").is_err() {
        println!("SKIP: no /sys/kernel/btf/vmlinux");
        return;
    }
    // The first program needs kernel types (tp_btf, kfuncs); reading and
    // indexing vmlinux BTF took 14-44 ms of its duration.
    let o = bpfvet(&[
        "verify",
        "-o",
        "csv",
        "-e",
        "prog,duration",
        &prog("kfunc_objects.bpf.o"),
    ]);
    let out = text(&o.stdout);
    let first = out.lines().nth(1).unwrap_or_else(|| panic!("{out}"));
    let us: u64 = first.rsplit(',').next().unwrap().parse().unwrap();
    assert!(us < 5_000, "{first}");
}
