//! Mutation of real programs, in resumable batches: every object file is
//! one unit (`DIR/mut-UNIT.tsv`, written when the unit is done, skipped
//! when it exists), every loadable program of it gets `N` mutants, each a
//! pure function of (seed, unit, program, mutant number). A mutant is one
//! to three edits: a field (register, offset, immediate, operation,
//! width, class, K/X source, a swap of neighbours), a jump's condition or
//! target, a dropped or duplicated instruction (jumps, calls, func_info
//! and line_info kept in step), an encoding change of `corrupt`, a helper
//! or kfunc id, the program type, or a map's sizes. The TSV starts with
//! the generator batches' columns (bench/verifier_fuzz/README.md), so
//! error_sites.py reads both alike; each distinct disagreement of a unit is
//! minimised into `DIR/cases/*.case`; `DIR/MUTATE.md` sums all units.
//! Programs the kernel refuses unmutated (an attach target or something
//! else the backend cannot give) are skipped.

use super::batch::{causes_section, class_key, read_tsv, tally_causes, Causes};
use super::corrupt::{self, after_delete, after_insert};
use super::diff::{
    cause, cause_group, classify, run_ours, run_theirs, Class, Ours, Result as Diff, Theirs,
};
use super::gen::Rng;
use super::minimise::{delete_range, keeps_in};
use super::oracle::Oracle;
use bpfvet_isa::opcode::{BPF_PSEUDO_CALL, BPF_PSEUDO_KFUNC_CALL};
use bpfvet_isa::uapi::{MapType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_object::{LoadOptions, MapInit, Object};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

pub struct Config {
    pub dir: PathBuf,
    pub objects: Vec<PathBuf>,
    pub mutants_per_prog: u64,
    pub seed: u64,
    /// Programs longer than this are skipped (each mutant costs a full
    /// verification on both sides).
    pub max_insns: usize,
    /// Candidates tried per minimisation.
    pub minimise_tries: usize,
}

impl Config {
    fn identity(&self) -> String {
        format!(
            "seed={:#x}\nmutants_per_prog={}\nmax_insns={}\n",
            self.seed, self.mutants_per_prog, self.max_insns
        )
    }
}

/// The first line of every mut-*.tsv: the batch TSV's columns, then where
/// the mutant comes from.
pub const TSV_HEADER: &str = "index\tprog_type\tclass\tkernel_verdict\tkernel_error\tbpfvet_verdict\tbpfvet_error\tkernel_insns\tbpfvet_insns\tlen\tcase\tobject\tprogram\tmutant\tmutations";

fn mutable(insns: &[Insn], i: usize) -> bool {
    let ins = insns[i];
    let second_slot = i > 0 && insns[i - 1].is_ld_imm64();
    let pseudo_call = ins.code == 0x85 && ins.src != 0;
    !ins.is_ld_imm64() && !second_slot && !pseudo_call
}

fn is_cond_jump(i: Insn) -> bool {
    matches!(i.code & 0x07, 0x05 | 0x06) && !matches!(i.code & 0xf0, 0x00 | 0x80 | 0x90 | 0xe0)
}

/// One change to a field of a mutable instruction, or None when there is
/// none.
fn mutate_field(rng: &mut Rng, out: &mut [Insn]) -> Option<String> {
    let eligible: Vec<usize> = (0..out.len()).filter(|&i| mutable(out, i)).collect();
    if eligible.is_empty() {
        return None;
    }
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
            ins.imm = if rng.chance(50) {
                let ids = [1, 2, 3, 5, 7, 8, 12, 14, 16, 25, 26, 51, 113, 130, 131, 181];
                ids[rng.below(ids.len() as u64) as usize]
            } else {
                1 + rng.below(212) as i32
            };
            "helper"
        }
        6 => {
            if matches!(class, 0x04..=0x07) {
                ins.code ^= 0x08;
            }
            "k/x"
        }
        _ => {
            if i + 1 < out.len() && mutable(out, i + 1) {
                out.swap(i, i + 1);
            }
            "swap"
        }
    };
    Some(format!("{i}:{desc}"))
}

