//! Comparisons of an explored (old) scalar with the current one, the
//! building blocks of regsafe for scalars.

use super::Scalar;

impl Scalar {
    /// Every bound of `cur` lies within the same bound of `self` (the
    /// kernel's range_within(old = self, cur)).
    #[inline(always)]
    pub fn range_within(&self, cur: &Scalar) -> bool {
        self.umin <= cur.umin
            && self.umax >= cur.umax
            && self.smin <= cur.smin
            && self.smax >= cur.smax
            && self.u32_min <= cur.u32_min
            && self.u32_max >= cur.u32_max
            && self.s32_min <= cur.s32_min
            && self.s32_max >= cur.s32_max
    }

    /// Every value `cur` may hold, `self` allows: ranges within and tnum
    /// contained. This is what regsafe requires of a precise old scalar
    /// (after its id checks).
    #[inline(always)]
    pub fn is_superset_of(&self, cur: &Scalar) -> bool {
        self.range_within(cur) && self.var_off.contains(cur.var_off)
    }

    /// `self` ⊆ `old`: the current state `self` is covered by `old`.
    #[inline]
    pub fn is_subset_of(&self, old: &Scalar) -> bool {
        old.is_superset_of(self)
    }

    /// Same numeric state in every field (the scalar part of regs_exact and
    /// of the explore_alu_limits memcmp).
    #[inline]
    pub fn exact_eq(&self, other: &Scalar) -> bool {
        self == other
    }
}
