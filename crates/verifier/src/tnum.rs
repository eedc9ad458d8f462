//! Tracked numbers: which bits of a 64-bit value are known (0 or 1) and which
//! are unknown, with the transfer functions the Linux 6.18 verifier applies
//! to them (kernel/bpf/tnum.c semantics).
//!
//! A `Tnum` stands for the set `{ x : x & !mask == value }`; the invariant
//! `value & mask == 0` holds for every value built by this module.

use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Tnum {
    /// Bits known to be 1 (only where `mask` is 0).
    pub value: u64,
    /// Bits whose value is unknown.
    pub mask: u64,
}

impl Default for Tnum {
    fn default() -> Self {
        Tnum::UNKNOWN
    }
}

/// Position of the highest set bit counting from 1 (0 for 0), like fls64.
#[inline]
fn fls64(x: u64) -> u32 {
    64 - x.leading_zeros()
}

impl Tnum {
    pub const UNKNOWN: Tnum = Tnum {
        value: 0,
        mask: u64::MAX,
    };

    #[inline]
    pub const fn new(value: u64, mask: u64) -> Tnum {
        Tnum { value, mask }
    }

    #[inline]
    pub const fn constant(value: u64) -> Tnum {
        Tnum { value, mask: 0 }
    }

    /// The smallest tnum holding every value of `[min, max]` (unsigned).
    #[inline]
    pub fn range(min: u64, max: u64) -> Tnum {
        let bits = fls64(min ^ max);
        if bits > 63 {
            return Tnum::UNKNOWN;
        }
        let delta = (1u64 << bits) - 1;
        Tnum::new(min & !delta, delta)
    }

    /// Shift amounts are taken modulo 64 like the x86 shift the kernel's C
    /// compiles to; callers only pass amounts below the operand width.
    #[inline]
    pub fn lshift(self, shift: u8) -> Tnum {
        let s = u32::from(shift);
        Tnum::new(self.value.wrapping_shl(s), self.mask.wrapping_shl(s))
    }

    #[inline]
    pub fn rshift(self, shift: u8) -> Tnum {
        let s = u32::from(shift);
        Tnum::new(self.value.wrapping_shr(s), self.mask.wrapping_shr(s))
    }

    /// Arithmetic right shift within a 32- or 64-bit operand. Shifting the
    /// mask arithmetically spreads an unknown sign bit, which keeps the
    /// result sound for both signs.
    #[inline]
    pub fn arshift(self, min_shift: u8, insn_bitness: u8) -> Tnum {
        let s = u32::from(min_shift);
        if insn_bitness == 32 {
            Tnum::new(
                u64::from(((self.value as u32 as i32).wrapping_shr(s)) as u32),
                u64::from(((self.mask as u32 as i32).wrapping_shr(s)) as u32),
            )
        } else {
            Tnum::new(
                ((self.value as i64).wrapping_shr(s)) as u64,
                ((self.mask as i64).wrapping_shr(s)) as u64,
            )
        }
    }

    #[inline]
    pub fn and(self, b: Tnum) -> Tnum {
        let alpha = self.value | self.mask;
        let beta = b.value | b.mask;
        let v = self.value & b.value;
        Tnum::new(v, alpha & beta & !v)
    }

    #[inline]
    pub fn or(self, b: Tnum) -> Tnum {
        let v = self.value | b.value;
        let mu = self.mask | b.mask;
        Tnum::new(v, mu & !v)
    }

    #[inline]
    pub fn xor(self, b: Tnum) -> Tnum {
        let v = self.value ^ b.value;
        let mu = self.mask | b.mask;
        Tnum::new(v & !mu, mu)
    }

    /// True if some value belongs to both tnums.
    #[inline]
    pub fn overlaps(self, b: Tnum) -> bool {
        let known_in_both = !self.mask & !b.mask;
        (self.value & known_in_both) == (b.value & known_in_both)
    }

    /// Values in both `self` and `b`. Where the two disagree on a known bit
    /// (empty intersection) the result has that bit known 1, as the kernel's.
    #[inline]
    pub fn intersect(self, b: Tnum) -> Tnum {
        let v = self.value | b.value;
        let mu = self.mask & b.mask;
        Tnum::new(v & !mu, mu)
    }

    /// A tnum holding every value of `self` and of `b`.
    #[inline]
    pub fn union(self, b: Tnum) -> Tnum {
        let v = self.value & b.value;
        let mu = (self.value ^ b.value) | self.mask | b.mask;
        Tnum::new(v & !mu, mu)
    }

    /// Keeps the low `size` bytes (size 0..=8).
    #[inline]
    pub fn cast(self, size: u8) -> Tnum {
        let m = low_bytes_mask(size);
        Tnum::new(self.value & m, self.mask & m)
    }

    #[inline]
    pub fn is_aligned(self, size: u64) -> bool {
        if size == 0 {
            return true;
        }
        (self.value | self.mask) & (size.wrapping_sub(1)) == 0
    }

