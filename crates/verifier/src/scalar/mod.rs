//! The scalar part of a register (the numeric half of `bpf_reg_state`): a
//! tnum plus signed/unsigned 64- and 32-bit bounds, and everything the Linux
//! 6.18 verifier does to them — ALU transfer functions, bounds deduction,
//! branch prediction and refinement, pruning comparisons and log printing.
//!
//! Ids, precision and liveness live in the register that owns a `Scalar`;
//! where an operation must touch them the function says so in its result.
//!
//! Kernel function -> here:
//! - adjust_scalar_min_max_vals: [`Scalar::alu`], [`Scalar::neg`],
//!   [`Scalar::byte_swap`]; a BPF_K operand is `Scalar::constant(imm as i64
//!   as u64)`; maybe_fork_scalars is the `Some` result of `alu`.
//! - MOV/MOVSX: [`Scalar::mov32`], [`Scalar::movsx64`], [`Scalar::movsx32`],
//!   [`Scalar::movsx_keeps_value`]; loads: [`Scalar::coerce_to_size`],
//!   [`Scalar::coerce_to_size_sx`].
//! - reg_bounds_sync: [`Scalar::sync`]; reg_bounds_sanity_check:
//!   [`Scalar::sanitize`] / [`Scalar::check_invariants`].
//! - is_scalar_branch_taken: [`is_branch_taken`]; reg_set_min_max:
//!   [`set_min_max`] / [`set_min_max_same`], then [`Refined::sanitize`].
//! - linked scalars: [`Link::before_mov`], [`Link::after_alu`],
//!   [`sync_linked`] (over [`Scalar::linked_add`]); adjust_ptr_min_max_vals:
//!   [`Scalar::ptr_add_var`], [`Scalar::ptr_sub_var`], [`Scalar::ptr_keep_var`].
//! - regsafe for scalars: [`Scalar::is_superset_of`] (range_within + tnum_in),
//!   [`Scalar::range_within`], [`Scalar::exact_eq`].
//! - print_reg_state for scalars: [`write_reg_scalar`].

mod alu;
mod bounds;
mod branch;
mod coerce;
mod link;
mod print;
mod prune;
mod ptr;

pub use alu::{AluOp, EndianOp};
pub use bounds::{set_sync_memo, AluMemo, InvariantViolation};
pub use branch::{
    is_branch_taken, refine_cond_op, refine_cond_op_same, set_min_max, set_min_max_same, JmpOp,
    Refined,
};
pub use link::{sync_linked, Link, LinkKind, ADD_CONST, ADD_CONST32, ADD_CONST64};
pub use print::{write_reg_scalar, ScalarLogInfo};

use crate::tnum::Tnum;

/// The numeric state of a scalar (or of a pointer's variable offset).
#[derive(Clone, Copy, Eq, Hash, Debug)]
pub struct Scalar {
    pub var_off: Tnum,
    pub smin: i64,
    pub smax: i64,
    pub umin: u64,
    pub umax: u64,
    pub s32_min: i32,
    pub s32_max: i32,
    pub u32_min: u32,
    pub u32_max: u32,
}

impl Scalar {
    /// The ten fields as eight words, for comparisons without a branch per
    /// field.
    #[inline(always)]
    fn words(&self) -> [u64; 8] {
        [
            self.var_off.value,
            self.var_off.mask,
            self.smin as u64,
            self.smax as u64,
            self.umin,
            self.umax,
            u64::from(self.s32_min as u32) | u64::from(self.s32_max as u32) << 32,
            u64::from(self.u32_min) | u64::from(self.u32_max) << 32,
        ]
    }
}

impl PartialEq for Scalar {
    /// Field by field, as derived, but without an early exit: the memo
    /// tables compare scalars that are mostly equal, where every field
    /// is read anyway.
    #[inline]
    fn eq(&self, other: &Scalar) -> bool {
        let (a, b) = (self.words(), other.words());
        let mut diff = 0;
        for i in 0..8 {
            diff |= a[i] ^ b[i];
        }
        diff == 0
    }
}

impl Default for Scalar {
    fn default() -> Self {
        Scalar::unknown()
    }
}

impl Scalar {
    /// Nothing known (the kernel's __mark_reg_unknown, numeric part).
    #[inline]
    pub const fn unknown() -> Scalar {
        Scalar {
            var_off: Tnum::UNKNOWN,
            smin: i64::MIN,
            smax: i64::MAX,
            umin: 0,
            umax: u64::MAX,
            s32_min: i32::MIN,
            s32_max: i32::MAX,
            u32_min: 0,
            u32_max: u32::MAX,
        }
    }

