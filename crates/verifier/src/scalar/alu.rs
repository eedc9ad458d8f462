//! The effect of ALU and ALU64 instructions on a scalar destination with a
//! scalar source (adjust_scalar_min_max_vals and its helpers), including
//! NEG and byte swaps.

use super::Scalar;
use bpfvet_isa::opcode;

/// Binary ALU operations (BPF_OP of the opcode; SDIV/SMOD are DIV/MOD with
/// off = 1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AluOp {
    Add,
    Sub,
    Mul,
    Div,
    Sdiv,
    Mod,
    Smod,
    Or,
    And,
    Xor,
    Lsh,
    Rsh,
    Arsh,
}

impl AluOp {
    /// From an ALU/ALU64 opcode and the instruction's `off` field. `None`
    /// for MOV, NEG, END and codes that are not binary operations.
    pub fn from_insn(code: u8, off: i16) -> Option<AluOp> {
        Some(match (opcode::op(code), off) {
            (opcode::BPF_ADD, _) => AluOp::Add,
            (opcode::BPF_SUB, _) => AluOp::Sub,
            (opcode::BPF_MUL, _) => AluOp::Mul,
            (opcode::BPF_DIV, 1) => AluOp::Sdiv,
            (opcode::BPF_DIV, _) => AluOp::Div,
            (opcode::BPF_MOD, 1) => AluOp::Smod,
            (opcode::BPF_MOD, _) => AluOp::Mod,
            (opcode::BPF_OR, _) => AluOp::Or,
            (opcode::BPF_AND, _) => AluOp::And,
            (opcode::BPF_XOR, _) => AluOp::Xor,
            (opcode::BPF_LSH, _) => AluOp::Lsh,
            (opcode::BPF_RSH, _) => AluOp::Rsh,
            (opcode::BPF_ARSH, _) => AluOp::Arsh,
            _ => return None,
        })
    }

    pub fn is_shift(self) -> bool {
        matches!(self, AluOp::Lsh | AluOp::Rsh | AluOp::Arsh)
    }
}

/// BPF_END forms: `le`/`be` (class ALU, converts to the named byte order
/// from the host's little-endian order) and `bswap` (class ALU64, always
/// swaps).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum EndianOp {
    ToLe,
    ToBe,
    Bswap,
}

impl EndianOp {
    /// From an END opcode (class and source bit).
    pub fn from_code(code: u8) -> EndianOp {
        if opcode::class(code) == opcode::BPF_ALU64 {
            EndianOp::Bswap
        } else if opcode::source(code) == opcode::BPF_TO_BE {
            EndianOp::ToBe
        } else {
            EndianOp::ToLe
        }
    }
}

impl Scalar {
    /// is_safe_to_compute_dst_reg_range: operations the verifier tracks;
    /// shifts only by a constant below the operand width.
    fn is_safe_to_compute(op: AluOp, src: &Scalar, alu32: bool) -> bool {
        match op {
            AluOp::Add | AluOp::Sub | AluOp::And | AluOp::Xor | AluOp::Or | AluOp::Mul => true,
            AluOp::Lsh | AluOp::Rsh | AluOp::Arsh => {
                let src_const = if alu32 {
                    src.var_off.subreg_is_const()
                        && src.s32_min == src.s32_max
                        && src.u32_min == src.u32_max
                } else {
                    src.var_off.is_const() && src.smin == src.smax && src.umin == src.umax
                };
                src_const && src.umax < if alu32 { 32 } else { 64 }
            }
            AluOp::Div | AluOp::Sdiv | AluOp::Mod | AluOp::Smod => false,
        }
    }

    /// maybe_fork_scalars: a value known to be -1 or 0 (e.g. `x s>> 63`)
    /// ANDed/ORed with a constant is split so each case stays exact. Returns
    /// the destination for a second path that re-runs this same instruction
    /// (the kernel pushes it with dst = 0); `self` continues as -1.
    fn fork_minus_one_or_zero(&mut self) -> Option<Scalar> {
        if self.smin == -1 && self.smax == 0 {
            let other = Scalar::constant(0);
            *self = Scalar::constant(u64::MAX);
            Some(other)
        } else if self.s32_min == -1 && self.s32_max == 0 {
            let mut other = *self;
            other.mark_known32(0);
            self.mark_known32(u32::MAX);
            Some(other)
        } else {
            None
        }
    }

