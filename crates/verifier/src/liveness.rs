//! Stack slot liveness, the way 6.18 computes it (kernel/bpf/liveness.c):
//! path-insensitive, but separate for each call chain. For every
//! (call chain, instruction) exploration records which slots of each frame
//! on the chain the instruction may read (a union over the paths seen) and
//! which whole slots it always overwrites (an intersection). When a
//! subprogram returns or a path ends, a backward dataflow over the
//! subprogram's instructions turns these records into `live_before` sets,
//! and what a callee's entry reads or always writes in its callers' frames
//! is charged to the call instruction in the caller's chain. A checkpoint
//! whose paths are all explored then forgets the slots no instruction of
//! its chain can read any more, so comparisons ignore them.
//!
//! The figures depend on *when* the dataflow runs and when a checkpoint is
//! cleaned (knowledge only grows as more paths are explored), so both
//! happen exactly where the kernel does them.

use std::collections::HashMap;

use crate::cfg::{self, mark, Cfg};
use crate::explore::Env;
use crate::state::{State, MAX_CALL_FRAMES};

#[derive(Clone, Copy, Default)]
struct Masks {
    /// Slots the instruction may read.
    may_read: u64,
    /// Slots the instruction writes whole on every path seen.
    must_write: u64,
    /// Slots written whole by the instruction or on every way from it to
    /// the subprogram's exit.
    must_write_acc: u64,
    /// Slots that may be read by the instruction or after it.
    live_before: u64,
}

/// The call instructions of frames 0..depth, then the innermost frame's
/// subprogram start.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct CallChain {
    sites: [u32; MAX_CALL_FRAMES],
    depth: u8,
}

/// The records of one subprogram reached through one call chain.
struct Instance {
    chain: CallChain,
    /// Subprogram starts of frames 0..=depth.
    starts: [u32; MAX_CALL_FRAMES],
    /// The innermost subprogram: first instruction and length.
    start: usize,
    subprog: usize,
    /// Per frame of the chain, per instruction of the subprogram; empty
    /// until the frame is first touched.
    frames: [Vec<Masks>; MAX_CALL_FRAMES],
    /// Instructions whose `must_write` was recorded at least once.
    must_write_set: Vec<bool>,
    /// Records changed since the dataflow last ran.
    updated: bool,
    /// Some `must_write` shrank: `must_write_acc` must be recomputed from
    /// scratch.
    must_write_dropped: bool,
    /// Per frame, instructions (relative to `start`) whose records changed
    /// since the dataflow last ran: the only ones, with the predecessors of
    /// what changes, whose dataflow step can give a new result.
    touched: [Vec<u32>; MAX_CALL_FRAMES],
}

impl Instance {
    fn masks(&self, frame: usize, insn: usize) -> Option<&Masks> {
        self.frames[frame].get(insn.wrapping_sub(self.start))
    }

    fn masks_mut(&mut self, frame: usize, insn: usize) -> &mut Masks {
        if self.frames[frame].is_empty() {
            self.frames[frame] = vec![Masks::default(); self.must_write_set.len()];
        }
        &mut self.frames[frame][insn - self.start]
    }

    /// A visit of `insn` that writes no stack changes nothing: the
    /// instruction was seen before and has no guaranteed write to drop.
    fn nothing_to_intersect(&mut self, insn: usize) -> bool {
        let rel = insn - self.start;
        if !self.must_write_set[rel] {
            return false;
        }
        let depth = self.chain.depth as usize;
        self.frames[..=depth]
            .iter()
            .all(|f| f.get(rel).is_none_or(|m| m.must_write == 0))
    }

    fn mark_read(&mut self, frame: usize, insn: usize, mask: u64) {
        let m = self.masks_mut(frame, insn);
        let new = m.may_read | mask;
        let grows = new != m.may_read && (new | m.live_before) != m.live_before;
        m.may_read = new;
        if grows {
            self.updated = true;
            self.touched[frame].push((insn - self.start) as u32);
        }
    }

