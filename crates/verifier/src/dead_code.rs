//! What the kernel's dead-code passes after a successful verification do to
//! the program's call targets (privileged load: opt_hard_wire_dead_code_branches,
//! opt_remove_dead_code, opt_remove_nops), and whether the JIT step
//! (jit_subprogs) then finds a subprogram at every bpf-to-bpf call and
//! callback address.
//!
//! A callback whose address is loaded on an explored path but whose body no
//! path entered (bpf_loop with zero iterations) is removed; the address in
//! the `ldimm64` is not: each removal shifts targets past the removed range
//! and leaves targets inside it numerically unchanged. The stale address
//! then either falls on the start of a later subprogram (the program loads,
//! the JIT calls that one) or on no start ("No program to jit").
//!
//! Later rewrites (bpf_loop inlining, ctx conversion, helper fixups) insert
//! instructions; they shift targets and subprogram starts alike, so they do
//! not change whether a target falls on a start, only its index, which
//! bpfvet does not compute.

use bpfvet_isa::opcode::{
    class, op, BPF_CALL, BPF_EXIT, BPF_JA, BPF_JCOND, BPF_JMP, BPF_JMP32, BPF_PSEUDO_CALL,
};
use bpfvet_isa::Insn;

use crate::cfg::is_pseudo_func;

struct Image {
    insns: Vec<Insn>,
    seen: Vec<bool>,
    /// Subprogram starts, then the end of the program (the kernel's fake
    /// 'exit' subprogram).
    starts: Vec<i64>,
}

fn is_cond_jump(code: u8) -> bool {
    match class(code) {
        BPF_JMP32 => op(code) != BPF_JA,
        BPF_JMP => !matches!(op(code), BPF_JA | BPF_EXIT | BPF_CALL),
        _ => false,
    }
}

/// The new value of a relative target `rel` of the instruction now at
/// `curr`, after `cnt` slots at `off` were removed (bpf_adj_delta_to_*).
fn adjusted(rel: i64, curr: i64, off: i64, cnt: i64) -> i64 {
    let (pos, end_old, end_new) = (off, off + cnt, off);
    let delta = end_new - end_old;
    if curr < pos && curr + rel + 1 >= end_old {
        rel + delta
    } else if curr >= end_new && curr + rel + 1 < end_new {
        rel - delta
    } else {
        rel
    }
}

impl Image {
    /// verifier_remove_insns: the slots, the jump and call offsets
    /// (bpf_adj_branches) and the subprogram starts.
    fn remove(&mut self, off: usize, cnt: usize) -> Option<()> {
        self.insns.drain(off..off + cnt);
        self.seen.drain(off..off + cnt);
        let (o, c) = (off as i64, cnt as i64);
        for (i, ins) in self.insns.iter_mut().enumerate() {
            let curr = i as i64;
            let code = ins.code;
            if is_pseudo_func(ins) || (code == BPF_JMP | BPF_CALL && ins.src == BPF_PSEUDO_CALL) {
                ins.imm = i32::try_from(adjusted(ins.imm as i64, curr, o, c)).ok()?;
            } else if matches!(class(code), BPF_JMP | BPF_JMP32)
                && op(code) != BPF_EXIT
                && op(code) != BPF_CALL
            {
                if code == BPF_JMP32 | BPF_JA {
                    ins.imm = i32::try_from(adjusted(ins.imm as i64, curr, o, c)).ok()?;
                } else {
                    ins.off = i16::try_from(adjusted(ins.off as i64, curr, o, c)).ok()?;
                }
            }
        }
        self.adjust_starts(o, c);
        Some(())
    }

    /// adjust_subprog_starts_after_remove: subprograms wholly inside the
    /// removed range disappear, the later ones move up.
    fn adjust_starts(&mut self, off: i64, cnt: i64) {
        let n = self.starts.len() - 1; // real subprograms
        let s = &mut self.starts;
        let mut i = (0..n).find(|&k| s[k] >= off).unwrap_or(n);
        let mut j = (i..n).find(|&k| s[k] >= off + cnt).unwrap_or(n) as i64;
        if s[j as usize] != off + cnt {
            j -= 1;
        }
        if j > i as i64 {
            s.drain(i..j as usize);
        } else if s.get(i) == Some(&off) {
            i += 1;
        }
        for start in s.iter_mut().skip(i) {
            *start -= cnt;
        }
    }

