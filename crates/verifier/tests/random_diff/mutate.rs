//! Mutation of real programs: programs of real objects (loaded by the
//! project's loader) get one to three instruction mutations (registers,
//! offsets, immediates, operations, widths, ALU/JMP class, helper ids;
//! never the map-reference LD_IMM64s or bpf-to-bpf calls, so the program
//! keeps its maps, BTF and layout), and both verifiers judge each mutant.
//! Programs the kernel refuses unmutated (they need an attach target or
//! something else the backend cannot give) are skipped.

use super::batch::class_key;
use super::diff::{classify, ours_text, run_ours, run_theirs, theirs_text, Class, Ours, Theirs};
use super::gen::Rng;
use bpfvet_isa::disasm::{disasm_program, NoSymbols};
use bpfvet_isa::Insn;
use bpfvet_kernel::Kernel;
use bpfvet_object::{LoadOptions, Object};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct Config {
    pub dir: PathBuf,
    pub objects: Vec<PathBuf>,
    pub mutants_per_prog: u64,
    pub seed: u64,
    /// Programs longer than this are skipped (each mutant costs a full
    /// verification on both sides).
    pub max_insns: usize,
}

/// The first line of mutate.tsv.
pub const TSV_HEADER: &str = "object\tprogram\tmutant\tclass\tkernel_verdict\tkernel_error\tbpfvet_verdict\tbpfvet_error\tkernel_insns\tbpfvet_insns\tmutations";

fn mutable(insns: &[Insn], i: usize) -> bool {
    let ins = insns[i];
    let second_slot = i > 0 && insns[i - 1].is_ld_imm64();
    let pseudo_call = ins.code == 0x85 && ins.src != 0;
    !ins.is_ld_imm64() && !second_slot && !pseudo_call
}

/// One to three mutations of `insns`, with what was done.
pub fn mutate(rng: &mut Rng, insns: &[Insn]) -> Option<(Vec<Insn>, String)> {
    let eligible: Vec<usize> = (0..insns.len()).filter(|&i| mutable(insns, i)).collect();
    if eligible.is_empty() {
        return None;
    }
    let mut out = insns.to_vec();
    let mut what = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let i = eligible[rng.below(eligible.len() as u64) as usize];
        let ins = &mut out[i];
        let class = ins.code & 0x07;
        let desc = match rng.below(8) {
            0 => {
                ins.dst = rng.below(11) as u8;
                "dst"
            }
            1 => {
                ins.src = rng.below(11) as u8;
                "src"
            }
            2 => {
                let d = [-8i16, -4, -2, -1, 1, 2, 4, 8][rng.below(8) as usize];
                ins.off = ins.off.wrapping_add(d);
                "off"
            }
            3 => {
                ins.imm = match rng.below(4) {
                    0 => ins.imm ^ (1 << rng.below(32)),
                    1 => ins.imm.wrapping_add(rng.below(17) as i32 - 8),
                    2 => [0, 1, -1, 8, 64, 4096, i32::MIN][rng.below(7) as usize],
                    _ => rng.next() as i32,
                };
                "imm"
            }
            4 if matches!(class, 0x04 | 0x07) => {
                let ops = [
                    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0,
                ];
                ins.code = (ins.code & 0x0f) | ops[rng.below(ops.len() as u64) as usize];
                "alu op"
            }
            4 if matches!(class, 0x05 | 0x06) && !matches!(ins.code & 0xf0, 0x80 | 0x90) => {
                let ops = [
                    0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0xa0, 0xb0, 0xc0, 0xd0,
                ];
                ins.code = (ins.code & 0x0f) | ops[rng.below(ops.len() as u64) as usize];
                "jmp op"
            }
            4 | 5 if matches!(class, 0x01..=0x03) => {
                ins.code = (ins.code & !0x18) | [0x00, 0x08, 0x10, 0x18][rng.below(4) as usize];
                "width"
            }
            5 if matches!(class, 0x04 | 0x07) => {
                ins.code ^= 0x03;
                "alu32/64"
            }
            5 if matches!(class, 0x05 | 0x06) && !matches!(ins.code & 0xf0, 0x80 | 0x90) => {
                ins.code ^= 0x03;
                "jmp32/64"
            }
            6 if ins.code == 0x85 && ins.src == 0 => {
                let ids = [1, 2, 3, 5, 7, 8, 12, 14, 16, 25, 26, 51, 113, 130, 131, 181];
                ins.imm = ids[rng.below(ids.len() as u64) as usize];
                "helper"
            }
            6 => {
                // K <-> X source.
                if matches!(class, 0x04..=0x07) {
                    ins.code ^= 0x08;
                }
                "k/x"
            }
            _ => {
                // Swap with the next mutable instruction.
                if i + 1 < out.len() && mutable(&out, i + 1) {
                    out.swap(i, i + 1);
                }
                "swap"
            }
        };
        what.push(format!("{i}:{desc}"));
    }
    Some((out, what.join(" ")))
}

