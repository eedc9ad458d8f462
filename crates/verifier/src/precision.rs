//! Precision tracking: when a scalar's exact value decides safety, walk the
//! instruction history backwards and mark every register and stack slot it
//! was computed from as precise in the checkpoints on the path
//! (the kernel's __mark_chain_precision and backtrack_insn).
//!
//! SEEDS.md §1b: before a walk, registers already precise in the current
//! state are dropped; if nothing is left the walk is not started. The
//! baseline switch (`backtrack_no_skip`) always walks.

use crate::cfg;
use crate::error::VResult;
use crate::explore::Env;
use crate::regs::RegType;
use crate::state::{HistEntry, State, MAX_CALL_FRAMES};
use bpfvet_isa::opcode::*;

/// Registers (bits 0..10) and stack slots (bits 0..63) still to explain,
/// per frame.
#[derive(Default, Clone, Copy)]
pub struct Backtrack {
    pub frame: usize,
    pub regs: [u16; MAX_CALL_FRAMES],
    pub slots: [u64; MAX_CALL_FRAMES],
}

const ARGS: u16 = 0b11_1110;

/// Why a walk stopped short.
enum WalkStop {
    /// The history cannot explain a value (-ENOTSUPP): the kernel then
    /// marks every scalar precise and goes on.
    Unsupported,
    /// The walk met a mask the path cannot have left (the kernel's
    /// verifier_bug, -EFAULT): verification fails with this line.
    Bug(String),
}
use WalkStop::Unsupported;

/// A failed walk as the line the kernel's verifier_bug prints.
fn bug(what: std::fmt::Arguments) -> WalkStop {
    WalkStop::Bug(format!("verifier bug: {what}"))
}

impl Backtrack {
    #[inline]
    fn empty(&self) -> bool {
        // Whole-array compares (a few vector instructions): this runs
        // after every stepped instruction and at every checkpoint.
        self.regs == [0; MAX_CALL_FRAMES] && self.slots == [0; MAX_CALL_FRAMES]
    }
    fn is_reg(&self, r: u8) -> bool {
        self.regs[self.frame] & (1 << r) != 0
    }
    fn set_reg(&mut self, r: u8) {
        self.regs[self.frame] |= 1 << r;
    }
    fn clear_reg(&mut self, r: u8) {
        self.regs[self.frame] &= !(1 << r);
    }
    /// Into a callee's frame, walking back over its exit.
    fn subprog_enter(&mut self) -> Result<(), WalkStop> {
        if self.frame + 1 >= MAX_CALL_FRAMES {
            return Err(bug(format_args!("subprog enter from frame {}", self.frame)));
        }
        self.frame += 1;
        Ok(())
    }
    /// Into the caller's frame, walking back over the call.
    fn subprog_exit(&mut self) -> Result<(), WalkStop> {
        if self.frame == 0 {
            return Err(bug(format_args!("subprog exit from frame 0")));
        }
        self.frame -= 1;
        Ok(())
    }

