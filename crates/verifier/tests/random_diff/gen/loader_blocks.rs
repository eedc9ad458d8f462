//! Whole programs for checks made at load, before or around the
//! exploration (feature `loader`): the subprogram count limit.

use super::Rng;
use bpfvet_isa::opcode::{BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC};
use bpfvet_isa::Insn;

/// A program replacing the generated one.
pub fn whole_program(rng: &mut Rng) -> Vec<Insn> {
    many_subprograms(rng)
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
