//! Conditional jumps on scalars: predicting the direction from what is
//! known (is_scalar_branch_taken), and narrowing both operands on each
//! outgoing edge (regs_refine_cond_op, reg_set_min_max).

use super::{InvariantViolation, Scalar};
use crate::tnum::Tnum;
use bpfvet_isa::opcode;

/// Conditional jump operations. `NotSet` is the negation of `Set`, which
/// BPF has no opcode for; it only appears as the fall-through condition of
/// a JSET.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum JmpOp {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Sgt,
    Sge,
    Slt,
    Sle,
    Set,
    NotSet,
}

impl JmpOp {
    /// From a JMP/JMP32 opcode; `None` for JA, CALL, EXIT, JCOND and
    /// undefined operations.
    pub fn from_code(code: u8) -> Option<JmpOp> {
        Some(match opcode::op(code) {
            opcode::BPF_JEQ => JmpOp::Eq,
            opcode::BPF_JNE => JmpOp::Ne,
            opcode::BPF_JGT => JmpOp::Gt,
            opcode::BPF_JGE => JmpOp::Ge,
            opcode::BPF_JLT => JmpOp::Lt,
            opcode::BPF_JLE => JmpOp::Le,
            opcode::BPF_JSGT => JmpOp::Sgt,
            opcode::BPF_JSGE => JmpOp::Sge,
            opcode::BPF_JSLT => JmpOp::Slt,
            opcode::BPF_JSLE => JmpOp::Sle,
            opcode::BPF_JSET => JmpOp::Set,
            _ => return None,
        })
    }

    /// The operation with operands swapped: `a op b` == `b op.flip() a`.
    pub fn flip(self) -> JmpOp {
        match self {
            JmpOp::Ge => JmpOp::Le,
            JmpOp::Gt => JmpOp::Lt,
            JmpOp::Le => JmpOp::Ge,
            JmpOp::Lt => JmpOp::Gt,
            JmpOp::Sge => JmpOp::Sle,
            JmpOp::Sgt => JmpOp::Slt,
            JmpOp::Sle => JmpOp::Sge,
            JmpOp::Slt => JmpOp::Sgt,
            other => other,
        }
    }

    /// The condition that holds on the fall-through edge.
    pub fn negate(self) -> JmpOp {
        match self {
            JmpOp::Eq => JmpOp::Ne,
            JmpOp::Ne => JmpOp::Eq,
            JmpOp::Set => JmpOp::NotSet,
            JmpOp::NotSet => JmpOp::Set,
            JmpOp::Ge => JmpOp::Lt,
            JmpOp::Gt => JmpOp::Le,
            JmpOp::Le => JmpOp::Gt,
            JmpOp::Lt => JmpOp::Ge,
            JmpOp::Sge => JmpOp::Slt,
            JmpOp::Sgt => JmpOp::Sle,
            JmpOp::Sle => JmpOp::Sgt,
            JmpOp::Slt => JmpOp::Sge,
        }
    }

    /// The concrete semantics, for tests and constant folding.
    pub fn eval(self, a: u64, b: u64, is_jmp32: bool) -> bool {
        let (a, b) = if is_jmp32 {
            (u64::from(a as u32), u64::from(b as u32))
        } else {
            (a, b)
        };
        let (sa, sb) = if is_jmp32 {
            (i64::from(a as u32 as i32), i64::from(b as u32 as i32))
        } else {
            (a as i64, b as i64)
        };
        match self {
            JmpOp::Eq => a == b,
            JmpOp::Ne => a != b,
            JmpOp::Gt => a > b,
            JmpOp::Ge => a >= b,
            JmpOp::Lt => a < b,
            JmpOp::Le => a <= b,
            JmpOp::Sgt => sa > sb,
            JmpOp::Sge => sa >= sb,
            JmpOp::Slt => sa < sb,
            JmpOp::Sle => sa <= sb,
            JmpOp::Set => a & b != 0,
            JmpOp::NotSet => a & b == 0,
        }
    }
}

/// The 32- or 64-bit view a comparison looks at.
struct View {
    t: Tnum,
    umin: u64,
    umax: u64,
    smin: i64,
    smax: i64,
}

impl View {
    #[inline]
    fn of(r: &Scalar, is_jmp32: bool) -> View {
        if is_jmp32 {
            View {
                t: r.var_off.subreg(),
                umin: u64::from(r.u32_min),
                umax: u64::from(r.u32_max),
                smin: i64::from(r.s32_min),
                smax: i64::from(r.s32_max),
            }
        } else {
            View {
                t: r.var_off,
                umin: r.umin,
                umax: r.umax,
                smin: r.smin,
                smax: r.smax,
            }
        }
    }
}