fn field(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

fn cols(o: &Ours, t: &Theirs) -> [String; 6] {
    let (kv, ke, ki) = match t {
        Theirs::Accepted { insns } => (
            "accept",
            String::new(),
            insns.map_or(String::new(), |n| n.to_string()),
        ),
        Theirs::Rejected(e) => ("reject", field(e), String::new()),
        Theirs::Refused(e) => ("refused", field(e), String::new()),
    };
    let (bv, be, bi) = match o {
        Ours::Accepted { insns } => ("accept", String::new(), insns.to_string()),
        Ours::Rejected(e) => ("reject", field(e), String::new()),
        Ours::Refused(e) => ("refused", field(e), String::new()),
        Ours::Timeout => ("timeout", String::new(), String::new()),
        Ours::Panic(m) => ("panic", field(m), String::new()),
        Ours::Hang => ("hang", String::new(), String::new()),
    };
    [kv.into(), ke, bv.into(), be, ki, bi]
}

/// Mutates every loadable program of `cfg.objects`, writes DIR/mutate.tsv
/// and, for unsound and overstrict mutants, DIR/mutants/*.txt (listing and
/// both verdicts); returns the count per class.
pub fn run(kernel: &Kernel, cfg: &Config) -> std::result::Result<BTreeMap<Class, usize>, String> {
    std::fs::create_dir_all(cfg.dir.join("mutants")).map_err(|e| e.to_string())?;
    let mut tsv = format!("{TSV_HEADER}\n");
    let mut counts: BTreeMap<Class, usize> = BTreeMap::new();
    let mut rng = Rng::new(cfg.seed);
    for path in &cfg.objects {
        let name = path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned());
        let Ok(obj) = Object::from_file(path, &LoadOptions::default()) else {
            continue;
        };
        for (pi, p) in obj.programs.iter().enumerate() {
            if p.refused.is_some()
                || p.prog_type == bpfvet_isa::uapi::ProgType::UNSPEC
                || p.insns.len() > cfg.max_insns
            {
                continue;
            }
            if matches!(run_theirs(kernel, &obj, pi), Theirs::Refused(_)) {
                continue;
            }
            for k in 0..cfg.mutants_per_prog {
                let Some((insns, what)) = mutate(&mut rng, &p.insns) else {
                    break;
                };
                let mut m = obj.clone();
                m.programs[pi].insns = insns;
                let m = Arc::new(m);
                let ours = run_ours(&m, pi);
                let theirs = run_theirs(kernel, &m, pi);
                let class = classify(&ours, &theirs);
                *counts.entry(class).or_default() += 1;
                let c = cols(&ours, &theirs);
                let _ = writeln!(
                    tsv,
                    "{name}\t{}\t{k}\t{}\t{}\t{what}",
                    p.name,
                    class_key(class),
                    c.join("\t")
                );
                if matches!(
                    class,
                    Class::Unsound | Class::Overstrict | Class::Panic | Class::Hang
                ) {
                    let listing = disasm_program(&m.programs[pi].insns, &NoSymbols)
                        .unwrap_or_else(|e| format!("(not decodable: {e})\n"));
                    let text = format!(
                        "{}: program {} mutant {k} ({what})\nkernel: {}\nbpfvet: {}\n\n{listing}",
                        path.display(),
                        p.name,
                        theirs_text(&theirs),
                        ours_text(&ours)
                    );
                    let file = format!("{name}-{}-{k}-{}.txt", p.name, class_key(class));
                    let _ = std::fs::write(cfg.dir.join("mutants").join(file), text);
                }
            }
        }
        println!("{}: {:?}", path.display(), counts);
    }
    std::fs::write(cfg.dir.join("mutate.tsv"), tsv).map_err(|e| e.to_string())?;
    Ok(counts)
}

/// The `.bpf.o`/`.o` files under `dir` (one level), sorted.
pub fn objects_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| {
            r.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "o"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}
