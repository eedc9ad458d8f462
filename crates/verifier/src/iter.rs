//! Open-coded iterators (`bpf_iter_<kind>_new` / `_next` / `_destroy`,
//! kfuncs flagged ITER_NEW / ITER_NEXT / ITER_DESTROY): the iterator's state
//! lives on the program's stack in slots of type [`SlotType::Iter`], one
//! slot per 8 bytes of `struct bpf_iter_<kind>`. Any iterator kind works
//! the same way; its kfuncs only need a row in the kfunc table.
//!
//! The kernel keeps the iterator's description in the slot's register
//! state; so does bpfvet, in the slot's `spilled` register:
//! `aux` = BTF id of the iterator struct, `map` = [`ACTIVE`] or
//! [`DRAINED`], `off` = depth (iterations simulated so far),
//! `ref_obj_id` (first slot only) = the reference the iterator holds, and
//! `flags` = RCU / UNTRUSTED for RCU-protected iterators.
//!
//! `_next` forks the path (process_iter_next_call): the current path sees
//! NULL and the iterator DRAINED; a queued path sees an element and the
//! iterator ACTIVE one level deeper, its imprecise scalars widened against
//! the previous iteration so that the loop converges; is_state_visited
//! prunes a path that comes back to `_next` with an active iterator in an
//! equivalent state (checkpoint.rs).

use crate::error::VResult;
use crate::explore::Env;
use crate::kfunc::KfuncMeta;
use crate::prune::IdMap;
use crate::regs::{flag, Reg, RegType};
use crate::state::{RefKind, RefState, Slot, SlotType, State, REG_SIZE};
use bpfvet_object::btf::{Btf, Kind, Param};

pub const ACTIVE: u32 = 1;
pub const DRAINED: u32 = 2;

fn state_str(s: u32) -> &'static str {
    match s {
        ACTIVE => "active",
        DRAINED => "drained",
        _ => "invalid",
    }
}

/// `num` for `struct bpf_iter_num`.
fn kind_name(btf_id: u32) -> String {
    crate::btf_walk::vmlinux()
        .map(|b| b.name_of(btf_id))
        .map(|n| n.strip_prefix("bpf_iter_").unwrap_or(n).to_string())
        .unwrap_or_default()
}

/// The log's ` fp-8=iter_num(ref_id=1,state=active,depth=0)`; None for the
/// iterator's other slots.
pub fn slot_str(slot: &Slot) -> Option<String> {
    let r = &slot.spilled;
    (r.ref_obj_id != 0).then(|| {
        format!(
            "iter_{}(ref_id={},state={},depth={})",
            kind_name(r.aux),
            r.ref_obj_id,
            state_str(r.map),
            r.off
        )
    })
}

/// stacksafe for iterator slots: same kind, state and id; the depth is
/// ignored so that iterations can converge.
pub fn slots_equal(old: &Reg, cur: &Reg, m: &mut IdMap) -> bool {
    old.ty == cur.ty
        && old.flags == cur.flags
        && old.aux == cur.aux
        && old.map == cur.map
        && m.check(old.id, cur.id)
}

/// An active iterator at a different depth means another iteration, not
/// an infinite loop.
pub fn iter_active_depths_differ(old: &State, cur: &State) -> bool {
    for (fo, fc) in old.frames.iter().zip(&cur.frames) {
        for (spi, s) in fo.stack.iter().enumerate() {
            if s.types[0] != SlotType::Iter || s.spilled.map != ACTIVE {
                continue;
            }
            let cur_depth = fc.stack.get(spi).map(|c| c.spilled.off);
            if cur_depth != Some(s.spilled.off) {
                return true;
            }
        }
    }
    false
}

/// The iterator struct's BTF id if parameter `p` points to a
/// `struct bpf_iter_*` (btf_check_iter_arg).
fn iter_arg_type(btf: &Btf, p: &Param) -> Option<(u32, u32)> {
    let (_, t) = btf.skip_mods_and_typedefs(p.type_id)?;
    if t.kind != Kind::Ptr {
        return None;
    }
    let (id, st) = btf.skip_mods_and_typedefs(t.size_or_type)?;
    (st.kind == Kind::Struct && btf.name(st).starts_with("bpf_iter_"))
        .then_some((id, st.size_or_type))
}

