//! Scalars in the kernel's verifier log format (print_reg_state for
//! SCALAR_VALUE and print_scalar_ranges, Linux 6.18).

use super::Scalar;
use crate::tnum::{write_snum, write_unum};
use std::fmt::{self, Write};

/// The register attributes the log shows next to a scalar.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScalarLogInfo {
    /// Printed as a `P` prefix.
    pub precise: bool,
    /// Linked-scalar id; 0 for none.
    pub id: u32,
    /// For an id created by `rX += const` on a linked scalar (the kernel's
    /// BPF_ADD_CONST), the constant, printed right after the id (`id=2-16`).
    pub linked_off: Option<i32>,
}

/// Writes what follows `R1=` for a scalar register: `P` if precise, then a
/// constant as a bare number, otherwise `scalar(...)` with the id and every
/// bound that is not the type's extreme, equal bounds merged with `=`, and
/// `var_off` unless fully unknown.
pub fn write_reg_scalar(out: &mut impl Write, s: &Scalar, info: ScalarLogInfo) -> fmt::Result {
    if info.precise {
        out.write_char('P')?;
    }
    if s.var_off.is_const() {
        return write_snum(out, s.var_off.value as i64);
    }
    out.write_str("scalar(")?;
    let mut sep = "";
    if info.id != 0 {
        write!(out, "id={}", info.id)?;
        sep = ",";
    }
    if let Some(off) = info.linked_off {
        write!(out, "{off:+}")?;
    }
    write_ranges(out, s, &mut sep)?;
    if !s.var_off.is_unknown() {
        write!(
            out,
            "{sep}var_off=({:#x}; {:#x})",
            s.var_off.value, s.var_off.mask
        )?;
    }
    out.write_char(')')
}

impl Scalar {
    /// The log rendering as a String (see [`write_reg_scalar`]).
    pub fn log_string(&self, info: ScalarLogInfo) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = write_reg_scalar(&mut s, self, info);
        s
    }
}

struct Bound {
    name: &'static str,
    val: u64,
    omit: bool,
}

/// print_scalar_ranges: bounds in the order smin, smax, umin, umax, smin32,
/// smax32, umin32, umax32; a bound is followed by every later bound of the
/// same kind (min or max) with the same value and sign, joined by `=`.
fn write_ranges(out: &mut impl Write, s: &Scalar, sep: &mut &'static str) -> fmt::Result {
    // 32-bit signed bounds printed in hex are not sign-extended, so they
    // only merge with bounds of the same pattern.
    let s32 = |v: i32| {
        if (i32::from(i16::MIN)..=i32::from(i16::MAX)).contains(&v) {
            i64::from(v) as u64
        } else {
            u64::from(v as u32)
        }
    };
    let mut b = [
        Bound {
            name: "smin",
            val: s.smin as u64,
            omit: s.smin == i64::MIN,
        },
        Bound {
            name: "smax",
            val: s.smax as u64,
            omit: s.smax == i64::MAX,
        },
        Bound {
            name: "umin",
            val: s.umin,
            omit: s.umin == 0,
        },
        Bound {
            name: "umax",
            val: s.umax,
            omit: s.umax == u64::MAX,
        },
        Bound {
            name: "smin32",
            val: s32(s.s32_min),
            omit: s.s32_min == i32::MIN,
        },
        Bound {
            name: "smax32",
            val: s32(s.s32_max),
            omit: s.s32_max == i32::MAX,
        },
        Bound {
            name: "umin32",
            val: u64::from(s.u32_min),
            omit: s.u32_min == 0,
        },
        Bound {
            name: "umax32",
            val: u64::from(s.u32_max),
            omit: s.u32_max == u32::MAX,
        },
    ];
    let negative = |b: &Bound| b.name.starts_with('s') && (b.val as i64) < 0;
    for i in 0..b.len() {
        if b[i].omit {
            continue;
        }
        write!(out, "{sep}{}=", b[i].name)?;
        *sep = ",";
        let neg1 = negative(&b[i]);
        let mut k = i + 2;
        while k < b.len() {
            if !b[k].omit && b[k].val == b[i].val && negative(&b[k]) == neg1 {
                b[k].omit = true;
                write!(out, "{}=", b[k].name)?;
            }
            k += 2;
        }
        if b[i].name.starts_with('s') {
            write_snum(out, b[i].val as i64)?;
        } else {
            write_unum(out, b[i].val)?;
        }
    }
    Ok(())
}
