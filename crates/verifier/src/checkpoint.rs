//! Checkpoints at prune points (the kernel's is_state_visited): prune the
//! current path when an explored state covers it, detect infinite loops,
//! evict states that never help, and save new checkpoints by the kernel's
//! heuristics.

use crate::cfg::{self, mark};
use crate::error::VResult;
use crate::explore::Env;
use crate::pool::{Node, NIL};
use crate::precision::{encode_stack, Backtrack};
use crate::prune::{hinted_reject, states_equal, states_equal_noting, Exact, SignificantSlots};
use crate::regs::{Reg, RegType};
use crate::state::{State, MAX_CALL_FRAMES};

/// BPF_COMPLEXITY_LIMIT_STATES: states kept per instruction without CAP_BPF.
const COMPLEXITY_LIMIT_STATES: u64 = 64;

impl Env<'_> {
    fn bucket(&self, idx: usize, st: &State) -> usize {
        let callsite = st.frame().callsite as i64;
        ((idx as i64 ^ callsite) as u64 as usize) % self.buckets.len()
    }

    /// Fully explored checkpoints at `idx` with the current path's call
    /// sites forget the registers (static liveness) and stack slots
    /// (liveness.rs) no instruction can read any more, so comparisons
    /// ignore them (clean_live_states).
    fn clean_live_states(&mut self, idx: usize, b: usize) {
        let mut n = self.buckets[b];
        while n != NIL {
            let node = self.pool.get(n);
            let next = node.next;
            if node.state.branches == 0
                && !node.cleaned
                && node.state.insn_idx == idx
                && same_callsites(&node.state, &self.cur)
                && !self.incomplete_marks(n)
            {
                let live_slots = self.live_slots(&node.state);
                let node = self.pool.get_mut(n);
                let nframes = node.state.frames.len();
                let callsites: Vec<i32> = node.state.frames.iter().map(|f| f.callsite).collect();
                let mut significant = [0u64; MAX_CALL_FRAMES];
                for (fi, f) in node.state.frames.iter_mut().enumerate() {
                    // A caller waits at its call instruction.
                    let ip = if fi + 1 == nframes {
                        idx
                    } else {
                        callsites[fi + 1] as usize
                    };
                    let live = self.cfg.live_regs_before.get(ip).copied().unwrap_or(0xffff);
                    for r in 0..10 {
                        if live & (1 << r) == 0 {
                            f.regs[r] = Reg::not_init();
                        }
                    }
                    for (spi, slot) in f.stack.iter_mut().enumerate() {
                        if spi >= 64 || live_slots[fi] & (1 << spi) == 0 {
                            *slot = crate::state::Slot::default();
                        } else if !slot.all_invalid_or_misc() {
                            significant[fi] |= 1 << spi;
                        }
                    }
                }
                node.cleaned = true;
                node.slots = SignificantSlots::new(significant);
            }
            n = next;
        }
    }

    /// Returns true when the current path can be pruned here.
    pub fn is_state_visited(&mut self, idx: usize) -> VResult<bool> {
        let force_checkpoint = self.cfg.is(idx, mark::FORCE_CHECKPOINT);
        // BPF_F_TEST_STATE_FREQ: a checkpoint at every prune point.
        // The flag is honoured for a loader with CAP_BPF only.
        let state_freq = self.prog.prog_flags & bpfvet_isa::uapi::BPF_F_TEST_STATE_FREQ != 0
            && self.caps.bpf_capable;
        let force_new = state_freq || force_checkpoint || self.cur.jmp_history.len() > 40;
        let mut add_new = force_new
            || (self.jmps_processed - self.prev_jmps_processed >= 2
                && self.insn_processed - self.prev_insn_processed >= 8);
        let b = self.bucket(idx, &self.cur);
        self.clean_live_states(idx, b);

        let is_may_goto = cfg::is_may_goto(&self.insns[idx]);
        let is_iter_next = self.cfg.is(idx, mark::ITER_NEXT);
        let calls_callback = self.cfg.is(idx, mark::CALLS_CALLBACK);
        let mut states_cnt = 0u64;
        let mut prev = NIL;
        let mut n = self.buckets[b];
        while n != NIL {
            states_cnt += 1;
            let node = self.pool.get(n);
            let (next, node_idx, branches) = (node.next, node.state.insn_idx, node.state.branches);
            if node_idx != idx {
                prev = n;
                n = next;
                continue;
            }
            let mut hit = false;
            // A hit that closes a loop iteration (kept as an SCC backedge).
            let mut looped = false;
            if branches > 0 {
                let old = &self.pool.get(n).state;
                // Another entry into an async callback (one armed by
                // itself): meeting the same state is no loop, and no proof
                // of safety while the old one is unfinished.
                let other_async_entry = old.frame().in_async_callback_fn
                    && old.frame().async_entry_cnt != self.cur.frame().async_entry_cnt;
                if other_async_entry {
                    // Neither a hit nor a loop.
                } else if is_iter_next {
                    // An iterator loop converges when an active iterator
                    // comes back to its next call in an equivalent state.
                    hit = states_equal(
                        old,
                        &self.cur,
                        &mut self.idmap,
                        &self.cfg.live_regs_before,
                        self.id_gen,
                        Exact::RangeWithin,
                    ) && self.iter_arg_active();
                    looped = hit;
                } else if is_may_goto
                    && old.may_goto_depth != self.cur.may_goto_depth
                    && states_equal(
                        old,
                        &self.cur,
                        &mut self.idmap,
                        &self.cfg.live_regs_before,
                        self.id_gen,
                        Exact::RangeWithin,
                    )
                {
                    hit = true;
                    looped = true;
                }
                if hit || is_iter_next || other_async_entry {
                    // Converged loop, an iterator's next call, or another
                    // async entry: no infinite-loop check there.
                } else if calls_callback {
                    let old = &self.pool.get(n).state;
                    if states_equal(
                        old,
                        &self.cur,
                        &mut self.idmap,
                        &self.cfg.live_regs_before,
                        self.id_gen,
                        Exact::RangeWithin,
                    ) {
                        hit = true;
                    }
                } else {
                    let node = self.pool.get(n);
                    let mut loop_hint = node.loop_hint;
                    let maybe_looping =
                        states_maybe_looping(&node.state, &self.cur, &mut loop_hint);
                    if loop_hint != node.loop_hint {
                        self.pool.get_mut(n).loop_hint = loop_hint;
                    }
                    let old = &self.pool.get(n).state;
                    if maybe_looping
                        && !crate::iter::iter_active_depths_differ(old, &self.cur)
                        && old.may_goto_depth == self.cur.may_goto_depth
                        && old.callback_unroll_depth == self.cur.callback_unroll_depth
                        && states_equal(
                            old,
                            &self.cur,
                            &mut self.idmap,
                            &self.cfg.live_regs_before,
                            self.id_gen,
                            Exact::Identical,
                        )
                    {
                        if self.log.level >= 1 {
                            self.log.loop_states(&self.cur, old);
                        }
                        return self.err(format!("infinite loop detected at insn {idx}"));
                    }
                }
                // Inside a loop, save states less often.
                if !hit
                    && !force_new
                    && self.jmps_processed - self.prev_jmps_processed < 20
                    && self.insn_processed - self.prev_insn_processed < 100
                {
                    add_new = false;
                }
            } else {
                // Inside a loop still being explored, marks are incomplete:
                // compare ranges, and the hit closes an iteration.
                looped = self.incomplete_marks(n);
                let exact = if looped {
                    Exact::RangeWithin
                } else {
                    Exact::Loose
                };
                let node = self.pool.get(n);
                // The baseline switch compares in full, and leaves the
                // hint unset.
                let mut hint = node.miss_hint;
                hit = !hinted_reject(
                    &node.state,
                    &self.cur,
                    &mut self.idmap,
                    &self.cfg.live_regs_before,
                    self.id_gen,
                    exact,
                    hint,
                ) && states_equal_noting(
                    &node.state,
                    &self.cur,
                    &mut self.idmap,
                    &self.cfg.live_regs_before,
                    self.id_gen,
                    exact,
                    &node.slots,
                    &mut hint,
                );
                if hint != node.miss_hint && !self.opts.baselines.prune_no_miss_hint {
                    self.pool.get_mut(n).miss_hint = hint;
                }
            }
            if hit {
                if let Some(c) = self.explain.as_deref_mut() {
                    c.prune_hit(idx);
                }
                self.pool.get_mut(n).hit_cnt += 1;
                if self.cfg.is(idx, mark::JMP_POINT) {
                    self.push_history(0, 0);
                }
                self.propagate_precision(n)?;
                if looped {
                    self.add_scc_backedge(n, idx)?;
                }
                // The kernel counts states per instruction only on a miss.
                return Ok(true);
            }
            // miss
            if self.explain.is_some() {
                self.explain_miss(idx, n, is_iter_next || is_may_goto || calls_callback);
            }
            let node = self.pool.get_mut(n);
            if add_new {
                node.miss_cnt += 1;
            }
            let k = if force_checkpoint && node.state.branches > 0 {
                64
            } else {
                3
            };
            if node.miss_cnt > node.hit_cnt * k + k {
                node.evicted = true;
                let br = node.state.branches;
                if prev == NIL {
                    self.buckets[b] = next;
                } else {
                    self.pool.get_mut(prev).next = next;
                }
                self.explored_count -= 1;
                if br == 0 && !self.incomplete_marks(n) {
                    self.explored_bytes = self
                        .explored_bytes
                        .saturating_sub(self.pool.get(n).state.bytes() as u64);
                    self.pool.release(n);
                }
                n = next;
                continue;
            }
            prev = n;
            n = next;
        }
        self.record_max_states(states_cnt);
        // Without CAP_BPF an instruction keeps at most 64 states.
        if !add_new || (!self.caps.bpf_capable && states_cnt > COMPLEXITY_LIMIT_STATES) {
            return Ok(false);
        }
        self.stats.total_states += 1;
        if let Some(c) = self.explain.as_deref_mut() {
            c.state_saved(idx);
        }
        self.explored_count += 1;
        self.prev_jmps_processed = self.jmps_processed;
        self.prev_insn_processed = self.insn_processed;
        // Precision inherited from ancestors is forgotten (re-derived on
        // demand). Without CAP_BPF every scalar is precise: no precision
        // tracking, states compare scalar ranges.
        let precise = !self.caps.bpf_capable;
        self.cur.for_each_reg_mut(|r| {
            if r.ty == RegType::Scalar {
                r.precise = precise;
            }
        });
        let mut saved = self.pool.copy_state(&self.cur);
        saved.insn_idx = idx;
        saved.branches = 1;
        let bytes = saved.bytes() as u64;
        let id = self.pool.alloc(Node {
            state: saved,
            next: self.buckets[b],
            hit_cnt: 0,
            miss_cnt: 0,
            evicted: false,
            cleaned: false,
            miss_hint: Default::default(),
            slots: Default::default(),
            loop_hint: 0,
        });
        self.buckets[b] = id;
        self.explored_bytes += bytes;
        self.update_peak_states();
        self.maybe_enter_scc(id);
        self.cur.parent = Some(id);
        self.cur.first_insn_idx = idx;
        self.cur.dfs_depth += 1;
        self.cur.jmp_history.clear();
        self.track_memory()?;
        Ok(false)
    }

    fn record_max_states(&mut self, cnt: u64) {
        if cnt > self.stats.max_states_per_insn {
            self.stats.max_states_per_insn = cnt;
        }
    }

    /// The explored state reached the exit with some scalars precise; the
    /// current state, pruned against it, needs them precise too.
    pub fn propagate_precision(&mut self, old_id: u32) -> VResult<()> {
        let old = &self.pool.get(old_id).state;
        let mut bt = Backtrack {
            frame: self.cur.curframe(),
            ..Default::default()
        };
        for (fr, f) in old.frames.iter().enumerate() {
            for r in 0..10 {
                let reg = &f.regs[r];
                if reg.ty == RegType::Scalar && reg.precise {
                    bt.regs[fr] |= 1 << r;
                }
            }
            for (spi, s) in f.stack.iter().enumerate().take(64) {
                if s.is_spill() && s.spilled.ty == RegType::Scalar && s.spilled.precise {
                    bt.slots[fr] |= 1 << spi;
                }
            }
        }
        let _ = encode_stack;
        self.run_backtrack(bt)
    }
}

