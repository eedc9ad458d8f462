//! Keeping the five views of a scalar (tnum, u64, s64, u32, s32 ranges)
//! consistent: what each one teaches the others (reg_bounds_sync and its
//! parts), and the check that they still describe some value.

use super::Scalar;
use crate::tnum::Tnum;
use std::fmt;

/// A scalar whose bounds contradict each other or its tnum. The kernel logs
/// this as a verifier bug and, outside its self-test mode, forgets the
/// bounds and carries on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvariantViolation {
    pub reason: &'static str,
    pub scalar: Scalar,
}

impl InvariantViolation {
    /// The log line, given the kernel's context label ("true_reg1", "alu"...).
    pub fn message(&self, ctx: &str) -> String {
        let r = &self.scalar;
        format!(
            "verifier bug: REG INVARIANTS VIOLATION ({ctx}): {} u64=[{:#x}, {:#x}] \
             s64=[{:#x}, {:#x}] u32=[{:#x}, {:#x}] s32=[{:#x}, {:#x}] var_off=({:#x}, {:#x})",
            self.reason,
            r.umin,
            r.umax,
            r.smin as u64,
            r.smax as u64,
            r.u32_min,
            r.u32_max,
            r.s32_min as u32,
            r.s32_max as u32,
            r.var_off.value,
            r.var_off.mask
        )
    }
}

impl fmt::Display for InvariantViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message("scalar"))
    }
}

const SYNC_MEMO_SLOTS: usize = 4096;

/// Recent (input, output) pairs of `sync`, direct-mapped by a hash of the
/// input; an empty slot holds the unknown scalar, which is its own sync.
/// `sync` is a function of the scalar alone, so a remembered result is the
/// result.
struct SyncMemo {
    on: bool,
    slots: Vec<(Scalar, Scalar)>,
    /// The table of `AluMemo` between two programs verified on this
    /// thread.
    alu: Vec<AluMemoEntry>,
}

const ALU_MEMO_SLOTS: usize = 4096;

/// One remembered `Scalar::alu`: `tag` names the operation and width
/// (`ALU_MEMO_EMPTY` for a slot never filled), `out` the destination after
/// it. Operations that fork the state are not remembered.
#[derive(Clone, Copy)]
struct AluMemoEntry {
    tag: u8,
    dst: Scalar,
    src: Scalar,
    out: Scalar,
}

const ALU_MEMO_EMPTY: u8 = u8::MAX;

thread_local! {
    // Constant-initialised (the table is allocated at its first use), so
    // that each access is a plain thread-local access.
    static SYNC_MEMO: std::cell::RefCell<SyncMemo> = const {
        std::cell::RefCell::new(SyncMemo {
            on: true,
            slots: Vec::new(),
            alu: Vec::new(),
        })
    };
}

/// Whether this thread's `sync` looks up recent results (the baseline
/// switch `sync_no_memo` turns it off).
pub fn set_sync_memo(on: bool) {
    SYNC_MEMO.with(|m| m.borrow_mut().on = on);
}

fn memo_slot(s: &Scalar) -> usize {
    // Three multiplies over every field folded into three words: the
    // table only needs scalars that differ to land apart mostly, and the
    // lookup runs for nearly every ALU instruction.
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let a = s.var_off.value ^ s.var_off.mask.rotate_left(32) ^ s.umin.rotate_left(16);
    let b = s.umax ^ (s.smin as u64).rotate_left(32) ^ (s.smax as u64).rotate_left(48);
    let c = (u64::from(s.u32_min) | u64::from(s.u32_max) << 32)
        ^ (u64::from(s.s32_min as u32) << 16 | u64::from(s.s32_max as u32).rotate_left(48));
    let h = (a.wrapping_mul(K) ^ b).wrapping_mul(K) ^ c;
    (h.wrapping_mul(K) >> 52) as usize % SYNC_MEMO_SLOTS
}

