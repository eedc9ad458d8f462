//! State equivalence (states_equal with regsafe / stacksafe / refsafe) and
//! the id map it fills (SEEDS.md §1a).

use crate::regs::{Reg, RegType};
use crate::state::{Frame, SlotType, State, REG_SIZE};

/// How strictly two states must agree.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Exact {
    /// Old state's imprecise scalars and unread slots match anything.
    Loose,
    /// Scalars must lie within old ranges, precise or not.
    RangeWithin,
    /// Everything identical (infinite-loop detection).
    Identical,
}

pub use crate::scalar::ADD_CONST;

const ID_MAP_SIZE: usize = 8 * (11 + 64);

/// Scratch map of (old id, cur id) pairs for one comparison.
#[derive(Clone)]
pub struct IdMap {
    pairs: Box<[(u32, u32); ID_MAP_SIZE]>,
    cnt: usize,
    tmp_id_gen: u32,
    /// Baseline of §1a: clear all pairs and scan up to the first empty one.
    memset_baseline: bool,
    pub resets: u64,
    pub pairs_scanned: u64,
}

impl IdMap {
    pub fn new(memset_baseline: bool) -> IdMap {
        IdMap {
            pairs: Box::new([(0, 0); ID_MAP_SIZE]),
            cnt: 0,
            tmp_id_gen: 0,
            memset_baseline,
            resets: 0,
            pairs_scanned: 0,
        }
    }

    pub fn reset(&mut self, id_gen: u32) {
        self.resets += 1;
        self.tmp_id_gen = id_gen;
        if self.memset_baseline {
            self.pairs.fill((0, 0));
        }
        self.cnt = 0;
    }

    /// check_ids: old and cur ids must correspond one to one.
    pub fn check(&mut self, old: u32, cur: u32) -> bool {
        if (old == 0) != (cur == 0) {
            return false;
        }
        if old == 0 {
            return true;
        }
        let limit = if self.memset_baseline {
            ID_MAP_SIZE
        } else {
            self.cnt
        };
        for i in 0..limit {
            let (o, c) = self.pairs[i];
            self.pairs_scanned += 1;
            if self.memset_baseline && o == 0 {
                self.pairs[i] = (old, cur);
                self.cnt = i + 1;
                return true;
            }
            if o == old {
                return c == cur;
            }
            if c == cur {
                return false;
            }
        }
        if self.cnt >= ID_MAP_SIZE {
            return false;
        }
        self.pairs[self.cnt] = (old, cur);
        self.cnt += 1;
        true
    }

    fn check_scalar(&mut self, old: u32, cur: u32) -> bool {
        if old == 0 {
            return true;
        }
        let cur = if cur != 0 {
            cur
        } else {
            self.tmp_id_gen += 1;
            self.tmp_id_gen
        };
        if !self.check(old, cur) {
            return false;
        }
        if old & ADD_CONST != 0 {
            return self.check(old & !ADD_CONST, cur & !ADD_CONST);
        }
        true
    }
}

/// Fields compared bit-for-bit by the kernel's memcmp up to `id`.
fn same_shape(a: &Reg, b: &Reg) -> bool {
    a.ty == b.ty
        && a.flags == b.flags
        && a.off == b.off
        && a.aux == b.aux
        && a.dynptr_id == b.dynptr_id
        && a.map == b.map
        && a.map_uid == b.map_uid
        && a.frameno == b.frameno
        && a.v == b.v
}

pub fn regs_exact(a: &Reg, b: &Reg, m: &mut IdMap) -> bool {
    same_shape(a, b) && m.check(a.id, b.id) && m.check(a.ref_obj_id, b.ref_obj_id)
}

fn within(old: &Reg, cur: &Reg) -> bool {
    old.v.is_superset_of(&cur.v)
}

pub fn regsafe(old: &Reg, cur: &Reg, m: &mut IdMap, exact: Exact) -> bool {
    if exact == Exact::Identical {
        return regs_exact(old, cur, m);
    }
    if old.ty == RegType::NotInit && (exact == Exact::Loose || cur.ty == RegType::NotInit) {
        return true;
    }
    if old.ty != cur.ty || old.flags != cur.flags {
        return false;
    }
    match old.ty {
        RegType::Scalar => {
            if !old.precise && exact == Exact::Loose {
                return true;
            }
            // A 32-bit and a 64-bit delta link mean different things
            // (the 32-bit one zero-extends), so the marks must be equal.
            if old.id != 0 && old.id & ADD_CONST != cur.id & ADD_CONST {
                return false;
            }
            if old.id & ADD_CONST != 0 && old.off != cur.off {
                return false;
            }
            if !m.check_scalar(old.id, cur.id) {
                return false;
            }
            within(old, cur)
        }
        RegType::MapKey | RegType::MapValue | RegType::Mem | RegType::TpBuffer | RegType::Buf => {
            old.off == cur.off
                && old.aux == cur.aux
                && old.dynptr_id == cur.dynptr_id
                && old.map == cur.map
                && within(old, cur)
                && m.check(old.id, cur.id)
                && m.check(old.ref_obj_id, cur.ref_obj_id)
        }
        RegType::Packet | RegType::PacketMeta => {
            let (ro, rc) = (old.aux as i32, cur.aux as i32);
            if ro < 0 || rc < 0 {
                if ro != rc {
                    return false;
                }
            } else if ro > rc {
                return false;
            }
            old.off == cur.off && m.check(old.id, cur.id) && within(old, cur)
        }
        RegType::Stack => regs_exact(old, cur, m) && old.frameno == cur.frameno,
        _ => regs_exact(old, cur, m),
    }
}