    /// Exactly `v` (___mark_reg_known).
    #[inline]
    pub const fn constant(v: u64) -> Scalar {
        Scalar {
            var_off: Tnum::constant(v),
            smin: v as i64,
            smax: v as i64,
            umin: v,
            umax: v,
            s32_min: v as u32 as i32,
            s32_max: v as u32 as i32,
            u32_min: v as u32,
            u32_max: v as u32,
        }
    }

    /// A zero-extended unknown 32-bit value (e.g. a u32 load).
    #[inline]
    pub fn unknown_u32() -> Scalar {
        let mut s = Scalar::unknown();
        s.var_off = Tnum::new(0, u64::from(u32::MAX));
        s.sync();
        s
    }

    /// A value given by its 32-bit subregister state, zero-extended to 64
    /// bits (what every ALU32 result and 32-bit move becomes).
    #[inline]
    pub fn from_u32_bounds(
        var_off32: Tnum,
        s32_min: i32,
        s32_max: i32,
        u32_min: u32,
        u32_max: u32,
    ) -> Scalar {
        let mut s = Scalar::unknown();
        s.var_off = var_off32.subreg();
        s.s32_min = s32_min;
        s.s32_max = s32_max;
        s.u32_min = u32_min;
        s.u32_max = u32_max;
        s.zext_32_to_64();
        s.sync();
        s
    }

    /// The value in `[min, max]` (unsigned), bounds synced.
    pub fn from_urange(min: u64, max: u64) -> Scalar {
        let mut s = Scalar::unknown();
        s.umin = min;
        s.umax = max;
        s.var_off = Tnum::range(min, max);
        s.sync();
        s
    }

    /// Forget everything (numeric part of __mark_reg_unknown).
    #[inline]
    pub fn mark_unknown(&mut self) {
        *self = Scalar::unknown();
    }

    /// Becomes exactly `v` (numeric part of __mark_reg_known).
    #[inline]
    pub fn mark_known(&mut self, v: u64) {
        *self = Scalar::constant(v);
    }

    /// The subregister becomes exactly `v`; the upper half keeps its tnum.
    #[inline]
    pub fn mark_known32(&mut self, v: u32) {
        self.var_off = self.var_off.const_subreg(v);
        self.s32_min = v as i32;
        self.s32_max = v as i32;
        self.u32_min = v;
        self.u32_max = v;
    }

    /// All bounds unbounded, tnum kept (__mark_reg_unbounded).
    #[inline]
    pub fn mark_unbounded(&mut self) {
        self.mark_unbounded64();
        self.mark_unbounded32();
    }

    #[inline]
    pub fn mark_unbounded64(&mut self) {
        self.smin = i64::MIN;
        self.smax = i64::MAX;
        self.umin = 0;
        self.umax = u64::MAX;
    }

    #[inline]
    pub fn mark_unbounded32(&mut self) {
        self.s32_min = i32::MIN;
        self.s32_max = i32::MAX;
        self.u32_min = 0;
        self.u32_max = u32::MAX;
    }

    #[inline]
    pub fn is_const(&self) -> bool {
        self.var_off.is_const()
    }

    /// The value when `is_const()`.
    #[inline]
    pub fn const_value(&self) -> u64 {
        self.var_off.value
    }

    /// The kernel's is_reg_const: the whole register, or only its low half
    /// for 32-bit comparisons.
    #[inline]
    pub fn is_const_in(&self, is_jmp32: bool) -> bool {
        if is_jmp32 {
            self.var_off.subreg_is_const()
        } else {
            self.var_off.is_const()
        }
    }

    /// reg_const_value: the constant, truncated for 32-bit comparisons.
    #[inline]
    pub fn const_value_in(&self, is_jmp32: bool) -> u64 {
        if is_jmp32 {
            u64::from(self.var_off.value as u32)
        } else {
            self.var_off.value
        }
    }

    #[inline]
    pub fn is_unknown(&self) -> bool {
        *self == Scalar::unknown()
    }

    /// True if the concrete 64-bit `x` satisfies every component (tnum and
    /// all eight bounds). The soundness property of every operation here.
    #[inline]
    pub fn contains(&self, x: u64) -> bool {
        let x32 = x as u32;
        self.var_off.contains_value(x)
            && self.umin <= x
            && x <= self.umax
            && self.smin <= x as i64
            && x as i64 <= self.smax
            && self.u32_min <= x32
            && x32 <= self.u32_max
            && self.s32_min <= x32 as i32
            && x32 as i32 <= self.s32_max
    }

    /// Width in bits of the largest value (get_reg_width): 32-bit moves keep
    /// a linked id only when this is at most 32.
    #[inline]
    pub fn width(&self) -> u32 {
        64 - self.umax.leading_zeros()
    }
}