    /// find_subprog: the subprogram starting exactly at `t`.
    fn subprog_starting_at(&self, t: i64) -> bool {
        let real = &self.starts[..self.starts.len() - 1];
        if t < 0 || t >= self.insns.len() as i64 || real.is_empty() {
            return false;
        }
        real.iter().rev().find(|&&s| s <= t) == Some(&t)
    }
}

/// A call or callback address the JIT step finds no subprogram at.
#[derive(Debug, PartialEq, Eq)]
pub struct StaleTarget {
    /// The address instruction's index in the original program.
    pub insn: usize,
    /// The target it holds once the dead code is gone.
    pub target: i64,
    /// Whether a later rewrite (ctx conversion, helper and kfunc fixups,
    /// division checks, may_goto, zero extension) may insert instructions
    /// into what is left: the kernel then names the target shifted by
    /// them, which bpfvet does not compute.
    pub rewritten: bool,
}

/// Whether a later rewrite may insert instructions for this kept
/// instruction. Conservative: any memory access not based directly on the
/// frame pointer, any atomic, any helper or kfunc call, division, an ALU
/// instruction with an offset, LD_ABS/IND and may_goto count as rewritten.
fn may_be_rewritten(ins: &Insn) -> bool {
    use bpfvet_isa::opcode::{
        mode, BPF_ATOMIC, BPF_DIV, BPF_LD, BPF_LDX, BPF_MEM, BPF_MEMSX, BPF_MOD, BPF_ST, BPF_STX,
    };
    let fp = 10;
    match class(ins.code) {
        // Division gets its zero checks; an address space cast (a MOV with
        // an offset) may be rewritten too.
        bpfvet_isa::opcode::BPF_ALU | bpfvet_isa::opcode::BPF_ALU64 => {
            matches!(op(ins.code), BPF_DIV | BPF_MOD) || ins.off != 0
        }
        BPF_LD => !ins.is_ld_imm64(),
        BPF_LDX => !matches!(mode(ins.code), BPF_MEM | BPF_MEMSX) || ins.src != fp,
        BPF_ST => mode(ins.code) != BPF_MEM || ins.dst != fp,
        BPF_STX => mode(ins.code) == BPF_ATOMIC || mode(ins.code) != BPF_MEM || ins.dst != fp,
        BPF_JMP | BPF_JMP32 => match op(ins.code) {
            BPF_CALL => ins.src != BPF_PSEUDO_CALL,
            BPF_JCOND => true,
            _ => false,
        },
        _ => true,
    }
}

