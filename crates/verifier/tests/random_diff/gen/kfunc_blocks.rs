//! Kfunc blocks (feature `kfuncs`): RCU, preemption and irq-flag regions
//! in every order and nesting, open-coded iterators (num and task), casts
//! and allocations by type id, acquire/release pairs, sleepable kfuncs.
//! Kfunc ids come from the host's vmlinux BTF at run time, by name; on a
//! host without it the blocks fall back to plain ALU.

use super::{Gen, Kind, LOCK_MAP, LOCK_VALUE_SIZE};
use bpfvet_isa::opcode::BPF_PSEUDO_KFUNC_CALL;
use bpfvet_isa::Insn;
use bpfvet_object::btf::{Btf, Kind as BtfKind};
use std::sync::OnceLock;

pub(super) fn vmlinux() -> Option<&'static Btf> {
    static BTF: OnceLock<Option<Btf>> = OnceLock::new();
    BTF.get_or_init(|| {
        let bytes = std::fs::read(bpfvet_object::vmlinux_btf_path()).ok()?;
        Btf::from_bytes(&bytes).ok()
    })
    .as_ref()
}

/// The host's BTF id of kfunc `name`.
pub(super) fn kfunc_id(name: &str) -> Option<i32> {
    vmlinux()?
        .find_by_name_kind(name, BtfKind::Func)
        .map(|id| id as i32)
}

/// The host's BTF id of struct `name`.
pub(super) fn struct_id(name: &str) -> Option<i32> {
    vmlinux()?
        .find_by_name_kind(name, BtfKind::Struct)
        .map(|id| id as i32)
}

/// Region kfuncs: (open, close).
const REGIONS: [(&str, &str); 3] = [
    ("bpf_rcu_read_lock", "bpf_rcu_read_unlock"),
    ("bpf_preempt_disable", "bpf_preempt_enable"),
    ("bpf_local_irq_save", "bpf_local_irq_restore"),
];

