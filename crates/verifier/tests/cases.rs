//! Verifier behaviour tests written as small programs in the kernel-log
//! syntax (tests/cases/*.case), one behaviour per file. Directives at the
//! top say what must happen:
//!
//! ```text
//! # prog_type: xdp                 (libbpf's name; default socket_filter)
//! # verdict: reject                (accept | reject)
//! # error: R2 !read_ok             (for reject: the kernel's error line)
//! # processed: 3                   (optional: processed insns)
//! # states: 0                      (optional: total_states)
//! ```
//!
//! Each case is checked against bpfvet and, when the host kernel can load
//! programs (root and a working bpf(2)), replayed against the kernel too,
//! so every expectation is also checked against the oracle.

use bpfvet_isa::uapi::ProgType;
use bpfvet_kernel::{oracle, Errno};
use bpfvet_object::Object;
use bpfvet_verifier::{verify, Options, Verdict};
use std::path::PathBuf;

struct Case {
    name: String,
    prog_type: ProgType,
    accept: bool,
    error: Option<String>,
    processed: Option<u64>,
    states: Option<u64>,
    text: String,
}

fn parse(name: &str, src: &str) -> Case {
    let mut c = Case {
        name: name.to_string(),
        prog_type: ProgType::SOCKET_FILTER,
        accept: true,
        error: None,
        processed: None,
        states: None,
        text: String::new(),
    };
    for line in src.lines() {
        if let Some(d) = line.strip_prefix("# ") {
            if let Some((k, v)) = d.split_once(':') {
                let v = v.trim();
                match k.trim() {
                    "prog_type" => c.prog_type = ProgType::from_name(v).expect("known prog type"),
                    "verdict" => c.accept = v == "accept",
                    "error" => c.error = Some(v.to_string()),
                    "processed" => c.processed = Some(v.parse().expect("number")),
                    "states" => c.states = Some(v.parse().expect("number")),
                    _ => {}
                }
                continue;
            }
        }
        c.text.push_str(line);
        c.text.push('\n');
    }
    c
}

fn object(c: &Case) -> Object {
    let insns =
        bpfvet_isa::asm::assemble_insns(&c.text).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    Object::single_program(&c.name, c.prog_type, insns)
}

/// What the host kernel says: (accepted, last log line, processed insns, log).
fn kernel_load(obj: &Object) -> Option<(bool, String, Option<u64>, String)> {
    let p = &obj.programs[0];
    let v = oracle::load(&oracle::RawProgram::new(p.prog_type.0, &p.insns));
    if matches!(v.errno(), Some(Errno::EPERM | Errno::ENOSYS)) {
        return None;
    }
    Some((
        v.accepted(),
        v.error_line().to_string(),
        v.processed_insns(),
        v.log.clone(),
    ))
}

#[test]
fn cases() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("cases dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "case"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut failures = Vec::new();
    let mut kernel_checked = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let c = parse(&name, &std::fs::read_to_string(f).unwrap());
        let obj = object(&c);
        let out = verify(&obj, 0, &Options::default());
        match (&out.verdict, c.accept) {
            (Verdict::Accepted, true) => {}
            (Verdict::Rejected { error, .. }, false) => {
                if let Some(want) = &c.error {
                    if error != want {
                        failures.push(format!("{name}: error {error:?}, expected {want:?}"));
                    }
                }
            }
            (v, _) => failures.push(format!(
                "{name}: verdict {v:?}, expected accept={}",
                c.accept
            )),
        }
        if let Some(n) = c.processed {
            if out.stats.processed_insns != n {
                failures.push(format!(
                    "{name}: processed {} expected {n}",
                    out.stats.processed_insns
                ));
            }
        }
        if let Some(n) = c.states {
            if out.stats.total_states != n {
                failures.push(format!(
                    "{name}: states {} expected {n}",
                    out.stats.total_states
                ));
            }
        }
        // The same expectations against the oracle.
        if let Some((ok, last, processed, log)) = kernel_load(&obj) {
            kernel_checked += 1;
            if ok != c.accept {
                failures.push(format!("{name}: KERNEL verdict accept={ok} ({last})"));
            }
            // The error is the log's last line, except where the kernel
            // prints states after it (infinite loops): then it is a line.
            if let (false, Some(want)) = (ok, &c.error) {
                if &last != want && !log.lines().any(|l| l == want) {
                    failures.push(format!("{name}: KERNEL error {last:?}, expected {want:?}"));
                }
            }
            if let (Some(n), Some(k)) = (c.processed, processed) {
                if n != k {
                    failures.push(format!("{name}: KERNEL processed {k}, expected {n}"));
                }
            }
        }
    }
    if kernel_checked == 0 {
        println!("SKIP: host kernel replay (needs root and a working bpf(2) syscall)");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