fn same_callsites(a: &State, b: &State) -> bool {
    a.frames.len() == b.frames.len()
        && a.frames
            .iter()
            .zip(&b.frames)
            .all(|(x, y)| x.callsite == y.callsite)
}

/// Cheap pre-check for loop detection: the current frame's registers are
/// bit-identical (precision marks excepted: the kernel's compare stops
/// before them). `hint` is the register that differed last time against
/// `old`: it is compared first (in a loop, the same counter differs at
/// every visit), and updated to the first register that differs now.
fn states_maybe_looping(old: &State, cur: &State, hint: &mut u8) -> bool {
    if old.frames.len() != cur.frames.len() {
        return false;
    }
    let (fo, fc) = (old.frame(), cur.frame());
    if fo.callsite != fc.callsite {
        return false;
    }
    let h = *hint as usize;
    if h < fo.regs.len() && !same_for_loop(&fo.regs[h], &fc.regs[h]) {
        return false;
    }
    // The hinted register, if any, is known equal now.
    match (0..fo.regs.len()).find(|&r| r != h && !same_for_loop(&fo.regs[r], &fc.regs[r])) {
        Some(r) => {
            *hint = r as u8;
            false
        }
        None => true,
    }
}

/// The registers compared by states_maybe_looping (the kernel's memcmp of
/// everything before `frameno`); the bounds a loop counter changes come
/// first.
#[inline(always)]
fn same_for_loop(a: &Reg, b: &Reg) -> bool {
    a.v.umin == b.v.umin
        && a.v.umax == b.v.umax
        && a.v.var_off.value == b.v.var_off.value
        && a.ty == b.ty
        && a.flags == b.flags
        && a.off == b.off
        && a.aux == b.aux
        && a.map == b.map
        && a.map_uid == b.map_uid
        && a.dynptr_id == b.dynptr_id
        && a.id == b.id
        && a.ref_obj_id == b.ref_obj_id
        && a.v == b.v
}