/// Keeps func_info and line_info offsets in step with an edit of `shift`
/// slots at `at` (inserted when positive, deleted when negative); line
/// records that now collide or point past the end are dropped.
fn follow_edit(p: &mut bpfvet_object::Program, at: usize, shift: i64) {
    // Slots inserted at 0 belong to the entry function.
    let map = |x: usize| {
        if shift >= 0 && x == 0 {
            0
        } else if shift >= 0 {
            after_insert(at, shift as usize, x)
        } else {
            after_delete(at, at + (-shift) as usize, x)
        }
    };
    for f in &mut p.func_info {
        f.insn_off = map(f.insn_off as usize) as u32;
    }
    let len = p.insns.len() as u32;
    let mut prev: Option<u32> = None;
    let mut lines = Vec::with_capacity(p.line_info.len());
    for mut l in std::mem::take(&mut p.line_info) {
        l.insn_off = map(l.insn_off as usize) as u32;
        if l.insn_off < len && prev.is_none_or(|p| l.insn_off > p) {
            prev = Some(l.insn_off);
            lines.push(l);
        }
    }
    p.line_info = lines;
    p.placement.clear();
}

/// Program types a mutant may move to (expected attach types cleared).
const PROG_TYPES: [ProgType; 17] = [
    ProgType::SOCKET_FILTER,
    ProgType::KPROBE,
    ProgType::SCHED_CLS,
    ProgType::SCHED_ACT,
    ProgType::TRACEPOINT,
    ProgType::XDP,
    ProgType::PERF_EVENT,
    ProgType::CGROUP_SKB,
    ProgType::CGROUP_SOCK,
    ProgType::LWT_IN,
    ProgType::SOCK_OPS,
    ProgType::SK_SKB,
    ProgType::CGROUP_DEVICE,
    ProgType::SK_MSG,
    ProgType::RAW_TRACEPOINT,
    ProgType::FLOW_DISSECTOR,
    ProgType::CGROUP_SYSCTL,
];