fn alu_memo_slot(tag: u8, dst: &Scalar, src: &Scalar) -> usize {
    // The fields that tell scalars apart most often; a collision only
    // costs a recomputation.
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let a = dst.var_off.value
        ^ dst.var_off.mask.rotate_left(32)
        ^ dst.umin.rotate_left(16)
        ^ dst.umax.rotate_left(48);
    let b = src.var_off.value
        ^ src.var_off.mask.rotate_left(32)
        ^ src.umin.rotate_left(16)
        ^ src.umax.rotate_left(48);
    let c = (dst.smin as u64) ^ (dst.smax as u64).rotate_left(32) ^ u64::from(tag);
    let h = ((a.wrapping_mul(K) ^ b).wrapping_mul(K) ^ c).wrapping_mul(K);
    (h >> 52) as usize % ALU_MEMO_SLOTS
}

/// Recent `Scalar::alu` results, owned by the verifier of one program:
/// direct-mapped by a hash of the operation and operands, plus, for each
/// instruction, the slot its last operation used. The ALU instructions of
/// each path through the same code see the same operands again and again;
/// the slot hint finds them without hashing, and the hash finds operands
/// another instruction (or an earlier loop iteration) already had.
/// `Scalar::alu` is a function of its operation and operands alone, so a
/// remembered result is the result. Operations that fork are not
/// remembered. The table is this thread's: taken at creation and given
/// back when dropped, so that one allocation serves every program.
pub struct AluMemo {
    on: bool,
    slots: Vec<AluMemoEntry>,
    /// Per instruction: the slot of its last operation (NO_HINT if none).
    hint: Vec<u16>,
}

const NO_HINT: u16 = u16::MAX;

impl AluMemo {
    /// The memo of a program of `insns` instructions; `on` false computes
    /// every operation (the baseline switch `sync_no_memo`).
    pub fn new(on: bool, insns: usize) -> AluMemo {
        let slots = if on {
            SYNC_MEMO.with(|m| std::mem::take(&mut m.borrow_mut().alu))
        } else {
            Vec::new()
        };
        AluMemo {
            on,
            slots,
            hint: if on { vec![NO_HINT; insns] } else { Vec::new() },
        }
    }

    /// `dst.alu(op, src, alu32)` at instruction `idx`, or its remembered
    /// result.
    #[inline]
    pub fn alu(
        &mut self,
        idx: usize,
        dst: &mut Scalar,
        op: super::AluOp,
        src: &Scalar,
        alu32: bool,
    ) -> Option<Scalar> {
        if !self.on {
            return dst.alu(op, src, alu32);
        }
        let tag = op as u8 | u8::from(alu32) << 7;
        let hint = self.hint.get(idx).copied().unwrap_or(NO_HINT);
        if let Some(e) = self.slots.get(usize::from(hint)) {
            if e.tag == tag && e.dst == *dst && e.src == *src {
                *dst = e.out;
                return None;
            }
        }
        let slot = alu_memo_slot(tag, dst, src);
        if let Some(e) = self.slots.get(slot) {
            if e.tag == tag && e.dst == *dst && e.src == *src {
                *dst = e.out;
                if let Some(h) = self.hint.get_mut(idx) {
                    *h = slot as u16;
                }
                return None;
            }
        }
        let input = *dst;
        let fork = dst.alu(op, src, alu32);
        if fork.is_none() {
            if self.slots.is_empty() {
                self.slots = vec![EMPTY_ALU_ENTRY; ALU_MEMO_SLOTS];
            }
            self.slots[slot] = AluMemoEntry {
                tag,
                dst: input,
                src: *src,
                out: *dst,
            };
            if let Some(h) = self.hint.get_mut(idx) {
                *h = slot as u16;
            }
        }
        fork
    }
}

/// Tags of remembered one-operand operations (ALU operations' tags are
/// below 16, with bit 7 for ALU32); their entries keep the unknown scalar
/// as their source.
const MOV32_TAG: u8 = 0x40;
/// Plus the size in bytes (1, 2 or 4).
const COERCE_TAG: u8 = 0x50;

impl AluMemo {
    /// `Scalar::mov32(src)` at instruction `idx`, or its remembered result.
    #[inline]
    pub fn mov32(&mut self, idx: usize, src: &Scalar) -> Scalar {
        self.unary(idx, MOV32_TAG, src, Scalar::mov32)
    }

