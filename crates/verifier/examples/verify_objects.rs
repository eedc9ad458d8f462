//! Verifies every program of the given `.bpf.o` files with the bpfvet
//! verifier and prints one CSV row per program:
//! file,prog,verdict,processed,total_states,peak_states,error.

use bpfvet_object::{LoadOptions, Object};
use bpfvet_verifier::{verify, Options, Verdict};

fn main() {
    let mut opts = Options::default();
    let mut files = Vec::new();
    let mut only: Option<String> = None;
    for a in std::env::args().skip(1) {
        if a == "--baseline-idmap" {
            opts.baselines.idmap_memset = true;
        } else if a == "--baseline-backtrack" {
            opts.baselines.backtrack_no_skip = true;
        } else if a == "--baseline-alloc" {
            opts.baselines.state_nodes_plain_alloc = true;
        } else if a == "--baseline-sync-memo" {
            opts.baselines.sync_no_memo = true;
        } else if a == "--baseline-miss-hint" {
            opts.baselines.prune_no_miss_hint = true;
        } else if let Some(p) = a.strip_prefix("--prog=") {
            only = Some(p.to_string());
        } else if let Some(l) = a.strip_prefix("--log=") {
            opts.log_level = l.parse().unwrap_or(0);
        } else {
            files.push(a);
        }
    }
    for f in files {
        let obj = match Object::from_file(&f, &LoadOptions::default()) {
            Ok(o) => o,
            Err(e) => {
                println!("{f},,load_error,,,,{e}");
                continue;
            }
        };
        if std::env::var("DUMP_MAPS").is_ok() {
            dump(&obj);
        }
        for (i, p) in obj.programs.iter().enumerate() {
            if only.as_ref().is_some_and(|o| *o != p.name) {
                continue;
            }
            let out = verify(&obj, i, &opts);
            let (v, e) = match &out.verdict {
                Verdict::Accepted => ("accepted", String::new()),
                Verdict::Rejected { error, insn, .. } => {
                    ("rejected", format!("{error} (insn {insn:?})"))
                }
                Verdict::LimitExceeded { error, .. } => ("limit", error.clone()),
                Verdict::Unsupported { what, .. } => ("refused", what.clone()),
            };
            println!(
                "{f},{},{v},{},{},{},{:?},{e}",
                p.name,
                out.stats.processed_insns,
                out.stats.total_states,
                out.stats.peak_states,
                out.stats.duration
            );
            if std::env::var("SHOW_STATS").is_ok() {
                eprintln!("{:#?}", out.stats);
            }
            if opts.log_level > 0 {
                eprintln!("{}", out.log);
            }
        }
    }
}
#[allow(dead_code)]
fn dump(obj: &Object) {
    for m in &obj.maps {
        eprintln!(
            "{} {:?} k{} v{} inner={:?}",
            m.name,
            m.map_type,
            m.key_size,
            m.value_size,
            m.inner
                .as_ref()
                .map(|i| (i.map_type, i.key_size, i.value_size))
        );
    }
}