    /// Records what instruction `insn` wrote whole in each frame on this
    /// visit; the first visit sets `must_write`, later ones intersect.
    fn commit_writes(&mut self, insn: usize, written: &[u64; MAX_CALL_FRAMES]) {
        let rel = insn - self.start;
        let seen = self.must_write_set[rel];
        for (frame, &w) in written
            .iter()
            .enumerate()
            .take(self.chain.depth as usize + 1)
        {
            if w == 0 && !seen {
                continue;
            }
            let m = self.masks_mut(frame, insn);
            let old = m.must_write;
            let new = if seen { w & old } else { w };
            if new != old {
                m.must_write = new;
                self.updated = true;
                self.touched[frame].push(rel as u32);
            }
            if old & !new != 0 {
                self.must_write_dropped = true;
            }
        }
        self.must_write_set[rel] = true;
    }
}

#[derive(Default)]
pub struct StackLiveness {
    instances: Vec<Instance>,
    by_chain: HashMap<CallChain, u32>,
    /// The instance of the current state's chain, while it is known.
    cur: Option<u32>,
    /// The last chain looked up and its instance (most lookups repeat it).
    last: Option<(CallChain, u32)>,
    /// Instances with records the dataflow has not seen yet.
    dirty: Vec<u32>,
    /// Whole-slot writes of the instruction being checked, per frame.
    written: [u64; MAX_CALL_FRAMES],
    written_any: bool,
    written_insn: usize,
    /// Instructions in DFS postorder, subprogram after subprogram, and where
    /// each subprogram's run begins (the order the dataflow visits them);
    /// computed when the dataflow first runs.
    postorder: Vec<u32>,
    postorder_start: Vec<usize>,
    /// Each instruction's place in its subprogram's run (`NOT_IN_ORDER` for
    /// one the walk never reaches), and its predecessors (`preds_start[i]..
    /// preds_start[i + 1]` in `preds`); computed with the postorder.
    order_pos: Vec<u32>,
    preds_start: Vec<u32>,
    preds: Vec<u32>,
    /// Scratch: postorder places whose dataflow step must run (again).
    pending: Vec<u64>,
}

const NOT_IN_ORDER: u32 = u32::MAX;

impl StackLiveness {
    fn lookup(&mut self, cfg: &Cfg, chain: CallChain, starts: [u32; MAX_CALL_FRAMES]) -> u32 {
        if let Some((c, i)) = self.last {
            if c == chain {
                return i;
            }
        }
        let id = self.lookup_slow(cfg, chain, starts);
        self.last = Some((chain, id));
        id
    }

    fn lookup_slow(&mut self, cfg: &Cfg, chain: CallChain, starts: [u32; MAX_CALL_FRAMES]) -> u32 {
        if let Some(&i) = self.by_chain.get(&chain) {
            return i;
        }
        let start = starts[chain.depth as usize] as usize;
        let subprog = cfg.subprog_at(start).unwrap_or(0);
        let len = cfg.subprogs.get(subprog).map_or(0, |s| s.end - s.start);
        let id = self.instances.len() as u32;
        self.instances.push(Instance {
            chain,
            starts,
            start,
            subprog,
            frames: Default::default(),
            must_write_set: vec![false; len],
            updated: false,
            must_write_dropped: false,
            touched: Default::default(),
        });
        self.by_chain.insert(chain, id);
        id
    }

    fn mark_read(&mut self, id: u32, frame: usize, insn: usize, mask: u64) {
        let inst = &mut self.instances[id as usize];
        let was = inst.updated;
        inst.mark_read(frame, insn, mask);
        if !was && inst.updated {
            self.dirty.push(id);
        }
    }

    fn commit_writes(&mut self, id: u32, insn: usize, written: &[u64; MAX_CALL_FRAMES]) {
        let inst = &mut self.instances[id as usize];
        let was = inst.updated;
        inst.commit_writes(insn, written);
        if !was && inst.updated {
            self.dirty.push(id);
        }
    }

    fn find(&self, chain: &CallChain) -> Option<&Instance> {
        let id = match self.last {
            Some((c, i)) if c == *chain => i,
            _ => *self.by_chain.get(chain)?,
        };
        Some(&self.instances[id as usize])
    }

