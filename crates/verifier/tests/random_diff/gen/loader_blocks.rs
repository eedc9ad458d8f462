//! Whole-program shapes for checks made at load, before or around the
//! exploration (feature `loader`): the subprogram count limit, sleepable
//! and syscall programs (which program types may sleep, which maps a
//! sleepable program may use), flow dissector programs and their flow keys.

use super::Rng;
use bpfvet_isa::opcode::{BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC};
use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;

/// Changes a generated program in a few percent of the cases: replaces
/// it, or changes its type or load flags.
pub fn reshape(
    rng: &mut Rng,
    prog_type: &mut ProgType,
    insns: &mut Vec<Insn>,
    sleepable: &mut bool,
) {
    match rng.below(100) {
        0..=1 => *insns = many_subprograms(rng),
        2..=3 => {
            *prog_type = ProgType::FLOW_DISSECTOR;
            *insns = flow_dissector(rng);
        }
        4..=5 => {
            // The body keeps its maps and helpers: a syscall program must
            // be sleepable, and then only some map types are allowed.
            *prog_type = ProgType::SYSCALL;
            *sleepable = rng.chance(70);
        }
        6 => *sleepable = true,
        _ => {}
    }
}

/// Main calls (or takes the address of) `n` trivial subprograms, around
/// the kernel's limit of 256 functions per program.
fn many_subprograms(rng: &mut Rng) -> Vec<Insn> {
    let n = rng.pick(&[254usize, 255, 256, 257, 300]);
    let by_address = rng.chance(30);
    let per_call = if by_address { 2 } else { 1 };
    let main_len = n * per_call + 2;
    let mut insns = Vec::with_capacity(main_len + 2 * n);
    for k in 0..n {
        let at = insns.len();
        let target = main_len + 2 * k;
        let rel = (target as i64 - at as i64 - 1) as i32;
        if by_address {
            insns.push(Insn::new(0x18, 2, BPF_PSEUDO_FUNC, 0, rel));
            insns.push(Insn::new(0, 0, 0, 0, 0));
        } else {
            insns.push(Insn::new(0x85, 0, BPF_PSEUDO_CALL, 0, rel));
        }
    }
    insns.push(Insn::new(0xb7, 0, 0, 0, 0));
    insns.push(Insn::new(0x95, 0, 0, 0, 0));
    for _ in 0..n {
        insns.push(Insn::new(0xb7, 0, 0, 0, 0));
        insns.push(Insn::new(0x95, 0, 0, 0, 0));
    }
    insns
}

/// `struct __sk_buff`'s flow_keys pointer.
const SKB_FLOW_KEYS: i16 = 144;
/// sizeof(struct bpf_flow_keys).
const FLOW_KEYS_SIZE: i16 = 56;

/// A flow dissector: loads and stores through `ctx->flow_keys` at offsets
/// in and out of the structure, with constant or variable offsets, and
/// stores of pointers into it.
fn flow_dissector(rng: &mut Rng) -> Vec<Insn> {
    let mut insns = vec![
        Insn::new(0xbf, 6, 1, 0, 0),
        Insn::new(0x79, 7, 6, SKB_FLOW_KEYS, 0),
    ];
    for _ in 0..1 + rng.below(4) {
        let (sz, bytes) = rng.pick(&[(0x00u8, 4i16), (0x08, 2), (0x10, 1), (0x18, 8)]);
        let off = rng.pick(&[0, 8, 12, FLOW_KEYS_SIZE - bytes, FLOW_KEYS_SIZE, -4, 64, 3]);
        if rng.chance(15) {
            // A variable offset into the keys.
            insns.push(Insn::new(0xbf, 8, 7, 0, 0));
            insns.push(Insn::new(0x61, 2, 6, 0, 0));
            insns.push(Insn::new(0x57, 2, 0, 0, 0x7));
            insns.push(Insn::new(0x0f, 8, 2, 0, 0));
            insns.push(Insn::new(0x61 | sz, 0, 8, 0, 0));
            continue;
        }
        match rng.below(4) {
            0 => insns.push(Insn::new(0x61 | sz, 0, 7, off, 0)),
            1 => insns.push(Insn::new(0x62 | sz, 7, 0, off, 1)),
            2 => {
                let src = rng.pick(&[6u8, 7, 10]);
                insns.push(Insn::new(0x7b, 7, src, off, 0));
            }
            _ => {
                insns.push(Insn::new(0xb7, 3, 0, 0, 5));
                insns.push(Insn::new(0x63 | sz, 7, 3, off, 0));
            }
        }
    }
    let ret = rng.pick(&[0, 2, -1, 1]);
    insns.push(Insn::new(0xb7, 0, 0, 0, ret));
    insns.push(Insn::new(0x95, 0, 0, 0, 0));
    insns
}