    fn step(
        &mut self,
        env: &Env,
        idx: usize,
        subseq: i64,
        hist: Option<&HistEntry>,
    ) -> Result<(), WalkStop> {
        let insn = env.insns[idx];
        if insn.code == 0 {
            return Ok(());
        }
        let cls = insn.class();
        let o = op(insn.code);
        let (d, s) = (insn.dst, insn.src);
        let stack = hist.map_or(0, |h| h.stack);
        if let Some(h) = hist.filter(|h| h.linked != 0) {
            self.sync_linked(h.linked);
        }
        match cls {
            BPF_ALU | BPF_ALU64 => {
                if !self.is_reg(d) {
                    return Ok(());
                }
                if o == BPF_END || o == BPF_NEG {
                    return Ok(());
                }
                if o == BPF_MOV {
                    self.clear_reg(d);
                    if source(insn.code) == BPF_X && s != 10 {
                        self.set_reg(s);
                    }
                } else if source(insn.code) == BPF_X && s != 10 {
                    self.set_reg(s);
                }
            }
            // A load-acquire is a load into dst; other atomics (fetching
            // or not) walk back as the store of src, as the kernel does:
            // a fetched register keeps its own precision request.
            BPF_LDX | BPF_STX
                if cls == BPF_LDX
                    || (mode(insn.code) == BPF_ATOMIC && insn.imm == BPF_LOAD_ACQ) =>
            {
                if !self.is_reg(d) {
                    return Ok(());
                }
                self.clear_reg(d);
                if stack != 0 {
                    let (fr, spi) = decode_stack(stack);
                    self.slots[fr] |= 1 << spi;
                }
            }
            BPF_STX | BPF_ST => {
                if self.is_reg(d) {
                    return Err(Unsupported);
                }
                if stack == 0 {
                    return Ok(());
                }
                let (fr, spi) = decode_stack(stack);
                if self.slots[fr] & (1 << spi) == 0 {
                    return Ok(());
                }
                self.slots[fr] &= !(1 << spi);
                if cls == BPF_STX {
                    self.set_reg(s);
                }
            }
            BPF_JMP | BPF_JMP32 => {
                let callee = cfg::is_pseudo_call(&insn)
                    .then(|| {
                        env.cfg
                            .subprog_at((idx as i64 + insn.imm as i64 + 1) as usize)
                    })
                    .flatten();
                if callee.is_some_and(|sub| env.is_global(sub)) {
                    // A global subprogram was verified on its own: the path
                    // goes straight from the call to the next instruction.
                    // It sets R0 and clobbers R1-R5, so none of those can
                    // still be asked for.
                    if self.regs[self.frame] & ARGS != 0 {
                        return Err(bug(format_args!(
                            "global subprog unexpected regs {:x}",
                            self.regs[self.frame]
                        )));
                    }
                    self.clear_reg(0);
                } else if cfg::is_pseudo_call(&insn) {
                    // Walking back out of the callee into the caller: only
                    // its arguments can still be asked for there.
                    if self.regs[self.frame] & !ARGS != 0 {
                        return Err(bug(format_args!(
                            "static subprog unexpected regs {:x}",
                            self.regs[self.frame]
                        )));
                    }
                    if self.slots[self.frame] != 0 {
                        return Err(bug(format_args!(
                            "static subprog leftover stack slots {:x}",
                            self.slots[self.frame]
                        )));
                    }
                    let moved = self.regs[self.frame];
                    self.regs[self.frame] = 0;
                    self.subprog_exit()?;
                    self.regs[self.frame] |= moved;
                } else if cfg::is_sync_callback_insn(&insn) && idx as i64 != subseq - 1 {
                    // Out of a callback into the call that ran it: R1-R5
                    // were the call's to set, not asked of the caller.
                    if self.regs[self.frame] & !ARGS != 0 {
                        return Err(bug(format_args!(
                            "callback unexpected regs {:x}",
                            self.regs[self.frame]
                        )));
                    }
                    if self.slots[self.frame] != 0 {
                        return Err(bug(format_args!(
                            "callback leftover stack slots {:x}",
                            self.slots[self.frame]
                        )));
                    }
                    self.regs[self.frame] = 0;
                    self.subprog_exit()?;
                } else if o == BPF_CALL {
                    if insn.src == BPF_PSEUDO_KFUNC_CALL && insn.imm == 0 {
                        return Err(Unsupported);
                    }
                    self.clear_reg(0);
                    if self.regs[self.frame] & ARGS != 0 {
                        return Err(bug(format_args!(
                            "backtracking call unexpected regs {:x}",
                            self.regs[self.frame]
                        )));
                    }
                    // Reached from the caller through a tail call's hidden
                    // exit: back into the subprogram's frame.
                    let tail_call_exit = cfg::is_helper_call(&insn)
                        && insn.imm == crate::helpers::id::TAIL_CALL as i32
                        && idx as i64 != subseq - 1;
                    if tail_call_exit {
                        self.subprog_enter()?;
                    }
                } else if o == BPF_EXIT {
                    // Back out of a callback into the call that ran it: its
                    // R1-R5 were set by that call, not by the callback.
                    if subseq >= 0 && env.cfg.is(subseq as usize, cfg::mark::CALLS_CALLBACK) {
                        self.regs[self.frame] &= !ARGS;
                    }
                    if self.regs[self.frame] & ARGS != 0 {
                        return Err(bug(format_args!(
                            "backtracking exit unexpected regs {:x}",
                            self.regs[self.frame]
                        )));
                    }
                    let from_call =
                        subseq >= 1 && cfg::is_pseudo_call(&env.insns[(subseq - 1) as usize]);
                    let r0 = from_call && self.is_reg(0);
                    self.clear_reg(0);
                    self.subprog_enter()?;
                    if r0 {
                        self.set_reg(0);
                    }
                } else if source(insn.code) == BPF_X {
                    if !self.is_reg(d) && !self.is_reg(s) {
                        return Ok(());
                    }
                    let jmp_stack = hist.map_or(0, |h| h.jmp_stack);
                    if jmp_stack & crate::state::JMP_SRC_STACK == 0 {
                        self.set_reg(s);
                    }
                    if jmp_stack & crate::state::JMP_DST_STACK == 0 {
                        self.set_reg(d);
                    }
                }
            }
            BPF_LD => {
                let m = mode(insn.code);
                if m == BPF_IMM {
                    self.clear_reg(d);
                } else if self.is_reg(d) {
                    return Err(Unsupported);
                }
            }
            _ => {}
        }
        if let Some(h) = hist.filter(|h| h.linked != 0) {
            self.sync_linked(h.linked);
        }
        Ok(())
    }