/// One edit of program `pi` of `m`, described.
fn edit(rng: &mut Rng, m: &mut Object, pi: usize) -> Option<String> {
    let maps = m.maps.len();
    let btf = m.btf.as_ref();
    let p = &mut m.programs[pi];
    let len = p.insns.len();
    if len == 0 {
        return None;
    }
    match rng.below(27) {
        0..=8 => mutate_field(rng, &mut p.insns),
        24 => func_info_edit(rng, p, btf),
        25 => line_info_edit(rng, p),
        26 if rng.chance(50) => {
            // Without func_info the kernel gets no line_info either.
            (!p.func_info.is_empty()).then(|| {
                p.func_info.clear();
                "func_info dropped".to_string()
            })
        }
        9..=10 => {
            let jumps: Vec<usize> = (0..len).filter(|&i| is_cond_jump(p.insns[i])).collect();
            let &j = jumps.get(rng.below(jumps.len().max(1) as u64) as usize)?;
            let ins = &mut p.insns[j];
            if rng.chance(50) {
                // The opposite condition.
                let op = match ins.code & 0xf0 {
                    0x10 => 0x50,
                    0x50 => 0x10,
                    0x20 => 0xb0,
                    0xb0 => 0x20,
                    0x30 => 0xa0,
                    0xa0 => 0x30,
                    0x60 => 0xd0,
                    0xd0 => 0x60,
                    0x70 => 0xc0,
                    0xc0 => 0x70,
                    _ => 0x10,
                };
                ins.code = (ins.code & 0x0f) | op;
                Some(format!("{j}:jmp flip"))
            } else {
                let d = [-3i16, -2, -1, 1, 2, 3][rng.below(6) as usize];
                ins.off = ins.off.wrapping_add(d);
                Some(format!("{j}:jmp target"))
            }
        }
        11..=12 => {
            let i = rng.below(len as u64) as usize;
            let n = if p.insns[i].is_ld_imm64() { 2 } else { 1 };
            let out = delete_range(&p.insns, i, i + n)?;
            if out.is_empty() {
                return None;
            }
            p.insns = out;
            follow_edit(p, i, -(n as i64));
            Some(format!("{i}:drop"))
        }
        13 => {
            let i = rng.below(len as u64) as usize;
            if !mutable(&p.insns, i) {
                return None;
            }
            p.insns = corrupt::insert(&p.insns, i + 1, &[p.insns[i]])?;
            follow_edit(p, i + 1, 1);
            Some(format!("{i}:dup"))
        }
        14..=17 => {
            let e = corrupt::corrupt(rng, &mut p.insns, maps);
            if e.shift != 0 {
                follow_edit(p, e.at, e.shift);
            }
            Some(format!("{}:{}", e.at, e.what))
        }
        18 => {
            let kfuncs: Vec<usize> = (0..len)
                .filter(|&i| p.insns[i].code == 0x85 && p.insns[i].src == BPF_PSEUDO_KFUNC_CALL)
                .collect();
            let &i = kfuncs.get(rng.below(kfuncs.len().max(1) as u64) as usize)?;
            p.insns[i].imm = p.insns[i].imm.wrapping_add(rng.below(41) as i32 - 20);
            Some(format!("{i}:kfunc id"))
        }
        19 => {
            // Another callee for a bpf-to-bpf call: one of the others'.
            let calls: Vec<usize> = (0..len)
                .filter(|&i| p.insns[i].code == 0x85 && p.insns[i].src == BPF_PSEUDO_CALL)
                .collect();
            let (&a, &b) = (
                calls.get(rng.below(calls.len().max(1) as u64) as usize)?,
                calls.get(rng.below(calls.len().max(1) as u64) as usize)?,
            );
            let target = b as i64 + 1 + i64::from(p.insns[b].imm);
            p.insns[a].imm = (target - a as i64 - 1) as i32;
            Some(format!("{a}:callee"))
        }
        20..=21 => {
            let t = PROG_TYPES[rng.below(PROG_TYPES.len() as u64) as usize];
            p.prog_type = t;
            p.expected_attach_type = None;
            p.attach_target = None;
            p.sleepable = false;
            p.prog_flags &= !bpfvet_isa::uapi::BPF_F_SLEEPABLE;
            Some(format!("prog_type {}", t.name().unwrap_or("?")))
        }
        _ => {
            // A plain map's key or value size, or a single-entry array.
            let plain: Vec<usize> = (0..maps)
                .filter(|&k| {
                    let d = &m.maps[k];
                    matches!(d.init, MapInit::None)
                        && matches!(
                            d.map_type,
                            MapType::HASH
                                | MapType::ARRAY
                                | MapType::PERCPU_HASH
                                | MapType::PERCPU_ARRAY
                                | MapType::LRU_HASH
                        )
                })
                .collect();
            let &k = plain.get(rng.below(plain.len().max(1) as u64) as usize)?;
            let d = &mut m.maps[k];
            // Sizes no longer match the map's BTF: drop it, as libbpf's
            // retry without BTF would.
            d.btf_key_type_id = 0;
            d.btf_value_type_id = 0;
            let sizes = |old: u32, rng: &mut Rng| {
                let v = [old / 2, old + 4, old * 2, 1, 4, 8, 7][rng.below(7) as usize];
                v.clamp(1, 4096)
            };
            let what = match rng.below(3) {
                0 if d.map_type != MapType::ARRAY && d.map_type != MapType::PERCPU_ARRAY => {
                    d.key_size = sizes(d.key_size, rng);
                    "key_size"
                }
                1 if d.map_type == MapType::ARRAY => {
                    d.max_entries = 1;
                    "max_entries"
                }
                _ => {
                    d.value_size = sizes(d.value_size, rng);
                    "value_size"
                }
            };
            Some(format!("map {k} {what}"))
        }
    }
}

