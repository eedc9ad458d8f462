//! Region, sleepable and stack-object blocks (feature `regions`): a third
//! of the programs become sleepable syscall programs, so RCU, preemption
//! and irq regions meet helpers and kfuncs that may sleep; RCU-protected
//! and css iterators in programs that may or may not sleep; local dynptrs
//! made from every kind of memory and handed to ring buffer helpers;
//! timer, workqueue and resilient-lock arguments on a map value that only
//! holds a `bpf_spin_lock`; format strings of `__str` arguments from the
//! stack or a read-only map; resilient locks taken twice or restored with
//! the other kind's irq flags, timers initialised with another map (the
//! res-lock and timer maps, `btf_objects::RES_LOCK_MAP`/`TIMER_MAP`).

use super::btf_objects::{RES_LOCK_MAP, TIMER_MAP};
use super::kfunc_blocks::kfunc_id;
use super::{Gen, Kind, LOCK_MAP, RINGBUF_MAP, RODATA_MAP, WQ_MAP};
use bpfvet_isa::opcode::{BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE};
use bpfvet_isa::Insn;

/// Helpers that may sleep (sleepable programs only).
const COPY_FROM_USER: i32 = 148;
const COPY_FROM_USER_TASK: i32 = 191;
/// Other helper ids the blocks call.
const TIMER_INIT: i32 = 169;
const TIMER_CANCEL: i32 = 172;
const DYNPTR_FROM_MEM: i32 = 197;
const RINGBUF_RESERVE_DYNPTR: i32 = 198;
const RINGBUF_SUBMIT_DYNPTR: i32 = 199;
const RINGBUF_DISCARD_DYNPTR: i32 = 200;
const DYNPTR_READ: i32 = 201;
const DYNPTR_WRITE: i32 = 202;

/// Region kfuncs: (open, close); the irq pair takes a flag slot in r1.
const REGIONS: [(&str, &str); 3] = [
    ("bpf_rcu_read_lock", "bpf_rcu_read_unlock"),
    ("bpf_preempt_disable", "bpf_preempt_enable"),
    ("bpf_local_irq_save", "bpf_local_irq_restore"),
];

/// Whether a program of the `regions` feature becomes a sleepable syscall
/// program (decided before its blocks, which then know it).
pub fn sleepable_start(rng: &mut super::Rng) -> bool {
    rng.chance(35)
}

impl Gen {
    fn region_kfunc(&mut self, name: &str, flag_slot: Option<i32>) -> bool {
        if let Some(slot) = flag_slot {
            self.emit(Insn::new(0xbf, 1, 10, 0, 0));
            self.emit(Insn::new(0x07, 1, 0, 0, slot));
        }
        self.kfunc(name)
    }

    pub(super) fn region_feature_block(&mut self) {
        let ok = match self.rng.below(13) {
            0..=3 => self.sleep_in_region(),
            4 => self.rcu_protected_iter(),
            5..=6 => self.local_dynptr(),
            7 => self.lock_map_fields(),
            8 => self.str_format_arg(),
            9..=10 => self.res_lock_block(),
            11 => self.timer_block(),
            _ => self.css_task_iter(),
        };
        if !ok {
            self.alu();
        }
    }