    /// Recomputes `live_before` and `must_write_acc` of one instance to a
    /// fixed point, then charges its entry's effect on outer frames to the
    /// call instruction in the caller's instance.
    ///
    /// The kernel sweeps the whole subprogram in postorder until a sweep
    /// changes nothing. A step whose inputs (its own records and its
    /// successors' results) did not change since it last ran gives the same
    /// result again, so only the steps of touched instructions and of
    /// predecessors of changed ones run, in the same sweeps and the same
    /// order: the result is the kernel's even where the order matters.
    fn update_instance(&mut self, insns: &[bpfvet_isa::Insn], cfg: &Cfg, id: u32) {
        if self.postorder_start.is_empty() {
            (self.postorder, self.postorder_start) = postorder(insns, cfg);
            (self.order_pos, self.preds_start, self.preds) =
                order_and_preds(insns, &self.postorder, &self.postorder_start);
        }
        let (po_lo, po_hi) = {
            let inst = &self.instances[id as usize];
            (
                self.postorder_start[inst.subprog],
                self.postorder_start[inst.subprog + 1],
            )
        };
        let inst = &mut self.instances[id as usize];
        let depth = inst.chain.depth as usize;
        if inst.must_write_dropped {
            for f in &mut inst.frames[..=depth] {
                for m in f.iter_mut() {
                    m.must_write_acc = 0;
                }
            }
        }
        let start = inst.start;
        let end = start + inst.must_write_set.len();
        let order = &self.postorder[po_lo..po_hi];
        let pending = &mut self.pending;
        for (f, touched) in inst.frames[..=depth]
            .iter_mut()
            .zip(&mut inst.touched[..=depth])
        {
            if f.is_empty() {
                continue;
            }
            pending.clear();
            pending.resize(order.len().div_ceil(64), 0);
            if inst.must_write_dropped {
                // Every `must_write_acc` was cleared: every step runs.
                for p in 0..order.len() {
                    pending[p / 64] |= 1 << (p % 64);
                }
            } else {
                for &rel in touched.iter() {
                    let p = self.order_pos[start + rel as usize];
                    if p != NOT_IN_ORDER {
                        pending[p as usize / 64] |= 1 << (p % 64);
                    }
                }
            }
            touched.clear();
            let graph = OrderGraph {
                order,
                order_pos: &self.order_pos,
                preds_start: &self.preds_start,
                preds: &self.preds,
            };
            sweep_pending(insns, f, start..end, &graph, pending);
        }
        if depth > 0 {
            self.propagate_to_caller(cfg, id);
        }
    }

    fn propagate_to_caller(&mut self, cfg: &Cfg, id: u32) {
        let inst = &self.instances[id as usize];
        let depth = inst.chain.depth as usize;
        let callsite = inst.chain.sites[depth - 1] as usize;
        let mut outer = CallChain {
            sites: [0; MAX_CALL_FRAMES],
            depth: (depth - 1) as u8,
        };
        outer.sites[..depth - 1].copy_from_slice(&inst.chain.sites[..depth - 1]);
        outer.sites[depth - 1] = inst.starts[depth - 1];
        let mut starts = [0; MAX_CALL_FRAMES];
        starts[..depth].copy_from_slice(&inst.starts[..depth]);
        let entry: Vec<(usize, Masks)> = (0..depth)
            .filter_map(|f| inst.masks(f, inst.start).map(|m| (f, *m)))
            .collect();
        let oid = self.lookup(cfg, outer, starts);
        let mut written = [0u64; MAX_CALL_FRAMES];
        for (f, m) in entry {
            written[f] |= m.must_write_acc;
            self.mark_read(oid, f, callsite, m.live_before);
        }
        self.commit_writes(oid, callsite, &written);
    }
}

/// One step of the backward dataflow for instruction `t` of one frame's
/// records; returns whether anything changed.
fn update_insn(insns: &[bpfvet_isa::Insn], f: &mut [Masks], start: usize, t: usize) -> bool {
    let mut succ = [0usize; 2];
    let k = cfg::successors(insns, t, &mut succ);
    if k == 0 {
        return false;
    }
    let mut after = 0u64;
    let mut acc = u64::MAX;
    for &s in &succ[..k] {
        let m = &f[s - start];
        after |= m.live_before;
        acc &= m.must_write_acc;
    }
    let m = &mut f[t - start];
    let acc = acc | m.must_write;
    let before = (after & !m.must_write) | m.may_read;
    let changed = before != m.live_before || acc != m.must_write_acc;
    m.live_before = before;
    m.must_write_acc = acc;
    changed
}

