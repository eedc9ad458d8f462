//! The variable offset of a pointer under `ptr += scalar` / `ptr -= scalar`
//! when the scalar is not folded into the fixed offset (the numeric part of
//! adjust_ptr_min_max_vals). Pointer arithmetic keeps the older overflow
//! rules: any overflowing end loses the whole range.

use super::Scalar;

impl Scalar {
    /// New variable offset of `ptr + off` (`self` is the pointer's). The
    /// 32-bit bounds are left unbounded: the caller checks the offset's
    /// sanity and then calls [`Scalar::sync`], as the kernel does.
    pub fn ptr_add_var(&self, off: &Scalar) -> Scalar {
        let mut d = Scalar::unknown();
        if let (Some(lo), Some(hi)) = (
            self.smin.checked_add(off.smin),
            self.smax.checked_add(off.smax),
        ) {
            d.smin = lo;
            d.smax = hi;
        }
        if let (Some(lo), Some(hi)) = (
            self.umin.checked_add(off.umin),
            self.umax.checked_add(off.umax),
        ) {
            d.umin = lo;
            d.umax = hi;
        }
        d.var_off = self.var_off + off.var_off;
        d
    }

    /// New variable offset of `ptr - off` (see [`Scalar::ptr_add_var`]).
    pub fn ptr_sub_var(&self, off: &Scalar) -> Scalar {
        let mut d = Scalar::unknown();
        if let (Some(lo), Some(hi)) = (
            self.smin.checked_sub(off.smax),
            self.smax.checked_sub(off.smin),
        ) {
            d.smin = lo;
            d.smax = hi;
        }
        if self.umin >= off.umax {
            d.umin = self.umin - off.umax;
            d.umax = self.umax.wrapping_sub(off.umin);
        }
        d.var_off = self.var_off - off.var_off;
        d
    }

    /// The pointer's variable offset when a constant is folded into its
    /// fixed offset instead: 64-bit part kept, 32-bit bounds re-derived by
    /// the caller's [`Scalar::sync`].
    pub fn ptr_keep_var(&self) -> Scalar {
        let mut d = *self;
        d.mark_unbounded32();
        d
    }
}
