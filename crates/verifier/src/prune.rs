//! State equivalence (states_equal with regsafe / stacksafe / refsafe) and
//! the id map it fills (SEEDS.md §1a).

use crate::regs::{Reg, RegType};
use crate::state::{Frame, Slot, SlotType, State, MAX_CALL_FRAMES, REG_SIZE};

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
    /// allow_uninit_stack: a loader without CAP_PERFMON compares stacks
    /// byte by byte (crate::privilege::stacksafe_uninit_unreadable).
    pub uninit_stack_readable: bool,
    /// explore_alu_limits: once a pointer moved by an unknown scalar was
    /// sanitized, scalars only match identical ones, so that paths with
    /// other ALU limits are explored.
    pub explore_alu_limits: bool,
    pub resets: u64,
    pub pairs_scanned: u64,
    /// Comparisons decided by the register of a `MissHint` alone.
    pub hinted_rejects: u64,
}

impl IdMap {
    pub fn new(memset_baseline: bool) -> IdMap {
        IdMap {
            pairs: Box::new([(0, 0); ID_MAP_SIZE]),
            cnt: 0,
            tmp_id_gen: 0,
            memset_baseline,
            uninit_stack_readable: true,
            explore_alu_limits: false,
            resets: 0,
            pairs_scanned: 0,
            hinted_rejects: 0,
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
    #[inline]
    pub fn check(&mut self, old: u32, cur: u32) -> bool {
        // Most registers have no id: decide those without a call.
        if old == 0 || cur == 0 {
            return old == cur;
        }
        self.check_pair(old, cur)
    }

    /// [`IdMap::check`] of two nonzero ids.
    fn check_pair(&mut self, old: u32, cur: u32) -> bool {
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

    #[inline]
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

#[inline(always)]
fn within(old: &Reg, cur: &Reg) -> bool {
    old.v.is_superset_of(&cur.v)
}

/// Whether the old register is safe for the current one: decides the two
/// cases most comparisons meet (scalars without ids against scalars)
/// inline, and leaves the rest to [`regsafe_in_full`].
#[inline(always)]
pub fn regsafe(old: &Reg, cur: &Reg, m: &mut IdMap, exact: Exact) -> bool {
    if exact != Exact::Identical
        && old.ty == RegType::Scalar
        && cur.ty == RegType::Scalar
        && old.flags == cur.flags
        && !m.explore_alu_limits
    {
        if !old.precise && exact == Exact::Loose {
            return true;
        }
        // Without an id, no link to check: only the range decides.
        if old.id == 0 {
            return within(old, cur);
        }
    }
    regsafe_in_full(old, cur, m, exact)
}

fn regsafe_in_full(old: &Reg, cur: &Reg, m: &mut IdMap, exact: Exact) -> bool {
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
            if m.explore_alu_limits {
                return old.off == cur.off && old.v == cur.v && m.check_scalar(old.id, cur.id);
            }
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
            // The range test first: it has no side effect, and when it
            // fails the id map is thrown away with the comparison.
            within(old, cur) && m.check_scalar(old.id, cur.id)
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
        // Where an arena pointer points never decides safety.
        RegType::Arena => true,
        _ => regs_exact(old, cur, m),
    }
}

/// Per-byte mask (0xff) of the bytes of a slot's type word that are not
/// STACK_INVALID or STACK_MISC.
fn significant_bytes(types: u64) -> u64 {
    byte_nonzero(types & !u64::from_ne_bytes([SlotType::Misc as u8; REG_SIZE]))
}

/// 0xff in each byte of `w` that is not zero; every byte is below 0x80.
fn byte_nonzero(w: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // Adding 0x7f sets a byte's top bit exactly when it is nonzero, and
    // cannot carry into the next byte.
    let top = (w + LOW7) & !LOW7;
    (top >> 7) * 0xff
}

/// Compares the stacks slot by slot. The result and the order of the id-map
/// checks are those of the kernel's byte-by-byte walk: a slot contributes
/// through its type bytes and, at its last byte, its spilled register.
pub(crate) fn stacksafe(old: &Frame, cur: &Frame, m: &mut IdMap, exact: Exact) -> bool {
    first_unsafe_slot(old, cur, m, exact).is_none()
}

/// [`stacksafe`], naming the slot whose comparison failed.
fn first_unsafe_slot(old: &Frame, cur: &Frame, m: &mut IdMap, exact: Exact) -> Option<usize> {
    (0..old.stack.len()).find(|&spi| !slot_safe(&old.stack[spi], cur.stack.get(spi), m, exact))
}

/// [`first_unsafe_slot`] of a loose comparison that visits only the slots
/// of `mask` (the old frame's [`SignificantSlots`]): the others hold
/// uninitialised or unknown bytes, which match anything.
fn first_unsafe_slot_of(old: &Frame, cur: &Frame, m: &mut IdMap, mut mask: u64) -> Option<usize> {
    while mask != 0 {
        let spi = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let Some(os) = old.stack.get(spi) else {
            // Not this frame's mask: compare in full.
            return first_unsafe_slot(old, cur, m, Exact::Loose);
        };
        if !slot_safe(os, cur.stack.get(spi), m, Exact::Loose) {
            return Some(spi);
        }
    }
    None
}

/// One slot of [`stacksafe`]: whether the old slot `os` is safe for the
/// current one (`None` where the current stack ends before it).
#[inline(always)]
fn slot_safe(os: &Slot, cs: Option<&Slot>, m: &mut IdMap, exact: Exact) -> bool {
    // Dead or unknown bytes match anything: most explored slots are.
    if exact == Exact::Loose && os.all_invalid_or_misc() {
        return true;
    }
    let Some(cs) = cs else {
        return false;
    };
    let old_types = os.type_word();
    let cur_types = cs.type_word();
    if exact != Exact::Loose {
        // Every byte's type must be the same.
        if old_types != cur_types {
            return false;
        }
        if os.all_invalid_or_misc() {
            return true;
        }
        // A full spill compares its registers whatever they hold.
        if os.is_full_spill() {
            return regsafe(&os.spilled, &cs.spilled, m, exact);
        }
    } else if os.is_full_spill() && os.spilled.ty == RegType::Scalar {
        // A spilled scalar against one, or against bytes that all read
        // as an unknown scalar (is_stack_all_misc).
        if cs.is_full_spill() && cs.spilled.ty == RegType::Scalar {
            return regsafe(&os.spilled, &cs.spilled, m, exact);
        }
        if cs.all_invalid_or_misc() {
            return regsafe(&os.spilled, &Reg::unknown_scalar(), m, exact);
        }
    }
    // Each byte that is neither uninitialised (never read) nor unknown
    // (matches anything) must have the same type in both (as it has
    // when the words are equal, the common case).
    if old_types != cur_types
        && byte_nonzero(old_types ^ cur_types) & significant_bytes(old_types) != 0
    {
        return false;
    }
    slot_objects_safe(os, cs, m, exact)
}

/// The stack slots of each frame of an explored state that a loose
/// comparison looks at: those holding anything but uninitialised or
/// unknown bytes (one bit per slot). Set when the checkpoint is cleaned,
/// which is also when its stack stops changing: afterwards only precision
/// marks change, and they are no slot type.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct SignificantSlots {
    masks: [u64; MAX_CALL_FRAMES],
    known: bool,
}

impl SignificantSlots {
    /// Bit `spi` of `masks[frame]` set for each significant slot; every
    /// slot past the 64th must hold nothing.
    pub fn new(masks: [u64; MAX_CALL_FRAMES]) -> SignificantSlots {
        SignificantSlots { masks, known: true }
    }

    /// The slots of `st`, unknown for a stack of more than 64 slots.
    #[cfg(test)]
    pub fn of(st: &State) -> SignificantSlots {
        if st.frames.len() > MAX_CALL_FRAMES || st.frames.iter().any(|f| f.stack.len() > 64) {
            return SignificantSlots::default();
        }
        let mut masks = [0u64; MAX_CALL_FRAMES];
        for (mask, f) in masks.iter_mut().zip(&st.frames) {
            for (spi, slot) in f.stack.iter().enumerate() {
                if !slot.all_invalid_or_misc() {
                    *mask |= 1 << spi;
                }
            }
        }
        SignificantSlots::new(masks)
    }

    #[inline]
    fn of_frame(&self, i: usize) -> Option<u64> {
        self.known.then(|| self.masks.get(i).copied()).flatten()
    }
}

/// What a stack slot holds beyond its byte types (a spilled register, an
/// iterator, a dynptr, irq flags), as the slot's last byte says: the old
/// state's must be safe for the current one's.
pub(crate) fn slot_objects_safe(os: &Slot, cs: &Slot, m: &mut IdMap, exact: Exact) -> bool {
    match os.types[REG_SIZE - 1] {
        SlotType::Spill => regsafe(&os.spilled, &cs.spilled, m, exact),
        SlotType::Iter => crate::iter::slots_equal(&os.spilled, &cs.spilled, m),
        SlotType::Dynptr => crate::dynptr::dynptr_slot_safe(os, cs, m),
        SlotType::IrqFlag => crate::irq::slots_equal(&os.spilled, &cs.spilled, m),
        _ => true,
    }
}

#[inline]
pub(crate) fn refsafe(old: &State, cur: &State, m: &mut IdMap) -> bool {
    if old.refs.len() != cur.refs.len() {
        return false;
    }
    old.refs.iter().zip(&cur.refs).all(|(o, c)| {
        m.check(o.id, c.id) && o.kind == c.kind && (!o.kind.is_lock() || o.lock_ptr == c.lock_ptr)
    })
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
    states_equal_noting(
        old,
        cur,
        m,
        live_regs,
        id_gen,
        exact,
        &SignificantSlots::default(),
        &mut MissHint::default(),
    )
}

/// A register or stack slot whose comparison made an earlier
/// `states_equal` against the same explored state fail, 0 if none.
///
/// A checkpoint tends to fail against the paths that reach it for the
/// same reason again and again (a loop counter, a length, a value spilled
/// to the stack). Comparing that register or slot first, alone
/// ([`hinted_reject`]), rejects most misses before the rest of the
/// comparison. This only reorders the work: `regsafe` and the slot
/// comparisons fail with an empty id map whenever they fail with a fuller
/// one (the map can only add conflicts), so one failing alone fails the
/// whole comparison.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct MissHint(u16);

/// What a [`MissHint`] names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum HintAt {
    Reg { frame: usize, reg: usize },
    Slot { frame: usize, spi: usize },
}

/// Hints of registers take 1..=128, those of slots follow.
const SLOT_HINTS: u16 = 129;

impl MissHint {
    fn reg(frame: usize, r: usize) -> MissHint {
        MissHint(((frame << 4) | r) as u16 + 1)
    }
    fn slot(frame: usize, spi: usize) -> MissHint {
        MissHint(((frame << 6) | spi) as u16 + SLOT_HINTS)
    }
    #[inline]
    fn get(self) -> Option<HintAt> {
        match self.0 {
            0 => None,
            v if v < SLOT_HINTS => {
                let v = (v - 1) as usize;
                Some(HintAt::Reg {
                    frame: v >> 4,
                    reg: v & 15,
                })
            }
            v => {
                let v = (v - SLOT_HINTS) as usize;
                Some(HintAt::Slot {
                    frame: v >> 6,
                    spi: v & 63,
                })
            }
        }
    }
}

/// The instruction whose live registers decide frame `i` of `old`: the
/// state's own instruction for the innermost frame, the call for a caller.
#[inline]
fn frame_insn(old: &State, i: usize) -> usize {
    if i + 1 < old.frames.len() {
        old.frames[i + 1].callsite.max(0) as usize
    } else {
        old.insn_idx
    }
}

/// True when the register or slot `hint` names, compared alone, already
/// makes `states_equal` false (see [`MissHint`]).
#[inline]
pub fn hinted_reject(
    old: &State,
    cur: &State,
    m: &mut IdMap,
    live_regs: &[u16],
    id_gen: u32,
    exact: Exact,
    hint: MissHint,
) -> bool {
    let Some(at) = hint.get() else {
        return false;
    };
    if old.frames.len() != cur.frames.len() {
        return false;
    }
    let rejected = match at {
        HintAt::Reg { frame, reg } => {
            if frame >= old.frames.len() || reg > 10 {
                return false;
            }
            let live = live_regs
                .get(frame_insn(old, frame))
                .copied()
                .unwrap_or(u16::MAX);
            if live & (1 << reg) == 0 {
                return false;
            }
            m.reset(id_gen);
            !regsafe(
                &old.frames[frame].regs[reg],
                &cur.frames[frame].regs[reg],
                m,
                exact,
            )
        }
        HintAt::Slot { frame, spi } => {
            // Slots are compared byte by byte without CAP_PERFMON.
            if frame >= old.frames.len() || !m.uninit_stack_readable {
                return false;
            }
            let Some(os) = old.frames[frame].stack.get(spi) else {
                return false;
            };
            m.reset(id_gen);
            !slot_safe(os, cur.frames[frame].stack.get(spi), m, exact)
        }
    };
    m.hinted_rejects += u64::from(rejected);
    rejected
}

/// `states_equal`, noting in `hint` the register or slot that made it
/// fail (left as it was when something else did). A loose comparison
/// visits only the old state's significant `slots` when they are known.
#[allow(clippy::too_many_arguments)]
pub fn states_equal_noting(
    old: &State,
    cur: &State,
    m: &mut IdMap,
    live_regs: &[u16],
    id_gen: u32,
    exact: Exact,
    slots: &SignificantSlots,
    hint: &mut MissHint,
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
    // Most states hold no references and no irq region: skip the calls.
    let no_refs = old.refs.is_empty() && cur.refs.is_empty();
    let no_irq = old.active_irq_id == 0 && cur.active_irq_id == 0;
    if !(no_refs || refsafe(old, cur, m))
        || !(no_irq || m.check(old.active_irq_id, cur.active_irq_id))
    {
        return false;
    }
    // The lock held: the same map, and ids that correspond.
    if old.active_locks > 0 && (old.lock.0 != cur.lock.0 || !m.check(old.lock.1, cur.lock.1)) {
        return false;
    }
    for (i, (o, c)) in old.frames.iter().zip(&cur.frames).enumerate() {
        if o.callsite != c.callsite || o.callback_depth > c.callback_depth {
            return false;
        }
        let live = live_regs
            .get(frame_insn(old, i))
            .copied()
            .unwrap_or(u16::MAX);
        for r in 0..11 {
            if live & (1 << r) != 0 && !regsafe(&o.regs[r], &c.regs[r], m, exact) {
                *hint = MissHint::reg(i, r);
                return false;
            }
        }
        if !m.uninit_stack_readable {
            if !crate::privilege::stacksafe_uninit_unreadable(o, c, m, exact) {
                return false;
            }
            continue;
        }
        let unsafe_slot = match slots.of_frame(i) {
            Some(mask) if exact == Exact::Loose => first_unsafe_slot_of(o, c, m, mask),
            _ => first_unsafe_slot(o, c, m, exact),
        };
        if let Some(spi) = unsafe_slot {
            if spi < 64 {
                *hint = MissHint::slot(i, spi);
            }
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Slot;

    /// The byte-by-byte walk stacksafe replaced, as the reference it must
    /// agree with.
    fn stacksafe_bytewise(old: &Frame, cur: &Frame, m: &mut IdMap, exact: Exact) -> bool {
        let unbound = Reg::unknown_scalar();
        let old_bytes = old.stack.len() * REG_SIZE;
        let cur_bytes = cur.stack.len() * REG_SIZE;
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
            if b == REG_SIZE - 1
                && os.types[REG_SIZE - 1] == SlotType::IrqFlag
                && !crate::irq::slots_equal(&os.spilled, &cs.spilled, m)
            {
                return false;
            }
            i += 1;
        }
        true
    }

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

    #[test]
    fn explore_alu_limits_makes_scalars_match_only_exactly() {
        let mut m = IdMap::new(false);
        let old = Reg::unknown_scalar();
        let cur = Reg::known(6);
        assert!(regsafe(&old, &cur, &mut m, Exact::Loose));
        m.explore_alu_limits = true;
        assert!(!regsafe(&old, &cur, &mut m, Exact::Loose));
        assert!(regsafe(&cur, &Reg::known(6), &mut m, Exact::Loose));
    }

    #[test]
    fn a_speculative_state_never_prunes_a_real_one() {
        let (mut m, live) = (IdMap::new(false), [0u16; 1]);
        let real = State::new();
        let mut spec = State::new();
        spec.speculative = true;
        assert!(states_equal(&real, &spec, &mut m, &live, 0, Exact::Loose));
        assert!(!states_equal(&spec, &real, &mut m, &live, 0, Exact::Loose));
    }

    /// A xorshift generator: `next(n)` is below `n`.
    fn rng(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    /// A register of the kinds stack and register comparisons meet.
    fn random_reg(next: &mut dyn FnMut(u64) -> u64) -> Reg {
        let mut r = match next(5) {
            0 => Reg::known(next(3)),
            1 => Reg::unknown_scalar(),
            2 => Reg::pointer(RegType::MapValue),
            3 => Reg::not_init(),
            _ => Reg::pointer(RegType::Ctx),
        };
        r.precise = next(2) == 0;
        r.id = next(3) as u32;
        r
    }

    /// A slot of the shapes the verifier produces.
    fn random_slot(next: &mut dyn FnMut(u64) -> u64) -> Slot {
        let byte_types = [
            SlotType::Invalid,
            SlotType::Misc,
            SlotType::Zero,
            SlotType::Spill,
            SlotType::Iter,
            SlotType::Dynptr,
        ];
        let mut s = Slot::default();
        let fill = |t: SlotType, lo: usize, s: &mut Slot| s.types[lo..].fill(t);
        match next(7) {
            0 => {}
            1 => fill(SlotType::Misc, 0, &mut s),
            2 => fill(SlotType::Zero, 0, &mut s),
            3 => fill(SlotType::Spill, 0, &mut s),
            4 => fill(SlotType::Spill, 4, &mut s),
            5 => fill(
                [SlotType::Iter, SlotType::Dynptr][next(2) as usize],
                0,
                &mut s,
            ),
            _ => {
                for t in s.types.iter_mut() {
                    *t = byte_types[next(6) as usize];
                }
            }
        }
        s.spilled = random_reg(next);
        if s.spilled.ty == RegType::NotInit {
            s.spilled = Reg::unknown_scalar();
        }
        s
    }

    /// Two stacks of up to `max` slots, the second often a changed copy
    /// of the first, as a revisited path has.
    fn random_stacks(next: &mut dyn FnMut(u64) -> u64, max: u64) -> (Vec<Slot>, Vec<Slot>) {
        let old: Vec<Slot> = (0..next(max + 1)).map(|_| random_slot(next)).collect();
        let mut cur: Vec<Slot> = (0..next(max + 1)).map(|_| random_slot(next)).collect();
        if next(2) == 0 {
            cur = old.clone();
            for s in cur.iter_mut() {
                if next(4) == 0 {
                    *s = random_slot(next);
                }
            }
        }
        (old, cur)
    }

    /// Random stacks built from the slot shapes the verifier produces,
    /// compared by the slot-wise stacksafe and the byte walk: the same
    /// answer and the same id-map checks in the same order.
    #[test]
    fn slotwise_stacksafe_agrees_with_the_byte_walk() {
        let mut next = rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let mut old = Frame::new(-1, 0, 0);
            let mut cur = Frame::new(-1, 0, 0);
            (old.stack, cur.stack) = random_stacks(&mut next, 4);
            for exact in [Exact::Loose, Exact::RangeWithin, Exact::Identical] {
                let (mut a, mut b) = (IdMap::new(false), IdMap::new(false));
                a.reset(100);
                b.reset(100);
                let fast = stacksafe(&old, &cur, &mut a, exact);
                let walk = stacksafe_bytewise(&old, &cur, &mut b, exact);
                assert_eq!(fast, walk, "{exact:?} {:?} {:?}", old.stack, cur.stack);
                assert_eq!(a.pairs_scanned, b.pairs_scanned);
                assert_eq!(a.pairs[..a.cnt], b.pairs[..b.cnt]);
            }
        }
    }

    /// A loose comparison that visits only the significant slots finds
    /// the same failing slot, with the same id-map checks, as one that
    /// visits every slot.
    #[test]
    fn significant_slots_alone_decide_a_loose_stack_comparison() {
        let mut next = rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let mut old = State::new();
            let mut cur = State::new();
            (old.frames[0].stack, cur.frames[0].stack) = random_stacks(&mut next, 6);
            let mask = SignificantSlots::of(&old).of_frame(0).expect("short stack");
            let (mut a, mut b) = (IdMap::new(false), IdMap::new(false));
            a.reset(100);
            b.reset(100);
            let (o, c) = (&old.frames[0], &cur.frames[0]);
            assert_eq!(
                first_unsafe_slot_of(o, c, &mut a, mask),
                first_unsafe_slot(o, c, &mut b, Exact::Loose),
                "{:?} {:?}",
                o.stack,
                c.stack
            );
            assert_eq!(a.pairs[..a.cnt], b.pairs[..b.cnt]);
        }
    }

    /// Whatever register or slot a hint names, a hinted rejection happens
    /// only where the full comparison fails too, and noting a hint leaves
    /// the answer as it was.
    #[test]
    fn a_hint_rejects_only_unequal_states() {
        let mut next = rng(0x0123_4567_89ab_cdef);
        let live = [u16::MAX; 1];
        let mut hinted = 0;
        for _ in 0..5_000 {
            let mut old = State::new();
            let mut cur = State::new();
            (old.frames[0].stack, cur.frames[0].stack) = random_stacks(&mut next, 4);
            for r in 0..11 {
                old.frames[0].regs[r] = random_reg(&mut next);
                cur.frames[0].regs[r] = if next(3) == 0 {
                    random_reg(&mut next)
                } else {
                    old.frames[0].regs[r]
                };
            }
            let slots = SignificantSlots::of(&old);
            for exact in [Exact::Loose, Exact::RangeWithin] {
                let mut m = IdMap::new(false);
                let equal = states_equal(&old, &cur, &mut m, &live, 100, exact);
                let mut hint = MissHint::default();
                let noted =
                    states_equal_noting(&old, &cur, &mut m, &live, 100, exact, &slots, &mut hint);
                assert_eq!(equal, noted);
                let regs = (0..11).map(|r| MissHint::reg(0, r));
                let stack = (0..5).map(|spi| MissHint::slot(0, spi));
                for h in regs.chain(stack).chain([hint]) {
                    if hinted_reject(&old, &cur, &mut m, &live, 100, exact, h) {
                        assert!(!equal, "{h:?} {exact:?} {old:?} {cur:?}");
                        hinted += 1;
                    }
                }
            }
        }
        assert!(hinted > 1000, "only {hinted} hinted rejections");
    }
}