impl Env<'_> {
    /// The checkpoint at `idx` this path loops back to, if any: a state on
    /// the current DFS path (branches > 0) with the same call sites
    /// (find_prev_entry).
    pub fn find_prev_entry(&self, idx: usize, dfs_depth: u32) -> Option<u32> {
        let b = self.bucket(idx, &self.cur);
        let mut n = self.buckets[b];
        while n != NIL {
            let node = self.pool.get(n);
            let st = &node.state;
            if st.insn_idx == idx
                && st.branches > 0
                && st.dfs_depth < dfs_depth
                && st.frames.len() == self.cur.frames.len()
                && st
                    .frames
                    .iter()
                    .zip(&self.cur.frames)
                    .all(|(a, b)| a.callsite == b.callsite)
            {
                return Some(n);
            }
            n = node.next;
        }
        None
    }

    /// Scalars that changed since the loop's previous iteration and are not
    /// precise become unknown, so iterations converge
    /// (widen_imprecise_scalars).
    pub fn widen_imprecise_scalars(&mut self, old_id: u32) {
        let old = &self.pool.get(old_id).state;
        widen_imprecise_scalars(old, &mut self.cur, &mut self.idmap, self.id_gen);
    }
}

/// [`Env::widen_imprecise_scalars`] for any state `cur`.
pub fn widen_imprecise_scalars(
    old: &State,
    cur: &mut State,
    idmap: &mut crate::prune::IdMap,
    id_gen: u32,
) {
    idmap.reset(id_gen);
    for (fo, fc) in old.frames.iter().zip(cur.frames.iter_mut()) {
        for (ro, rc) in fo.regs.iter().zip(fc.regs.iter_mut()) {
            maybe_widen(ro, rc, idmap);
        }
        for (so, sc) in fo.stack.iter().zip(fc.stack.iter_mut()) {
            if so.is_spill() && sc.is_spill() {
                maybe_widen(&so.spilled, &mut sc.spilled, idmap);
            }
        }
    }
}

