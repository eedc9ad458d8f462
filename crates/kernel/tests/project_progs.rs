//! The project's own programs (tests/progs) through the kernel backend:
//! every verdict and the processed insns / states / peak states must equal
//! tests/progs/EXPECTED.md (measured there with a libbpf loader), and for
//! accepted programs bpf_prog_info.verified_insns must equal the log's
//! "processed N insns". Needs root and the bpf() syscall; prints SKIP
//! otherwise.

use bpfvet_kernel::{Kernel, LoadOptions, Verdict};
use bpfvet_object::{LoadOptions as ObjectOptions, Object};
use std::collections::BTreeMap;
use std::path::PathBuf;

struct Expected {
    object: String,
    accepted: bool,
    insns: u64,
    states: u64,
    peak: u64,
    /// For rejections, the kernel's error line quoted in the note.
    error: Option<String>,
}

fn number(s: &str) -> u64 {
    s.replace(',', "")
        .trim()
        .parse()
        .expect("number in EXPECTED.md")
}

/// Rows of the first table of EXPECTED.md, by program name.
fn expected(text: &str) -> BTreeMap<String, Expected> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | program | object | section | verdict | insns | states | peak | note |
        // "-": libbpf did not load it (objects built for other loaders).
        if cells.len() < 10 || !cells[2].ends_with(".bpf.o") || cells[5] == "-" {
            continue;
        }
        let error = cells[8]
            .strip_prefix('`')
            .and_then(|n| n.split('`').next())
            .map(str::to_string);
        out.insert(
            cells[1].to_string(),
            Expected {
                object: cells[2].to_string(),
                accepted: cells[4] == "success",
                insns: number(cells[5]),
                states: number(cells[6]),
                peak: number(cells[7]),
                error,
            },
        );
    }
    out
}

/// The host kernel, or None after printing SKIP when bpf() is missing.
fn kernel() -> Option<Kernel> {
    match Kernel::open() {
        Ok(k) => Some(k),
        Err(e) => {
            println!("SKIP: {e}");
            None
        }
    }
}

fn progs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs")
}

#[test]
fn kernel_figures_match_expected_md() {
    let Some(kernel) = kernel() else { return };
    let dir = progs_dir();
    let Ok(text) = std::fs::read_to_string(dir.join("EXPECTED.md")) else {
        println!("SKIP: tests/progs/EXPECTED.md not found");
        return;
    };
    let want = expected(&text);
    assert!(
        want.len() >= 40,
        "EXPECTED.md table parsed: {} rows",
        want.len()
    );
    let mut opts = ObjectOptions::default();
    opts.preload_target().expect("vmlinux BTF");
    // Stats only: cheap, and the kernel still writes the error line.
    let load = LoadOptions::default();

    let mut objects: BTreeMap<&str, Vec<(&String, &Expected)>> = BTreeMap::new();
    for (prog, e) in &want {
        objects
            .entry(e.object.as_str())
            .or_default()
            .push((prog, e));
    }
    let mut checked = 0;
    let mut failures = Vec::new();
    for (file, progs) in objects {
        let obj =
            Object::from_file(dir.join(file), &opts).unwrap_or_else(|e| panic!("{file}: {e}"));
        let session = kernel.open_object(&obj);
        for (name, e) in progs {
            let idx = obj
                .programs
                .iter()
                .position(|p| &p.name == name)
                .unwrap_or_else(|| panic!("{file} has no program {name}"));
            let r = session.load_program(idx, &load).unwrap();
            let got = (
                r.verdict == Verdict::Accepted,
                r.processed_insns(),
                r.stats.total_states,
                r.stats.peak_states,
            );
            let exp = (e.accepted, Some(e.insns), Some(e.states), Some(e.peak));
            if got != exp {
                failures.push(format!(
                    "{file}/{name}: got {got:?}, EXPECTED.md {exp:?}; verdict {:?}",
                    r.verdict
                ));
                continue;
            }
            if r.verdict == Verdict::Accepted {
                assert_eq!(
                    r.verified_insns.map(u64::from),
                    r.stats.processed_insns,
                    "{name}"
                );
            } else {
                assert_eq!(r.verdict, Verdict::Rejected, "{name}");
                if let Some(err) = &e.error {
                    assert!(
                        r.log.contains(err.as_str()),
                        "{name}: log lacks `{err}`:\n{}",
                        r.log
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!("checked {checked} programs against EXPECTED.md");
}

/// bpfvet's prediction of BPF_BTF_LOAD (`Object::btf_refused`) equals the
/// kernel's answer on every object of tests/progs, reason included, and the
/// objects include one whose BTF the kernel refuses.
#[test]
fn btf_refusals_match_the_kernel() {
    let Some(kernel) = kernel() else { return };
    let dir = progs_dir();
    let mut opts = ObjectOptions::default();
    opts.preload_target().expect("vmlinux BTF");
    let mut objects: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/progs")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".bpf.o"))
        .collect();
    objects.sort();
    let mut refused = 0;
    for path in &objects {
        let Ok(obj) = Object::from_file(path, &opts) else {
            continue;
        };
        if obj.btf_raw.is_none() {
            continue;
        }
        let kernel_says = kernel.open_object(&obj).btf_error.map(|e| e.message);
        assert_eq!(obj.btf_refused, kernel_says, "{}", path.display());
        refused += kernel_says.is_some() as usize;
    }
    assert!(refused >= 1, "no object of tests/progs has a refused BTF");
    println!("{} objects, {refused} with a refused BTF", objects.len());
}