/// Whether `r1 op r2` is decided by what is known: `Some(true)` the jump is
/// always taken, `Some(false)` never, `None` both are possible
/// (is_scalar_branch_taken). Also right when both are the same register.
pub fn is_branch_taken(r1: &Scalar, r2: &Scalar, op: JmpOp, is_jmp32: bool) -> Option<bool> {
    let (mut r1, mut r2) = (r1, r2);
    let (mut a, mut b) = (View::of(r1, is_jmp32), View::of(r2, is_jmp32));
    match op {
        JmpOp::Eq | JmpOp::Ne => {
            let eq = op == JmpOp::Eq;
            if a.t.is_const() && b.t.is_const() {
                return Some((a.t.value == b.t.value) == eq);
            }
            let disjoint = !a.t.overlaps(b.t)
                || a.umin > b.umax
                || a.umax < b.umin
                || a.smin > b.smax
                || a.smax < b.smin
                || (!is_jmp32
                    && (r1.u32_min > r2.u32_max
                        || r1.u32_max < r2.u32_min
                        || r1.s32_min > r2.s32_max
                        || r1.s32_max < r2.s32_min));
            if disjoint {
                return Some(!eq);
            }
            None
        }
        JmpOp::Set | JmpOp::NotSet => {
            if !r2.is_const_in(is_jmp32) {
                std::mem::swap(&mut r1, &mut r2);
                std::mem::swap(&mut a, &mut b);
            }
            if !r2.is_const_in(is_jmp32) {
                return None;
            }
            let set = op == JmpOp::Set;
            if (!a.t.mask & a.t.value) & b.t.value != 0 {
                return Some(set);
            }
            if (a.t.mask | a.t.value) & b.t.value == 0 {
                return Some(!set);
            }
            None
        }
        JmpOp::Gt => decide(a.umin > b.umax, a.umax <= b.umin),
        JmpOp::Sgt => decide(a.smin > b.smax, a.smax <= b.smin),
        JmpOp::Lt => decide(a.umax < b.umin, a.umin >= b.umax),
        JmpOp::Slt => decide(a.smax < b.smin, a.smin >= b.smax),
        JmpOp::Ge => decide(a.umin >= b.umax, a.umax < b.umin),
        JmpOp::Sge => decide(a.smin >= b.smax, a.smax < b.smin),
        JmpOp::Le => decide(a.umax <= b.umin, a.umin > b.umax),
        JmpOp::Sle => decide(a.smax <= b.smin, a.smin > b.smax),
    }
}

#[inline]
fn decide(always: bool, never: bool) -> Option<bool> {
    if always {
        Some(true)
    } else if never {
        Some(false)
    } else {
        None
    }
}