    /// Registers and slots refined together at a jump share precision
    /// (bt_sync_linked_regs).
    fn sync_linked(&mut self, linked: u64) {
        let set = crate::linked_regs::LinkedRegs::unpack(linked);
        let has = |bt: &Self, m: &crate::linked_regs::Member| {
            let f = m.frame as usize;
            if m.is_reg {
                bt.regs[f] & (1 << m.idx) != 0
            } else {
                bt.slots[f] & (1 << m.idx) != 0
            }
        };
        if !set.members().iter().any(|m| has(self, m)) {
            return;
        }
        for m in set.members() {
            let f = m.frame as usize;
            if m.is_reg {
                self.regs[f] |= 1 << m.idx;
            } else {
                self.slots[f] |= 1 << m.idx;
            }
        }
    }
}

/// `walk_masks` bit of an instruction the walk always steps through.
const ALWAYS_STEP: u16 = 1 << 15;

/// For each instruction, registers of the walked frame such that `step`
/// without a history entry changes nothing unless one of them is asked
/// for; `ALWAYS_STEP` where that does not hold (calls, exits).
fn walk_masks(insns: &[bpfvet_isa::Insn]) -> Vec<u16> {
    insns
        .iter()
        .map(|insn| {
            if insn.code == 0 {
                // The second half of a 64-bit immediate load.
                return 0;
            }
            let bit = |r: u8| 1u16 << (r & 15);
            let o = op(insn.code);
            match insn.class() {
                // dst op= constant (or fp), byte swaps, negation: step
                // leaves an asked-for dst asked for.
                BPF_ALU | BPF_ALU64
                    if o == BPF_END
                        || o == BPF_NEG
                        || (o != BPF_MOV && (source(insn.code) == BPF_K || insn.src == 10)) =>
                {
                    0
                }
                BPF_ALU | BPF_ALU64 | BPF_LDX | BPF_ST | BPF_LD => bit(insn.dst),
                BPF_STX => bit(insn.dst),
                BPF_JMP | BPF_JMP32 if o == BPF_CALL || o == BPF_EXIT => ALWAYS_STEP,
                BPF_JMP | BPF_JMP32 if source(insn.code) == BPF_X => bit(insn.dst) | bit(insn.src),
                BPF_JMP | BPF_JMP32 => 0,
                _ => ALWAYS_STEP,
            }
        })
        .collect()
}

/// Indices of the set bits of `bits`, lowest first: the walk visits only
/// what it still has to explain instead of testing all 11 registers and
/// 64 slots of every frame of every checkpoint.
fn set_bits(mut bits: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if bits == 0 {
            return None;
        }
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        Some(i)
    })
}

pub fn encode_stack(frame: usize, spi: usize) -> u16 {
    (((frame as u16) << 8) | spi as u16) + 1
}
fn decode_stack(v: u16) -> (usize, usize) {
    let v = v - 1;
    (
        ((v >> 8) as usize).min(MAX_CALL_FRAMES - 1),
        (v & 0xff) as usize & 63,
    )
}

/// A backward walk's place in one state's history: the entries not yet
/// walked past, and the instruction of the latest of them (kept at hand:
/// the walk tests it at every instruction).
struct HistCursor<'s> {
    hist: &'s [HistEntry],
    top: usize,
}

impl<'s> HistCursor<'s> {
    fn new(hist: &'s [HistEntry]) -> Self {
        let top = hist.last().map_or(usize::MAX, |e| e.idx as usize);
        HistCursor { hist, top }
    }