impl Env<'_> {
    /// The slot index of the iterator `regno` points at; Ok(None) when the
    /// slots are beyond the allocated stack (stack_slot_obj_get_spi).
    fn iter_get_spi(&self, regno: u8, nr_slots: usize) -> VResult<Option<usize>> {
        let r = self.cur.reg(regno);
        if !r.v.is_const() {
            return self.err("iter has to be at a constant offset");
        }
        let off = r.off as i64 + r.v.const_value() as i64;
        if off % REG_SIZE as i64 != 0 {
            return self.err(format!("cannot pass in iter at an offset={off}"));
        }
        // Truncating division, as the kernel's: offset 0 names fp-8's slot.
        let spi = (-off - 1) / REG_SIZE as i64;
        if spi + 1 < nr_slots as i64 {
            return self.err(format!("cannot pass in iter at an offset={off}"));
        }
        let allocated = self.cur.frames[r.frameno as usize].stack.len();
        Ok((spi < allocated as i64).then_some(spi as usize))
    }

    /// The iterator argument of an iterator kfunc (process_iter_arg).
    pub fn process_iter_arg(
        &mut self,
        btf: &Btf,
        regno: u8,
        param: &Param,
        meta: &mut KfuncMeta,
    ) -> VResult<()> {
        let argno = regno - 1;
        let r = *self.cur.reg(regno);
        if r.ty != RegType::Stack {
            return self.err(format!(
                "arg#{argno} expected pointer to an iterator on stack"
            ));
        }
        let Some((btf_id, size)) = iter_arg_type(btf, param) else {
            return self.err(format!("expected valid iter pointer as arg #{argno}"));
        };
        let nr_slots = (size as usize / REG_SIZE).max(1);
        let frameno = r.frameno as usize;
        let kind = kind_name(btf_id);
        if meta
            .flags
            .contains(crate::helpers::kfuncs::KfuncFlags::ITER_NEW)
        {
            // A misplaced iterator is reported as not uninitialised (the
            // offset's message is only a log line before it).
            let spi = self.iter_get_spi(regno, nr_slots);
            let uninit = spi.as_ref().is_ok_and(|spi| {
                let Some(spi) = *spi else {
                    return true;
                };
                let st = &self.cur.frames[frameno].stack;
                (0..nr_slots).all(|i| st[spi - i].types.iter().all(|t| *t != SlotType::Iter))
            });
            if !uninit {
                return self.err(format!(
                    "expected uninitialized iter_{kind} as arg #{argno}"
                ));
            }
            for i in 0..nr_slots {
                self.check_mem_access(
                    regno,
                    (i * REG_SIZE) as i32,
                    REG_SIZE as u32,
                    crate::check_mem::Access::Write,
                    None,
                    false,
                )?;
            }
            let Some(spi) = self.iter_get_spi(regno, nr_slots)? else {
                return self.err(format!("cannot pass in iter at an offset={}", r.off));
            };
            self.mark_stack_slots_iter(frameno, spi, nr_slots, btf_id, meta);
            return Ok(());
        }
        let valid = self
            .iter_get_spi(regno, nr_slots)
            .ok()
            .flatten()
            .filter(|&spi| {
                let st = &self.cur.frames[frameno].stack;
                (0..nr_slots).all(|i| {
                    let s = &st[spi - i];
                    s.types.iter().all(|t| *t == SlotType::Iter)
                        && s.spilled.aux == btf_id
                        && (s.spilled.ref_obj_id != 0) == (i == 0)
                })
            });
        let Some(spi) = valid else {
            return self.err(format!(
                "expected an initialized iter_{kind} as arg #{argno}"
            ));
        };
        let main = self.cur.frames[frameno].stack[spi].spilled;
        if main.flags & flag::UNTRUSTED != 0 {
            return self.err(format!("expected an RCU CS when using {}", meta.name));
        }
        let lo = -(((spi + 1) * REG_SIZE) as i64);
        let hi = lo + (nr_slots * REG_SIZE) as i64;
        self.note_stack_read(frameno, lo, hi);
        meta.iter = Some((frameno, spi));
        meta.ref_obj_id = main.ref_obj_id;
        if meta
            .flags
            .contains(crate::helpers::kfuncs::KfuncFlags::ITER_DESTROY)
        {
            self.release_reference(main.ref_obj_id)?;
            let st = &mut self.cur.frames[frameno].stack;
            for i in 0..nr_slots {
                st[spi - i] = Slot::default();
            }
            self.note_stack_slots_written(frameno, iter_slots(spi, nr_slots));
        }
        Ok(())
    }

    /// The iterator takes a reference (leaked if never destroyed) and its
    /// slots become STACK_ITER.
    fn mark_stack_slots_iter(
        &mut self,
        frameno: usize,
        spi: usize,
        nr_slots: usize,
        btf_id: u32,
        meta: &KfuncMeta,
    ) {
        let rid = self.new_id();
        self.cur.refs.push(RefState {
            kind: RefKind::Ptr,
            id: rid,
            insn_idx: self.insn_idx,
            lock_ptr: 0,
        });
        let rcu_protected = meta
            .flags
            .contains(crate::helpers::kfuncs::KfuncFlags::RCU_PROTECTED);
        let in_rcu_cs =
            self.cur.active_rcu_lock || self.cur.active_locks > 0 || !self.cur.in_sleepable;
        for i in 0..nr_slots {
            let mut r = Reg::pointer(RegType::Stack);
            if rcu_protected {
                r.flags |= if in_rcu_cs {
                    flag::RCU
                } else {
                    flag::UNTRUSTED
                };
            }
            r.ref_obj_id = if i == 0 { rid } else { 0 };
            r.aux = btf_id;
            r.map = ACTIVE;
            r.off = 0;
            self.cur.frames[frameno].stack[spi - i] = Slot {
                spilled: r,
                types: [SlotType::Iter; REG_SIZE],
            };
        }
        self.note_stack_slots_written(frameno, iter_slots(spi, nr_slots));
    }

    /// Whether the iterator of an iter_next kfunc is RCU-protected (its
    /// results are then RCU pointers rather than trusted ones).
    pub fn iter_slot_is_rcu(&self, meta: &KfuncMeta) -> bool {
        meta.iter
            .is_some_and(|(fr, spi)| self.cur.frames[fr].stack[spi].spilled.flags & flag::RCU != 0)
    }

    /// At an iter_next call site: whether r1 points to an active iterator.
    pub fn iter_arg_active(&self) -> bool {
        let r = self.cur.reg(1);
        if r.ty != RegType::Stack || !r.v.is_const() {
            return false;
        }
        let off = r.off as i64 + r.v.const_value() as i64;
        if off >= 0 {
            return false;
        }
        let spi = ((-off - 1) / REG_SIZE as i64) as usize;
        self.cur
            .frames
            .get(r.frameno as usize)
            .and_then(|f| f.stack.get(spi))
            .is_some_and(|s| s.is_iter() && s.spilled.map == ACTIVE)
    }

    /// The fork at an iterator's next call (process_iter_next_call).
    pub fn process_iter_next_call(&mut self, meta: &KfuncMeta) -> VResult<()> {
        let Some((fr, spi)) = meta.iter else {
            return self.err("verifier internal error: iter_next without an iterator");
        };
        let idx = self.insn_idx;
        let state = self.cur.frames[fr].stack[spi].spilled.map;
        if state != ACTIVE && state != DRAINED {
            return self.err(format!(
                "verifier internal error: unexpected iterator state {state} ({})",
                state_str(state)
            ));
        }
        if state == ACTIVE {
            // The forced checkpoint at this call is the parent; the loop's
            // previous visit of the call is further up the path.
            let parent = self
                .cur
                .parent
                .map(|p| &self.pool.get(p).state)
                .filter(|p| p.insn_idx == idx && p.frames.len() == self.cur.frames.len());
            let Some(parent_depth) = parent.map(|p| p.dfs_depth) else {
                return self.err("bug: bad parent state for iter next call");
            };
            let prev = self.find_prev_entry(idx, parent_depth);
            let id_gen = self.id_gen;
            let mut queued = self.cur.clone();
            let it = &mut queued.frames[fr].stack[spi].spilled;
            it.map = ACTIVE;
            it.off += 1;
            if let Some(p) = prev {
                let old = &self.pool.get(p).state;
                crate::checkpoint::widen_imprecise_scalars(
                    old,
                    &mut queued,
                    &mut self.idmap,
                    id_gen,
                );
            }
            let r0 = &mut queued.frames.last_mut().expect("a frame").regs[0];
            r0.flags &= !flag::MAYBE_NULL;
            let st = self.push_stack(idx + 1, idx)?;
            *st = State {
                parent: st.parent,
                ..queued
            };
        }
        self.cur.frames[fr].stack[spi].spilled.map = DRAINED;
        *self.cur.reg_mut(0) = Reg::known(0);
        Ok(())
    }
}

/// The `nr_slots` slots of an iterator whose upper slot is `spi`, as a slot mask.
fn iter_slots(spi: usize, nr_slots: usize) -> u64 {
    (0..nr_slots).fold(0, |m, i| m | crate::dynptr::slot_bit(spi.wrapping_sub(i)))
}