/// Narrows `regs[i]` and `regs[j]` given that `regs[i] op regs[j]` holds.
/// `i == j` reproduces the kernel comparing a register with itself, where
/// both sides' updates land in the same state.
fn refine(regs: &mut [Scalar], i: usize, j: usize, op: JmpOp, is_jmp32: bool) {
    let (mut r1, mut r2, mut op) = (i, j, op);
    if matches!(op, JmpOp::Ge | JmpOp::Gt | JmpOp::Sge | JmpOp::Sgt) {
        op = op.flip();
        std::mem::swap(&mut r1, &mut r2);
    }
    match op {
        JmpOp::Eq => {
            if is_jmp32 {
                regs[r1].u32_min = regs[r1].u32_min.max(regs[r2].u32_min);
                regs[r1].u32_max = regs[r1].u32_max.min(regs[r2].u32_max);
                regs[r1].s32_min = regs[r1].s32_min.max(regs[r2].s32_min);
                regs[r1].s32_max = regs[r1].s32_max.min(regs[r2].s32_max);
                regs[r2].u32_min = regs[r1].u32_min;
                regs[r2].u32_max = regs[r1].u32_max;
                regs[r2].s32_min = regs[r1].s32_min;
                regs[r2].s32_max = regs[r1].s32_max;
                let t = regs[r1]
                    .var_off
                    .subreg()
                    .intersect(regs[r2].var_off.subreg());
                regs[r1].var_off = regs[r1].var_off.with_subreg(t);
                regs[r2].var_off = regs[r2].var_off.with_subreg(t);
            } else {
                regs[r1].umin = regs[r1].umin.max(regs[r2].umin);
                regs[r1].umax = regs[r1].umax.min(regs[r2].umax);
                regs[r1].smin = regs[r1].smin.max(regs[r2].smin);
                regs[r1].smax = regs[r1].smax.min(regs[r2].smax);
                regs[r2].umin = regs[r1].umin;
                regs[r2].umax = regs[r1].umax;
                regs[r2].smin = regs[r1].smin;
                regs[r2].smax = regs[r1].smax;
                regs[r1].var_off = regs[r1].var_off.intersect(regs[r2].var_off);
                regs[r2].var_off = regs[r1].var_off;
            }
        }
        JmpOp::Ne => {
            if !regs[r2].is_const_in(is_jmp32) {
                std::mem::swap(&mut r1, &mut r2);
            }
            if !regs[r2].is_const_in(is_jmp32) {
                return;
            }
            // Only a constant at an edge of a range removes anything.
            let val = regs[r2].const_value_in(is_jmp32);
            let r = &mut regs[r1];
            if is_jmp32 {
                if r.u32_min == val as u32 {
                    r.u32_min = r.u32_min.wrapping_add(1);
                }
                if r.u32_max == val as u32 {
                    r.u32_max = r.u32_max.wrapping_sub(1);
                }
                if r.s32_min == val as u32 as i32 {
                    r.s32_min = r.s32_min.wrapping_add(1);
                }
                if r.s32_max == val as u32 as i32 {
                    r.s32_max = r.s32_max.wrapping_sub(1);
                }
            } else {
                if r.umin == val {
                    r.umin = r.umin.wrapping_add(1);
                }
                if r.umax == val {
                    r.umax = r.umax.wrapping_sub(1);
                }
                if r.smin == val as i64 {
                    r.smin = r.smin.wrapping_add(1);
                }
                if r.smax == val as i64 {
                    r.smax = r.smax.wrapping_sub(1);
                }
            }
        }
        JmpOp::Set => {
            if !regs[r2].is_const_in(is_jmp32) {
                std::mem::swap(&mut r1, &mut r2);
            }
            if !regs[r2].is_const_in(is_jmp32) {
                return;
            }
            // Only a single tested bit tells which bit is set.
            let val = regs[r2].const_value_in(is_jmp32);
            if !val.is_power_of_two() {
                return;
            }
            let r = &mut regs[r1];
            if is_jmp32 {
                let t = r.var_off.subreg().or(Tnum::constant(val));
                r.var_off = r.var_off.with_subreg(t);
            } else {
                r.var_off = r.var_off.or(Tnum::constant(val));
            }
        }
        JmpOp::NotSet => {
            if !regs[r2].is_const_in(is_jmp32) {
                std::mem::swap(&mut r1, &mut r2);
            }
            if !regs[r2].is_const_in(is_jmp32) {
                return;
            }
            let val = regs[r2].const_value_in(is_jmp32);
            let r = &mut regs[r1];
            // Ranges are dropped first so a dead edge cannot produce
            // contradicting bounds.
            r.mark_unbounded();
            if is_jmp32 {
                let t = r.var_off.subreg().and(Tnum::constant(!val));
                r.var_off = r.var_off.with_subreg(t);
            } else {
                r.var_off = r.var_off.and(Tnum::constant(!val));
            }
        }
        JmpOp::Le => {
            if is_jmp32 {
                regs[r1].u32_max = regs[r1].u32_max.min(regs[r2].u32_max);
                regs[r2].u32_min = regs[r1].u32_min.max(regs[r2].u32_min);
            } else {
                regs[r1].umax = regs[r1].umax.min(regs[r2].umax);
                regs[r2].umin = regs[r1].umin.max(regs[r2].umin);
            }
        }
        JmpOp::Lt => {
            if is_jmp32 {
                regs[r1].u32_max = regs[r1].u32_max.min(regs[r2].u32_max.wrapping_sub(1));
                regs[r2].u32_min = regs[r1].u32_min.wrapping_add(1).max(regs[r2].u32_min);
            } else {
                regs[r1].umax = regs[r1].umax.min(regs[r2].umax.wrapping_sub(1));
                regs[r2].umin = regs[r1].umin.wrapping_add(1).max(regs[r2].umin);
            }
        }
        JmpOp::Sle => {
            if is_jmp32 {
                regs[r1].s32_max = regs[r1].s32_max.min(regs[r2].s32_max);
                regs[r2].s32_min = regs[r1].s32_min.max(regs[r2].s32_min);
            } else {
                regs[r1].smax = regs[r1].smax.min(regs[r2].smax);
                regs[r2].smin = regs[r1].smin.max(regs[r2].smin);
            }
        }
        JmpOp::Slt => {
            if is_jmp32 {
                regs[r1].s32_max = regs[r1].s32_max.min(regs[r2].s32_max.wrapping_sub(1));
                regs[r2].s32_min = regs[r1].s32_min.wrapping_add(1).max(regs[r2].s32_min);
            } else {
                regs[r1].smax = regs[r1].smax.min(regs[r2].smax.wrapping_sub(1));
                regs[r2].smin = regs[r1].smin.wrapping_add(1).max(regs[r2].smin);
            }
        }
        JmpOp::Ge | JmpOp::Gt | JmpOp::Sge | JmpOp::Sgt => {}
    }
}

