//! Locks a program holds: `bpf_spin_lock` (helpers) and
//! `bpf_res_spin_lock` (kfuncs, optionally saving interrupts). Each held
//! lock is a reference of a lock kind in `State::refs`, named by what it
//! lives in (`RefState::lock_ptr`: a map, or the program's allocated
//! objects) and the register id of the value or object; `State::lock`
//! names the innermost one, which alone may be released.

use crate::error::VResult;
use crate::explore::Env;
use crate::graph::ALLOC_LOCK;
use crate::regs::{Reg, RegType};
use crate::scalar::Scalar;
use crate::state::{RefKind, RefState, State};

/// What a lock call does (process_spin_lock's flags).
#[derive(Clone, Copy, Debug)]
pub struct LockOp {
    /// Takes the lock (else releases it).
    pub acquire: bool,
    /// A resilient lock (bpf_res_spin_lock).
    pub res: bool,
    /// The _irqsave / _irqrestore variant.
    pub irq: bool,
}

impl LockOp {
    fn kind(self) -> RefKind {
        match (self.res, self.irq) {
            (true, true) => RefKind::ResLockIrq,
            (true, false) => RefKind::ResLock,
            _ => RefKind::Lock,
        }
    }
}

/// find_lock_state: a held lock of one of `kinds` named (`lock_ptr`, `id`).
pub fn find_lock(st: &State, kinds: &[RefKind], lock_ptr: u32, id: u32) -> bool {
    st.refs
        .iter()
        .any(|r| kinds.contains(&r.kind) && r.id == id && r.lock_ptr == lock_ptr)
}

/// release_lock_state: drops the lock reference (keeping the others'
/// order); the lock held before it becomes the innermost.
fn release_lock(st: &mut State, kind: RefKind, lock_ptr: u32, id: u32) -> bool {
    let mut prev = (0, 0);
    for i in 0..st.refs.len() {
        let r = st.refs[i];
        if r.kind == kind && r.id == id && r.lock_ptr == lock_ptr {
            st.refs.remove(i);
            st.active_locks -= 1;
            st.lock = prev;
            return true;
        }
        if r.kind.is_lock() {
            prev = (r.lock_ptr, r.id);
        }
    }
    false
}

/// The most negative error number a kernel function returns (MAX_ERRNO).
const MAX_ERRNO: i64 = 4095;

impl Env<'_> {
    /// A bpf_res_spin_lock call may fail: before its arguments are checked
    /// the path where it does is queued, resuming after the call without
    /// the lock, its caller-saved registers cleared and R0 a negative
    /// errno (an s32 in [-MAX_ERRNO, -1]).
    pub(crate) fn push_failed_lock(&mut self) -> VResult<()> {
        let idx = self.insn_idx;
        let Ok(st) = self.push_stack(idx + 1, idx) else {
            return self.err("failed to push state for failed lock acquisition");
        };
        let regs = &mut st.frame_mut().regs;
        for r in &mut regs[..=5] {
            *r = Reg::not_init();
        }
        let mut v = Scalar::unknown();
        v.s32_min = -MAX_ERRNO as i32;
        v.s32_max = -1;
        v.smin = -MAX_ERRNO;
        v.smax = -1;
        v.sync();
        regs[0] = Reg {
            v,
            ..Reg::unknown_scalar()
        };
        Ok(())
    }

    /// process_spin_lock: `r` (a map value or an allocated object) must
    /// point exactly at its value's lock of the kind `op` names.
    pub(crate) fn process_spin_lock(&mut self, regno: u8, r: &Reg, op: LockOp) -> VResult<()> {
        let lock_str = if op.res { "bpf_res_spin" } else { "bpf_spin" };
        let field = if op.res {
            "bpf_res_spin_lock"
        } else {
            "bpf_spin_lock"
        };
        if !r.v.is_const() {
            return self.err(format!(
                "R{regno} doesn't have constant offset. {lock_str}_lock has to be at the constant offset"
            ));
        }
        let (lock_ptr, lock_off) = if r.ty == RegType::MapValue {
            let def = self.map_def(r.map);
            let name = crate::map_record::kernel_map_name(def.map_or("", |m| m.name.as_str()));
            if def.is_none_or(|m| m.btf_value_type_id == 0) {
                return self.err(format!(
                    "map '{name}' has to have BTF in order to use {lock_str}_lock"
                ));
            }
            let found = self.map_fields(r.map).iter().find(|f| f.name == field);
            let Some(lock) = found else {
                return self.err(format!("map '{name}' has no valid {lock_str}_lock"));
            };
            (r.map, lock.off)
        } else {
            let rec = self.alloc_record(r.aux)?;
            let Some(lock) = rec.iter().find(|f| f.name == field) else {
                return self.err(format!("local 'kptr' has no valid {lock_str}_lock"));
            };
            (ALLOC_LOCK, lock.off)
        };
        let off = r.v.const_value().wrapping_add(r.off as i64 as u64) as i64;
        if off != lock_off as i64 {
            return self.err(format!(
                "off {off} doesn't point to 'struct {lock_str}_lock' that is at {lock_off}"
            ));
        }
        let kind = op.kind();
        if op.acquire {
            // A second bpf_spin_lock never gets here: the helper call is
            // refused while any lock is held.
            let res_kinds = [RefKind::ResLock, RefKind::ResLockIrq];
            if op.res && find_lock(&self.cur, &res_kinds, lock_ptr, r.id) {
                return self.err("Acquiring the same lock again, AA deadlock detected");
            }
            self.cur.refs.push(RefState {
                kind,
                id: r.id,
                insn_idx: self.insn_idx,
                lock_ptr,
            });
            self.cur.active_locks += 1;
            self.cur.lock = (lock_ptr, r.id);
        } else {
            if self.cur.active_locks == 0 {
                return self.err(format!("{lock_str}_unlock without taking a lock"));
            }
            if !find_lock(&self.cur, &[kind], lock_ptr, r.id) {
                return self.err(format!("{lock_str}_unlock of different lock"));
            }
            if self.cur.lock != (lock_ptr, r.id) {
                return self.err(format!("{lock_str}_unlock cannot be out of order"));
            }
            if !release_lock(&mut self.cur, kind, lock_ptr, r.id) {
                return self.err(format!("{lock_str}_unlock of different lock"));
            }
            self.invalidate_non_owning_refs();
        }
        Ok(())
    }
}