    /// True if every value of `b` is a value of `self` (tnum_in(self, b)).
    #[inline]
    pub fn contains(self, b: Tnum) -> bool {
        if b.mask & !self.mask != 0 {
            return false;
        }
        self.value == b.value & !self.mask
    }

    /// True if the concrete `x` is a value of `self`.
    #[inline]
    pub fn contains_value(self, x: u64) -> bool {
        x & !self.mask == self.value
    }

    #[inline]
    pub fn is_const(self) -> bool {
        self.mask == 0
    }

    #[inline]
    pub fn equals_const(self, v: u64) -> bool {
        self.mask == 0 && self.value == v
    }

    #[inline]
    pub fn is_unknown(self) -> bool {
        self.mask == u64::MAX
    }

    /// The low 32 bits (upper bits known zero).
    #[inline]
    pub fn subreg(self) -> Tnum {
        self.cast(4)
    }

    /// The upper 32 bits, with the low 32 known zero.
    #[inline]
    pub fn clear_subreg(self) -> Tnum {
        self.rshift(32).lshift(32)
    }

    /// Upper 32 bits of `self`, low 32 bits of `subreg`.
    #[inline]
    pub fn with_subreg(self, subreg: Tnum) -> Tnum {
        self.clear_subreg().or(subreg.subreg())
    }

    #[inline]
    pub fn const_subreg(self, value: u32) -> Tnum {
        self.with_subreg(Tnum::constant(u64::from(value)))
    }

    #[inline]
    pub fn subreg_is_const(self) -> bool {
        self.subreg().mask == 0
    }

    #[inline]
    pub fn bswap16(self) -> Tnum {
        Tnum::new(
            u64::from((self.value as u16).swap_bytes()),
            u64::from((self.mask as u16).swap_bytes()),
        )
    }

    #[inline]
    pub fn bswap32(self) -> Tnum {
        Tnum::new(
            u64::from((self.value as u32).swap_bytes()),
            u64::from((self.mask as u32).swap_bytes()),
        )
    }

    #[inline]
    pub fn bswap64(self) -> Tnum {
        Tnum::new(self.value.swap_bytes(), self.mask.swap_bytes())
    }

    /// The smallest value of `self` greater than `z`, for
    /// `self.value <= z < max`; `max` (= value | mask) when `z >= max`, and
    /// `self.value` when `z < self.value` (the kernel's tnum_step).
    pub fn step(self, z: u64) -> u64 {
        let tmax = self.value | self.mask;
        if z >= tmax {
            return tmax;
        }
        if z < self.value {
            return self.value;
        }
        // Members are value + s for submasks s of mask; find the least
        // submask above d. A known-zero bit set in d can only be outgrown
        // above it, so every position up to it is filled before counting.
        let d = z - self.value;
        let blocker = fls64(d & !self.mask);
        let below_blocker = if blocker >= 64 {
            u64::MAX
        } else {
            (1u64 << blocker) - 1
        };
        let filled = d | below_blocker | !self.mask;
        self.value | (filled.wrapping_add(1) & self.mask)
    }

    /// 64 characters, most significant bit first: '0', '1' or 'x' (tnum_sbin).
    pub fn sbin(self) -> String {
        (0..64)
            .rev()
            .map(|i| {
                if self.mask >> i & 1 != 0 {
                    'x'
                } else if self.value >> i & 1 != 0 {
                    '1'
                } else {
                    '0'
                }
            })
            .collect()
    }
}

impl std::ops::Add for Tnum {
    type Output = Tnum;

    #[inline]
    fn add(self, b: Tnum) -> Tnum {
        let sm = self.mask.wrapping_add(b.mask);
        let sv = self.value.wrapping_add(b.value);
        // Bits that can differ between the smallest and largest carry chains.
        let chi = sm.wrapping_add(sv) ^ sv;
        let mu = chi | self.mask | b.mask;
        Tnum::new(sv & !mu, mu)
    }
}

impl std::ops::Sub for Tnum {
    type Output = Tnum;

    #[inline]
    fn sub(self, b: Tnum) -> Tnum {
        let dv = self.value.wrapping_sub(b.value);
        let alpha = dv.wrapping_add(self.mask);
        let beta = dv.wrapping_sub(b.mask);
        let mu = (alpha ^ beta) | self.mask | b.mask;
        Tnum::new(dv & !mu, mu)
    }
}

impl std::ops::Neg for Tnum {
    type Output = Tnum;

    #[inline]
    fn neg(self) -> Tnum {
        Tnum::constant(0) - self
    }
}

/// Shift-and-add multiplication (the 6.18 algorithm): for every bit of
/// `self` known to be 1 the shifted `b` is added; for an unknown bit the
/// accumulator becomes the union of "added" and "not added".
impl std::ops::Mul for Tnum {
    type Output = Tnum;