    /// `self = self <op> src` for ALU64 (`alu32 == false`) or ALU (32-bit,
    /// result zero-extended). For a BPF_K source pass `Scalar::constant(imm
    /// as i64 as u64)` (the kernel sign-extends imm for both classes).
    ///
    /// Returns `Some(dst)` when the kernel forks the state here
    /// (maybe_fork_scalars): the caller pushes a branch that re-processes
    /// this instruction with the destination replaced by `dst`.
    ///
    /// The caller handles ids (the result has none unless the kernel's
    /// linked-add rule applies), precision, and the errors the kernel checks
    /// before getting here (pointer operands, division by a zero constant,
    /// invalid shift immediates). Untracked operations (DIV, MOD, shifts by
    /// a non-constant or too large amount) leave the destination unknown.
    pub fn alu(&mut self, op: AluOp, src: &Scalar, alu32: bool) -> Option<Scalar> {
        if !Self::is_safe_to_compute(op, src, alu32) {
            self.mark_unknown();
            return None;
        }
        let mut fork = None;
        match op {
            AluOp::Add => {
                self.add32(src);
                self.add64(src);
                self.var_off = self.var_off + src.var_off;
            }
            AluOp::Sub => {
                self.sub32(src);
                self.sub64(src);
                self.var_off = self.var_off - src.var_off;
            }
            AluOp::Mul => {
                self.var_off = self.var_off * src.var_off;
                self.mul32(src);
                self.mul64(src);
            }
            AluOp::And | AluOp::Or => {
                if src.var_off.is_const() {
                    fork = self.fork_minus_one_or_zero();
                }
                if op == AluOp::And {
                    self.var_off = self.var_off.and(src.var_off);
                    self.and32(src);
                    self.and64(src);
                } else {
                    self.var_off = self.var_off.or(src.var_off);
                    self.or32(src);
                    self.or64(src);
                }
            }
            AluOp::Xor => {
                self.var_off = self.var_off.xor(src.var_off);
                self.xor32(src);
                self.xor64(src);
            }
            AluOp::Lsh => {
                if alu32 {
                    self.lsh32(src);
                } else {
                    self.lsh64(src);
                }
            }
            AluOp::Rsh => {
                if alu32 {
                    self.rsh32(src);
                } else {
                    self.rsh64(src);
                }
            }
            AluOp::Arsh => {
                if alu32 {
                    self.arsh32(src);
                } else {
                    self.arsh64(src);
                }
            }
            AluOp::Div | AluOp::Sdiv | AluOp::Mod | AluOp::Smod => {}
        }
        if alu32 {
            self.zext_32_to_64();
        }
        self.sync();
        fork
    }

    /// `self = -self` (BPF_NEG on a scalar): computed as 0 - self.
    pub fn neg(&mut self, alu32: bool) {
        let old = *self;
        *self = Scalar::constant(0);
        self.sub32(&old);
        self.sub64(&old);
        self.var_off = -old.var_off;
        if alu32 {
            self.zext_32_to_64();
        }
        self.sync();
    }

    /// BPF_END on a scalar (scalar_byte_swap) with `bits` = imm (16, 32 or
    /// 64) on a little-endian host. Returns true when the value may change,
    /// in which case the caller must clear the register's id.
    pub fn byte_swap(&mut self, how: EndianOp, bits: u32) -> bool {
        let need_swap = how != EndianOp::ToLe;
        let truncates = bits == 16 || bits == 32;
        if need_swap {
            self.var_off = match bits {
                16 => self.var_off.bswap16(),
                32 => self.var_off.bswap32(),
                _ => self.var_off.bswap64(),
            };
            self.mark_unbounded();
        }
        if truncates {
            self.coerce_to_size((bits / 8) as u8);
        }
        // No zero-extension: the result width is the swap width.
        self.sync();
        need_swap || truncates
    }