/// One func_info record corrupted: its offset, its order, its type id or
/// its presence (what check_btf_func_early and check_btf_func read).
fn func_info_edit(
    rng: &mut Rng,
    p: &mut bpfvet_object::Program,
    btf: Option<&bpfvet_object::btf::Btf>,
) -> Option<String> {
    let n = p.func_info.len();
    if n == 0 {
        return None;
    }
    let k = rng.below(n as u64) as usize;
    let f = &mut p.func_info[k];
    let what = match rng.below(5) {
        0 => {
            f.insn_off = f
                .insn_off
                .wrapping_add([1, 2, u32::MAX][rng.below(3) as usize]);
            "insn_off"
        }
        1 if n > 1 => {
            let j = (k + 1) % n;
            let (a, b) = (p.func_info[k].insn_off, p.func_info[j].insn_off);
            p.func_info[k].insn_off = b;
            p.func_info[j].insn_off = a;
            "order"
        }
        2 => {
            // Another type: none, the first, a neighbour, past the end.
            f.type_id = match rng.below(4) {
                0 => 0,
                1 => 1,
                2 => f.type_id.wrapping_add(1),
                _ => 0x7fff_fff0,
            };
            // The record's name and linkage are what its type says.
            let func = btf.and_then(|b| b.type_by_id(f.type_id).map(|t| (b.name(t), t)));
            f.name = func.map_or(String::new(), |(name, _)| name.to_string());
            f.linkage = func.map_or(0, |(_, t)| t.linkage());
            "type_id"
        }
        3 if n > 1 => {
            p.func_info.remove(k);
            "record dropped"
        }
        _ => {
            let dup = p.func_info[k].clone();
            p.func_info.insert(k, dup);
            "record duplicated"
        }
    };
    Some(format!("func_info[{k}] {what}"))
}

/// One line_info record corrupted: its offset (out of order, past the end,
/// onto an ld_imm64's second slot), its strings, or records dropped
/// (check_btf_line).
fn line_info_edit(rng: &mut Rng, p: &mut bpfvet_object::Program) -> Option<String> {
    let n = p.line_info.len();
    if n == 0 || p.func_info.is_empty() {
        return None;
    }
    let k = rng.below(n as u64) as usize;
    let len = p.insns.len() as u32;
    let what = match rng.below(6) {
        0 => {
            let l = &mut p.line_info[k];
            l.insn_off = match rng.below(4) {
                0 => l.insn_off.wrapping_sub(1),
                1 => l.insn_off + 1,
                2 => len,
                _ => 0,
            };
            "insn_off"
        }
        1 => {
            let second = (1..p.insns.len()).find(|&i| p.insns[i - 1].is_ld_imm64())?;
            p.line_info[k].insn_off = second as u32;
            "insn_off at an ld_imm64's second slot"
        }
        2 => {
            let l = &mut p.line_info[k];
            let bad = [u32::MAX, 0x00ff_ffff][rng.below(2) as usize];
            if rng.chance(50) {
                l.line_off = bad;
            } else {
                l.file_name_off = bad;
            }
            "string offset"
        }
        3 => {
            p.line_info.remove(k);
            "record dropped"
        }
        4 => {
            p.line_info.truncate(k);
            "tail dropped"
        }
        _ => {
            let dup = p.line_info[k].clone();
            p.line_info.insert(k, dup);
            "record duplicated"
        }
    };
    Some(format!("line_info[{k}] {what}"))
}

