//! Differential run: every program of every object under the given paths,
//! verified by bpfvet and loaded by the host kernel. Prints one CSV row per
//! program (stdout). Used by bench/verifier_corpus/run.sh to regenerate the
//! committed report. `--prog-types FILE` gives programs whose section names
//! no type the type of the first `<glob>\t<type>` line matching their path.

use bpfvet_isa::uapi::ProgType;
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

/// `*` matches any run of characters (slashes included).
fn glob_match(pat: &str, s: &str) -> bool {
    let mut parts = pat.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = s.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

fn read_prog_types(path: &str) -> Vec<(String, ProgType)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (glob, name) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("{path}: {l:?}"));
            let t = ProgType::from_name(name.trim())
                .unwrap_or_else(|| panic!("{path}: unknown program type {name:?}"));
            (glob.to_string(), t)
        })
        .collect()
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
    let mut prog_types = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--prog-types" {
            prog_types = read_prog_types(&args.next().expect("--prog-types FILE"));
        } else {
            objects(Path::new(&a), &mut files);
        }
    }
    println!("file,prog,kernel,bpfvet,agree,kernel_insns,bpfvet_insns,kernel_error,bpfvet_error,assigned_type");
    for f in files {
        let name = f.display().to_string();
        let mut obj = match Object::from_file(&f, &LoadOptions::default()) {
            Ok(o) => o,
            Err(e) => {
                println!(
                    "{name},,load_error,load_error,yes,,,{},,",
                    csv(&e.to_string())
                );
                continue;
            }
        };
        let assigned = prog_types
            .iter()
            .find(|(glob, _)| glob_match(glob, &name))
            .map(|(_, t)| *t);
        let mut assigned_to = vec![false; obj.programs.len()];
        if let Some(t) = assigned {
            for (p, was_set) in obj.programs.iter_mut().zip(&mut assigned_to) {
                if p.prog_type == ProgType::UNSPEC {
                    p.prog_type = t;
                    *was_set = true;
                }
            }
        }
        let session = kernel.open_object(&obj);
        for (i, p) in obj.programs.iter().enumerate() {
            let ours = verify(&obj, i, &Options::default());
            let (bv, be) = match &ours.verdict {
                Verdict::Accepted => ("accepted", String::new()),
                Verdict::Rejected { error, .. } => ("rejected", error.clone()),
                Verdict::LimitExceeded { error, .. } => ("rejected", error.clone()),
                Verdict::Unsupported { what, .. } => ("refused", what.clone()),
            };
            let Some(rep) = session.load_program(i, &Default::default()) else {
                continue;
            };
            let last = bpfvet_kernel::report::last_error_line(&rep.log)
                .unwrap_or("")
                .to_string();
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
            let assigned_type = match (assigned_to[i], assigned) {
                (true, Some(t)) => t.name().unwrap_or("?").to_string(),
                _ => String::new(),
            };
            println!(
                "{name},{},{kv},{bv},{agree},{},{},{},{},{assigned_type}",
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
