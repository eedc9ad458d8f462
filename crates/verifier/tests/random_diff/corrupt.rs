//! Encoding-level and structural changes to a finished program, shared by
//! the generator's `encoding` feature and the mutator of real programs:
//! invalid opcodes, reserved fields, LD_IMM64 forms, jumps out of range or
//! into an LD_IMM64, dead code, truncated programs, bpf-to-bpf calls to
//! odd places, kfunc and helper ids, LD_ABS/IND, atomic and may_goto
//! immediates. Each aims at a group of the kernel's early checks
//! (resolve_pseudo_ldimm64, check_subprogs, check_cfg, do_check's field
//! checks), which a program built to be plausible never reaches.

use super::gen::Rng;
use bpfvet_isa::opcode::{BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC, BPF_PSEUDO_KFUNC_CALL};
use bpfvet_isa::Insn;

fn second_slot(insns: &[Insn], i: usize) -> bool {
    i > 0 && i < insns.len() && insns[i - 1].is_ld_imm64()
}

/// Whether `i` carries a jump offset in `off` (conditional jumps, `ja`,
/// `may_goto`; not calls, exits, or `gotol` whose offset is in imm).
fn is_jump(i: Insn) -> bool {
    let class = i.code & 0x07;
    let op = i.code & 0xf0;
    (class == 0x05 && !matches!(op, 0x80 | 0x90))
        || (class == 0x06 && !matches!(op, 0x00 | 0x80 | 0x90))
}

/// Whether `i` is a relative reference in `imm`: a bpf-to-bpf call, a
/// callback address, `gotol`.
fn is_imm_rel(insns: &[Insn], j: usize) -> bool {
    let i = insns[j];
    (i.code == 0x85 && i.src == BPF_PSEUDO_CALL)
        || (i.is_ld_imm64() && i.src == BPF_PSEUDO_FUNC && !second_slot(insns, j))
        || i.code == 0x06
}

/// `insns` with `new` inserted before slot `at`; jumps, calls and callback
/// addresses of the old slots keep their targets (a target at `at` moves
/// past the inserted slots). None when `at` is inside an LD_IMM64 or an
/// offset overflows.
pub fn insert(insns: &[Insn], at: usize, new: &[Insn]) -> Option<Vec<Insn>> {
    if at > insns.len() || second_slot(insns, at) {
        return None;
    }
    let n = new.len() as i64;
    let map = |x: i64| if x >= at as i64 { x + n } else { x };
    let mut out = Vec::with_capacity(insns.len() + new.len());
    for (j, &ins) in insns.iter().enumerate() {
        if j == at {
            out.extend_from_slice(new);
        }
        let mut ins = ins;
        let here = map(j as i64);
        if is_jump(ins) && !second_slot(insns, j) {
            let t = j as i64 + 1 + i64::from(ins.off);
            ins.off = i16::try_from(map(t) - here - 1).ok()?;
        } else if is_imm_rel(insns, j) {
            let t = j as i64 + 1 + i64::from(ins.imm);
            ins.imm = i32::try_from(map(t) - here - 1).ok()?;
        }
        out.push(ins);
    }
    if at == insns.len() {
        out.extend_from_slice(new);
    }
    Some(out)
}

/// Where slot `x` of a program goes when `[a, b)` is deleted (a slot in
/// the range goes to its first survivor).
pub fn after_delete(a: usize, b: usize, x: usize) -> usize {
    if x < a {
        x
    } else if x < b {
        a
    } else {
        x - (b - a)
    }
}

/// Where slot `x` goes when `n` slots are inserted before `at`.
pub fn after_insert(at: usize, n: usize, x: usize) -> usize {
    if x >= at {
        x + n
    } else {
        x
    }
}

/// A random slot index that is not the second half of an LD_IMM64.
fn slot(rng: &mut Rng, insns: &[Insn]) -> usize {
    for _ in 0..8 {
        let i = rng.below(insns.len() as u64) as usize;
        if !second_slot(insns, i) {
            return i;
        }
    }
    0
}

/// A slot boundary where something may be inserted.
fn boundary(rng: &mut Rng, insns: &[Insn]) -> usize {
    for _ in 0..8 {
        let i = rng.below(insns.len() as u64 + 1) as usize;
        if !second_slot(insns, i) {
            return i;
        }
    }
    0
}