    /// A region opened, maybe blocks, a call that may sleep (helper or
    /// kfunc), the region closed (or, as a mistake, left open).
    fn sleep_in_region(&mut self) -> bool {
        let k = self.rng.below(3) as usize;
        let slot = -(8 * (1 + self.rng.below(4) as i32));
        let flag = (k == 2).then_some(slot);
        let inside = self.rng.chance(85);
        if inside && !self.region_kfunc(REGIONS[k].0, flag) {
            return false;
        }
        if self.rng.chance(30) {
            self.depth += 1;
            self.block();
            self.depth -= 1;
        }
        // The destination buffer below the flag slot.
        let dst = -64 - 8 * self.rng.below(4) as i32;
        let len = self.rng.pick(&[8, 16, 0]);
        self.emit(Insn::new(0xbf, 1, 10, 0, 0));
        self.emit(Insn::new(0x07, 1, 0, 0, dst));
        self.emit(Insn::new(0xb7, 2, 0, 0, len));
        let user = self.scalar();
        self.emit(Insn::new(0xbf, 3, user, 0, 0));
        match self.rng.below(4) {
            0 => {
                self.emit(Insn::new(0x85, 0, 0, 0, COPY_FROM_USER));
                self.clobber();
            }
            1 => {
                // bpf_copy_from_user_task(dst, len, ptr, task, flags): a
                // task from bpf_get_current_task_btf.
                self.emit(Insn::new(0xbf, 6, 1, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, 158));
                self.emit(Insn::new(0xbf, 4, 0, 0, 0));
                self.emit(Insn::new(0xbf, 1, 6, 0, 0));
                self.set(6, Kind::Fp);
                self.emit(Insn::new(0xb7, 2, 0, 0, len));
                self.emit(Insn::new(0xbf, 3, user, 0, 0));
                self.emit(Insn::new(0xb7, 5, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, COPY_FROM_USER_TASK));
                self.clobber();
            }
            _ => {
                if self.rng.chance(self.mistakes * 4) {
                    // A task pointer for the `void *` destination.
                    self.emit(Insn::new(0x85, 0, 0, 0, 158));
                    self.emit(Insn::new(0xbf, 1, 0, 0, 0));
                    self.emit(Insn::new(0xb7, 2, 0, 0, len));
                    self.emit(Insn::new(0xbf, 3, user, 0, 0));
                }
                self.emit(Insn::new(0xb7, 4, 0, 0, 0));
                if !self.kfunc("bpf_copy_from_user_str") {
                    return false;
                }
            }
        }
        if inside && !self.rng.chance(self.mistakes * 2) {
            self.region_kfunc(REGIONS[k].1, flag);
        }
        true
    }

    /// bpf_iter_task_new (RCU-protected) with or without bpf_rcu_read_lock
    /// around it, then destroyed.
    fn rcu_protected_iter(&mut self) -> bool {
        let slot = -(8 * (3 + self.rng.below(4) as i32));
        let rcu = self.rng.chance(40);
        if rcu && !self.kfunc("bpf_rcu_read_lock") {
            return false;
        }
        self.emit(Insn::new(0xbf, 1, 10, 0, 0));
        self.emit(Insn::new(0x07, 1, 0, 0, slot));
        self.emit(Insn::new(0xb7, 2, 0, 0, 0));
        self.emit(Insn::new(0xb7, 3, 0, 0, 0));
        if !self.kfunc("bpf_iter_task_new") {
            return false;
        }
        self.emit(Insn::new(0xbf, 1, 10, 0, 0));
        self.emit(Insn::new(0x07, 1, 0, 0, slot));
        self.kfunc("bpf_iter_task_destroy");
        if rcu && !self.rng.chance(self.mistakes * 2) {
            self.kfunc("bpf_rcu_read_unlock");
        }
        true
    }

    /// bpf_iter_css_task_new: allowed in sleepable programs only (and LSM
    /// and iterators); its css argument from ctx, a scalar or NULL.
    fn css_task_iter(&mut self) -> bool {
        let slot = -(8 * (2 + self.rng.below(4) as i32));
        self.emit(Insn::new(0xbf, 1, 10, 0, 0));
        self.emit(Insn::new(0x07, 1, 0, 0, slot));
        if self.rng.chance(50) {
            self.emit(Insn::new(0xb7, 2, 0, 0, 0));
        } else {
            self.load_kind_into(2);
        }
        let flags = self.rng.pick(&[0, 1, 2]);
        self.emit(Insn::new(0xb7, 3, 0, 0, flags));
        if !self.kfunc("bpf_iter_css_task_new") {
            return false;
        }
        self.emit(Insn::new(0xbf, 1, 10, 0, 0));
        self.emit(Insn::new(0x07, 1, 0, 0, slot));
        self.kfunc("bpf_iter_css_task_destroy");
        true
    }