impl Gen {
    /// `call name` by BTF id; false (nothing emitted) when the host lacks it.
    pub(super) fn kfunc(&mut self, name: &str) -> bool {
        let Some(id) = kfunc_id(name) else {
            return false;
        };
        self.emit(Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, id));
        self.clobber();
        true
    }

    /// `r = r10 + off`, sometimes at a variable offset or not a stack
    /// pointer at all (the mistakes the stack-object checks name).
    fn stack_obj_arg(&mut self, r: u8, off: i32) {
        match self.rng.below(100) {
            x if x < self.mistakes * 2 => {
                // Not on the stack.
                let s = self.scalar();
                self.emit(Insn::new(0xbf, r, s, 0, 0));
            }
            x if x < self.mistakes * 4 => {
                // At an offset inside the slot.
                self.emit(Insn::new(0xbf, r, 10, 0, 0));
                let d = self.rng.pick(&[4, 2, -4]);
                self.emit(Insn::new(0x07, r, 0, 0, off + d));
            }
            x if x < self.mistakes * 5 => {
                // A variable offset.
                let s = self.scalar();
                self.emit(Insn::new(0x57, s, 0, 0, 8));
                self.emit(Insn::new(0xbf, r, 10, 0, 0));
                self.emit(Insn::new(0x07, r, 0, 0, off));
                self.emit(Insn::new(0x0f, r, s, 0, 0));
            }
            _ => {
                self.emit(Insn::new(0xbf, r, 10, 0, 0));
                self.emit(Insn::new(0x07, r, 0, 0, off));
            }
        }
    }

    /// A stack slot for an irq flag or an iterator, 8-byte aligned.
    fn obj_slot(&mut self) -> i32 {
        -(8 * (1 + self.rng.below(10) as i32))
    }

    /// Opens region `k` (irq flags at `slot`).
    fn open_region(&mut self, k: usize, slot: i32) -> bool {
        if k == 2 {
            self.stack_obj_arg(1, slot);
        }
        self.kfunc(REGIONS[k].0)
    }

    fn close_region(&mut self, k: usize, slot: i32) -> bool {
        if k == 2 {
            self.stack_obj_arg(1, slot);
        }
        self.kfunc(REGIONS[k].1)
    }

    pub(super) fn kfunc_block(&mut self) {
        let ok = match self.rng.below(12) {
            10..=11 => self.spin_lock_block(),
            0..=4 => self.region_block(),
            5..=6 => self.iter_block(),
            7 => self.cast_block(),
            8 => self.acquire_block(),
            _ => self.misc_kfunc(),
        };
        if !ok {
            self.alu();
        }
    }

    /// bpf_spin_lock / bpf_spin_unlock on a value of the lock map: locked
    /// and unlocked in turn, or (as mistakes) twice, never, at a wrong or
    /// variable offset, without the NULL check, with blocks (maybe calls)
    /// inside.
    fn spin_lock_block(&mut self) -> bool {
        use bpfvet_isa::uapi::ProgType;
        // Socket filters and tracing programs may not use a map with a
        // lock at all: mostly left to the types that may.
        let may_lock = matches!(
            self.prog_type,
            ProgType::XDP | ProgType::SCHED_CLS | ProgType::CGROUP_SKB
        );
        if !may_lock && !self.rng.chance(self.mistakes * 2) {
            return false;
        }
        self.map_and_key(LOCK_MAP, 4);
        self.emit(Insn::new(0x85, 0, 0, 0, 1));
        self.clobber();
        let v = 6 + self.rng.below(4) as u8;
        self.emit(Insn::new(0xbf, v, 0, 0, 0));
        let checked = !self.rng.chance(self.mistakes * 2);
        let skip = self.insns.len();
        if checked {
            self.emit(Insn::new(0x15, v, 0, 0, 0));
        }
        self.set(v, Kind::MapVal(LOCK_MAP, LOCK_VALUE_SIZE));
        let lock_arg = |g: &mut Gen| {
            g.emit(Insn::new(0xbf, 1, v, 0, 0));
            match g.rng.below(100) {
                x if x < g.mistakes * 2 => {
                    let d = g.rng.pick(&[4, 8, -4, 1]);
                    g.emit(Insn::new(0x07, 1, 0, 0, d));
                }
                x if x < g.mistakes * 3 => {
                    let s = g.scalar();
                    g.emit(Insn::new(0x57, s, 0, 0, 4));
                    g.emit(Insn::new(0x0f, 1, s, 0, 0));
                }
                _ => {}
            }
        };
        let mut locked = false;
        for _ in 0..1 + self.rng.below(3) {
            // Lock when unlocked and unlock when locked, or the other way
            // round as a mistake.
            let lock = locked == self.rng.chance(8 + self.mistakes * 4);
            lock_arg(self);
            self.emit(Insn::new(0x85, 0, 0, 0, if lock { 93 } else { 94 }));
            self.clobber();
            locked = lock;
            if self.rng.chance(40) {
                self.depth += 1;
                self.block();
                self.depth -= 1;
            }
        }
        if locked && !self.rng.chance(self.mistakes * 2) {
            lock_arg(self);
            self.emit(Insn::new(0x85, 0, 0, 0, 94));
            self.clobber();
        }
        if checked {
            self.insns[skip].off = (self.insns.len() - skip - 1) as i16;
        }
        true
    }

    /// One to three regions opened, blocks inside, closed in order or (as
    /// a mistake) out of order, twice, never, or closed before opened.
    fn region_block(&mut self) -> bool {
        let n = 1 + self.rng.below(3) as usize;
        let mut open: Vec<(usize, i32)> = Vec::new();
        for _ in 0..n {
            let k = self.rng.below(3) as usize;
            let slot = self.obj_slot();
            if self.rng.chance(self.mistakes * 2) {
                // Closed without having been opened.
                if !self.close_region(k, slot) {
                    return false;
                }
                continue;
            }
            if !self.open_region(k, slot) {
                return false;
            }
            open.push((k, slot));
            self.depth += 1;
            for _ in 0..self.rng.below(3) {
                self.block();
            }
            self.depth -= 1;
        }
        if open.len() > 1 && self.rng.chance(self.mistakes * 3) {
            open.reverse();
            let (a, b) = (
                self.rng.below(open.len() as u64) as usize,
                self.rng.below(open.len() as u64) as usize,
            );
            open.swap(a, b);
        }
        while let Some((k, slot)) = open.pop() {
            if self.rng.chance(self.mistakes * 2) {
                continue; // left open
            }
            self.close_region(k, slot);
            if self.rng.chance(self.mistakes) {
                self.close_region(k, slot);
            }
            self.depth += 1;
            if self.rng.chance(30) {
                self.block();
            }
            self.depth -= 1;
        }
        true
    }

    /// `bpf_iter_num` (or `bpf_iter_task`, RCU-protected) new / next loop /
    /// destroy, with the iterator's slot sometimes misused.
    fn iter_block(&mut self) -> bool {
        let task = self.rng.chance(25);
        let (new, next, destroy, words) = if task {
            (
                "bpf_iter_task_new",
                "bpf_iter_task_next",
                "bpf_iter_task_destroy",
                3,
            )
        } else {
            (
                "bpf_iter_num_new",
                "bpf_iter_num_next",
                "bpf_iter_num_destroy",
                1,
            )
        };
        let slot = -(8 * (words + self.rng.below(6) as i32));
        let rcu = task && self.rng.chance(70);
        if rcu && !self.kfunc("bpf_rcu_read_lock") {
            return false;
        }
        if !self.rng.chance(self.mistakes * 2) {
            self.stack_obj_arg(1, slot);
            if task {
                self.emit(Insn::new(0xb7, 2, 0, 0, 0));
                let flags = self.rng.pick(&[0, 0, 1, 2, 4]);
                self.emit(Insn::new(0xb7, 3, 0, 0, flags));
            } else {
                let lo = self.rng.pick(&[0, 0, 1, -5]);
                let hi = self.rng.pick(&[3, 10, 1 << 23, (1 << 23) + 1, -1]);
                self.emit(Insn::new(0xb7, 2, 0, 0, lo));
                self.emit(Insn::new(0xb7, 3, 0, 0, hi));
            }
            if !self.kfunc(new) {
                return false;
            }
            if self.rng.chance(self.mistakes) {
                // A second new on the live iterator.
                self.stack_obj_arg(1, slot);
                self.kfunc(new);
            }
        }
        // while ((p = next(&it))) { body }
        let head = self.insns.len();
        self.stack_obj_arg(1, slot);
        self.kfunc(next);
        self.kinds[0] = Kind::Uninit;
        let check = self.insns.len();
        self.emit(Insn::new(0x15, 0, 0, 0, 0)); // if r0 == 0 goto out
        if !task && self.rng.chance(60) {
            // *(u32 *)p, as a scalar.
            let d = self.dst();
            self.emit(Insn::new(0x61, d, 0, 0, 0));
            self.set(d, Kind::Scalar);
        }
        self.depth += 1;
        for _ in 0..self.rng.below(2) {
            self.block();
        }
        self.depth -= 1;
        let back = head as i64 - self.insns.len() as i64 - 1;
        self.emit(Insn::new(0x05, 0, 0, back as i16, 0));
        self.insns[check].off = (self.insns.len() - check - 1) as i16;
        if rcu && self.rng.chance(50) && !self.rng.chance(self.mistakes * 3) {
            self.kfunc("bpf_rcu_read_unlock");
        }
        if !self.rng.chance(self.mistakes * 2) {
            self.stack_obj_arg(1, slot);
            self.kfunc(destroy);
        }
        if rcu && self.rng.chance(50) {
            self.kfunc("bpf_rcu_read_unlock");
        }
        self.clobber();
        true
    }

    /// Casts and allocations by type id: bpf_rdonly_cast, bpf_obj_new_impl
    /// (the program has no BTF of its own), bpf_cast_to_kern_ctx.
    fn cast_block(&mut self) -> bool {
        let type_id = |g: &mut Gen| -> i32 {
            match g.rng.below(6) {
                0 => 0,
                1 => g.rng.pick(&[1, -1, 0x7fff_ffff, 0x10_0000]),
                2 => struct_id("sk_buff").unwrap_or(1),
                3 => kfunc_id("bpf_rdonly_cast").unwrap_or(1),
                _ => struct_id("task_struct").unwrap_or(1),
            }
        };
        match self.rng.below(3) {
            0 => {
                self.load_kind_into(1);
                if self.rng.chance(self.mistakes * 2) {
                    let s = self.scalar();
                    self.emit(Insn::new(0xbf, 2, s, 0, 0));
                } else {
                    let id = type_id(self);
                    self.emit(Insn::new(0xb7, 2, 0, 0, id));
                }
                if !self.kfunc("bpf_rdonly_cast") {
                    return false;
                }
            }
            1 => {
                let id = type_id(self);
                self.emit(Insn::new(0xb7, 1, 0, 0, id));
                self.emit(Insn::new(0xb7, 2, 0, 0, 0));
                let f = self
                    .rng
                    .pick(&["bpf_obj_new_impl", "bpf_percpu_obj_new_impl"]);
                if !self.kfunc(f) {
                    return false;
                }
            }
            _ => {
                self.load_kind_into(1);
                if !self.kfunc("bpf_cast_to_kern_ctx") {
                    return false;
                }
            }
        }
        self.kinds[0] = Kind::Uninit;
        // Read the result as a pointer (it is a BTF pointer, maybe NULL).
        if self.rng.chance(60) {
            let off = self.rng.pick(&[0, 8, 16, 24, 4, -8, 4096]);
            let (size, _) = self.rng.pick(&super::SIZES);
            let d = self.dst();
            self.emit(Insn::new(0x61 | size, d, 0, off, 0));
            self.set(d, Kind::Scalar);
        }
        true
    }

    /// An acquired task released once, twice, never, or unchecked for NULL.
    fn acquire_block(&mut self) -> bool {
        let pid = self.rng.pick(&[1, 0, -1]);
        self.emit(Insn::new(0xb7, 1, 0, 0, pid));
        let acquire = self.rng.pick(&["bpf_task_from_pid", "bpf_task_from_vpid"]);
        if !self.kfunc(acquire) {
            return false;
        }
        let keep = 6 + self.rng.below(4) as u8;
        self.emit(Insn::new(0xbf, keep, 0, 0, 0));
        self.set(keep, Kind::Uninit);
        let checked = !self.rng.chance(self.mistakes * 3);
        let skip = self.insns.len();
        if checked {
            self.emit(Insn::new(0x15, keep, 0, 0, 0));
        }
        if self.rng.chance(30) {
            // Another acquire on the object: bpf_task_acquire.
            self.emit(Insn::new(0xbf, 1, keep, 0, 0));
            self.kfunc("bpf_task_acquire");
        }
        let releases = if self.rng.chance(self.mistakes * 3) {
            self.rng.pick(&[0, 2])
        } else {
            1
        };
        for _ in 0..releases {
            self.emit(Insn::new(0xbf, 1, keep, 0, 0));
            if self.rng.chance(self.mistakes) {
                self.emit(Insn::new(0x07, 1, 0, 0, 8));
            }
            self.kfunc("bpf_task_release");
        }
        if checked {
            self.insns[skip].off = (self.insns.len() - skip - 1) as i16;
        }
        true
    }

    /// Single calls: bpf_throw, a sleepable kfunc, a kfunc with a
    /// constant-size buffer argument.
    fn misc_kfunc(&mut self) -> bool {
        match self.rng.below(3) {
            0 => {
                let cookie = self.rng.pick(&[0, 1]);
                self.emit(Insn::new(0xb7, 1, 0, 0, cookie));
                self.kfunc("bpf_throw")
            }
            1 => {
                self.load_kind_into(1);
                self.emit(Insn::new(0xb7, 2, 0, 0, 8));
                self.emit(Insn::new(0xb7, 3, 0, 0, 0));
                self.emit(Insn::new(0xb7, 4, 0, 0, 0));
                self.kfunc("bpf_copy_from_user_str")
            }
            _ => {
                self.load_kind_into(1);
                let n = self.rng.pick(&[1, 8, 0, 64, -1]);
                self.emit(Insn::new(0xb7, 2, 0, 0, n));
                self.kfunc("bpf_strnlen")
            }
        }
    }
}