/// Mutant `k` of program `pi` of `obj`, or None when no edit applied.
pub fn mutant(seed: u64, obj: &Object, pi: usize, k: u64) -> Option<(Object, String)> {
    let mut rng = Rng::new(seed ^ (pi as u64).wrapping_mul(0x0100_0000_01b3) ^ k.rotate_left(32));
    let mut m = obj.clone();
    let mut what = Vec::new();
    for _ in 0..1 + rng.below(3) {
        for _ in 0..4 {
            if let Some(w) = edit(&mut rng, &mut m, pi) {
                what.push(w);
                break;
            }
        }
    }
    corrupt::keep_map_indexes_in_range(&mut m.programs[pi].insns, m.maps.len());
    (!what.is_empty()).then(|| (m, what.join(" ")))
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

/// A stable name for an object: its directory's and its file's names.
fn unit_name(path: &Path) -> String {
    let parent = path
        .parent()
        .and_then(|p| p.file_name())
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let file = path
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    format!("{parent}-{file}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a: a unit's seed does not depend on which other units run.
fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Program `pi` of `obj` with ranges of its instructions deleted while
/// the finding keeps its class and cause.
fn minimise(
    kernel: &Oracle,
    obj: &Object,
    pi: usize,
    class: Class,
    key: &str,
    tries_max: usize,
) -> Object {
    let mut best = obj.clone();
    let mut tries = 0;
    let mut chunk = (best.programs[pi].insns.len() / 2).max(1);
    loop {
        let mut progress = false;
        let mut a = 0;
        while a < best.programs[pi].insns.len() && tries < tries_max {
            let b = (a + chunk).min(best.programs[pi].insns.len());
            let Some(insns) = delete_range(&best.programs[pi].insns, a, b) else {
                a += 1;
                continue;
            };
            if insns.is_empty() {
                a += chunk;
                continue;
            }
            tries += 1;
            let mut cand = best.clone();
            cand.programs[pi].insns = insns;
            follow_edit(&mut cand.programs[pi], a, -((b - a) as i64));
            let cand = Arc::new(cand);
            if keeps_in(kernel, &cand, pi, class, key) {
                best = Arc::unwrap_or_clone(cand);
                progress = true;
            } else {
                a += chunk;
            }
        }
        if tries >= tries_max || (chunk == 1 && !progress) {
            break;
        }
        if !progress {
            chunk = (chunk / 2).max(1);
        }
    }
    best
}

/// The `.case` text of a minimised mutant. Maps are written as `# map:`
/// lines; what the format cannot carry (map BTF, func_info from the
/// object's BTF, attach targets) is named in a comment, and such a case
/// replays only through its source object.
fn case_text(header: &str, obj: &Object, pi: usize, r: &Diff) -> String {
    let p = &obj.programs[pi];
    let mut out = format!("# mutant: {header}\n");
    let _ = writeln!(out, "# prog_type: {}", p.prog_type.name().unwrap_or("?"));
    out.push_str(&super::diff::privileges_directive());
    if let Some(a) = p.expected_attach_type.and_then(|a| a.name()) {
        let _ = writeln!(out, "# attach_type: {a}");
    }
    for m in &obj.maps {
        let _ = writeln!(
            out,
            "# map: {} {} {} {}",
            m.map_type.name().unwrap_or("?"),
            m.key_size,
            m.value_size,
            m.max_entries
        );
    }
    let mut lost = Vec::new();
    if obj.maps.iter().any(|m| m.btf_value_type_id != 0) {
        lost.push("map value BTF");
    }
    if !p.func_info.is_empty() {
        lost.push("func_info");
    }
    if p.attach_target.is_some() {
        lost.push("attach target");
    }
    if !lost.is_empty() {
        let _ = writeln!(out, "# not carried by this format: {}", lost.join(", "));
    }
    out.push_str(&super::diff::expectation(r));
    let listing = super::listing(&super::gen::GenProgram {
        sleepable: p.sleepable,
        ..super::gen::GenProgram::plain(p.prog_type, p.insns.clone())
    });
    out.push_str(&listing);
    out
}

/// One unit: every mutant of every loadable program of `path`, its TSV
/// text and counts.
fn run_unit(
    kernel: &Oracle,
    cfg: &Config,
    path: &Path,
    unit: &str,
) -> (String, BTreeMap<Class, usize>) {
    let mut tsv = format!("{TSV_HEADER}\n");
    let mut counts: BTreeMap<Class, usize> = BTreeMap::new();
    let Ok(obj) = Object::from_file(path, &LoadOptions::default()) else {
        return (tsv, counts);
    };
    let seed = cfg.seed ^ hash(unit);
    let mut first: BTreeMap<(Class, String), ()> = BTreeMap::new();
    let mut row = 0;
    for (pi, p) in obj.programs.iter().enumerate() {
        if p.refused.is_some()
            || p.prog_type == ProgType::UNSPEC
            || p.insns.len() > cfg.max_insns
            || matches!(run_theirs(kernel, &obj, pi), Theirs::Refused(_))
        {
            continue;
        }
        for k in 0..cfg.mutants_per_prog {
            let Some((m, what)) = mutant(seed, &obj, pi, k) else {
                continue;
            };
            let m = Arc::new(m);
            let ours = run_ours(&m, pi);
            let theirs = run_theirs(kernel, &m, pi);
            let class = classify(&ours, &theirs);
            *counts.entry(class).or_default() += 1;
            let r = Diff {
                class,
                ours,
                theirs,
            };
            let mut case = String::new();
            let key = cause(&r);
            let new_cause = !matches!(class, Class::Agree | Class::KernelRefused)
                && first.insert((class, cause_group(&key)), ()).is_none();
            if new_cause {
                let small = match class {
                    Class::Hang | Class::Timeout | Class::Panic => (*m).clone(),
                    _ => minimise(kernel, &m, pi, class, &key, cfg.minimise_tries),
                };
                let small_r = super::diff::diff(kernel, &Arc::new(small.clone()), pi);
                case = format!("{unit}-{}-{k}-{}.case", p.name, class_key(class));
                let header = format!(
                    "{} program {} mutant {k} ({what}), seed {:#x}, class {}, {} of {} insns kept",
                    path.display(),
                    p.name,
                    cfg.seed,
                    class_key(class),
                    small.programs[pi].insns.len(),
                    m.programs[pi].insns.len()
                );
                let _ = std::fs::write(
                    cfg.dir.join("cases").join(&case),
                    case_text(&header, &small, pi, &small_r),
                );
            }
            let c = cols(&r.ours, &r.theirs);
            let _ = writeln!(
                tsv,
                "{row}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{case}\t{unit}\t{}\t{k}\t{what}",
                m.programs[pi].prog_type.name().unwrap_or("?"),
                class_key(class),
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                c[5],
                m.programs[pi].insns.len(),
                p.name,
            );
            row += 1;
        }
    }
    (tsv, counts)
}

/// Runs every unit of `cfg` not yet in its directory, then writes
/// MUTATE.md; returns the counts per class over all units of the
/// directory.
pub fn run(kernel: &Oracle, cfg: &Config) -> std::result::Result<BTreeMap<Class, usize>, String> {
    std::fs::create_dir_all(cfg.dir.join("cases")).map_err(|e| e.to_string())?;
    let conf = cfg.dir.join("mutate.conf");
    match std::fs::read_to_string(&conf) {
        Ok(old) if old != cfg.identity() => {
            return Err(format!(
                "{} was made with another configuration:\n{old}",
                conf.display()
            ))
        }
        Ok(_) => {}
        Err(_) => std::fs::write(&conf, cfg.identity()).map_err(|e| e.to_string())?,
    }
    let units: Vec<(PathBuf, String)> = cfg
        .objects
        .iter()
        .map(|p| (p.clone(), unit_name(p)))
        .collect();
    let tsv_of = |u: &str| cfg.dir.join(format!("mut-{u}.tsv"));
    let todo = units.iter().filter(|(_, u)| !tsv_of(u).exists()).count();
    let started = Instant::now();
    let mut ran = 0;
    for (path, unit) in &units {
        let out = tsv_of(unit);
        if out.exists() {
            continue;
        }
        let (tsv, counts) = run_unit(kernel, cfg, path, unit);
        let tmp = out.with_extension("tsv.part");
        std::fs::write(&tmp, tsv).map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, &out).map_err(|e| e.to_string())?;
        ran += 1;
        let per = started.elapsed() / ran as u32;
        let mut line = format!("{unit} ({ran}/{todo}):");
        for (c, n) in &counts {
            let _ = write!(line, " {} {n}", class_key(*c));
        }
        let _ = write!(
            line,
            "; {:.0?} so far, about {:.0?} left",
            started.elapsed(),
            per * (todo - ran) as u32
        );
        println!("{line}");
    }
    let (report, totals) = report(cfg, &units)?;
    std::fs::write(cfg.dir.join("MUTATE.md"), report).map_err(|e| e.to_string())?;
    println!("wrote {}", cfg.dir.join("MUTATE.md").display());
    Ok(totals)
}

/// MUTATE.md: counts per class in total and every distinct disagreement.
fn report(
    cfg: &Config,
    units: &[(PathBuf, String)],
) -> std::result::Result<(String, BTreeMap<Class, usize>), String> {
    let mut totals: BTreeMap<Class, usize> = BTreeMap::new();
    let mut causes = Causes::new();
    let mut done = 0;
    for (_, u) in units {
        let Ok(rows) = read_tsv(&cfg.dir.join(format!("mut-{u}.tsv"))) else {
            continue;
        };
        done += 1;
        for r in &rows {
            *totals.entry(r.class).or_default() += 1;
        }
        tally_causes(rows, &mut causes);
    }
    let mut out = format!(
        "# bpfvet verifier vs host kernel: mutants of real programs\n\n{done} of {} objects finished, {} mutants per program, seed {:#x}.\n\n| class | mutants |\n|---|---:|\n",
        units.len(),
        cfg.mutants_per_prog,
        cfg.seed
    );
    for c in Class::ALL {
        let _ = writeln!(
            out,
            "| {} | {} |",
            class_key(c),
            totals.get(&c).copied().unwrap_or(0)
        );
    }
    out.push('\n');
    causes_section(causes, &mut out);
    Ok((out, totals))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_edit_keeps_func_and_line_info_in_step() {
        let mut p = Object::single_program(
            "p",
            ProgType::SOCKET_FILTER,
            vec![Insn::new(0x95, 0, 0, 0, 0); 4],
        )
        .programs
        .remove(0);
        let fi = |off| bpfvet_object::FuncInfo {
            insn_off: off,
            type_id: 1,
            name: String::new(),
            linkage: 0,
        };
        p.func_info = vec![fi(0), fi(3)];
        let li = |off| bpfvet_object::LineInfo {
            insn_off: off,
            file_name_off: 0,
            line_off: 0,
            file_name: String::new(),
            line_text: String::new(),
            line: 1,
            column: 0,
        };
        p.line_info = vec![li(0), li(1), li(2), li(3)];
        // Slot 1 deleted: the records at 1 and 2 collide, the one kept is
        // the first.
        p.insns.remove(1);
        follow_edit(&mut p, 1, -1);
        assert_eq!(p.func_info[1].insn_off, 2);
        let offs: Vec<u32> = p.line_info.iter().map(|l| l.insn_off).collect();
        assert_eq!(offs, [0, 1, 2]);
        // Two slots inserted before slot 2 (a function's start).
        p.insns.splice(2..2, [Insn::new(0xb7, 0, 0, 0, 0); 2]);
        follow_edit(&mut p, 2, 2);
        assert_eq!(p.func_info[1].insn_off, 4);
    }

    #[test]
    fn mutants_are_reproducible() {
        let obj = Object::single_program(
            "p",
            ProgType::SOCKET_FILTER,
            vec![
                Insn::new(0xb7, 0, 0, 0, 0),
                Insn::new(0x15, 1, 0, 1, 0),
                Insn::new(0xb7, 0, 0, 0, 1),
                Insn::new(0x95, 0, 0, 0, 0),
            ],
        );
        for k in 0..20 {
            let a = mutant(7, &obj, 0, k).map(|(m, w)| (m.programs[0].insns.clone(), w));
            let b = mutant(7, &obj, 0, k).map(|(m, w)| (m.programs[0].insns.clone(), w));
            assert_eq!(a, b);
        }
    }
}