/// One subprogram's postorder run and the whole program's predecessor lists
/// (see `StackLiveness::order_pos`).
struct OrderGraph<'a> {
    order: &'a [u32],
    order_pos: &'a [u32],
    preds_start: &'a [u32],
    preds: &'a [u32],
}

/// Sweeps over `graph.order` like the kernel's fixpoint loop, running only
/// the steps whose place is marked in `pending`; a step that changes
/// something marks its predecessors within `range` (the subprogram).
fn sweep_pending(
    insns: &[bpfvet_isa::Insn],
    f: &mut [Masks],
    range: std::ops::Range<usize>,
    graph: &OrderGraph,
    pending: &mut [u64],
) {
    // One sweep visits the pending places from `from` upwards; a place
    // marked behind the sweep waits for the next one.
    let mut from = 0;
    loop {
        let Some(p) = next_pending(pending, from) else {
            if from == 0 {
                break;
            }
            from = 0;
            continue;
        };
        pending[p / 64] &= !(1 << (p % 64));
        let t = graph.order[p] as usize;
        if update_insn(insns, f, range.start, t) {
            let (lo, hi) = (graph.preds_start[t], graph.preds_start[t + 1]);
            for &pred in &graph.preds[lo as usize..hi as usize] {
                let q = graph.order_pos[pred as usize];
                if q != NOT_IN_ORDER && range.contains(&(pred as usize)) {
                    pending[q as usize / 64] |= 1 << (q % 64);
                }
            }
        }
        from = p + 1;
    }
}

/// The first pending place at or after `from`.
fn next_pending(pending: &[u64], from: usize) -> Option<usize> {
    let mut w = from / 64;
    let mut bits = pending.get(w)? & (u64::MAX << (from % 64));
    loop {
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
        w += 1;
        bits = *pending.get(w)?;
    }
}

/// Each instruction's place in its subprogram's postorder run, and the
/// predecessors of every instruction in compressed form.
fn order_and_preds(
    insns: &[bpfvet_isa::Insn],
    order: &[u32],
    order_start: &[usize],
) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let n = insns.len();
    let mut pos = vec![NOT_IN_ORDER; n];
    for run in order_start.windows(2) {
        for (p, &t) in order[run[0]..run[1]].iter().enumerate() {
            pos[t as usize] = p as u32;
        }
    }
    let mut count = vec![0u32; n + 1];
    let mut succ = [0usize; 2];
    for t in 0..n {
        let k = cfg::successors(insns, t, &mut succ);
        for &s in &succ[..k] {
            count[s + 1] += 1;
        }
    }
    for i in 0..n {
        count[i + 1] += count[i];
    }
    let mut fill = count.clone();
    let mut preds = vec![0u32; count[n] as usize];
    for t in 0..n {
        let k = cfg::successors(insns, t, &mut succ);
        for &s in &succ[..k] {
            preds[fill[s] as usize] = t as u32;
            fill[s] += 1;
        }
    }
    (pos, count, preds)
}

/// DFS postorder of each subprogram's instructions, successors visited
/// jump target first (compute_postorder).
fn postorder(insns: &[bpfvet_isa::Insn], cfg: &Cfg) -> (Vec<u32>, Vec<usize>) {
    const DISCOVERED: u8 = 1;
    const EXPLORED: u8 = 2;
    let n = insns.len();
    let mut state = vec![0u8; n];
    let mut order = Vec::with_capacity(n);
    let mut starts = Vec::with_capacity(cfg.subprogs.len() + 1);
    let mut stack = Vec::new();
    for sp in &cfg.subprogs {
        starts.push(order.len());
        if sp.start >= n {
            continue;
        }
        stack.push(sp.start);
        while let Some(&top) = stack.last() {
            state[top] |= DISCOVERED;
            if state[top] & EXPLORED != 0 {
                order.push(top as u32);
                stack.pop();
                continue;
            }
            let mut succ = [0usize; 2];
            let k = cfg::successors(insns, top, &mut succ);
            for &s in &succ[..k] {
                if state[s] == 0 {
                    stack.push(s);
                    state[s] |= DISCOVERED;
                }
            }
            state[top] |= EXPLORED;
        }
    }
    starts.push(order.len());
    (order, starts)
}