    /// `r = &map value + off` by direct address (never NULL); only maps of
    /// one entry have one.
    fn map_value_into(&mut self, r: u8, map: i32, off: i32) {
        self.emit(Insn::new(0x18, r, BPF_PSEUDO_MAP_IDX_VALUE, 0, map));
        self.emit(Insn::new(0, 0, 0, 0, off));
    }

    /// `r9 = bpf_map_lookup_elem(&map, &key 0)`, then `if r9 == 0 goto` the
    /// end (index of that jump, for [`Gen::skip_to_here`]).
    fn lookup_into_r9(&mut self, map: i32) -> usize {
        self.emit(Insn::new(0x62, 10, 0, -8, 0));
        self.stack.push((-8, 4, Kind::Scalar));
        self.emit(Insn::new(0xbf, 2, 10, 0, 0));
        self.emit(Insn::new(0x07, 2, 0, 0, -8));
        self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, map));
        self.emit(Insn::new(0, 0, 0, 0, 0));
        self.emit(Insn::new(0x85, 0, 0, 0, 1));
        self.clobber();
        self.emit(Insn::new(0xbf, 9, 0, 0, 0));
        self.set(9, Kind::Uninit);
        let skip = self.insns.len();
        self.emit(Insn::new(0x15, 9, 0, 0, 0));
        skip
    }

    fn skip_to_here(&mut self, jump: usize) {
        self.insns[jump].off = (self.insns.len() - jump - 1) as i16;
    }

    /// `r = r9 + off`.
    fn value_arg(&mut self, r: u8, off: i32) {
        self.emit(Insn::new(0xbf, r, 9, 0, 0));
        if off != 0 {
            self.emit(Insn::new(0x07, r, 0, 0, off));
        }
    }

    /// A dynptr at fp-16 (or a slot nearby): bpf_dynptr_from_mem over a map
    /// value, the stack, ctx or any register, or bpf_ringbuf_reserve_dynptr;
    /// then read, written, submitted or discarded as a ring buffer record
    /// (a local one is not), maybe never released.
    fn local_dynptr(&mut self) -> bool {
        let slot = self.rng.pick(&[-16, -16, -32, -24, -8]);
        let ringbuf = self.rng.chance(35);
        let from_value = !ringbuf && self.rng.chance(50);
        let skip = from_value.then(|| self.lookup_into_r9(super::ARRAY_MAP));
        if ringbuf {
            self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, RINGBUF_MAP));
            self.emit(Insn::new(0, 0, 0, 0, 0));
            let size = self.rng.pick(&[8, 16, 64]);
            self.emit(Insn::new(0xb7, 2, 0, 0, size));
            self.emit(Insn::new(0xb7, 3, 0, 0, 0));
            self.emit(Insn::new(0xbf, 4, 10, 0, 0));
            self.emit(Insn::new(0x07, 4, 0, 0, slot));
            self.emit(Insn::new(0x85, 0, 0, 0, RINGBUF_RESERVE_DYNPTR));
        } else {
            match self.rng.below(3) {
                _ if from_value => self.value_arg(1, 0),
                0 => {
                    self.emit(Insn::new(0xbf, 1, 10, 0, 0));
                    self.emit(Insn::new(0x07, 1, 0, 0, -64));
                }
                _ => self.load_kind_into(1),
            }
            let size = self.rng.pick(&[8, 16, 48, 0]);
            let flags = self.rng.pick(&[0, 0, 1]);
            self.emit(Insn::new(0xb7, 2, 0, 0, size));
            self.emit(Insn::new(0xb7, 3, 0, 0, flags));
            self.emit(Insn::new(0xbf, 4, 10, 0, 0));
            self.emit(Insn::new(0x07, 4, 0, 0, slot));
            self.emit(Insn::new(0x85, 0, 0, 0, DYNPTR_FROM_MEM));
        }
        self.clobber();
        let ptr_to = |g: &mut Gen, r: u8| {
            g.emit(Insn::new(0xbf, r, 10, 0, 0));
            g.emit(Insn::new(0x07, r, 0, 0, slot));
        };
        if self.rng.chance(50) {
            // bpf_dynptr_read(dst, len, src, off, flags) or
            // bpf_dynptr_write(dst, off, src, len, flags).
            if self.rng.chance(50) {
                self.emit(Insn::new(0xbf, 1, 10, 0, 0));
                self.emit(Insn::new(0x07, 1, 0, 0, -64));
                self.emit(Insn::new(0xb7, 2, 0, 0, 8));
                ptr_to(self, 3);
                self.emit(Insn::new(0xb7, 4, 0, 0, 0));
                self.emit(Insn::new(0xb7, 5, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, DYNPTR_READ));
            } else {
                ptr_to(self, 1);
                self.emit(Insn::new(0xb7, 2, 0, 0, 0));
                self.stack_buf_into(3, -72, 1);
                self.emit(Insn::new(0xb7, 4, 0, 0, 8));
                self.emit(Insn::new(0xb7, 5, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, DYNPTR_WRITE));
            }
            self.clobber();
        }
        // A ring buffer record must be released; a local dynptr may not be.
        if ringbuf != self.rng.chance(20 + self.mistakes * 5) {
            ptr_to(self, 1);
            self.emit(Insn::new(0xb7, 2, 0, 0, 0));
            let release = self
                .rng
                .pick(&[RINGBUF_SUBMIT_DYNPTR, RINGBUF_DISCARD_DYNPTR]);
            self.emit(Insn::new(0x85, 0, 0, 0, release));
            self.clobber();
        }
        if let Some(jump) = skip {
            self.skip_to_here(jump);
        }
        true
    }

    /// The lock map's value holds a bpf_spin_lock only: bpf_timer_init,
    /// bpf_wq_init or bpf_res_spin_lock on it, or (as it should be)
    /// bpf_wq_init on the workqueue map's value.
    fn lock_map_fields(&mut self) -> bool {
        let off = self.rng.pick(&[0, 0, 8]);
        let map = if self.rng.chance(25) {
            WQ_MAP
        } else {
            LOCK_MAP
        };
        let skip = self.lookup_into_r9(map);
        let ok = match self.rng.below(3) {
            0 => {
                self.value_arg(1, off);
                self.emit(Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, map));
                self.emit(Insn::new(0, 0, 0, 0, 0));
                self.emit(Insn::new(0xb7, 3, 0, 0, 1));
                self.emit(Insn::new(0x85, 0, 0, 0, TIMER_INIT));
                self.clobber();
                true
            }
            1 => {
                self.value_arg(1, off);
                self.emit(Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, map));
                self.emit(Insn::new(0, 0, 0, 0, 0));
                self.emit(Insn::new(0xb7, 3, 0, 0, 0));
                self.kfunc("bpf_wq_init")
            }
            _ => {
                // Neither value has a resilient lock: this fails at the
                // lock, whose failure edge (r0 != 0) skips the unlock.
                self.value_arg(1, off);
                let ok = self.kfunc("bpf_res_spin_lock");
                let failed = self.insns.len();
                self.emit(Insn::new(0x55, 0, 0, 0, 0));
                self.value_arg(1, off);
                let ok = ok && self.kfunc("bpf_res_spin_unlock");
                self.skip_to_here(failed);
                ok
            }
        };
        self.skip_to_here(skip);
        ok
    }

    /// bpf_stream_vprintk_impl(stream, fmt__str, args, len, aux): the
    /// format from the read-only map (a constant string) or the stack.
    fn str_format_arg(&mut self) -> bool {
        if kfunc_id("bpf_stream_vprintk_impl").is_none() {
            return false;
        }
        self.emit(Insn::new(0xb7, 1, 0, 0, 1));
        if self.rng.chance(50) {
            self.map_value_into(2, RODATA_MAP, 0);
        } else {
            self.stack_buf_into(2, -8, 1);
        }
        self.stack_buf_into(3, -16, 1);
        self.emit(Insn::new(0xb7, 4, 0, 0, 8));
        self.emit(Insn::new(0xb7, 5, 0, 0, 0));
        self.kfunc("bpf_stream_vprintk_impl")
    }

    /// A resilient lock of the res-lock map: taken (its failure edge,
    /// r0 != 0, skips the rest), maybe taken again (AA), released; or the
    /// irq-saving pair, whose flags may be restored by the native kfunc, or
    /// natively saved flags restored by the lock's.
    fn res_lock_block(&mut self) -> bool {
        let skip = self.lookup_into_r9(RES_LOCK_MAP);
        let irq = self.rng.chance(40);
        let (flag, native) = (-16, -24);
        let lock = |g: &mut Gen| -> bool {
            g.value_arg(1, 0);
            if irq {
                g.emit(Insn::new(0xbf, 2, 10, 0, 0));
                g.emit(Insn::new(0x07, 2, 0, 0, flag));
                g.kfunc("bpf_res_spin_lock_irqsave")
            } else {
                g.kfunc("bpf_res_spin_lock")
            }
        };
        let native_first = irq && self.rng.chance(50);
        if native_first {
            self.emit(Insn::new(0xbf, 1, 10, 0, 0));
            self.emit(Insn::new(0x07, 1, 0, 0, native));
            if !self.kfunc("bpf_local_irq_save") {
                return false;
            }
        }
        if !lock(self) {
            return false;
        }
        let failed = self.insns.len();
        self.emit(Insn::new(0x55, 0, 0, 0, 0));
        if self.rng.chance(10 + self.mistakes * 5) {
            // The same lock again (AA: the kernel stops there).
            lock(self);
        }
        // No blocks inside: they may take r9, and calls are not allowed
        // while the lock is held.
        if irq {
            // Restored by the lock's kfunc, with its own or the natively
            // saved flags, or by the native kfunc.
            let slot = if native_first && self.rng.chance(60) {
                native
            } else {
                flag
            };
            if self.rng.chance(5 + self.mistakes * 3) {
                // Not a call allowed under the lock.
                self.emit(Insn::new(0xbf, 1, 10, 0, 0));
                self.emit(Insn::new(0x07, 1, 0, 0, slot));
                self.kfunc("bpf_local_irq_restore");
            }
            self.value_arg(1, 0);
            self.emit(Insn::new(0xbf, 2, 10, 0, 0));
            self.emit(Insn::new(0x07, 2, 0, 0, slot));
            self.kfunc("bpf_res_spin_unlock_irqrestore");
        } else {
            self.value_arg(1, 0);
            self.kfunc("bpf_res_spin_unlock");
        }
        self.skip_to_here(failed);
        if native_first {
            self.emit(Insn::new(0xbf, 1, 10, 0, 0));
            self.emit(Insn::new(0x07, 1, 0, 0, native));
            self.kfunc("bpf_local_irq_restore");
        }
        self.skip_to_here(skip);
        true
    }

    /// bpf_timer_init on the timer map's value with its own map or (a
    /// mistake) another map, then bpf_timer_cancel.
    fn timer_block(&mut self) -> bool {
        let skip = self.lookup_into_r9(TIMER_MAP);
        let map = if self.rng.chance(70) {
            TIMER_MAP
        } else {
            self.rng.pick(&[super::ARRAY_MAP, LOCK_MAP, RES_LOCK_MAP])
        };
        self.value_arg(1, 0);
        self.emit(Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, map));
        self.emit(Insn::new(0, 0, 0, 0, 0));
        let flags = self.rng.pick(&[0, 1, 0]);
        self.emit(Insn::new(0xb7, 3, 0, 0, flags));
        self.emit(Insn::new(0x85, 0, 0, 0, TIMER_INIT));
        self.clobber();
        self.value_arg(1, 0);
        self.emit(Insn::new(0x85, 0, 0, 0, TIMER_CANCEL));
        self.clobber();
        self.skip_to_here(skip);
        true
    }
}