    /// The value of a register linked to `known` by `reg = known + delta`
    /// (sync_linked_regs, 6.18.y: delta = reg.off - known.off as 64-bit
    /// numbers). `zext32` when either register's id carries
    /// BPF_ADD_CONST32 (a link made by an ALU32 add/sub, whose result is
    /// zero-extended); the kernel skips links whose two sides carry
    /// different ADD_CONST widths. `delta == 0` is a plain copy.
    pub fn linked_add(known: &Scalar, delta: i64, zext32: bool) -> Scalar {
        let mut r = *known;
        if delta != 0 {
            let d = Scalar::constant(delta as u64);
            r.add32(&d);
            r.add64(&d);
            r.var_off = r.var_off + d.var_off;
            if zext32 {
                r.zext_32_to_64();
            }
            r.sync();
        }
        r
    }

    fn add32(&mut self, src: &Scalar) {
        let (smin, o1) = self.s32_min.overflowing_add(src.s32_min);
        let (smax, o2) = self.s32_max.overflowing_add(src.s32_max);
        if o1 || o2 {
            self.s32_min = i32::MIN;
            self.s32_max = i32::MAX;
        } else {
            self.s32_min = smin;
            self.s32_max = smax;
        }
        // Unsigned: if all sums wrap or none does, the wrapped ends are
        // still ordered; only a partial wrap loses the range.
        let (umin, min_ov) = self.u32_min.overflowing_add(src.u32_min);
        let (umax, max_ov) = self.u32_max.overflowing_add(src.u32_max);
        if !min_ov && max_ov {
            self.u32_min = 0;
            self.u32_max = u32::MAX;
        } else {
            self.u32_min = umin;
            self.u32_max = umax;
        }
    }

    fn add64(&mut self, src: &Scalar) {
        let (smin, o1) = self.smin.overflowing_add(src.smin);
        let (smax, o2) = self.smax.overflowing_add(src.smax);
        if o1 || o2 {
            self.smin = i64::MIN;
            self.smax = i64::MAX;
        } else {
            self.smin = smin;
            self.smax = smax;
        }
        let (umin, min_ov) = self.umin.overflowing_add(src.umin);
        let (umax, max_ov) = self.umax.overflowing_add(src.umax);
        if !min_ov && max_ov {
            self.umin = 0;
            self.umax = u64::MAX;
        } else {
            self.umin = umin;
            self.umax = umax;
        }
    }

    fn sub32(&mut self, src: &Scalar) {
        let (smin, o1) = self.s32_min.overflowing_sub(src.s32_max);
        let (smax, o2) = self.s32_max.overflowing_sub(src.s32_min);
        if o1 || o2 {
            self.s32_min = i32::MIN;
            self.s32_max = i32::MAX;
        } else {
            self.s32_min = smin;
            self.s32_max = smax;
        }
        let (umin, min_uf) = self.u32_min.overflowing_sub(src.u32_max);
        let (umax, max_uf) = self.u32_max.overflowing_sub(src.u32_min);
        if min_uf && !max_uf {
            self.u32_min = 0;
            self.u32_max = u32::MAX;
        } else {
            self.u32_min = umin;
            self.u32_max = umax;
        }
    }

    fn sub64(&mut self, src: &Scalar) {
        let (smin, o1) = self.smin.overflowing_sub(src.smax);
        let (smax, o2) = self.smax.overflowing_sub(src.smin);
        if o1 || o2 {
            self.smin = i64::MIN;
            self.smax = i64::MAX;
        } else {
            self.smin = smin;
            self.smax = smax;
        }
        let (umin, min_uf) = self.umin.overflowing_sub(src.umax);
        let (umax, max_uf) = self.umax.overflowing_sub(src.umin);
        if min_uf && !max_uf {
            self.umin = 0;
            self.umax = u64::MAX;
        } else {
            self.umin = umin;
            self.umax = umax;
        }
    }

    fn mul32(&mut self, src: &Scalar) {
        match (
            self.u32_max.checked_mul(src.u32_max),
            self.u32_min.checked_mul(src.u32_min),
        ) {
            (Some(hi), Some(lo)) => {
                self.u32_min = lo;
                self.u32_max = hi;
            }
            _ => {
                self.u32_min = 0;
                self.u32_max = u32::MAX;
            }
        }
        let products = [
            self.s32_min.checked_mul(src.s32_min),
            self.s32_min.checked_mul(src.s32_max),
            self.s32_max.checked_mul(src.s32_min),
            self.s32_max.checked_mul(src.s32_max),
        ];
        if let [Some(a), Some(b), Some(c), Some(d)] = products {
            self.s32_min = a.min(b).min(c).min(d);
            self.s32_max = a.max(b).max(c).max(d);
        } else {
            self.s32_min = i32::MIN;
            self.s32_max = i32::MAX;
        }
    }

