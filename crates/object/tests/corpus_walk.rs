//! Walks ../shared/corpus/ebpf-samples (when present): every file must load
//! or fail with a typed error naming the file, never panic.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bpfvet_object::{LoadOptions, Object};

/// Files under invalid/ that are well-formed objects: what is wrong with
/// them is for a verifier to find (a verification timeout, an unsafe
/// program, a fuzzed DWARF section name), not for the loader.
const LOADABLE_INVALID: &[&str] = &[
    "dac31099c3bb5b6395908c82cc8540e77a6a1849",
    "ef2e42c0bfcf4dab6b9c3926759365b6dfa73634",
    "timeout-29db93548c671165313b314d4f83a3eefa24df37",
];

fn corpus() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/ebpf-samples");
    p.is_dir().then_some(p)
}

fn walk(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(p)
            .expect("readable dir")
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for e in entries {
            walk(&e, out);
        }
    } else {
        out.push(p.to_owned());
    }
}

#[test]
fn corpus_loads_or_fails_cleanly() {
    let Some(root) = corpus() else {
        println!("SKIP: ../shared/corpus/ebpf-samples not present");
        return;
    };
    let mut files = Vec::new();
    walk(&root, &mut files);
    assert!(files.len() >= 145, "corpus has {} files", files.len());
    let opts = LoadOptions::offline();
    let (mut loaded, mut programs, mut insns) = (0, 0, 0usize);
    let mut rejected: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut slowest = (Duration::ZERO, PathBuf::new());
    for f in &files {
        let in_invalid = f.parent().is_some_and(|d| d.ends_with("invalid"));
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let t = Instant::now();
        let res = catch_unwind(AssertUnwindSafe(|| Object::from_file(f, &opts)))
            .unwrap_or_else(|_| panic!("loader panicked on {}", f.display()));
        let took = t.elapsed();
        if took > slowest.0 {
            slowest = (took, f.clone());
        }
        match res {
            Ok(o) => {
                assert!(
                    !in_invalid || LOADABLE_INVALID.contains(&name.as_str()),
                    "malformed {} loaded",
                    f.display()
                );
                loaded += 1;
                programs += o.programs.len();
                insns += o.programs.iter().map(|p| p.insns.len()).sum::<usize>();
                for p in &o.programs {
                    assert!(
                        !p.insns.is_empty(),
                        "{}: empty program {}",
                        f.display(),
                        p.name
                    );
                }
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains(&name), "error does not name the file: {msg}");
                assert!(e.section.is_some(), "error does not name a section: {msg}");
                assert!(
                    in_invalid,
                    "{} failed but is not under invalid/: {msg}",
                    f.display()
                );
                rejected
                    .entry(e.kind.tag().to_owned())
                    .or_default()
                    .push(msg);
            }
        }
    }
    println!(
        "corpus: {} files, {loaded} objects loaded, {programs} programs ({insns} insns), {} rejected",
        files.len(),
        rejected.values().map(Vec::len).sum::<usize>()
    );
    for (tag, msgs) in &rejected {
        println!("  rejected ({tag}): {}", msgs.len());
        for m in msgs {
            println!("    {m}");
        }
    }
    println!("slowest: {:?} {}", slowest.0, slowest.1.display());
    let invalid_total = files
        .iter()
        .filter(|f| f.parent().is_some_and(|d| d.ends_with("invalid")))
        .count();
    assert_eq!(
        rejected.values().map(Vec::len).sum::<usize>(),
        invalid_total - LOADABLE_INVALID.len()
    );
}