    /// `s.coerce_to_size(size)` (a zero-extending load of 1, 2 or 4
    /// bytes) at instruction `idx`, or its remembered result.
    #[inline]
    pub fn coerce_to_size(&mut self, idx: usize, s: &mut Scalar, size: u8) {
        *s = self.unary(idx, COERCE_TAG + size, s, |s| {
            let mut r = *s;
            r.coerce_to_size(size);
            r
        });
    }

    /// `f(src)`, a function of `src` alone named by `tag`, or its result
    /// remembered.
    #[inline]
    fn unary(
        &mut self,
        idx: usize,
        tag: u8,
        src: &Scalar,
        f: impl FnOnce(&Scalar) -> Scalar,
    ) -> Scalar {
        if !self.on {
            return f(src);
        }
        let hint = self.hint.get(idx).copied().unwrap_or(NO_HINT);
        if let Some(e) = self.slots.get(usize::from(hint)) {
            if e.tag == tag && e.dst == *src {
                return e.out;
            }
        }
        let unknown = Scalar::unknown();
        let slot = alu_memo_slot(tag, src, &unknown);
        if let Some(e) = self.slots.get(slot) {
            if e.tag == tag && e.dst == *src {
                if let Some(h) = self.hint.get_mut(idx) {
                    *h = slot as u16;
                }
                return e.out;
            }
        }
        let out = f(src);
        if self.slots.is_empty() {
            self.slots = vec![EMPTY_ALU_ENTRY; ALU_MEMO_SLOTS];
        }
        self.slots[slot] = AluMemoEntry {
            tag,
            dst: *src,
            src: unknown,
            out,
        };
        if let Some(h) = self.hint.get_mut(idx) {
            *h = slot as u16;
        }
        out
    }
}

const EMPTY_ALU_ENTRY: AluMemoEntry = AluMemoEntry {
    tag: ALU_MEMO_EMPTY,
    dst: Scalar::unknown(),
    src: Scalar::unknown(),
    out: Scalar::unknown(),
};

impl Drop for AluMemo {
    fn drop(&mut self) {
        if !self.slots.is_empty() {
            let slots = std::mem::take(&mut self.slots);
            // A thread that is exiting has no table left to give it to.
            let _ = SYNC_MEMO.try_with(|m| {
                if let Ok(mut m) = m.try_borrow_mut() {
                    m.alu = slots;
                }
            });
        }
    }
}

impl Scalar {
    /// Bounds implied by the tnum of the low 32 bits (__update_reg32_bounds).
    #[inline]
    pub fn update_bounds32(&mut self) {
        let t = self.var_off.subreg();
        let (v, m) = (t.value as u32, t.mask as u32);
        self.s32_min = self.s32_min.max((v | (m & 0x8000_0000)) as i32);
        self.s32_max = self.s32_max.min((v | (m & 0x7fff_ffff)) as i32);
        self.u32_min = self.u32_min.max(v);
        self.u32_max = self.u32_max.min(v | m);
    }

    /// Bounds implied by the tnum; when the u64 range and the tnum share a
    /// single value the scalar becomes that constant (__update_reg64_bounds).
    #[inline]
    pub fn update_bounds64(&mut self) {
        let t = self.var_off;
        self.smin = self.smin.max((t.value | (t.mask & (1 << 63))) as i64);
        self.smax = self
            .smax
            .min((t.value | (t.mask & (i64::MAX as u64))) as i64);
        self.umin = self.umin.max(t.value);
        self.umax = self.umax.min(t.value | t.mask);

        let next = t.step(self.umin);
        let umin_in_tnum = t.contains_value(self.umin);
        let tmax = t.value | t.mask;
        if umin_in_tnum && next > self.umax {
            *self = Scalar::constant(self.umin);
        } else if !umin_in_tnum && next == tmax {
            *self = Scalar::constant(tmax);
        } else if !umin_in_tnum && next <= self.umax && t.step(next) > self.umax {
            *self = Scalar::constant(next);
        }
    }

    #[inline]
    pub fn update_bounds(&mut self) {
        self.update_bounds32();
        self.update_bounds64();
    }