/// What an edit did, for the record: its name and the slot.
pub struct Edit {
    pub what: &'static str,
    pub at: usize,
    /// Slots inserted before `at` (positive) or deleted from `at`
    /// (negative), for keeping func_info/line_info offsets in step.
    pub shift: i64,
}

/// One encoding-level change to `insns` (never empty). `maps` is how many
/// map indexes the object gives (`BPF_PSEUDO_MAP_IDX` immediates below
/// it are safe: the kernel reads `fd_array` at that index).
pub fn corrupt(rng: &mut Rng, insns: &mut Vec<Insn>, maps: usize) -> Edit {
    let edit = corrupt_once(rng, insns, maps);
    keep_map_indexes_in_range(insns, maps);
    edit
}

/// Map-index LD_IMM64s stay within the object's maps: past them the
/// kernel reads whatever follows `fd_array` in the loader's memory, which
/// no verdict can be compared on. Likewise a map fd (an index turned into
/// an fd reference by another edit) never names one of the loader's own
/// descriptors: which fds are open there is no property of the program.
pub fn keep_map_indexes_in_range(insns: &mut [Insn], maps: usize) {
    use bpfvet_isa::opcode::{
        BPF_PSEUDO_MAP_FD, BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE, BPF_PSEUDO_MAP_VALUE,
    };
    let mut j = 0;
    while j < insns.len() {
        let ins = &mut insns[j];
        if ins.is_ld_imm64() {
            let by_idx = ins.src == BPF_PSEUDO_MAP_IDX || ins.src == BPF_PSEUDO_MAP_IDX_VALUE;
            if by_idx && (ins.imm < 0 || ins.imm as usize >= maps) {
                ins.imm = 0;
            }
            let by_fd = ins.src == BPF_PSEUDO_MAP_FD || ins.src == BPF_PSEUDO_MAP_VALUE;
            if by_fd && ins.imm >= 3 && ins.imm < UNOPENED_FD {
                ins.imm = UNOPENED_FD;
            }
            j += 1;
        }
        j += 1;
    }
}

/// A descriptor number no loader process has open (0..2 are stdio, the
/// harness's maps and programs lie between).
const UNOPENED_FD: i32 = 9999;