/// regs_refine_cond_op for two distinct registers: narrows both given that
/// `r1 op r2` holds. Bounds are not synced (see [`set_min_max`]).
pub fn refine_cond_op(r1: &mut Scalar, r2: &mut Scalar, op: JmpOp, is_jmp32: bool) {
    let mut regs = [*r1, *r2];
    refine(&mut regs, 0, 1, op, is_jmp32);
    *r1 = regs[0];
    *r2 = regs[1];
}

/// regs_refine_cond_op when a register is compared with itself.
pub fn refine_cond_op_same(r: &mut Scalar, op: JmpOp, is_jmp32: bool) {
    let mut regs = [*r];
    refine(&mut regs, 0, 0, op, is_jmp32);
    *r = regs[0];
}

/// Both operands on both edges of `dst op src` (the scalar part of
/// reg_set_min_max), each refined and synced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refined {
    /// `[dst, src]` on the jump-taken edge.
    pub taken: [Scalar; 2],
    /// `[dst, src]` on the fall-through edge.
    pub fall: [Scalar; 2],
    /// dst and src are one register: `[0]` and `[1]` of each edge are the
    /// same state.
    pub same_reg: bool,
}

impl Refined {
    /// The kernel's sanity check of the four results, in its order
    /// (true_reg1, true_reg2, false_reg1, false_reg2): a violating scalar's
    /// bounds are forgotten and the violation is returned with its label
    /// for the log. For one register compared with itself the second check
    /// sees the first one's result, as in the kernel.
    pub fn sanitize(&mut self) -> [Option<(&'static str, InvariantViolation)>; 4] {
        let mut out = [None; 4];
        let labels = ["true_reg1", "true_reg2", "false_reg1", "false_reg2"];
        for (e, edge) in [&mut self.taken, &mut self.fall].into_iter().enumerate() {
            for k in 0..2 {
                if self.same_reg && k == 1 {
                    edge[1] = edge[0];
                }
                if let Err(v) = edge[k].sanitize() {
                    out[e * 2 + k] = Some((labels[e * 2 + k], v));
                }
            }
            if self.same_reg {
                edge[0] = edge[1];
            }
        }
        out
    }
}

/// reg_set_min_max for two scalar registers (or a register and the
/// constant of a BPF_K jump). Run [`Refined::sanitize`] afterwards as the
/// kernel does.
pub fn set_min_max(dst: &Scalar, src: &Scalar, op: JmpOp, is_jmp32: bool) -> Refined {
    let mut fall = [*dst, *src];
    refine(&mut fall, 0, 1, op.negate(), is_jmp32);
    fall[0].sync();
    fall[1].sync();
    let mut taken = [*dst, *src];
    refine(&mut taken, 0, 1, op, is_jmp32);
    taken[0].sync();
    taken[1].sync();
    Refined {
        taken,
        fall,
        same_reg: false,
    }
}

/// reg_set_min_max when both operands are the same register (6.18 refines
/// it as two aliases of one state, and syncs that state once per alias).
/// Both entries of each edge hold the register.
pub fn set_min_max_same(r: &Scalar, op: JmpOp, is_jmp32: bool) -> Refined {
    let mut fall = [*r];
    refine(&mut fall, 0, 0, op.negate(), is_jmp32);
    fall[0].sync();
    fall[0].sync();
    let mut taken = [*r];
    refine(&mut taken, 0, 0, op, is_jmp32);
    taken[0].sync();
    taken[0].sync();
    Refined {
        taken: [taken[0]; 2],
        fall: [fall[0]; 2],
        same_reg: true,
    }
}