fn maybe_widen(old: &Reg, cur: &mut Reg, m: &mut crate::prune::IdMap) {
    if old.ty != RegType::Scalar || cur.ty != RegType::Scalar {
        return;
    }
    if old.precise || cur.precise || crate::prune::regs_exact(old, cur, m) {
        return;
    }
    *cur = Reg::unknown_scalar();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hint only orders the comparison: whatever it says, the answer is
    /// the plain register-by-register one, and a miss leaves the hint on a
    /// register that differs.
    #[test]
    fn loop_precheck_answer_does_not_depend_on_the_hint() {
        let old = State::new();
        let mut cur = State::new();
        assert!((0..=12).all(|h| {
            let mut hint = h;
            states_maybe_looping(&old, &cur, &mut hint)
        }));
        cur.reg_mut(6).ty = RegType::Scalar;
        cur.reg_mut(3).precise = true; // precision is not compared
        for h in 0..=12u8 {
            let mut hint = h;
            assert!(!states_maybe_looping(&old, &cur, &mut hint));
            assert_eq!(hint, 6, "hint {h}");
        }
        let mut hint = 6;
        cur.reg_mut(6).ty = RegType::NotInit;
        assert!(states_maybe_looping(&old, &cur, &mut hint));
    }

    /// Every field the kernel's memcmp covers (all before `frameno`) tells
    /// two states apart; the frame number and precision do not.
    #[test]
    fn loop_precheck_compares_the_fields_before_frameno() {
        let old = State::new();
        let differs: [fn(&mut Reg); 6] = [
            |r| r.map_uid = 3,
            |r| r.dynptr_id = 4,
            |r| r.ref_obj_id = 5,
            |r| r.aux = 6,
            |r| r.v.smin = -1,
            |r| r.off = 8,
        ];
        for (i, change) in differs.iter().enumerate() {
            let mut cur = State::new();
            change(cur.reg_mut(2));
            assert!(!states_maybe_looping(&old, &cur, &mut 0), "field {i}");
        }
        let mut cur = State::new();
        cur.reg_mut(2).frameno = 1;
        cur.reg_mut(2).precise = true;
        assert!(states_maybe_looping(&old, &cur, &mut 0));
    }
}