    /// 32-bit bounds from the 64-bit ones and from each other.
    fn deduce32(&mut self) {
        // Upper halves equal across the u64 range: its low halves are a range.
        if self.umin >> 32 == self.umax >> 32 {
            self.u32_min = self.u32_min.max(self.umin as u32);
            self.u32_max = self.u32_max.min(self.umax as u32);
            if (self.umin as i32) <= (self.umax as i32) {
                self.s32_min = self.s32_min.max(self.umin as i32);
                self.s32_max = self.s32_max.min(self.umax as i32);
            }
        }
        if self.smin >> 32 == self.smax >> 32 {
            if (self.smin as u32) <= (self.smax as u32) {
                self.u32_min = self.u32_min.max(self.smin as u32);
                self.u32_max = self.u32_max.min(self.smax as u32);
            }
            if (self.smin as i32) <= (self.smax as i32) {
                self.s32_min = self.s32_min.max(self.smin as i32);
                self.s32_max = self.s32_max.min(self.smax as i32);
            }
        }
        // Upper halves two consecutive numbers while the low halves go from
        // negative to non-negative: still one s32 range.
        if ((self.umin >> 32) as u32).wrapping_add(1) == (self.umax >> 32) as u32
            && (self.umin as i32) < 0
            && (self.umax as i32) >= 0
        {
            self.s32_min = self.s32_min.max(self.umin as i32);
            self.s32_max = self.s32_max.min(self.umax as i32);
        }
        if ((self.smin >> 32) as u32).wrapping_add(1) == (self.smax >> 32) as u32
            && (self.smin as i32) < 0
            && (self.smax as i32) >= 0
        {
            self.s32_min = self.s32_min.max(self.smin as i32);
            self.s32_max = self.s32_max.min(self.smax as i32);
        }
        // u32 range not crossing the sign bit is also an s32 range.
        if (self.u32_min as i32) <= (self.u32_max as i32) {
            self.s32_min = self.s32_min.max(self.u32_min as i32);
            self.s32_max = self.s32_max.min(self.u32_max as i32);
        }
        if (self.s32_min as u32) <= (self.s32_max as u32) {
            self.u32_min = self.u32_min.max(self.s32_min as u32);
            self.u32_max = self.u32_max.min(self.s32_max as u32);
        } else if self.u32_max < self.s32_min as u32 {
            // The s32 range wraps; the u32 range meets only its
            // non-negative part.
            self.s32_min = self.u32_min as i32;
            self.u32_max = self.u32_max.min(self.s32_max as u32);
        } else if (self.s32_max as u32) < self.u32_min {
            // ... or only its negative part.
            self.s32_max = self.u32_max as i32;
            self.u32_min = self.u32_min.max(self.s32_min as u32);
        }
    }

    /// u64 and s64 bounds from each other.
    fn deduce64(&mut self) {
        if (self.umin as i64) <= (self.umax as i64) {
            self.smin = self.smin.max(self.umin as i64);
            self.smax = self.smax.min(self.umax as i64);
        }
        if (self.smin as u64) <= (self.smax as u64) {
            self.umin = self.umin.max(self.smin as u64);
            self.umax = self.umax.min(self.smax as u64);
        } else if self.umax < self.smin as u64 {
            self.smin = self.umin as i64;
            self.umax = self.umax.min(self.smax as u64);
        } else if (self.smax as u64) < self.umin {
            self.smax = self.umax as i64;
            self.umin = self.umin.max(self.smin as u64);
        }
    }

