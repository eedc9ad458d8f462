//! Stack slot liveness: which slots of the current frame may still be read
//! from an instruction on. Accesses are recorded as exploration observes
//! them (reads per instruction, slots an instruction always overwrites
//! whole), and a backward dataflow over the CFG turns them into live sets,
//! recomputed only when the records change. A checkpoint whose paths are
//! all explored forgets dead slots, so comparisons ignore them (the role of
//! 6.18's stack liveness analysis). Accesses to another frame's stack make
//! the analysis give up: every slot then stays live.

use crate::cfg;
use crate::explore::Env;

#[derive(Default)]
pub struct StackLiveness {
    /// Slots read by each instruction (bit spi).
    uses: Vec<u64>,
    /// Slots each instruction fully overwrites on every path seen.
    defs: Vec<u64>,
    def_seen: Vec<bool>,
    live_before: Vec<u64>,
    dirty: bool,
    /// A frame's stack was touched from another frame.
    pub escaped: bool,
    /// The visit (instruction, processed count) whose writes are being
    /// collected: one instruction may write several times (a store that
    /// also destroys a dynptr), and its visit's writes count together.
    visit: Option<(usize, u64)>,
    visit_acc: u64,
    /// defs / def_seen of the instruction before this visit.
    defs_before: Option<u64>,
}

impl StackLiveness {
    pub fn new(n: usize) -> StackLiveness {
        StackLiveness {
            uses: vec![0; n],
            defs: vec![0; n],
            def_seen: vec![false; n],
            live_before: vec![0; n],
            dirty: false,
            escaped: false,
            visit: None,
            visit_acc: 0,
            defs_before: None,
        }
    }

    fn read(&mut self, idx: usize, mask: u64) {
        if self.uses[idx] & mask != mask {
            self.uses[idx] |= mask;
            self.dirty = true;
        }
    }

    fn write(&mut self, idx: usize, visit: u64, full: u64) {
        if self.visit != Some((idx, visit)) {
            self.visit = Some((idx, visit));
            self.visit_acc = 0;
            self.defs_before = self.def_seen[idx].then_some(self.defs[idx]);
        }
        self.visit_acc |= full;
        let new = match self.defs_before {
            Some(before) => before & self.visit_acc,
            None => self.visit_acc,
        };
        if !self.def_seen[idx] || new != self.defs[idx] {
            self.def_seen[idx] = true;
            self.defs[idx] = new;
            self.dirty = true;
        }
    }

    fn recompute(&mut self, insns: &[bpfvet_isa::Insn]) {
        let n = insns.len();
        let mut changed = true;
        while changed {
            changed = false;
            for t in (0..n).rev() {
                let mut succ = [0usize; 2];
                let k = cfg::successors(insns, t, &mut succ);
                let out = succ[..k].iter().fold(0u64, |a, &s| a | self.live_before[s]);
                let new = self.uses[t] | (out & !self.defs[t]);
                if new != self.live_before[t] {
                    self.live_before[t] = new;
                    changed = true;
                }
            }
        }
        self.dirty = false;
    }
}

/// Bits for slots covering bytes [lo, hi) below the frame pointer
/// (offsets are negative: lo = -16, hi = -8 is slot 1).
fn slot_mask(lo: i64, hi: i64) -> u64 {
    let mut m = 0u64;
    let mut b = lo;
    while b < hi {
        let spi = ((-b - 1) / 8) as u32;
        if spi < 64 {
            m |= 1 << spi;
        }
        b += 1;
    }
    m
}

impl Env<'_> {
    pub fn note_stack_read(&mut self, frameno: usize, lo: i64, hi: i64) {
        if frameno != self.cur.curframe() {
            self.stack_live.escaped = true;
            return;
        }
        let idx = self.insn_idx;
        self.stack_live.read(idx, slot_mask(lo, hi));
    }

    pub fn note_stack_write(&mut self, frameno: usize, lo: i64, hi: i64) {
        if frameno != self.cur.curframe() {
            self.stack_live.escaped = true;
            return;
        }
        // Only whole slots are killed.
        let mut full = 0u64;
        let mut b = lo;
        while b < hi {
            if b % 8 == 0 && b + 8 <= hi {
                let spi = ((-b - 1) / 8) as u32;
                if spi < 64 {
                    full |= 1 << spi;
                }
                b += 8;
            } else {
                b += 1;
            }
        }
        let idx = self.insn_idx;
        self.stack_live.write(idx, self.insn_processed, full);
    }

    /// Slots of the innermost frame that may be read from `idx` on; None
    /// when unknown (every slot is then live).
    pub fn live_slots(&mut self, idx: usize) -> Option<u64> {
        if self.stack_live.escaped {
            return None;
        }
        if self.stack_live.dirty {
            self.stack_live.recompute(self.insns);
        }
        Some(self.stack_live.live_before[idx])
    }
}
