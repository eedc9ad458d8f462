//! The host kernel as oracle for the loader and `dump --disasm`: every
//! project program is loaded with log level 2 and each instruction line the
//! kernel prints must equal our disassembly of the same instruction of the
//! stream the loader built. Needs root and bpf(2); prints SKIP otherwise.

use std::path::Path;
use std::sync::Arc;

use bpfvet_isa::disasm::{parse_log_line, write_insn, Symbols};
use bpfvet_isa::opcode::BPF_PSEUDO_FUNC;
use bpfvet_isa::Ld64Kind;
use bpfvet_object::btf::Btf;
use bpfvet_object::{LoadOptions, Object, TargetBtf};

/// kfunc names come from vmlinux BTF, as the kernel prints them.
struct Vmlinux<'a>(&'a Btf);

impl Symbols for Vmlinux<'_> {
    fn kfunc_name(&self, btf_id: i32, btf_fd_idx: i16) -> Option<&str> {
        (btf_fd_idx == 0).then(|| self.0.name_of(btf_id as u32))
    }

    /// The kernel prints a callback's LD_IMM64 as its raw relative offset.
    fn ld_imm64_value(&self, kind: Ld64Kind, imm: i32, _next_imm: i32) -> Option<u64> {
        (kind == Ld64Kind::Func).then_some(imm as u32 as u64)
    }
}

#[test]
fn kernel_log_matches_loader_disassembly() {
    let kernel = match bpfvet_kernel::Kernel::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    let Ok(bytes) = std::fs::read("/sys/kernel/btf/vmlinux") else {
        println!("SKIP: /sys/kernel/btf/vmlinux not readable");
        return;
    };
    let vmlinux = Arc::new(Btf::from_bytes(&bytes).unwrap());
    let opts = LoadOptions {
        target_btf: TargetBtf::Loaded(vmlinux.clone()),
        ..LoadOptions::default()
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        println!("SKIP: tests/progs missing");
        return;
    };
    let mut files: Vec<_> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "o"))
        .collect();
    files.sort();
    let syms = Vmlinux(&vmlinux);
    // One fixed buffer, filled from the start (BPF_LOG_FIXED = 8): 6.18 lists
    // every instruction at the top of a level-2 log, so a truncated log
    // (ENOSPC on the stress programs) still covers the whole program, and
    // the load is not retried with bigger buffers.
    let load_opts = bpfvet_kernel::LoadOptions {
        log_level: 2 | 8,
        log_size: 16 << 20,
        log_size_cap: 16 << 20,
        ..Default::default()
    };
    let (mut programs, mut compared) = (0, 0);
    let mut mismatches = Vec::new();
    for f in &files {
        let obj = Object::from_file(f, &opts).unwrap();
        let session = kernel.open_object(&obj);
        for (i, prog) in obj.programs.iter().enumerate() {
            let Some(report) = session.load_program(i, &load_opts) else {
                continue;
            };
            let decoded = bpfvet_isa::decode_program(&prog.insns).unwrap();
            let by_pc: std::collections::HashMap<usize, _> =
                decoded.iter().map(|l| (l.pc, l.insn)).collect();
            let mut seen = 0;
            for line in report.log.lines() {
                let Some(k) = parse_log_line(line) else {
                    continue;
                };
                let Some(insn) = by_pc.get(&k.pc) else {
                    mismatches.push(format!(
                        "{}: {}: kernel pc {} is not an instruction start",
                        f.display(),
                        prog.name,
                        k.pc
                    ));
                    continue;
                };
                let mut ours = String::new();
                write_insn(&mut ours, insn, &syms).unwrap();
                let raw = prog.insns[k.pc];
                // The kernel prints the loaded object's address for map and
                // BTF-id loads: compare up to the value.
                let pseudo_ld = raw.is_ld_imm64() && raw.src != 0 && raw.src != BPF_PSEUDO_FUNC;
                let same = if pseudo_ld {
                    ours.split_once(" = ").map(|x| x.0) == k.text.split_once(" = ").map(|x| x.0)
                } else {
                    ours == k.text
                };
                if k.code != raw.code || !same {
                    mismatches.push(format!(
                        "{}: {} pc {}: kernel `({:02x}) {}` ours `({:02x}) {ours}`",
                        f.display(),
                        prog.name,
                        k.pc,
                        k.code,
                        k.text,
                        raw.code
                    ));
                }
                seen += 1;
            }
            if seen > 0 {
                programs += 1;
                compared += seen;
            }
        }
    }
    println!("compared {compared} kernel log lines over {programs} programs");
    assert!(programs > 0, "the kernel printed no instruction lines");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