    /// 64-bit bounds tightened by substituting the 32-bit bounds into the
    /// low halves of the 64-bit ones.
    fn deduce_mixed(&mut self) {
        const HI: u64 = !0xffff_ffff;
        let new_umin = (self.umin & HI) | u64::from(self.u32_min);
        let new_umax = (self.umax & HI) | u64::from(self.u32_max);
        self.umin = self.umin.max(new_umin);
        self.umax = self.umax.min(new_umax);
        let new_smin = ((self.smin as u64 & HI) | u64::from(self.u32_min)) as i64;
        let new_smax = ((self.smax as u64 & HI) | u64::from(self.u32_max)) as i64;
        self.smin = self.smin.max(new_smin);
        self.smax = self.smax.min(new_smax);

        if (self.s32_min as u32) <= (self.s32_max as u32) {
            let lo_min = u64::from(self.s32_min as u32);
            let lo_max = u64::from(self.s32_max as u32);
            self.umin = self.umin.max((self.umin & HI) | lo_min);
            self.umax = self.umax.min((self.umax & HI) | lo_max);
            self.smin = self.smin.max(((self.smin as u64 & HI) | lo_min) as i64);
            self.smax = self.smax.min(((self.smax as u64 & HI) | lo_max) as i64);
        }

        // After a sign-extending load: a 64-bit range within
        // [S32_MIN, S32_MAX] whose low half is non-negative cannot have the
        // upper half all ones.
        if self.s32_min >= 0 && self.smin >= i64::from(i32::MIN) && self.smax <= i64::from(i32::MAX)
        {
            self.smin = i64::from(self.s32_min);
            self.smax = i64::from(self.s32_max);
            self.umin = self.s32_min as u64;
            self.umax = self.s32_max as u64;
            self.var_off = self
                .var_off
                .intersect(Tnum::range(self.smin as u64, self.smax as u64));
        }
    }

    /// __reg_deduce_bounds.
    #[inline]
    pub fn deduce_bounds(&mut self) {
        self.deduce32();
        self.deduce64();
        self.deduce_mixed();
    }

    /// Known bits from the unsigned ranges (__reg_bound_offset).
    #[inline]
    pub fn bound_offset(&mut self) {
        let var64 = self.var_off.intersect(Tnum::range(self.umin, self.umax));
        let var32 = var64.subreg().intersect(Tnum::range(
            u64::from(self.u32_min),
            u64::from(self.u32_max),
        ));
        self.var_off = var64.clear_subreg().or(var32);
    }

    /// reg_bounds_sync: let every view learn from the others.
    #[inline]
    pub fn sync(&mut self) {
        // A constant agreeing in every view, and a scalar nothing is known
        // about, are already what every step below would leave them: many
        // ALU results are one or the other.
        let trivial = if self.var_off.mask == 0 {
            *self == Scalar::constant(self.var_off.value)
        } else {
            *self == Scalar::unknown()
        };
        if trivial {
            return;
        }
        // The same scalars are synced again and again (each path through
        // the same code computes the same ranges): remember recent results.
        SYNC_MEMO.with(|m| {
            let mut m = m.borrow_mut();
            if !m.on {
                self.sync_uncached();
                return;
            }
            if m.slots.is_empty() {
                m.slots = vec![(Scalar::unknown(), Scalar::unknown()); SYNC_MEMO_SLOTS];
            }
            let slot = memo_slot(self);
            let (input, output) = &mut m.slots[slot];
            if *input == *self {
                *self = *output;
            } else {
                *input = *self;
                self.sync_uncached();
                *output = *self;
            }
        });
    }

    fn sync_uncached(&mut self) {
        self.update_bounds();
        // The kernel runs three rounds; a round that changes nothing is a
        // fixpoint, so the remaining ones can be skipped without effect.
        let mut deduced = false;
        for _ in 0..3 {
            let before = *self;
            self.deduce_bounds();
            if *self == before {
                break;
            }
            deduced = true;
        }
        let var_off = self.var_off;
        self.bound_offset();
        // update_bounds is idempotent: when neither the deduction nor
        // bound_offset changed anything since the first run, the kernel's
        // second run changes nothing either.
        if deduced || self.var_off != var_off {
            self.update_bounds();
        }
    }