    /// The history entry of instruction `idx`, if the walk is at one.
    #[inline]
    fn entry_at(&self, idx: usize) -> Option<&'s HistEntry> {
        if idx == self.top {
            self.hist.last()
        } else {
            None
        }
    }

    /// Previous instruction on the path, or None at the state's first
    /// instruction (`first`).
    #[inline]
    fn prev(&mut self, first: usize, idx: usize) -> Option<usize> {
        if idx == first && (self.hist.is_empty() || (self.hist.len() == 1 && self.top == idx)) {
            return None;
        }
        if idx == self.top {
            let e = self.hist.last()?;
            self.hist = &self.hist[..self.hist.len() - 1];
            self.top = self.hist.last().map_or(usize::MAX, |e| e.idx as usize);
            Some(e.prev_idx as usize)
        } else {
            idx.checked_sub(1)
        }
    }
}

impl Env<'_> {
    /// Marks register `regno` of the current frame precise along the path.
    pub fn mark_chain_precision(&mut self, regno: u8) -> VResult<()> {
        if self.cur.reg(regno).ty != RegType::Scalar {
            return Ok(());
        }
        let mut bt = Backtrack {
            frame: self.cur.curframe(),
            ..Default::default()
        };
        bt.set_reg(regno);
        self.run_backtrack(bt)
    }

    /// Marks registers `a` then `b` of the current frame precise, as two
    /// `mark_chain_precision` calls would (a conditional jump decided by
    /// both its operands). Precision is a property of each register and
    /// slot on the path, and each asked register's walk marks the same
    /// ones whether it runs alone or with the other's, so one walk for both
    /// leaves the marks of the two; only the level 2 log and the explain
    /// report, which show the walks themselves, get them one by one.
    pub fn mark_chain_precision_pair(&mut self, a: u8, b: u8) -> VResult<()> {
        if self.log.level >= 2 || self.explain.is_some() || self.opts.baselines.backtrack_no_skip {
            self.mark_chain_precision(a)?;
            return self.mark_chain_precision(b);
        }
        let mut bt = Backtrack {
            frame: self.cur.curframe(),
            ..Default::default()
        };
        for r in [a, b] {
            if self.cur.reg(r).ty == RegType::Scalar {
                bt.set_reg(r);
            }
        }
        self.run_backtrack(bt)
    }

    /// Marks a set of registers and slots precise (batch form).
    pub fn run_backtrack(&mut self, mut bt: Backtrack) -> VResult<()> {
        // Without CAP_BPF every scalar is precise already.
        if bt.empty() || !self.caps.bpf_capable {
            return Ok(());
        }
        // At log level 2 every walk runs, so that the log shows the
        // kernel's trace of it.
        if !self.opts.baselines.backtrack_no_skip && self.log.level < 2 {
            // §1b: drop what the current state already has precise.
            for fr in 0..=bt.frame.min(self.cur.curframe()) {
                let f = &self.cur.frames[fr];
                for r in set_bits(bt.regs[fr] as u64 & 0x7ff) {
                    if f.regs[r].precise {
                        bt.regs[fr] &= !(1 << r);
                        self.stats.backtrack_regs_skipped += 1;
                    }
                }
                for spi in set_bits(bt.slots[fr]) {
                    if spi >= f.stack.len() {
                        break;
                    }
                    if f.stack[spi].spilled.precise {
                        bt.slots[fr] &= !(1 << spi);
                        self.stats.backtrack_regs_skipped += 1;
                    }
                }
            }
            if bt.empty() {
                self.stats.backtrack_walks_avoided += 1;
                return Ok(());
            }
        }
        if bt.empty() {
            return Ok(());
        }
        self.stats.backtrack_walks += 1;
        if let Some(c) = self.explain.as_deref_mut() {
            c.precision_walk(self.insn_idx);
        }
        // The logging walk is a separate instance, so the walk at lower
        // log levels carries no trace of it.
        let walked = if self.log.level >= 2 {
            self.walk::<true>(&mut bt)
        } else {
            self.walk::<false>(&mut bt)
        };
        match walked {
            Ok(()) => Ok(()),
            Err(Unsupported) => {
                self.mark_all_scalars_precise();
                Ok(())
            }
            Err(WalkStop::Bug(line)) => self.err(line),
        }
    }

    fn walk<const LOG: bool>(&mut self, bt: &mut Backtrack) -> Result<(), WalkStop> {
        if self.walk_masks.is_empty() {
            self.walk_masks = walk_masks(self.insns);
        }
        let mut first_idx = self.cur.first_insn_idx;
        let mut last_idx = self.insn_idx as i64;
        let mut subseq: i64 = -1;
        let mut skip_first = true;
        // None = the current state; Some(id) = a checkpoint in the pool.
        let mut st_id: Option<u32> = None;
        loop {
            {
                let st: &State = match st_id {
                    None => &self.cur,
                    Some(id) => &self.pool.get(id).state,
                };
                if LOG {
                    self.log.line(&format!(
                        "mark_precise: frame{}: last_idx {last_idx} first_idx {first_idx} subseq_idx {subseq} ",
                        bt.frame
                    ));
                }
                if last_idx < 0 {
                    return Err(Unsupported);
                }
                let mut cursor = HistCursor::new(&st.jmp_history);
                let first = st.first_insn_idx;
                let mut i = last_idx as usize;
                // Kept in locals: the loop below runs for every walked
                // instruction, and only a step changes what it asks about.
                let masks = &self.walk_masks[..];
                let n = self.insns.len();
                let mut mask = bt.regs[bt.frame] | ALWAYS_STEP;
                loop {
                    if skip_first {
                        skip_first = false;
                        if bt.empty() {
                            return Ok(());
                        }
                    } else {
                        let h = cursor.entry_at(i);
                        if LOG && self.insns[i].code != 0 {
                            self.log.precise_step(
                                bt.frame,
                                bt.regs[bt.frame],
                                bt.slots[bt.frame],
                                self.insns,
                                i,
                            );
                        }
                        // Most walked instructions have no history entry (or
                        // one that only records the path) and involve no
                        // register the walk asks about: step would leave
                        // `bt` as it is (so still not empty).
                        let passed_over =
                            h.is_none_or(|h| h.stack == 0 && h.linked == 0) && masks[i] & mask == 0;
                        if !passed_over {
                            bt.step(self, i, subseq, h)?;
                            if bt.empty() {
                                return Ok(());
                            }
                            mask = bt.regs[bt.frame] | ALWAYS_STEP;
                        }
                    }
                    subseq = i as i64;
                    match cursor.prev(first, i) {
                        Some(p) if p < n => i = p,
                        Some(_) => return Err(Unsupported),
                        None => break,
                    }
                }
            }
            let parent = match st_id {
                None => self.cur.parent,
                Some(id) => self.pool.get(id).state.parent,
            };
            let Some(pid) = parent else {
                return Err(Unsupported);
            };
            if self.pool.try_get(pid).is_none() {
                return Err(Unsupported);
            }
            let pst = &mut self.pool.get_mut(pid).state;
            for fr in (0..=bt.frame).rev() {
                let Some(func) = pst.frames.get_mut(fr) else {
                    return Err(Unsupported);
                };
                for r in set_bits(bt.regs[fr] as u64 & 0x7ff) {
                    let reg = &mut func.regs[r];
                    if reg.ty != RegType::Scalar || reg.precise {
                        bt.regs[fr] &= !(1 << r);
                    } else {
                        reg.precise = true;
                        self.precise_marks += 1;
                    }
                }
                for spi in set_bits(bt.slots[fr]) {
                    let Some(slot) = func.stack.get_mut(spi) else {
                        return Err(Unsupported);
                    };
                    if !(slot.is_spill() && slot.spilled.ty == RegType::Scalar)
                        || slot.spilled.precise
                    {
                        bt.slots[fr] &= !(1 << spi);
                    } else {
                        slot.spilled.precise = true;
                        self.precise_marks += 1;
                    }
                }
                if LOG {
                    self.log.precise_parent(fr, bt.regs[fr], bt.slots[fr], pst);
                }
            }
            if bt.empty() {
                return Ok(());
            }
            subseq = first_idx as i64;
            last_idx = if pst.last_insn_idx == usize::MAX {
                -1
            } else {
                pst.last_insn_idx as i64
            };
            first_idx = pst.first_insn_idx;
            st_id = Some(pid);
        }
    }

    /// Fallback when the history cannot explain a value: every scalar in
    /// every checkpoint on the path becomes precise.
    pub fn mark_all_scalars_precise(&mut self) {
        if self.log.level >= 2 {
            self.log.line(&format!(
                "mark_precise: frame{}: falling back to forcing all scalars precise",
                self.cur.curframe()
            ));
        }
        let mut p = self.cur.parent;
        while let Some(id) = p {
            let Some(node) = self.pool.try_get(id) else {
                break;
            };
            let _ = node;
            let st = &mut self.pool.get_mut(id).state;
            st.for_each_reg_mut(|r| {
                if r.ty == RegType::Scalar {
                    r.precise = true;
                }
            });
            p = st.parent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linked_regs::{LinkedRegs, Member};

    fn packed(members: &[Member]) -> u64 {
        // Build the packing through its public round trip.
        let mut v = members.len() as u64;
        for (i, m) in members.iter().enumerate() {
            let e = (m.frame as u64) | ((m.idx as u64) << 3) | ((m.is_reg as u64) << 9);
            v |= e << (3 + 10 * i);
        }
        assert_eq!(LinkedRegs::unpack(v).members(), members);
        v
    }

    /// Where `walk_masks` lets the walk pass an instruction by, `step`
    /// (without a history entry, or with one that records only the path)
    /// would have left the walk's sets as they were: checked for every
    /// opcode with sets avoiding the mask.
    #[test]
    fn instructions_passed_over_are_those_step_leaves_alone() {
        use bpfvet_isa::uapi::ProgType;
        use bpfvet_isa::Insn;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let opts = crate::Options::default();
        let mut passed_over = 0;
        for code in 1..=255u8 {
            for _ in 0..8 {
                let imm = [0, BPF_FETCH, BPF_CMPXCHG, 1, 12][(next() % 5) as usize];
                let insn = Insn::new(code, (next() % 11) as u8, (next() % 11) as u8, 1, imm);
                let insns = vec![insn, Insn::new(0x95, 0, 0, 0, 0)];
                let mask = walk_masks(&insns)[0];
                if mask & ALWAYS_STEP != 0 {
                    continue;
                }
                let obj =
                    bpfvet_object::Object::single_program("p", ProgType::SCHED_CLS, insns.clone());
                let cfg = crate::cfg::Cfg {
                    subprogs: vec![crate::cfg::Subprog {
                        start: 0,
                        end: 2,
                        ..Default::default()
                    }],
                    marks: vec![0; 2],
                    live_regs_before: vec![0; 2],
                    scc: vec![0; 2],
                };
                let env = Env::new(&obj, &obj.programs[0], &opts, cfg);
                let mut bt = Backtrack {
                    frame: (next() % 2) as usize,
                    ..Default::default()
                };
                // Registers of another frame are not the walked frame's.
                bt.regs = [next() as u16 & 0x7ff; MAX_CALL_FRAMES];
                bt.regs[bt.frame] &= !mask;
                bt.slots[bt.frame] = next();
                let before = bt;
                // A history entry that only records the path changes
                // nothing either.
                let path_only = HistEntry {
                    idx: 0,
                    prev_idx: 0,
                    stack: 0,
                    linked: 0,
                    jmp_stack: 0,
                };
                let hist = (next() % 2 == 0).then_some(&path_only);
                assert!(bt.step(&env, 0, 1, hist).is_ok(), "{insn:?}");
                assert_eq!(
                    (bt.frame, bt.regs, bt.slots),
                    (before.frame, before.regs, before.slots),
                    "{insn:?}"
                );
                passed_over += 1;
            }
        }
        assert!(passed_over > 1000);
    }

    #[test]
    fn a_precise_register_makes_its_linked_spill_precise() {
        // r5 and the spill at fp-168 (slot 20) were refined together.
        let set = [
            Member {
                frame: 0,
                idx: 5,
                is_reg: true,
            },
            Member {
                frame: 0,
                idx: 20,
                is_reg: false,
            },
        ];
        let mut bt = Backtrack::default();
        bt.regs[0] = 1 << 5;
        bt.sync_linked(packed(&set));
        assert_eq!(bt.slots[0], 1 << 20);
        // Nothing of the set needed: nothing added.
        let mut bt = Backtrack::default();
        bt.regs[0] = 1 << 4;
        bt.sync_linked(packed(&set));
        assert_eq!((bt.regs[0], bt.slots[0]), (1 << 4, 0));
    }
}
