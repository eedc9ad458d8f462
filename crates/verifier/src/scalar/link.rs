//! Linked scalars (registers sharing an id): when the link survives an
//! instruction, and what a branch's refinement of one member tells the
//! others (the 6.18.y rules of adjust_reg_min_max_vals,
//! assign_scalar_id_before_mov and sync_linked_regs, including the
//! BPF_ADD_CONST32/64 split and negative offsets).
//!
//! Which registers take part is the caller's: 6.18 links only registers
//! live before the jump instruction.

use super::{AluOp, Scalar};

/// How a register relates to the others with its base id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum LinkKind {
    /// Same value as the others (a plain copy).
    #[default]
    Copy,
    /// Value = base + `off`, made by a 64-bit add/sub (BPF_ADD_CONST64).
    Add64,
    /// Low 32 bits = base + `off`, zero-extended; made by a 32-bit add/sub
    /// (BPF_ADD_CONST32).
    Add32,
}

/// Marks in a scalar's id (the kernel's encoding): linked with a constant
/// delta by a 64-bit or a 32-bit add/sub. The delta is the register's off.
pub const ADD_CONST64: u32 = 1 << 31;
pub const ADD_CONST32: u32 = 1 << 30;
pub const ADD_CONST: u32 = ADD_CONST64 | ADD_CONST32;

/// A register's link: base id (0 = none), kind and constant offset.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Link {
    pub id: u32,
    pub kind: LinkKind,
    pub off: i32,
}

impl Link {
    pub const NONE: Link = Link {
        id: 0,
        kind: LinkKind::Copy,
        off: 0,
    };

    /// The link a scalar register's `id` and `off` encode.
    pub fn from_reg(id: u32, off: i32) -> Link {
        let kind = if id & ADD_CONST64 != 0 {
            LinkKind::Add64
        } else if id & ADD_CONST32 != 0 {
            LinkKind::Add32
        } else {
            LinkKind::Copy
        };
        Link {
            id: id & !ADD_CONST,
            kind,
            off: if kind == LinkKind::Copy { 0 } else { off },
        }
    }

    /// The register `id` encoding this link (base id plus its mark).
    pub fn reg_id(self) -> u32 {
        match self.kind {
            LinkKind::Copy => self.id,
            LinkKind::Add64 => self.id | ADD_CONST64,
            LinkKind::Add32 => self.id | ADD_CONST32,
        }
    }

    /// The offset printed after the id in the log (`id=2+14`), if any.
    pub fn log_off(&self) -> Option<i32> {
        (self.kind != LinkKind::Copy).then_some(self.off)
    }

    /// assign_scalar_id_before_mov: the link a register must have before
    /// it is copied. An offset link is dropped (copies of it start a new
    /// link); an unlinked non-constant gets a fresh id from `new_id`.
    pub fn before_mov(self, value: &Scalar, new_id: impl FnOnce() -> u32) -> Link {
        let l = if self.kind != LinkKind::Copy {
            Link::NONE
        } else {
            self
        };
        if l.id == 0 && !value.is_const() {
            Link {
                id: new_id(),
                ..Link::NONE
            }
        } else {
            l
        }
    }

    /// The destination's link after `dst op= src` on scalars: kept, with a
    /// constant offset, for `+=`/`-=` a constant on a linked register that
    /// has no offset yet (64-bit: the constant must fit in s32; 32-bit: the
    /// destination must have been below 2^32 before); dropped otherwise.
    /// `dst_umax_before` is the destination's umax before the operation.
    pub fn after_alu(
        self,
        op: AluOp,
        src: &Scalar,
        src_is_dst: bool,
        alu32: bool,
        dst_umax_before: u64,
    ) -> Link {
        if !matches!(op, AluOp::Add | AluOp::Sub)
            || self.id == 0
            || src_is_dst
            || !src.is_const_in(alu32)
            || self.kind != LinkKind::Copy
        {
            return Link::NONE;
        }
        let val = src.const_value_in(alu32);
        if !alu32 && i32::try_from(val as i64).is_err() {
            return Link::NONE;
        }
        if alu32 && dst_umax_before > u64::from(u32::MAX) {
            return Link::NONE;
        }
        let mut off = val as i32;
        if op == AluOp::Sub {
            match off.checked_neg() {
                Some(n) => off = n,
                None => return Link::NONE,
            }
        }
        Link {
            id: self.id,
            kind: if alu32 {
                LinkKind::Add32
            } else {
                LinkKind::Add64
            },
            off,
        }
    }
}

/// sync_linked_regs for one register linked to `known` (same base id,
/// not the same register): its new value and link, or `None` when the
/// kernel leaves it alone (links of different ALU widths).
pub fn sync_linked(known: &Scalar, known_link: Link, reg_link: Link) -> Option<(Scalar, Link)> {
    use LinkKind::{Add32, Add64, Copy};
    let (k, r) = (known_link.kind, reg_link.kind);
    if matches!((k, r), (Add32, Add64) | (Add64, Add32)) {
        return None;
    }
    if (k == Copy && r == Copy) || reg_link.off == known_link.off {
        return Some((*known, known_link));
    }
    let delta = i64::from(reg_link.off) - i64::from(known_link.off);
    let zext = k == Add32 || r == Add32;
    Some((Scalar::linked_add(known, delta, zext), reg_link))
}