/// The chain of frame `frameno` of `st`, and the subprogram starts of
/// frames 0..=frameno.
fn chain_of(cfg: &Cfg, st: &State, frameno: usize) -> (CallChain, [u32; MAX_CALL_FRAMES]) {
    let mut chain = CallChain {
        sites: [0; MAX_CALL_FRAMES],
        depth: frameno as u8,
    };
    let mut starts = [0; MAX_CALL_FRAMES];
    for (i, f) in st.frames.iter().enumerate().take(frameno + 1) {
        let sub = f.subprogno as usize;
        starts[i] = cfg.subprogs.get(sub).map_or(0, |s| s.start) as u32;
        if i < frameno {
            chain.sites[i] = st.frames[i + 1].callsite as u32;
        }
    }
    chain.sites[frameno] = starts[frameno];
    (chain, starts)
}

/// Bits for slots covering bytes [lo, hi) below the frame pointer
/// (offsets are negative: lo = -16, hi = -8 is slot 1).
fn slots_touched(lo: i64, hi: i64) -> u64 {
    if lo >= hi {
        return 0;
    }
    if hi <= 0 && lo > -(1 << 32) {
        // Below the frame pointer the slots of [lo, hi) are one run: from
        // the slot of byte hi - 1 up to that of byte lo (at most 63).
        let first = (-hi) / 8;
        if first > 63 {
            return 0;
        }
        let last = ((-lo - 1) / 8).min(63);
        return (u64::MAX >> (63 - last)) & (u64::MAX << first);
    }
    slots_touched_bytewise(lo, hi)
}

/// Slot bits byte by byte (bytes at or above the frame pointer included,
/// counted in slot 0 as the division rounds them).
fn slots_touched_bytewise(lo: i64, hi: i64) -> u64 {
    let mut m = 0u64;
    let mut b = lo;
    while b < hi {
        let spi = (-b - 1) / 8;
        if (0..64).contains(&spi) {
            m |= 1 << spi;
        }
        b += 1;
    }
    m
}