    fn mul64(&mut self, src: &Scalar) {
        match (
            self.umax.checked_mul(src.umax),
            self.umin.checked_mul(src.umin),
        ) {
            (Some(hi), Some(lo)) => {
                self.umin = lo;
                self.umax = hi;
            }
            _ => {
                self.umin = 0;
                self.umax = u64::MAX;
            }
        }
        let products = [
            self.smin.checked_mul(src.smin),
            self.smin.checked_mul(src.smax),
            self.smax.checked_mul(src.smin),
            self.smax.checked_mul(src.smax),
        ];
        if let [Some(a), Some(b), Some(c), Some(d)] = products {
            self.smin = a.min(b).min(c).min(d);
            self.smax = a.max(b).max(c).max(d);
        } else {
            self.smin = i64::MIN;
            self.smax = i64::MAX;
        }
    }

    /// Signed bounds from unsigned ones when they do not cross the sign bit.
    #[inline]
    fn signed32_from_unsigned(&mut self) {
        if (self.u32_min as i32) <= (self.u32_max as i32) {
            self.s32_min = self.u32_min as i32;
            self.s32_max = self.u32_max as i32;
        } else {
            self.s32_min = i32::MIN;
            self.s32_max = i32::MAX;
        }
    }

    #[inline]
    fn signed64_from_unsigned(&mut self) {
        if (self.umin as i64) <= (self.umax as i64) {
            self.smin = self.umin as i64;
            self.smax = self.umax as i64;
        } else {
            self.smin = i64::MIN;
            self.smax = i64::MAX;
        }
    }

    // The bitwise operations below run after var_off has been updated.

    fn and32(&mut self, src: &Scalar) {
        let t = self.var_off.subreg();
        if src.var_off.subreg_is_const() && self.var_off.subreg_is_const() {
            self.mark_known32(t.value as u32);
            return;
        }
        self.u32_min = t.value as u32;
        self.u32_max = self.u32_max.min(src.u32_max);
        self.signed32_from_unsigned();
    }

    fn and64(&mut self, src: &Scalar) {
        if src.var_off.is_const() && self.var_off.is_const() {
            *self = Scalar::constant(self.var_off.value);
            return;
        }
        self.umin = self.var_off.value;
        self.umax = self.umax.min(src.umax);
        self.signed64_from_unsigned();
        self.update_bounds();
    }

    fn or32(&mut self, src: &Scalar) {
        let t = self.var_off.subreg();
        if src.var_off.subreg_is_const() && self.var_off.subreg_is_const() {
            self.mark_known32(t.value as u32);
            return;
        }
        self.u32_min = self.u32_min.max(src.u32_min);
        self.u32_max = (t.value | t.mask) as u32;
        self.signed32_from_unsigned();
    }

    fn or64(&mut self, src: &Scalar) {
        if src.var_off.is_const() && self.var_off.is_const() {
            *self = Scalar::constant(self.var_off.value);
            return;
        }
        self.umin = self.umin.max(src.umin);
        self.umax = self.var_off.value | self.var_off.mask;
        self.signed64_from_unsigned();
        self.update_bounds();
    }

    fn xor32(&mut self, src: &Scalar) {
        let t = self.var_off.subreg();
        if src.var_off.subreg_is_const() && self.var_off.subreg_is_const() {
            self.mark_known32(t.value as u32);
            return;
        }
        self.u32_min = t.value as u32;
        self.u32_max = (t.value | t.mask) as u32;
        self.signed32_from_unsigned();
    }

    fn xor64(&mut self, src: &Scalar) {
        if src.var_off.is_const() && self.var_off.is_const() {
            *self = Scalar::constant(self.var_off.value);
            return;
        }
        self.umin = self.var_off.value;
        self.umax = self.var_off.value | self.var_off.mask;
        self.signed64_from_unsigned();
        self.update_bounds();
    }

