//! Every helper call in the shared corpus (../shared/corpus/ebpf-samples,
//! outside invalid/) resolves to a prototype for its program's type, or is
//! refused by the host kernel too (a few samples call helpers this host
//! forbids: lockdown, CONFIG_BPF_KPROBE_OVERRIDE, a socket filter
//! reallocating its packet on purpose).

mod tables_support;

use bpfvet_isa::uapi::ProgType;
use bpfvet_object::{LoadOptions, Object};
use bpfvet_verifier::helpers::helper_proto;
use std::path::{Path, PathBuf};
use tables_support::*;

fn objects(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && p.file_name().is_some_and(|n| n != "invalid") {
            objects(&p, out);
        } else if p.extension().is_some_and(|x| x == "o") {
            out.push(p);
        }
    }
}

#[test]
fn corpus_helper_calls_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/ebpf-samples");
    let mut files = Vec::new();
    objects(&root, &mut files);
    if files.is_empty() {
        println!("SKIP: no corpus at {}", root.display());
        return;
    }
    let mut refused = Vec::new();
    let mut calls = 0;
    let mut ids = std::collections::BTreeSet::new();
    for f in &files {
        let Ok(obj) = Object::from_file(f, &LoadOptions::default()) else {
            continue;
        };
        for prog in &obj.programs {
            if prog.prog_type == ProgType::UNSPEC {
                continue;
            }
            for insn in prog.insns.iter().filter(|i| i.code == 0x85 && i.src == 0) {
                calls += 1;
                let id = insn.imm as u32;
                ids.insert(id);
                if let Err(e) = helper_proto(id, prog.prog_type, prog.expected_attach_type) {
                    refused.push((
                        f.clone(),
                        prog.name.clone(),
                        prog.prog_type,
                        prog.expected_attach_type,
                        id,
                        e,
                    ));
                }
            }
        }
    }
    println!(
        "{calls} helper calls, {} distinct helpers: {ids:?}",
        ids.len()
    );
    assert!(calls > 0, "no helper calls found in the corpus");
    if let Some(why) = kernel_unavailable() {
        println!("SKIP: refusals not checked against the kernel: {why}");
        return;
    }
    let mut failures = Vec::new();
    for (file, name, prog_type, attach, id, ours) in &refused {
        let spec = LoadSpec {
            prog_type: prog_type.0,
            expected_attach_type: attach.map_or(0, |a| a.0),
            ..Default::default()
        };
        let r = load(&spec, &[call(*id), mov_r0(1), exit()]);
        println!(
            "{} {name}: refused as the kernel: {}",
            file.display(),
            r.last_error_line()
        );
        if r.last_error_line() != ours.to_string() {
            failures.push(format!(
                "{} {name} ({prog_type}): ours {ours}, kernel {:?}",
                file.display(),
                r.last_error_line()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