    /// reg_bounds_sanity_check without the side effect: `Err` if the scalar
    /// describes no value the way the kernel checks it.
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        let reason = if self.umin > self.umax
            || self.smin > self.smax
            || self.u32_min > self.u32_max
            || self.s32_min > self.s32_max
        {
            "range bounds violation"
        } else if self.var_off.is_const()
            && (self.umin != self.var_off.value
                || self.umax != self.var_off.value
                || self.smin != self.var_off.value as i64
                || self.smax != self.var_off.value as i64)
        {
            "const tnum out of sync with range bounds"
        } else if self.var_off.subreg_is_const() && {
            let v = self.var_off.value as u32;
            self.u32_min != v
                || self.u32_max != v
                || self.s32_min != v as i32
                || self.s32_max != v as i32
        } {
            "const subreg tnum out of sync with range bounds"
        } else {
            return Ok(());
        };
        Err(InvariantViolation {
            reason,
            scalar: *self,
        })
    }

    /// reg_bounds_sanity_check as a non-test kernel runs it: on a violation
    /// the bounds are forgotten (the tnum stays) and the violation returned
    /// for the log; verification continues.
    pub fn sanitize(&mut self) -> Result<(), InvariantViolation> {
        let r = self.check_invariants();
        if r.is_err() {
            self.mark_unbounded();
        }
        r
    }

    /// Moves the 32-bit bounds into the 64-bit ones for a zero-extended
    /// value (__reg_assign_32_into_64).
    #[inline]
    pub(crate) fn assign_32_into_64(&mut self) {
        self.umin = u64::from(self.u32_min);
        self.umax = u64::from(self.u32_max);
        if self.s32_min >= 0 && self.s32_max >= 0 {
            self.smin = i64::from(self.s32_min);
            self.smax = i64::from(self.s32_max);
        } else {
            self.smin = 0;
            self.smax = i64::from(u32::MAX);
        }
    }

    /// The upper 32 bits become zero (after every ALU32 operation).
    #[inline]
    pub fn zext_32_to_64(&mut self) {
        self.var_off = self.var_off.subreg();
        self.assign_32_into_64();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// reg_bounds_sync as the kernel orders it, without the skipped work.
    fn sync_every_step(s: &mut Scalar) {
        s.update_bounds();
        for _ in 0..3 {
            s.deduce_bounds();
        }
        s.bound_offset();
        s.update_bounds();
    }

    /// Remembered results are the results: random scalars (many sharing a
    /// memo slot) synced twice, with and without the memo.
    #[test]
    fn remembered_syncs_equal_computed_ones() {
        let mut x = 0x5851_f42d_4c95_7f2du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let scalars: Vec<Scalar> = (0..3 * SYNC_MEMO_SLOTS)
            .map(|_| {
                let (a, b) = (next() % 1000, next() % 1000);
                let mut s = Scalar::unknown();
                s.umin = a.min(b);
                s.umax = a.max(b);
                if next() % 2 == 0 {
                    s.var_off = Tnum::new(0, 0x3ff);
                }
                s
            })
            .collect();
        for round in 0..2 {
            for s in &scalars {
                set_sync_memo(false);
                let mut computed = *s;
                computed.sync();
                set_sync_memo(true);
                let mut remembered = *s;
                remembered.sync();
                assert_eq!(remembered, computed, "round {round}: {s:?}");
            }
        }
    }

    /// Remembered ALU results are the results, forks included: random
    /// operand pairs under every operation, each computed with the memo off
    /// and looked up with it on, twice (the second round finds them), at
    /// instruction indices shared by several operations and 32-bit moves.
    #[test]
    fn remembered_alu_results_equal_computed_ones() {
        use crate::scalar::AluOp;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let scalar = |next: &mut dyn FnMut() -> u64| match next() % 4 {
            0 => Scalar::constant(next() % 70),
            1 => {
                let mut s = Scalar::unknown();
                s.smin = -1;
                s.smax = 0;
                s.sync();
                s
            }
            _ => {
                let (a, b) = (next() % 1000, next() % 1000);
                let mut s = Scalar::unknown();
                s.umin = a.min(b);
                s.umax = a.max(b);
                s.sync();
                s
            }
        };
        let ops = [
            AluOp::Add,
            AluOp::Sub,
            AluOp::Mul,
            AluOp::Div,
            AluOp::Mod,
            AluOp::Or,
            AluOp::And,
            AluOp::Xor,
            AluOp::Lsh,
            AluOp::Rsh,
            AluOp::Arsh,
        ];
        let cases: Vec<(Scalar, Scalar, AluOp, bool)> = (0..2 * ALU_MEMO_SLOTS)
            .map(|_| {
                let (d, s) = (scalar(&mut next), scalar(&mut next));
                let op = ops[(next() % ops.len() as u64) as usize];
                (d, s, op, next() % 2 == 0)
            })
            .collect();
        let mut forks = 0;
        // Fewer instructions than cases: instructions see new operands.
        let mut memo = AluMemo::new(true, 100);
        let mut plain = AluMemo::new(false, 100);
        for round in 0..2 {
            for (i, &(d, s, op, alu32)) in cases.iter().enumerate() {
                set_sync_memo(false);
                let mut computed = d;
                let computed_fork = plain.alu(i % 150, &mut computed, op, &s, alu32);
                set_sync_memo(true);
                let mut remembered = d;
                let remembered_fork = memo.alu(i % 150, &mut remembered, op, &s, alu32);
                assert_eq!(remembered, computed, "round {round}: {d:?} {op:?} {s:?}");
                assert_eq!(
                    remembered_fork, computed_fork,
                    "round {round}: {d:?} {op:?}"
                );
                forks += usize::from(computed_fork.is_some());
                // A 32-bit move and a narrowing load at the same
                // instruction share the table.
                set_sync_memo(false);
                let moved = Scalar::mov32(&s);
                let size = [1, 2, 4][i % 3];
                let mut narrowed = d;
                narrowed.coerce_to_size(size);
                set_sync_memo(true);
                assert_eq!(memo.mov32(i % 150, &s), moved, "round {round}: {s:?}");
                let mut remembered = d;
                memo.coerce_to_size(i % 150, &mut remembered, size);
                assert_eq!(remembered, narrowed, "round {round}: {d:?} to {size}");
            }
        }
        assert!(forks > 0, "no operation forked");
    }

    /// Values at the edges of the 32- and 64-bit, signed and unsigned views.
    const EDGES: [u64; 8] = [
        0,
        1,
        0x7fff_ffff,
        0x8000_0000,
        0xffff_ffff,
        1 << 32,
        1 << 63,
        u64::MAX,
    ];

    #[test]
    fn constants_and_unknown_are_their_own_sync() {
        let mut all: Vec<Scalar> = EDGES.iter().map(|&v| Scalar::constant(v)).collect();
        all.push(Scalar::unknown());
        for s in all {
            let mut full = s;
            sync_every_step(&mut full);
            assert_eq!(full, s);
        }
    }

    #[test]
    fn sync_skips_only_work_that_changes_nothing() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Mostly narrow values around interesting edges, so that the
        // random scalars include consistent ones, constants and ranges.
        let pick = |next: &mut dyn FnMut() -> u64| {
            // The first seven: the test's random scalars stay as they were.
            let edges = &EDGES[..EDGES.len() - 1];
            let base = edges[(next() % edges.len() as u64) as usize];
            match next() % 4 {
                0 => next(),
                1 => base,
                2 => base.wrapping_add(next() % 64),
                _ => base.wrapping_sub(next() % 64),
            }
        };
        for _ in 0..200_000 {
            let (a, b) = (pick(&mut next), pick(&mut next));
            let (lo, hi) = (a.min(b), a.max(b));
            let mut s = match next() % 3 {
                0 => Scalar::constant(a),
                1 => {
                    let mut s = Scalar::unknown();
                    s.umin = lo;
                    s.umax = hi;
                    s
                }
                _ => {
                    let mut s = Scalar::unknown();
                    s.smin = (lo as i64).min(hi as i64);
                    s.smax = (lo as i64).max(hi as i64);
                    s.var_off = Tnum::new(a & !b, b);
                    s
                }
            };
            if next() % 2 == 0 {
                s.u32_min = (next() % 0x1_0000_0000) as u32;
                s.s32_max = (next() % 0x1_0000_0000) as u32 as i32;
            }
            let mut fast = s;
            fast.sync();
            let mut full = s;
            sync_every_step(&mut full);
            assert_eq!(fast, full, "{s:?}");
        }
    }
}