    fn mul(self, b: Tnum) -> Tnum {
        let (mut a, mut b) = (self, b);
        let mut acc = Tnum::constant(0);
        while a.value != 0 || a.mask != 0 {
            if a.value & 1 != 0 {
                acc = acc + b;
            } else if a.mask & 1 != 0 {
                acc = acc.union(acc + b);
            }
            a = a.rshift(1);
            b = b.lshift(1);
        }
        acc
    }
}

/// The mask of the low `size` bytes.
#[inline]
pub(crate) fn low_bytes_mask(size: u8) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (u32::from(size) * 8)) - 1
    }
}

/// The kernel log's rendering of a number printed "unsigned": decimal up to
/// 65535, hex above (the kernel always writes `0x`, even for 0).
pub(crate) fn write_unum(out: &mut impl fmt::Write, n: u64) -> fmt::Result {
    if n <= u64::from(u16::MAX) {
        write!(out, "{n}")
    } else {
        write!(out, "{n:#x}")
    }
}

/// Signed rendering: decimal within i16, hex of the 64-bit pattern otherwise.
pub(crate) fn write_snum(out: &mut impl fmt::Write, n: i64) -> fmt::Result {
    if (i64::from(i16::MIN)..=i64::from(i16::MAX)).contains(&n) {
        write!(out, "{n}")
    } else {
        write!(out, "{:#x}", n as u64)
    }
}

/// As tnum_strn in the log: a constant prints as a number, anything else as
/// `(value; mask)` in hex.
impl fmt::Display for Tnum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mask == 0 {
            return write_unum(f, self.value);
        }
        write!(f, "({:#x}; {:#x})", self.value, self.mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(t: Tnum) -> Vec<u64> {
        // Only for small masks.
        let mut out = Vec::new();
        let mut s: u64 = 0;
        loop {
            out.push(t.value | s);
            if s == t.mask {
                break;
            }
            s = (s.wrapping_sub(t.mask)) & t.mask;
        }
        out
    }

    #[test]
    fn range_covers_interval_with_fewest_unknown_bits() {
        assert_eq!(Tnum::range(0, 255), Tnum::new(0, 0xff));
        assert_eq!(Tnum::range(16, 31), Tnum::new(16, 0xf));
        assert_eq!(Tnum::range(7, 7), Tnum::constant(7));
        assert_eq!(Tnum::range(0, u64::MAX), Tnum::UNKNOWN);
    }

    #[test]
    fn add_propagates_carries_only_where_possible() {
        // x in {0..3} plus 4: bit 2 known 1, low bits unknown.
        assert_eq!(Tnum::new(0, 3) + Tnum::constant(4), Tnum::new(4, 3));
        assert_eq!(Tnum::new(0, 1) + Tnum::constant(1), Tnum::new(0, 3));
    }

    #[test]
    fn mul_uses_union_for_unknown_multiplier_bits() {
        // Measured on the 6.18 host: (0x10; 0x81) * (0x10; 0x43) keeps
        // bit 12 known zero (the pre-6.18 algorithm lost it).
        let r = Tnum::new(0x10, 0x81) * Tnum::new(0x10, 0x43);
        let hull = r.intersect(Tnum::range(256, 0x81 * 0x53 + 0x10 * 0x53));
        assert_eq!(r.mask & 0x1000, 0);
        assert_eq!(hull.mask & 0x1000, 0);
    }

    #[test]
    fn step_finds_next_member() {
        let t = Tnum::new(0b0111_0000, 0b1000_0010);
        assert_eq!(t.step(0b1111_0001), 0b1111_0010);
        assert_eq!(t.step(0), 0b0111_0000);
        assert_eq!(t.step(u64::MAX), 0b1111_0010);
        for t in [
            Tnum::new(0x10, 0xe5),
            Tnum::new(0, 0xf0),
            Tnum::new(5, 0x1a0),
        ] {
            let m = members(t);
            for z in t.value..(t.value | t.mask) {
                let want = *m.iter().filter(|&&x| x > z).min().unwrap();
                assert_eq!(t.step(z), want, "t={t:?} z={z}");
            }
        }
    }

    #[test]
    fn display_matches_kernel_log() {
        assert_eq!(Tnum::new(0, 0xff).to_string(), "(0x0; 0xff)");
        assert_eq!(Tnum::constant(5).to_string(), "5");
        assert_eq!(Tnum::constant(65536).to_string(), "0x10000");
        assert_eq!(Tnum::new(0x10, 0x3).sbin()[58..].to_string(), "0100xx");
    }

    #[test]
    fn subreg_helpers() {
        let t = Tnum::new(0x1_0000_0004, 0xf0);
        assert_eq!(t.subreg(), Tnum::new(4, 0xf0));
        assert_eq!(t.clear_subreg(), Tnum::constant(0x1_0000_0000));
        assert_eq!(t.const_subreg(7), Tnum::constant(0x1_0000_0007));
        assert!(!t.subreg_is_const());
    }
}