    /// 32-bit bounds of a left shift by [umin, umax] (amounts below 32 or
    /// the bounds are lost).
    fn lsh32_bounds(&mut self, umin: u64, umax: u64) {
        self.s32_min = i32::MIN;
        self.s32_max = i32::MAX;
        if umax > 31 || u64::from(self.u32_max) > 1u64 << (31 - umax as u32) {
            self.u32_min = 0;
            self.u32_max = u32::MAX;
        } else {
            self.u32_min = self.u32_min.wrapping_shl(umin as u32);
            self.u32_max = self.u32_max.wrapping_shl(umax as u32);
        }
    }

    fn lsh32(&mut self, src: &Scalar) {
        let (umin, umax) = (u64::from(src.u32_min), u64::from(src.u32_max));
        let sub = self.var_off.subreg();
        self.lsh32_bounds(umin, umax);
        self.var_off = sub.lshift(umin as u8).subreg();
        self.mark_unbounded64();
        self.update_bounds32();
    }

    fn lsh64(&mut self, src: &Scalar) {
        let (umin, umax) = (src.umin, src.umax);
        // `<< 32` keeps the s32 bounds' sign as the s64 sign (the usual
        // `<<32 s>>32` sign extension); must run before the 32-bit part.
        if umin == 32 && umax == 32 {
            self.smax = i64::from(self.s32_max) << 32;
            self.smin = i64::from(self.s32_min) << 32;
        } else {
            self.smin = i64::MIN;
            self.smax = i64::MAX;
        }
        if self.umax > 1u64.wrapping_shl(63u32.wrapping_sub(umax as u32)) {
            self.umin = 0;
            self.umax = u64::MAX;
        } else {
            self.umin = self.umin.wrapping_shl(umin as u32);
            self.umax = self.umax.wrapping_shl(umax as u32);
        }
        self.lsh32_bounds(umin, umax);
        self.var_off = self.var_off.lshift(umin as u8);
        self.update_bounds();
    }

    fn rsh32(&mut self, src: &Scalar) {
        let sub = self.var_off.subreg();
        let (umin, umax) = (src.u32_min, src.u32_max);
        self.s32_min = i32::MIN;
        self.s32_max = i32::MAX;
        self.var_off = sub.rshift(umin as u8);
        self.u32_min = self.u32_min.wrapping_shr(umax);
        self.u32_max = self.u32_max.wrapping_shr(umin);
        self.mark_unbounded64();
        self.update_bounds32();
    }

    fn rsh64(&mut self, src: &Scalar) {
        let (umin, umax) = (src.umin, src.umax);
        self.smin = i64::MIN;
        self.smax = i64::MAX;
        self.var_off = self.var_off.rshift(umin as u8);
        self.umin = self.umin.wrapping_shr(umax as u32);
        self.umax = self.umax.wrapping_shr(umin as u32);
        self.mark_unbounded32();
        self.update_bounds();
    }

    fn arsh32(&mut self, src: &Scalar) {
        let n = src.u32_min;
        self.s32_min = self.s32_min.wrapping_shr(n);
        self.s32_max = self.s32_max.wrapping_shr(n);
        self.var_off = self.var_off.subreg().arshift(n as u8, 32);
        self.u32_min = 0;
        self.u32_max = u32::MAX;
        self.mark_unbounded64();
        self.update_bounds32();
    }

    fn arsh64(&mut self, src: &Scalar) {
        let n = src.umin;
        self.smin = self.smin.wrapping_shr(n as u32);
        self.smax = self.smax.wrapping_shr(n as u32);
        self.var_off = self.var_off.arshift(n as u8, 64);
        self.umin = 0;
        self.umax = u64::MAX;
        self.mark_unbounded32();
        self.update_bounds();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insn_decoding() {
        assert_eq!(AluOp::from_insn(0x3f, 1), Some(AluOp::Sdiv));
        assert_eq!(AluOp::from_insn(0x9f, 0), Some(AluOp::Mod));
        assert_eq!(AluOp::from_insn(0xb7, 0), None);
        assert_eq!(EndianOp::from_code(0xd7), EndianOp::Bswap);
        assert_eq!(EndianOp::from_code(0xdc), EndianOp::ToBe);
        assert_eq!(EndianOp::from_code(0xd4), EndianOp::ToLe);
    }
}