fn corrupt_once(rng: &mut Rng, insns: &mut Vec<Insn>, maps: usize) -> Edit {
    if insns.is_empty() {
        insns.push(Insn::new(0x95, 0, 0, 0, 0));
    }
    let len = insns.len();
    let i = slot(rng, insns);
    let edit = |what, at| Edit { what, at, shift: 0 };
    match rng.below(15) {
        0 => {
            // Any opcode byte: unknown opcodes, classes, LD modes.
            insns[i].code = rng.next() as u8;
            edit("opcode", i)
        }
        1 | 2 => {
            // A field the instruction's form requires to be zero (or a
            // register number past r10).
            let v = rng.next();
            match rng.below(4) {
                0 => insns[i].dst = 1 + (v % 15) as u8,
                1 => insns[i].src = 1 + (v % 15) as u8,
                2 => insns[i].off = [1i16, -1, 8, 16, 32, 64, 0x7fff][(v % 7) as usize],
                _ => insns[i].imm = [1, -1, 8, 16, 32, 64, 0x100, 0x7fff_ffff][(v % 8) as usize],
            }
            edit("reserved", i)
        }
        3 => ld_imm64(rng, insns, maps),
        4 => {
            // A jump to past the end, before the start, into an LD_IMM64's
            // second half, to itself, or back.
            let jumps: Vec<usize> = (0..len)
                .filter(|&j| is_jump(insns[j]) && !second_slot(insns, j))
                .collect();
            let j = if jumps.is_empty() {
                i
            } else {
                jumps[rng.below(jumps.len() as u64) as usize]
            };
            if !is_jump(insns[j]) {
                insns[j] = Insn::new(0x05, 0, 0, 0, 0);
            }
            let halves: Vec<usize> = (1..len).filter(|&k| second_slot(insns, k)).collect();
            let target: i64 = match rng.below(5) {
                0 if !halves.is_empty() => halves[rng.below(halves.len() as u64) as usize] as i64,
                0 | 1 => len as i64 + rng.below(3) as i64,
                2 => -1 - rng.below(3) as i64,
                3 => j as i64,
                _ => rng.below(j as u64 + 1) as i64,
            };
            insns[j].off = (target - j as i64 - 1).clamp(-32768, 32767) as i16;
            edit("jump target", j)
        }
        5 => {
            // Dead code after an exit (unreachable insns), or a program
            // whose last slot is not an exit or a jump.
            if rng.chance(50) {
                let exits: Vec<usize> = (0..len).filter(|&j| insns[j].code == 0x95).collect();
                let at = exits.first().map_or(len, |&e| e + 1);
                let dead = [Insn::new(0xb7, 0, 0, 0, 0), Insn::new(0x95, 0, 0, 0, 0)];
                let n = 1 + rng.below(2) as usize;
                if let Some(out) = insert(insns, at, &dead[..n]) {
                    *insns = out;
                    return Edit {
                        what: "dead code",
                        at,
                        shift: n as i64,
                    };
                }
                edit("dead code", at)
            } else {
                let last = insns.len() - 1;
                if rng.chance(50) && !second_slot(insns, last) && insns.len() > 1 {
                    insns.pop();
                    Edit {
                        what: "truncate",
                        at: last,
                        shift: -1,
                    }
                } else {
                    insns.push(Insn::new(0xb7, 0, 0, 0, 0));
                    edit("tail", last + 1)
                }
            }
        }
        6 => {
            // bpf-to-bpf call to past the end, into an LD_IMM64, to itself
            // (recursion), or to slot 0.
            let at = boundary(rng, insns);
            let imm: i64 = match rng.below(4) {
                0 => len as i64 + 1 - at as i64,
                1 => -1,
                2 => -(at as i64) - 1,
                _ => rng.below(len as u64) as i64 - at as i64,
            };
            let call = Insn::new(0x85, 0, BPF_PSEUDO_CALL, 0, imm as i32);
            match insert(insns, at, &[call]) {
                Some(out) => {
                    *insns = out;
                    Edit {
                        what: "pseudo call",
                        at,
                        shift: 1,
                    }
                }
                None => edit("pseudo call", at),
            }
        }
        7 => {
            // A kfunc call by BTF id: not a function, not a kfunc, not
            // allowed for the program type; or with a module fd index.
            let id = match rng.below(4) {
                0 => rng.below(200_000) as i32,
                1 => -(1 + rng.below(4) as i32),
                _ => 1 + rng.below(130_000) as i32,
            };
            let off = if rng.chance(15) {
                rng.below(maps.max(1) as u64) as i16
            } else {
                0
            };
            let call = Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, off, id);
            let at = boundary(rng, insns);
            set_r1_to_r5(insns, at, call)
        }
        8 => {
            // A helper call with any id or a bad src.
            let src = if rng.chance(30) {
                rng.below(16) as u8
            } else {
                0
            };
            let id = if rng.chance(50) {
                rng.below(240) as i32
            } else {
                rng.next() as i32
            };
            let at = boundary(rng, insns);
            set_r1_to_r5(insns, at, Insn::new(0x85, 0, src, 0, id))
        }
        9 | 10 => {
            // LD_ABS / LD_IND of every width, sometimes with odd fields.
            let mode = rng.pick(&[0x20u8, 0x40]);
            let size = rng.pick(&[0x00u8, 0x08, 0x10, 0x18]);
            let mut ins = Insn::new(
                mode | size,
                0,
                0,
                0,
                rng.pick(&[0, 1, 2, 12, 14, 23, -1, 0x7fff_ffff, -0x200000]),
            );
            if mode == 0x40 {
                ins.src = rng.pick(&[0u8, 1, 2, 6, 7, 10]);
            }
            if rng.chance(20) {
                ins.dst = 1 + rng.below(10) as u8;
            }
            if rng.chance(10) {
                ins.off = 1;
            }
            let at = boundary(rng, insns);
            match insert(insns, at, &[ins]) {
                Some(out) => {
                    *insns = out;
                    Edit {
                        what: "ld_abs",
                        at,
                        shift: 1,
                    }
                }
                None => edit("ld_abs", at),
            }
        }
        11 => {
            // An atomic with any operation, width or mode.
            let code = rng.pick(&[0xc3u8, 0xdb, 0xd3, 0xcb]);
            let imm = match rng.below(3) {
                0 => rng.below(0x200) as i32,
                1 => rng.pick(&[0x100, 0x110, 0x101, 0x111, 0xe0, 0xf0, 0x02, 0x10]),
                _ => rng.next() as i32,
            };
            let at = boundary(rng, insns);
            let ins = [
                Insn::new(0x7a, 10, 0, -8, 0),
                Insn::new(code, 10, 1, -8, imm),
            ];
            match insert(insns, at, &ins) {
                Some(out) => {
                    *insns = out;
                    Edit {
                        what: "atomic",
                        at,
                        shift: 2,
                    }
                }
                None => edit("atomic", at),
            }
        }
        12 => {
            // may_goto with an immediate, gotol, a JA with a register.
            let ins = match rng.below(3) {
                0 => Insn::new(0xe5, 0, 0, 0, rng.pick(&[1, -1, 8])),
                1 => Insn::new(0x06, 0, 0, rng.pick(&[0, 1]), rng.pick(&[0, 1, 1 << 20])),
                _ => Insn::new(0x0d, 1, 2, 0, 0),
            };
            let at = boundary(rng, insns);
            match insert(insns, at, &[ins]) {
                Some(out) => {
                    *insns = out;
                    Edit {
                        what: "ja form",
                        at,
                        shift: 1,
                    }
                }
                None => edit("ja form", at),
            }
        }
        13 => {
            // A stack slot past the frame limit, in one frame.
            let off = -(rng.pick(&[512i16, 513, 520, 1024, 4096]));
            let ins = Insn::new(0x7a, 10, 0, off, 0);
            let at = boundary(rng, insns);
            match insert(insns, at, &[ins]) {
                Some(out) => {
                    *insns = out;
                    Edit {
                        what: "deep stack",
                        at,
                        shift: 1,
                    }
                }
                None => edit("deep stack", at),
            }
        }
        _ => {
            // A BPF_END/MOVSX/SDIV form with an odd width or offset.
            let ins = match rng.below(4) {
                0 => Insn::new(
                    rng.pick(&[0xd4u8, 0xdc, 0xd7, 0xdf]),
                    0,
                    0,
                    0,
                    rng.pick(&[0, 8, 16, 24, 32, 48, 64, 128]),
                ),
                1 => Insn::new(
                    rng.pick(&[0xbfu8, 0xbc, 0xb7, 0xb4]),
                    0,
                    rng.pick(&[0u8, 1]),
                    rng.pick(&[1i16, 2, 8, 16, 32, 64]),
                    0,
                ),
                2 => Insn::new(
                    rng.pick(&[0x3fu8, 0x9f, 0x37, 0x97, 0x3c, 0x9c]),
                    0,
                    1,
                    rng.pick(&[1i16, 2, -1]),
                    3,
                ),
                _ => Insn::new(0xbf, 0, 1, 1, 0),
            };
            let at = boundary(rng, insns);
            match insert(insns, at, &[Insn::new(0xb7, 0, 0, 0, 7), ins]) {
                Some(out) => {
                    *insns = out;
                    Edit {
                        what: "alu form",
                        at,
                        shift: 2,
                    }
                }
                None => edit("alu form", at),
            }
        }
    }
}

