//! Differential run: every program of every object under the given paths,
//! verified by bpfvet and loaded by the host kernel. Prints one CSV row per
//! program (stdout) and a summary (stderr). Used by
//! bench/verifier_corpus/run.sh to regenerate the committed report.

use bpfvet_kernel::{Kernel, Verdict as KVerdict};
use bpfvet_object::{LoadOptions, Object};
use bpfvet_verifier::{verify, Options, Verdict};
use std::path::{Path, PathBuf};

fn objects(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut v: Vec<_> = std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        for e in v {
            objects(&e, out);
        }
    } else if p.extension().is_some_and(|e| e == "o") {
        out.push(p.to_path_buf());
    }
}

fn csv(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "'"))
}

fn main() {
    let kernel = match Kernel::open() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("SKIP: {e}");
            return;
        }
    };
    let mut files = Vec::new();
    for a in std::env::args().skip(1) {
        objects(Path::new(&a), &mut files);
    }
    println!("file,prog,kernel,bpfvet,agree,kernel_insns,bpfvet_insns,kernel_error,bpfvet_error");
    for f in files {
        let name = f.display().to_string();
        let obj = match Object::from_file(&f, &LoadOptions::default()) {
            Ok(o) => o,
            Err(e) => {
                println!(
                    "{name},,load_error,load_error,yes,,,{},",
                    csv(&e.to_string())
                );
                continue;
            }
        };
        let session = kernel.open_object(&obj);
        for (i, p) in obj.programs.iter().enumerate() {
            let ours = verify(&obj, i, &Options::default());
            let (bv, be) = match &ours.verdict {
                Verdict::Accepted => ("accepted", String::new()),
                Verdict::Rejected { error, .. } => ("rejected", error.clone()),
                Verdict::LimitExceeded { error, .. } => ("rejected", error.clone()),
            };
            let Some(rep) = session.load_program(i, &Default::default()) else {
                continue;
            };
            let last = rep
                .log
                .lines()
                .rfind(|l| {
                    !l.is_empty()
                        && !l.starts_with("processed ")
                        && !l.starts_with("verification time")
                        && !l.starts_with("stack depth")
                        && !l.starts_with("; ")
                })
                .unwrap_or("")
                .to_string();
            // A message printed without a newline runs into the stats line.
            let last = match last.find("verification time") {
                Some(i) => last[..i].to_string(),
                None => last,
            };
            let (kv, ke) = match &rep.verdict {
                KVerdict::Accepted => ("accepted", String::new()),
                KVerdict::Rejected => ("rejected", last),
                KVerdict::Refused(r) => ("refused", r.to_string()),
            };
            let agree = if kv == "refused" {
                "n/a"
            } else if kv == bv && (kv == "accepted" || ke == be) {
                "yes"
            } else if kv == bv {
                "verdict"
            } else {
                "no"
            };
            println!(
                "{name},{},{kv},{bv},{agree},{},{},{},{}",
                p.name,
                rep.processed_insns()
                    .map(|n| n.to_string())
                    .unwrap_or_default(),
                ours.stats.processed_insns,
                csv(&ke),
                csv(&be)
            );
        }
    }
}
