//! `bpfvet explain`: the per-line costs account for every processed
//! instruction, the JSON has its documented fields, a rejection's path ends
//! at the failing instruction, and the HTML report runs in a browser.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn progs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs")
}

fn objects() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(progs_dir())
        .expect("tests/progs")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".bpf.o"))
        .collect();
    v.sort();
    v
}

fn bpfvet(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bpfvet"))
        .args(args)
        .output()
        .expect("run bpfvet")
}

/// The reports of every program of `obj` (explain prints an array when
/// there are several).
fn explain_json(obj: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["explain", "-o", "json", obj.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    let out = bpfvet(&args);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: not JSON ({e}): {}",
            obj.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    match v {
        Value::Array(a) => a,
        one => vec![one],
    }
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

#[test]
fn per_line_processed_insns_sum_to_the_programs_total() {
    let mut checked = 0;
    for obj in objects() {
        // The figure `bpfvet verify` reports, from a run without collection.
        let out = bpfvet(&[
            "verify",
            "-q",
            "-o",
            "json",
            "-e",
            "prog,insns",
            obj.to_str().expect("utf-8 path"),
        ]);
        let rows: Value = serde_json::from_slice(&out.stdout).expect("verify JSON");
        let verified: HashMap<String, Option<u64>> = rows
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| {
                (
                    r["prog_name"].as_str().expect("prog_name").to_string(),
                    r["total_insns"].as_u64(),
                )
            })
            .collect();
        if verified.is_empty() {
            // An object without programs (tests/progs has loader cases).
            continue;
        }
        for r in explain_json(&obj, &[]) {
            let prog = r["prog"].as_str().expect("prog").to_string();
            let total = u(&r, "processed_insns");
            let lines = r["lines"].as_array().expect("lines");
            let by_line: u64 = lines.iter().map(|l| u(l, "processed_insns")).sum();
            let by_insn: u64 = r["insns"]
                .as_array()
                .expect("insns")
                .iter()
                .map(|i| u(i, "processed_insns"))
                .sum();
            assert_eq!(by_line, total, "{}/{prog}: lines", obj.display());
            assert_eq!(by_insn, total, "{}/{prog}: insns", obj.display());
            for l in lines {
                if l["file"] == "?" {
                    assert_eq!(u(l, "line"), 0, "{l}");
                } else {
                    assert!(u(l, "line") > 0, "{l}");
                }
            }
            // The explanation follows states_equal's checks: a miss it
            // cannot place means the two have drifted apart.
            for m in r["miss_reasons"].as_array().expect("miss_reasons") {
                assert_ne!(m["what"], "other", "{}/{prog}: {m}", obj.display());
            }
            // Collecting costs does not change the verifier's count.
            if let Some(Some(insns)) = verified.get(&prog) {
                assert_eq!(total, *insns, "{}/{prog}", obj.display());
            }
            checked += (total > 0) as usize;
        }
    }
    assert!(
        checked >= 50,
        "only {checked} programs with processed insns"
    );
}

#[test]
fn json_report_has_its_fields_and_every_miss_has_a_reason() {
    let r = explain_json(
        &progs_dir().join("xdp_parser.bpf.o"),
        &["--prog", "xdp_parse_flows"],
    );
    assert_eq!(r.len(), 1);
    let r = &r[0];
    for key in [
        "file",
        "prog",
        "verdict",
        "error",
        "processed_insns",
        "states",
        "prune_hits",
        "prune_misses",
        "precision_walks",
        "lines",
        "regions",
        "insns",
        "loops",
        "checkpoints",
        "miss_reasons",
        "failing_path",
    ] {
        assert!(r.get(key).is_some(), "no {key}");
    }
    assert_eq!(r["verdict"], "accepted");
    assert!(r["failing_path"].is_null());
    let line = &r["lines"][0];
    for key in [
        "file",
        "line",
        "text",
        "processed_insns",
        "states",
        "prune_hits",
        "prune_misses",
        "precision_walks",
        "insns",
        "loop",
    ] {
        assert!(line.get(key).is_some(), "line has no {key}: {line}");
    }
    // Hottest first.
    let costs: Vec<u64> = r["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| u(l, "processed_insns"))
        .collect();
    assert!(costs.windows(2).all(|w| w[0] >= w[1]), "{costs:?}");
    // Every failed comparison has its first difference.
    let misses = u(r, "prune_misses");
    assert!(misses > 0);
    let reasons: u64 = r["miss_reasons"]
        .as_array()
        .expect("miss_reasons")
        .iter()
        .map(|m| u(m, "count"))
        .sum();
    assert_eq!(reasons, misses);
    let by_checkpoint: u64 = r["checkpoints"]
        .as_array()
        .expect("checkpoints")
        .iter()
        .map(|c| u(c, "misses"))
        .sum();
    assert_eq!(by_checkpoint, misses);
    let reason = &r["checkpoints"][0]["reasons"][0];
    for key in ["what", "count", "precise", "old", "cur"] {
        assert!(reason.get(key).is_some(), "reason has no {key}: {reason}");
    }
}

#[test]
fn loops_count_the_visits_of_their_entry() {
    // A bounded loop the verifier walks iteration by iteration until the
    // insn limit.
    let r = &explain_json(&progs_dir().join("reject_too_complex.bpf.o"), &[])[0];
    assert_eq!(r["verdict"], "limit");
    let loops = r["loops"].as_array().expect("loops");
    assert!(!loops.is_empty());
    let lp = &loops[0];
    // Most of the work is in the loop, and its entry is reached once per
    // iteration: many times.
    assert!(
        u(lp, "processed_insns") * 2 > u(r, "processed_insns"),
        "{lp}"
    );
    assert!(u(lp, "head_visits") > 1000, "{lp}");
    let id = u(lp, "id");
    assert!(r["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .any(|l| l["loop"].as_u64() == Some(id)));
}

#[test]
fn rejected_path_ends_at_the_failing_insn() {
    let mut with_path = 0;
    for obj in objects() {
        let name = obj
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        if !name.starts_with("reject_") {
            continue;
        }
        for r in explain_json(&obj, &[]) {
            if r["verdict"] != "rejected" {
                continue;
            }
            let Some(insn) = r["error_insn"].as_u64() else {
                // A whole-program check (stack depth): no path.
                continue;
            };
            let steps = r["failing_path"]["steps"].as_array().expect("steps");
            let last = steps.last().unwrap_or_else(|| panic!("{name}: no steps"));
            assert_eq!(u(last, "insn"), insn, "{name}");
            // Every step but the last goes on to the next: a jump on the
            // path says which way it went.
            for w in steps.windows(2) {
                if let Some(b) = w[0]["branch"].as_str() {
                    let (from, to) = (u(&w[0], "insn"), u(&w[1], "insn"));
                    assert_eq!(b == "not taken", to == from + 1, "{name}: {w:?}");
                }
            }
            with_path += 1;
        }
    }
    assert!(with_path >= 10, "only {with_path} rejections with a path");

    // The failure's detail line, and the branch that led to it.
    let r = &explain_json(&progs_dir().join("reject_pkt_oob.bpf.o"), &[])[0];
    let details = r["failing_path"]["details"].as_array().expect("details");
    assert!(details.iter().any(|d| d
        .as_str()
        .unwrap_or("")
        .starts_with("invalid access to packet")));
    let r = &explain_json(&progs_dir().join("reject_spin_lock_leak.bpf.o"), &[])[0];
    let steps = r["failing_path"]["steps"].as_array().expect("steps");
    assert!(steps.iter().any(|s| s["branch"] == "taken"), "{steps:?}");
}

#[test]
fn verify_explain_prints_the_report() {
    let obj = progs_dir().join("reject_pkt_oob.bpf.o");
    let out = bpfvet(&["verify", "--explain", obj.to_str().expect("utf-8 path")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Failing path"), "{text}");
    assert!(text.contains("Hot lines"), "{text}");
    assert_eq!(out.status.code(), Some(1));
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

#[test]
fn html_report_runs_in_headless_chromium_without_console_messages() {
    let dir = std::env::temp_dir().join(format!("bpfvet-explain-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let html = dir.join("report.html");
    let obj = progs_dir().join("reject_spin_lock_leak.bpf.o");
    let out = bpfvet(&[
        "explain",
        "-o",
        "html",
        "--out",
        html.to_str().expect("utf-8 path"),
        obj.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let page = std::fs::read_to_string(&html).expect("report written");
    // Self-contained: nothing to fetch.
    for external in ["src=", "http://", "https://", "<link"] {
        assert!(!page.contains(external), "{external}");
    }
    assert!(page.contains("Failing path"));
    let Some(browser) = chromium() else {
        eprintln!("SKIP: no chromium in PATH (apt install chromium) to open the HTML report");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--user-data-dir={}", dir.join("profile").display()),
            "--dump-dom",
        ])
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    // Console messages (errors, uncaught exceptions, CSP violations) are
    // logged as CONSOLE lines.
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "{console:#?}");
    // The script ran to its end.
    assert!(dom.contains("data-report-ready=\"1\""), "{log}");
}
