//! Narrowing and widening: truncation to a load/store size, sign-extending
//! loads and moves (MOVSX, LDX MEMSX), and 32-bit moves.

use super::Scalar;
use crate::tnum::{low_bytes_mask, Tnum};

impl Scalar {
    /// Keeps the low `size` bytes, `size` in 1..=4 (coerce_reg_to_size):
    /// narrow loads, 16/32-bit byte swaps.
    pub fn coerce_to_size(&mut self, size: u8) {
        self.var_off = self.var_off.cast(size);
        let mask = low_bytes_mask(size);
        if self.umin & !mask == self.umax & !mask {
            self.umin &= mask;
            self.umax &= mask;
        } else {
            self.umin = 0;
            self.umax = mask;
        }
        self.smin = self.umin as i64;
        self.smax = self.umax as i64;
        // Below 32 bits the old 32-bit bounds no longer apply; at 32 they do.
        if size < 4 {
            self.mark_unbounded32();
        }
        self.sync();
    }

    /// The value the low `size` bytes (1, 2 or 4) take when sign-extended to
    /// 64 bits (coerce_reg_to_size_sx): LDX MEMSX and ALU64 MOVSX.
    pub fn coerce_to_size_sx(&mut self, size: u8) {
        if self.var_off.is_const() {
            *self = Scalar::constant(sign_extend(self.var_off.value, size) as u64);
            return;
        }
        let bits = u32::from(size) * 8;
        let top_smax = (self.smax as u64).wrapping_shr(bits).wrapping_shl(bits);
        let top_smin = (self.smin as u64).wrapping_shr(bits).wrapping_shl(bits);
        if top_smax == top_smin {
            let a = sign_extend(self.smax as u64, size);
            let b = sign_extend(self.smin as u64, size);
            let (lo, hi) = (a.min(b), a.max(b));
            // Both ends on one side of zero: one range in every view.
            if (hi >= 0) == (lo >= 0) {
                self.smin = lo;
                self.smax = hi;
                self.s32_min = lo as i32;
                self.s32_max = hi as i32;
                self.umin = lo as u64;
                self.umax = hi as u64;
                self.u32_min = lo as u32;
                self.u32_max = hi as u32;
                self.var_off = Tnum::range(lo as u64, hi as u64);
                return;
            }
        }
        let (min, max) = signed_limits(size);
        self.smin = min;
        self.smax = max;
        self.s32_min = min as i32;
        self.s32_max = max as i32;
        self.umin = 0;
        self.u32_min = 0;
        self.umax = u64::MAX;
        self.u32_max = u32::MAX;
        self.var_off = Tnum::UNKNOWN;
    }

    /// The 32-bit subregister's low `size` bytes (1 or 2) sign-extended to
    /// 32 bits (coerce_subreg_to_size_sx): ALU32 MOVSX. Only the 32-bit
    /// views are meaningful afterwards; callers zero-extend.
    pub fn coerce_subreg_to_size_sx(&mut self, size: u8) {
        if self.var_off.is_const() {
            let v = sign_extend(self.var_off.value, size) as u32;
            self.var_off = Tnum::constant(sign_extend(self.var_off.value, size) as u64);
            self.s32_min = v as i32;
            self.s32_max = v as i32;
            self.u32_min = v;
            self.u32_max = v;
            return;
        }
        let bits = u32::from(size) * 8;
        let top_smax = (self.s32_max as u32).wrapping_shr(bits).wrapping_shl(bits);
        let top_smin = (self.s32_min as u32).wrapping_shr(bits).wrapping_shl(bits);
        if top_smax == top_smin {
            let a = sign_extend(u64::from(self.s32_max as u32), size) as i32;
            let b = sign_extend(u64::from(self.s32_min as u32), size) as i32;
            let (lo, hi) = (a.min(b), a.max(b));
            if (lo >= 0) == (hi >= 0) {
                self.s32_min = lo;
                self.s32_max = hi;
                self.u32_min = lo as u32;
                self.u32_max = hi as u32;
                self.var_off = Tnum::range(u64::from(lo as u32), u64::from(hi as u32)).subreg();
                return;
            }
        }
        let (min, max) = signed_limits(size);
        self.s32_min = min as i32;
        self.s32_max = max as i32;
        self.u32_min = 0;
        self.u32_max = u32::MAX;
        self.var_off = Tnum::UNKNOWN.subreg();
    }

    /// `w_dst = w_src` (ALU32 MOV): the low half, zero-extended. The caller
    /// keeps the source's id only if `src.width() <= 32`.
    pub fn mov32(src: &Scalar) -> Scalar {
        let mut s = *src;
        s.zext_32_to_64();
        s.sync();
        s
    }

    /// `r_dst = (s8/s16/s32) r_src` (ALU64 MOVSX, `bits` = insn off). The
    /// caller keeps the source's id only if [`Scalar::movsx_keeps_value`].
    pub fn movsx64(src: &Scalar, bits: u8) -> Scalar {
        let mut s = *src;
        s.coerce_to_size_sx(bits / 8);
        s
    }

    /// `w_dst = (s8/s16) w_src` (ALU32 MOVSX), zero-extended to 64 bits.
    pub fn movsx32(src: &Scalar, bits: u8) -> Scalar {
        let mut s = *src;
        s.coerce_subreg_to_size_sx(bits / 8);
        s.zext_32_to_64();
        s.sync();
        s
    }

    /// True when sign extension from `bits` cannot change the value (the
    /// kernel then lets the destination share the source's id).
    pub fn movsx_keeps_value(src: &Scalar, bits: u8) -> bool {
        bits > 0 && src.umax < 1u64 << (u32::from(bits) - 1)
    }
}

/// The low `size` bytes of `v` as a signed number.
#[inline]
fn sign_extend(v: u64, size: u8) -> i64 {
    match size {
        1 => i64::from(v as i8),
        2 => i64::from(v as i16),
        4 => i64::from(v as i32),
        _ => v as i64,
    }
}

#[inline]
fn signed_limits(size: u8) -> (i64, i64) {
    match size {
        1 => (i64::from(i8::MIN), i64::from(i8::MAX)),
        2 => (i64::from(i16::MIN), i64::from(i16::MAX)),
        _ => (i64::from(i32::MIN), i64::from(i32::MAX)),
    }
}