/// The first call or callback address whose target the JIT step would not
/// find after the kernel removed the dead code, or None when every target
/// falls on a subprogram start. `seen` holds the explored instructions,
/// `starts` the subprogram starts.
pub fn stale_call_target(insns: &[Insn], seen: &[bool], starts: &[usize]) -> Option<StaleTarget> {
    let mut seen = seen.to_vec();
    seen.resize(insns.len(), false);
    // The second slot of an explored ldimm64 is marked seen too.
    for i in 0..insns.len().saturating_sub(1) {
        if insns[i].is_ld_imm64() && seen[i] {
            seen[i + 1] = true;
        }
    }
    let mut img = Image {
        insns: insns.to_vec(),
        seen,
        starts: starts
            .iter()
            .map(|&s| s as i64)
            .chain([insns.len() as i64])
            .collect(),
    };
    // Remember each instruction's original index through the removals.
    let mut origin: Vec<usize> = (0..insns.len()).collect();

    // opt_hard_wire_dead_code_branches
    for i in 0..img.insns.len() {
        let ins = img.insns[i];
        if !is_cond_jump(ins.code) {
            continue;
        }
        let seen_at = |k: i64| k >= 0 && img.seen.get(k as usize).copied().unwrap_or(false);
        let off = if !seen_at(i as i64 + 1) {
            ins.off
        } else if !seen_at(i as i64 + 1 + ins.off as i64) {
            0
        } else {
            continue;
        };
        img.insns[i] = Insn::new(BPF_JMP | BPF_JA, 0, 0, off, 0);
    }
    // opt_remove_dead_code
    let mut i = 0;
    while i < img.insns.len() {
        let run = img.seen[i..].iter().take_while(|&&s| !s).count();
        if run > 0 {
            img.remove(i, run)?;
            origin.drain(i..i + run);
        }
        i += 1;
    }
    // opt_remove_nops
    let nop = Insn::new(BPF_JMP | BPF_JA, 0, 0, 0, 0);
    let may_goto_0 = Insn::new(BPF_JMP | BPF_JCOND, 0, 0, 0, 0);
    let mut i: i64 = 0;
    while i < img.insns.len() as i64 {
        let ins = img.insns[i as usize];
        let is_may_goto_0 = ins == may_goto_0;
        if !is_may_goto_0 && ins != nop {
            i += 1;
            continue;
        }
        img.remove(i as usize, 1)?;
        origin.remove(i as usize);
        i -= if is_may_goto_0 && i > 0 { 2 } else { 1 };
        i += 1;
    }
    // jit_subprogs, with more than main left.
    if img.starts.len() - 1 <= 1 {
        return None;
    }
    let rewritten = {
        let mut k = 0;
        let mut any = false;
        while k < img.insns.len() {
            any |= may_be_rewritten(&img.insns[k]);
            k += if img.insns[k].is_ld_imm64() { 2 } else { 1 };
        }
        any
    };
    img.insns.iter().enumerate().find_map(|(i, ins)| {
        let call = ins.code == BPF_JMP | BPF_CALL && ins.src == BPF_PSEUDO_CALL;
        if !call && !is_pseudo_func(ins) {
            return None;
        }
        let t = i as i64 + ins.imm as i64 + 1;
        (!img.subprog_starting_at(t)).then(|| StaleTarget {
            insn: origin[i],
            target: t,
            rewritten,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpfvet_isa::opcode::{BPF_DW, BPF_IMM, BPF_LD, BPF_PSEUDO_FUNC};

    fn exit() -> Insn {
        Insn::new(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
    }
    fn mov0() -> Insn {
        Insn::new(0xb7, 0, 0, 0, 0)
    }
    fn ld_func(rel: i32) -> [Insn; 2] {
        [
            Insn::new(BPF_LD | BPF_IMM | BPF_DW, 2, BPF_PSEUDO_FUNC, 0, rel),
            Insn::default(),
        ]
    }

    #[test]
    fn dead_last_callback_leaves_its_address_past_the_end() {
        // main: ld r2 = func(f2); call f1; exit. f1: r0 = 0; exit. f2: exit (dead).
        let [a, b] = ld_func(5);
        let call = Insn::new(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 1);
        let insns = [a, b, call, exit(), mov0(), exit(), exit()];
        let seen = [true, false, true, true, true, true, false];
        assert_eq!(insns[0].imm + 1, 6);
        assert_eq!(
            stale_call_target(&insns, &seen, &[0, 4, 6]),
            Some(StaleTarget {
                insn: 0,
                target: 6,
                rewritten: false
            })
        );
    }

    #[test]
    fn kept_ctx_load_may_shift_the_named_target() {
        // As above, f1 reading its context through r1: convert_ctx_accesses
        // may grow that load, so the target's final index is not known.
        let [a, b] = ld_func(5);
        let call = Insn::new(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 1);
        let ctx_load = Insn::new(
            bpfvet_isa::opcode::BPF_LDX | bpfvet_isa::opcode::BPF_MEM | BPF_DW,
            0,
            1,
            0,
            0,
        );
        let insns = [a, b, call, exit(), ctx_load, exit(), exit()];
        let seen = [true, false, true, true, true, true, false];
        let stale = stale_call_target(&insns, &seen, &[0, 4, 6]);
        assert!(stale.is_some_and(|s| s.rewritten));
    }

    #[test]
    fn dead_callback_before_a_live_subprogram_lands_on_it() {
        // main: ld r2 = func(f1); call f2; exit. f1: exit (dead). f2: r0 = 0; exit.
        let [a, b] = ld_func(3);
        let call = Insn::new(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 2);
        let insns = [a, b, call, exit(), exit(), mov0(), exit()];
        let seen = [true, false, true, true, false, true, true];
        assert_eq!(stale_call_target(&insns, &seen, &[0, 4, 5]), None);
    }

    #[test]
    fn main_alone_left_is_never_checked() {
        let [a, b] = ld_func(2);
        let insns = [a, b, exit(), exit()];
        let seen = [true, false, true, false];
        assert_eq!(stale_call_target(&insns, &seen, &[0, 3]), None);
    }
}