impl Env<'_> {
    fn live_cur_instance(&mut self) -> u32 {
        if let Some(id) = self.stack_live.cur {
            return id;
        }
        let (chain, starts) = chain_of(&self.cfg, &self.cur, self.cur.curframe());
        let id = self.stack_live.lookup(&self.cfg, chain, starts);
        self.stack_live.cur = Some(id);
        id
    }

    /// Before an instruction is checked: its whole-slot writes are
    /// collected from here on.
    pub fn live_begin_insn(&mut self) {
        self.live_cur_instance();
        let sl = &mut self.stack_live;
        if sl.written_any {
            sl.written = [0; MAX_CALL_FRAMES];
            sl.written_any = false;
        }
        sl.written_insn = self.insn_idx;
    }

    /// After an instruction was checked: what it wrote (possibly nothing)
    /// joins the records, unless it moved to another call chain.
    pub fn live_end_insn(&mut self) {
        if let Some(id) = self.stack_live.cur {
            let sl = &mut self.stack_live;
            let inst = &mut sl.instances[id as usize];
            // Most instructions write no stack: that is final once it was
            // recorded and nothing was ever guaranteed written there.
            if !sl.written_any && inst.nothing_to_intersect(sl.written_insn) {
                return;
            }
            let written = sl.written;
            sl.commit_writes(id, sl.written_insn, &written);
        }
    }

    /// The current state moved to another call chain (a callee was entered,
    /// or a new exploration starts).
    pub fn live_chain_changed(&mut self) {
        self.stack_live.cur = None;
    }

    /// Bytes [lo, hi) of frame `frameno`'s stack are read by the current
    /// instruction.
    pub fn note_stack_read(&mut self, frameno: usize, lo: i64, hi: i64) {
        let id = self.live_cur_instance();
        let idx = self.insn_idx;
        self.stack_live
            .mark_read(id, frameno, idx, slots_touched(lo, hi));
    }

    /// Bytes [lo, hi) of frame `frameno`'s stack are written by the current
    /// instruction; only a whole aligned slot counts as overwritten (a
    /// partial write must not stop the search for earlier readers).
    pub fn note_stack_write(&mut self, frameno: usize, lo: i64, hi: i64) {
        if lo % 8 == 0 && hi - lo == 8 && (-512..0).contains(&lo) {
            self.note_stack_slots_written(frameno, 1 << ((-lo - 1) / 8));
        }
    }

    /// Whole slots (bit `spi` per slot) of frame `frameno` are overwritten
    /// by the current instruction: dynptr, iterator and irq-flag slots are
    /// marked and unmarked slot by slot (bpf_mark_stack_write).
    pub fn note_stack_slots_written(&mut self, frameno: usize, slots: u64) {
        if let Some(w) = self.stack_live.written.get_mut(frameno) {
            *w |= slots;
            self.stack_live.written_any = true;
        }
    }

    /// Runs the dataflow for every instance of the current chain with new
    /// records, innermost first (bpf_update_live_stack): called when a
    /// subprogram returns and when a path ends.
    pub fn update_live_stack(&mut self) {
        self.stack_live.cur = None;
        if self.stack_live.dirty.is_empty() {
            return;
        }
        for frame in (0..=self.cur.curframe()).rev() {
            let (chain, starts) = chain_of(&self.cfg, &self.cur, frame);
            let id = self.stack_live.lookup(&self.cfg, chain, starts);
            let inst = &self.stack_live.instances[id as usize];
            if inst.updated {
                self.stack_live.update_instance(self.insns, &self.cfg, id);
                let inst = &mut self.stack_live.instances[id as usize];
                inst.updated = false;
                inst.must_write_dropped = false;
            }
        }
        let sl = &mut self.stack_live;
        let instances = &sl.instances;
        sl.dirty.retain(|&i| instances[i as usize].updated);
    }

    /// Per frame of `st` (a checkpoint at `st.insn_idx`), the slots that
    /// may still be read: after the checkpoint in its own chain, or after
    /// the call instructions of the frames above it
    /// (bpf_stack_slot_alive).
    pub fn live_slots(&self, st: &State) -> [u64; MAX_CALL_FRAMES] {
        let sl = &self.stack_live;
        let curframe = st.curframe();
        let mut inst: [Option<&Instance>; MAX_CALL_FRAMES] = [None; MAX_CALL_FRAMES];
        for (f, i) in inst.iter_mut().enumerate().take(curframe + 1) {
            *i = sl.find(&chain_of(&self.cfg, st, f).0);
        }
        let live = |i: Option<&Instance>, insn: usize, frame: usize| {
            i.and_then(|i| i.masks(frame, insn))
                .map_or(0, |m| m.live_before)
        };
        let mut out = [0u64; MAX_CALL_FRAMES];
        for (frameno, o) in out.iter_mut().enumerate().take(curframe + 1) {
            *o = live(inst[curframe], st.insn_idx, frameno);
            for (i, outer) in inst.iter().enumerate().take(curframe).skip(frameno) {
                let callsite = st.frames[i + 1].callsite as usize;
                let at = if self.cfg.is(callsite, mark::CALLS_CALLBACK) {
                    callsite
                } else {
                    callsite + 1
                };
                *o |= live(*outer, at, frameno);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_bits_cover_every_touched_byte() {
        assert_eq!(slots_touched(-8, 0), 0b1);
        assert_eq!(slots_touched(-16, -8), 0b10);
        // A 4-byte access straddling nothing, and one spanning two slots.
        assert_eq!(slots_touched(-12, -8), 0b10);
        assert_eq!(slots_touched(-12, -4), 0b11);
        assert_eq!(slots_touched(-512, -504), 1 << 63);
        assert_eq!(slots_touched(-520, -8), u64::MAX << 1);
        for lo in -600..8 {
            for hi in lo - 2..lo + 530 {
                assert_eq!(
                    slots_touched(lo, hi),
                    slots_touched_bytewise(lo, hi),
                    "[{lo}, {hi})"
                );
            }
        }
    }

    /// Sweeps that run only the steps of changed records and of
    /// predecessors of changed results end where the kernel's full sweeps
    /// end, also from results of earlier records that are above the new
    /// fixed point (where the order of the steps matters).
    #[test]
    fn pending_sweeps_end_where_full_sweeps_end() {
        use bpfvet_isa::Insn;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200 {
            // A subprogram of moves and forward and backward conditional
            // jumps (loops), ending in an exit.
            let n = 4 + (next() % 40) as usize;
            let mut insns: Vec<Insn> = (0..n - 1)
                .map(|i| {
                    if next() % 3 == 0 {
                        let target = (next() % n as u64) as i64;
                        Insn::new(0x15, 1, 0, (target - i as i64 - 1) as i16, 0)
                    } else {
                        Insn::new(0xb7, 1, 0, 0, 0)
                    }
                })
                .collect();
            insns.push(Insn::new(0x95, 0, 0, 0, 0));
            let cfg = Cfg {
                subprogs: vec![crate::cfg::Subprog {
                    start: 0,
                    end: n,
                    ..Default::default()
                }],
                marks: vec![0; n],
                live_regs_before: vec![0; n],
                scc: vec![0; n],
            };
            let (order, starts) = postorder(&insns, &cfg);
            let (order_pos, preds_start, preds) = order_and_preds(&insns, &order, &starts);
            let graph = OrderGraph {
                order: &order,
                order_pos: &order_pos,
                preds_start: &preds_start,
                preds: &preds,
            };
            let full = |f: &mut Vec<Masks>| loop {
                let mut changed = false;
                for &t in &order {
                    changed |= update_insn(&insns, f, 0, t as usize);
                }
                if !changed {
                    break;
                }
            };
            let mut f: Vec<Masks> = (0..n)
                .map(|_| Masks {
                    may_read: next() & 0xff,
                    must_write: next() & 0xff,
                    ..Default::default()
                })
                .collect();
            full(&mut f);
            // New records at a few instructions: reads only grow, writes
            // change either way.
            let mut touched = Vec::new();
            for _ in 0..1 + next() % 4 {
                let t = (next() % n as u64) as usize;
                f[t].may_read |= next() & 0xff;
                f[t].must_write = next() & 0xff;
                touched.push(t);
            }
            let mut expected = f.clone();
            full(&mut expected);
            let mut pending = vec![0u64; order.len().div_ceil(64)];
            for t in touched {
                let p = order_pos[t];
                if p != NOT_IN_ORDER {
                    pending[p as usize / 64] |= 1 << (p % 64);
                }
            }
            sweep_pending(&insns, &mut f, 0..n, &graph, &mut pending);
            let key = |f: &[Masks]| -> Vec<(u64, u64)> {
                f.iter()
                    .map(|m| (m.live_before, m.must_write_acc))
                    .collect()
            };
            assert_eq!(key(&f), key(&expected), "{insns:?}");
        }
    }

    #[test]
    fn first_commit_sets_must_write_then_intersects() {
        let mut inst = Instance {
            chain: CallChain {
                sites: [0; MAX_CALL_FRAMES],
                depth: 0,
            },
            starts: [0; MAX_CALL_FRAMES],
            start: 10,
            subprog: 0,
            frames: Default::default(),
            must_write_set: vec![false; 4],
            updated: false,
            must_write_dropped: false,
            touched: Default::default(),
        };
        let mut w = [0u64; MAX_CALL_FRAMES];
        w[0] = 0b110;
        inst.commit_writes(11, &w);
        assert_eq!(inst.masks(0, 11).unwrap().must_write, 0b110);
        assert!(inst.updated && !inst.must_write_dropped);
        w[0] = 0b011;
        inst.commit_writes(11, &w);
        // Only slot 1 is written on both visits; slot 2 was dropped.
        assert_eq!(inst.masks(0, 11).unwrap().must_write, 0b010);
        assert!(inst.must_write_dropped);
        // A visit that writes nothing leaves nothing guaranteed.
        inst.commit_writes(11, &[0; MAX_CALL_FRAMES]);
        assert_eq!(inst.masks(0, 11).unwrap().must_write, 0);
    }
}