pub(crate) fn stacksafe(old: &Frame, cur: &Frame, m: &mut IdMap, exact: Exact) -> bool {
    let unbound = Reg::unknown_scalar();
    let old_bytes = old.allocated_stack();
    let cur_bytes = cur.allocated_stack();
    let mut i = 0;
    while i < old_bytes {
        let spi = i / REG_SIZE;
        let b = i % REG_SIZE;
        let os = &old.stack[spi];
        // Most explored slots are dead or unknown bytes, which match
        // anything: skip such a slot whole rather than byte by byte.
        if b == 0 && exact == Exact::Loose && os.all_invalid_or_misc() {
            i += REG_SIZE;
            continue;
        }
        if exact != Exact::Loose && (i >= cur_bytes || os.types[b] != cur.stack[spi].types[b]) {
            return false;
        }
        // An uninitialised byte was never read; an unknown one (privileged
        // programs may read uninitialised stack) matches anything.
        if matches!(os.types[b], SlotType::Invalid | SlotType::Misc) {
            i += 1;
            continue;
        }
        if i >= cur_bytes {
            return false;
        }
        let cs = &cur.stack[spi];
        let old_scalar = if os.is_full_spill() && os.spilled.ty == RegType::Scalar {
            Some(&os.spilled)
        } else if os.all_invalid_or_misc() {
            // Every byte reads as an unknown scalar: STACK_MISC, or
            // STACK_INVALID, which a privileged program may read too
            // (is_stack_all_misc).
            Some(&unbound)
        } else {
            None
        };
        let cur_scalar = if cs.is_full_spill() && cs.spilled.ty == RegType::Scalar {
            Some(&cs.spilled)
        } else if cs.all_invalid_or_misc() {
            Some(&unbound)
        } else {
            None
        };
        if let (Some(o), Some(c)) = (old_scalar, cur_scalar) {
            if !regsafe(o, c, m, exact) {
                return false;
            }
            i = (spi + 1) * REG_SIZE;
            continue;
        }
        if os.types[b] != cs.types[b] {
            return false;
        }
        if b == REG_SIZE - 1
            && os.types[REG_SIZE - 1] == SlotType::Spill
            && !regsafe(&os.spilled, &cs.spilled, m, exact)
        {
            return false;
        }
        if b == REG_SIZE - 1
            && os.types[REG_SIZE - 1] == SlotType::Iter
            && !crate::iter::slots_equal(&os.spilled, &cs.spilled, m)
        {
            return false;
        }
        if b == REG_SIZE - 1
            && os.types[REG_SIZE - 1] == SlotType::Dynptr
            && !crate::dynptr::dynptr_slot_safe(os, cs, m)
        {
            return false;
        }
        i += 1;
    }
    true
}

pub(crate) fn refsafe(old: &State, cur: &State, m: &mut IdMap) -> bool {
    if old.refs.len() != cur.refs.len() {
        return false;
    }
    old.refs
        .iter()
        .zip(&cur.refs)
        .all(|(o, c)| o.kind == c.kind && m.check(o.id, c.id))
}

/// `live_regs` (registers live before each instruction) limits the
/// comparison of each frame to the registers it may still read.
pub fn states_equal(
    old: &State,
    cur: &State,
    m: &mut IdMap,
    live_regs: &[u16],
    id_gen: u32,
    exact: Exact,
) -> bool {
    if old.frames.len() != cur.frames.len() {
        return false;
    }
    m.reset(id_gen);
    if old.speculative && !cur.speculative {
        return false;
    }
    if old.active_locks != cur.active_locks
        || old.active_rcu_lock != cur.active_rcu_lock
        || old.active_preempt_locks != cur.active_preempt_locks
        || old.in_sleepable != cur.in_sleepable
    {
        return false;
    }
    if !refsafe(old, cur, m) {
        return false;
    }
    // The lock held: the same map, and ids that correspond.
    if old.active_locks > 0 && (old.lock.0 != cur.lock.0 || !m.check(old.lock.1, cur.lock.1)) {
        return false;
    }
    let last = old.frames.len() - 1;
    for (i, (o, c)) in old.frames.iter().zip(&cur.frames).enumerate() {
        if o.callsite != c.callsite || o.callback_depth > c.callback_depth {
            return false;
        }
        // A caller frame is at its call instruction.
        let at = if i < last {
            old.frames[i + 1].callsite.max(0) as usize
        } else {
            old.insn_idx
        };
        let live = live_regs.get(at).copied().unwrap_or(u16::MAX);
        for r in 0..11 {
            if live & (1 << r) != 0 && !regsafe(&o.regs[r], &c.regs[r], m, exact) {
                return false;
            }
        }
        if !stacksafe(o, c, m, exact) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_map_is_one_to_one_in_both_modes() {
        for baseline in [false, true] {
            let mut m = IdMap::new(baseline);
            m.reset(100);
            assert!(m.check(1, 7));
            assert!(m.check(1, 7));
            assert!(!m.check(1, 8));
            assert!(!m.check(2, 7));
            assert!(m.check(2, 9));
            assert!(!m.check(0, 9));
            m.reset(100);
            assert!(m.check(1, 8));
            assert_eq!(m.resets, 2);
        }
    }

    #[test]
    fn imprecise_scalar_matches_anything_unless_range_within() {
        let mut m = IdMap::new(false);
        let old = Reg::known(5);
        let cur = Reg::known(6);
        assert!(regsafe(&old, &cur, &mut m, Exact::Loose));
        assert!(!regsafe(&old, &cur, &mut m, Exact::RangeWithin));
        let mut p = old;
        p.precise = true;
        assert!(!regsafe(&p, &cur, &mut m, Exact::Loose));
        assert!(regsafe(
            &Reg::unknown_scalar(),
            &cur,
            &mut m,
            Exact::RangeWithin
        ));
    }
}