/// Inserts `call` at `at` after setting r1..r5 to zero (the arguments most
/// prototypes accept as scalars), so the call's own check decides.
fn set_r1_to_r5(insns: &mut Vec<Insn>, at: usize, call: Insn) -> Edit {
    let mut seq: Vec<Insn> = (1..=5).map(|r| Insn::new(0xb7, r, 0, 0, 0)).collect();
    seq.push(call);
    let what = if call.src == BPF_PSEUDO_KFUNC_CALL {
        "kfunc id"
    } else {
        "helper call"
    };
    match insert(insns, at, &seq) {
        Some(out) => {
            *insns = out;
            Edit {
                what,
                at,
                shift: seq.len() as i64,
            }
        }
        None => Edit { what, at, shift: 0 },
    }
}

/// An LD_IMM64 of another form: a pseudo source of every kind, a direct
/// map value at any offset, broken second halves, one cut off at the end.
fn ld_imm64(rng: &mut Rng, insns: &mut Vec<Insn>, maps: usize) -> Edit {
    let existing: Vec<usize> = (0..insns.len())
        .filter(|&j| insns[j].is_ld_imm64() && !second_slot(insns, j))
        .collect();
    if !existing.is_empty() && rng.chance(50) {
        let j = existing[rng.below(existing.len() as u64) as usize];
        if j + 1 >= insns.len() {
            return Edit {
                what: "ld_imm64",
                at: j,
                shift: 0,
            };
        }
        match rng.below(5) {
            0 => {
                insns[j].src = rng.below(9) as u8;
                if matches!(insns[j].src, 1 | 2) {
                    // A map index read as an fd may name one of the
                    // harness's own map fds: only fds that are no map.
                    insns[j].imm = rng.pick(&[0, 1, 2, 9999, -1]);
                }
            }
            1 => insns[j + 1].imm = rng.pick(&[1, 8, 47, 48, 64, 4096, 1 << 29]),
            2 => insns[j + 1].code = rng.pick(&[0x18u8, 0x07, 0x95]),
            3 => insns[j + 1].dst = 1 + rng.below(10) as u8,
            _ => insns[j].off = 1,
        }
        return Edit {
            what: "ld_imm64",
            at: j,
            shift: 0,
        };
    }
    let src = rng.pick(&[0u8, 1, 2, 3, 4, 5, 6, 6, 6, 7]);
    let imm = match src {
        // Map fds: 0..2 are the process' stdio, 9999 nothing.
        1 | 2 => rng.pick(&[0, 1, 2, 9999, -1]),
        // Indexes into fd_array: only the object's maps are safe to ask.
        5 | 6 => rng.below(maps.max(1) as u64) as i32,
        3 => 1 + rng.below(130_000) as i32,
        4 => rng.pick(&[0, 1, -2, 1000]),
        _ => rng.next() as i32,
    };
    let hi = match src {
        6 | 2 => rng.pick(&[0, 4, 8, 40, 47, 48, 56, 1 << 29, -1]),
        _ => rng.pick(&[0, 0, 0, 1]),
    };
    let dst = if rng.chance(90) {
        rng.below(10) as u8
    } else {
        10
    };
    let pair = [Insn::new(0x18, dst, src, 0, imm), Insn::new(0, 0, 0, 0, hi)];
    if rng.chance(15) {
        // Cut off: only the first half, as the last slot.
        insns.push(pair[0]);
        return Edit {
            what: "ld_imm64 cut",
            at: insns.len() - 1,
            shift: 0,
        };
    }
    let at = boundary(rng, insns);
    match insert(insns, at, &pair) {
        Some(out) => {
            *insns = out;
            Edit {
                what: "ld_imm64",
                at,
                shift: 2,
            }
        }
        None => Edit {
            what: "ld_imm64",
            at,
            shift: 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_keeps_jump_and_call_targets() {
        // 0: if r1 > 3 goto +1 (-> 2); 1: call pc+1 (-> 3); 2: exit; 3: exit
        let insns = vec![
            Insn::new(0x25, 1, 0, 1, 3),
            Insn::new(0x85, 0, BPF_PSEUDO_CALL, 0, 1),
            Insn::new(0x95, 0, 0, 0, 0),
            Insn::new(0x95, 0, 0, 0, 0),
        ];
        let out = insert(&insns, 1, &[Insn::new(0xb7, 0, 0, 0, 0)]).unwrap();
        assert_eq!(out.len(), 5);
        assert_eq!(out[0].off, 2, "the branch still lands on the first exit");
        assert_eq!(out[2].imm, 1, "the call still lands on the second exit");
        // A backward jump across the insertion point.
        let back = vec![
            Insn::new(0x07, 1, 0, 0, 1),
            Insn::new(0xa5, 1, 0, -2, 9),
            Insn::new(0x95, 0, 0, 0, 0),
        ];
        let out = insert(&back, 1, &[Insn::new(0xb7, 0, 0, 0, 0)]).unwrap();
        assert_eq!(out[2].off, -3);
        assert!(insert(
            &[Insn::new(0x18, 1, 0, 0, 0), Insn::new(0, 0, 0, 0, 0)],
            1,
            &[]
        )
        .is_none());
    }

    #[test]
    fn offsets_follow_edits() {
        assert_eq!(after_delete(2, 4, 1), 1);
        assert_eq!(after_delete(2, 4, 3), 2);
        assert_eq!(after_delete(2, 4, 5), 3);
        assert_eq!(after_insert(2, 3, 2), 5);
        assert_eq!(after_insert(2, 3, 1), 1);
    }
}
