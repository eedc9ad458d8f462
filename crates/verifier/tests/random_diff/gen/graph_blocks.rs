//! Blocks on the program BTF's objects (feature `btf_objects`, types and
//! maps in `btf_objects.rs`): bpf_obj_new / bpf_percpu_obj_new of every
//! local type and some that are not, dropped, refcount-acquired, pushed
//! into a list or an rbtree, exchanged into a map's kptr slot or leaked;
//! graph operations on a map value's list and rbtree with and without its
//! lock, with owning and non-owning references; kptr slots loaded, stored
//! and exchanged with every instruction form; two maps' locks nested and
//! calls under a lock. Kfunc ids come from the host's BTF by name.

use super::btf_objects::{self as bo, KptrSlot};
use super::{Gen, Kind, LOCK_MAP, LOCK_VALUE_SIZE};
use bpfvet_isa::opcode::BPF_PSEUDO_FUNC;
use bpfvet_isa::Insn;

/// bpf_kptr_xchg's helper id.
const KPTR_XCHG: i32 = 194;
const SPIN_LOCK: i32 = 93;
const SPIN_UNLOCK: i32 = 94;

/// Forward jumps to patch at the end of a block: `if rX == 0 goto end`.
struct Skips(Vec<usize>);

impl Skips {
    fn land(self, g: &mut Gen) {
        let end = g.insns.len();
        for at in self.0 {
            g.insns[at].off = (end - at - 1) as i16;
        }
    }
}

impl Gen {
    pub(super) fn btf_object_block(&mut self) {
        self.prog_btf = true;
        let before = self.kinds;
        let mut skips = Skips(Vec::new());
        let ok = match self.rng.below(10) {
            0..=2 => self.obj_new_block(&mut skips),
            3..=5 => self.graph_block(&mut skips),
            6..=8 => self.kptr_block(&mut skips),
            _ => self.lock_pair_block(&mut skips),
        };
        skips.land(self);
        // Past the block's NULL checks a register may hold either value.
        for (now, was) in self.kinds.iter_mut().zip(before) {
            if *now != was {
                *now = Kind::Uninit;
            }
        }
        self.clobber();
        if !ok {
            self.alu();
        }
    }

    /// `if r == 0 goto end` (patched by `skips`), or nothing at the
    /// mistake rate.
    fn null_skip(&mut self, r: u8, skips: &mut Skips) {
        if !self.rng.chance(self.mistakes * 2) {
            skips.0.push(self.insns.len());
            self.emit(Insn::new(0x15, r, 0, 0, 0));
        }
    }

    /// `v = bpf_map_lookup_elem(&map, &key)`, NULL-checked.
    fn lookup_into(&mut self, map: i32, size: i32, v: u8, skips: &mut Skips) {
        self.map_and_key(map, 4);
        self.emit(Insn::new(0x85, 0, 0, 0, 1));
        self.clobber();
        self.emit(Insn::new(0xbf, v, 0, 0, 0));
        self.null_skip(v, skips);
        self.set(v, Kind::MapVal(map, size));
    }

    /// `r = src + off`.
    fn ptr_at(&mut self, r: u8, src: u8, off: i32) {
        self.emit(Insn::new(0xbf, r, src, 0, 0));
        if off != 0 {
            self.emit(Insn::new(0x07, r, 0, 0, off));
        }
    }

    /// An offset that is `right` or, at the mistake rate, near it.
    fn near(&mut self, right: i32, wrong: &[i32]) -> i32 {
        if self.rng.chance(self.mistakes * 3) {
            self.rng.pick(wrong)
        } else {
            right
        }
    }

    /// A local type id for bpf_obj_new (percpu: for bpf_percpu_obj_new),
    /// mostly one that fits.
    fn local_type(&mut self, percpu: bool) -> i32 {
        if self.rng.chance(100 - self.mistakes * 6) {
            return if percpu {
                bo::T_PLAIN
            } else {
                self.rng
                    .pick(&[bo::T_NODE, bo::T_NODE, bo::T_LONELY, bo::T_PLAIN])
            };
        }
        self.rng.pick(&[
            bo::T_BIG,
            bo::T_WITHPTR,
            bo::T_OBJS,
            bo::T_LOCK_VALUE,
            bo::T_TASK,
            bo::T_LONG,
            bo::T_KPTRS,
            bo::T_NODE,
            bo::T_PLAIN,
            4,
            0,
            999,
        ])
    }

    /// `n = bpf_obj_new(type)` (or the per-CPU one), NULL-checked.
    fn obj_new_into(&mut self, n: u8, tid: i32, percpu: bool, skips: &mut Skips) -> bool {
        self.emit(Insn::new(0xb7, 1, 0, 0, tid));
        self.emit(Insn::new(0xb7, 2, 0, 0, 0));
        let f = if percpu {
            "bpf_percpu_obj_new_impl"
        } else {
            "bpf_obj_new_impl"
        };
        if !self.kfunc(f) {
            return false;
        }
        self.emit(Insn::new(0xbf, n, 0, 0, 0));
        self.set(n, Kind::Uninit);
        self.null_skip(n, skips);
        true
    }

    /// `bpf_obj_drop(r)` (per-CPU: its own drop), or the other one as a
    /// mistake.
    fn drop_obj(&mut self, r: u8, percpu: bool) {
        let percpu = percpu != self.rng.chance(self.mistakes * 2);
        self.emit(Insn::new(0xbf, 1, r, 0, 0));
        self.emit(Insn::new(0xb7, 2, 0, 0, 0));
        self.kfunc(if percpu {
            "bpf_percpu_obj_drop_impl"
        } else {
            "bpf_obj_drop_impl"
        });
    }

    /// `if r != 0 { drop(r) }`: releases an owning reference that may be
    /// NULL.
    fn drop_if_set(&mut self, r: u8, percpu: bool) {
        let at = self.insns.len();
        self.emit(Insn::new(0x15, r, 0, 0, 0));
        self.drop_obj(r, percpu);
        self.insns[at].off = (self.insns.len() - at - 1) as i16;
    }

    /// Allocates an object, touches its fields, then drops it,
    /// refcount-acquires it, pushes it into a graph, exchanges it into a
    /// kptr slot, or (mistakes) leaks or drops it twice.
    fn obj_new_block(&mut self, skips: &mut Skips) -> bool {
        let percpu = self.rng.chance(25);
        let tid = self.local_type(percpu);
        let n = 8;
        if !self.obj_new_into(n, tid, percpu, skips) {
            return false;
        }
        for _ in 0..self.rng.below(3) {
            let off = self
                .rng
                .pick(&[0, 8, 0, bo::NODE_LIST_OFF, bo::NODE_RB_OFF, 72, 4, 80]);
            let (size, _) = self.rng.pick(&super::SIZES);
            if self.rng.chance(50) {
                self.emit(Insn::new(0x62 | size, n, 0, off as i16, 7));
            } else {
                self.emit(Insn::new(0x61 | size, 0, n, off as i16, 0));
            }
        }
        match self.rng.below(8) {
            0..=2 => self.drop_obj(n, percpu),
            3 => {
                self.emit(Insn::new(0xbf, 1, n, 0, 0));
                self.emit(Insn::new(0xb7, 2, 0, 0, 0));
                if !self.kfunc("bpf_refcount_acquire_impl") {
                    return false;
                }
                self.emit(Insn::new(0xbf, 9, 0, 0, 0));
                self.drop_obj(n, percpu);
                if !self.rng.chance(self.mistakes * 2) {
                    self.drop_if_set(9, false);
                }
            }
            4 => {
                let v = 7;
                self.lookup_into(bo::OBJS_MAP, bo::OBJS_SIZE, v, skips);
                self.graph_ops(v, n, skips);
            }
            5 => self.xchg_in(n, percpu, skips),
            6 if self.rng.chance(self.mistakes * 10) => {
                // Dropped twice.
                self.drop_obj(n, percpu);
                self.drop_obj(n, percpu);
            }
            6 => self.drop_obj(n, percpu),
            _ => {
                // Leaked at the mistake rate, else dropped after a block.
                self.depth += 1;
                self.block();
                self.depth -= 1;
                if !self.rng.chance(self.mistakes * 3) {
                    self.drop_obj(n, percpu);
                }
            }
        }
        true
    }

    /// Exchanges owned object `n` into a kptr slot of a map value and
    /// releases what comes out.
    fn xchg_in(&mut self, n: u8, percpu: bool, skips: &mut Skips) {
        let map = self.rng.pick(&[bo::KPTRS_MAP, bo::OBJS_MAP]);
        let size = if map == bo::OBJS_MAP {
            bo::OBJS_SIZE
        } else {
            bo::KPTRS_SIZE
        };
        let v = 7;
        self.lookup_into(map, size, v, skips);
        let right = if percpu {
            KptrSlot::Percpu
        } else {
            KptrSlot::Local
        };
        let slot = if self.rng.chance(self.mistakes * 3) {
            self.rng.pick(&KptrSlot::ALL)
        } else {
            right
        };
        let off = self.near(slot.off(map), &[4, 32, -8, size]);
        self.ptr_at(1, v, off);
        self.emit(Insn::new(0xbf, 2, n, 0, 0));
        self.emit(Insn::new(0x85, 0, 0, 0, KPTR_XCHG));
        self.clobber();
        self.emit(Insn::new(0xbf, 9, 0, 0, 0));
        if !self.rng.chance(self.mistakes * 3) {
            self.drop_if_set(9, percpu);
        }
    }

    /// A map value's list and rbtree under its lock: pushes of `n` (an
    /// owned node, or none), pops, fronts, firsts and removes; then the
    /// owned results dropped after the unlock.
    fn graph_block(&mut self, skips: &mut Skips) -> bool {
        let v = 7;
        let n = 8;
        let node = self.rng.chance(70);
        if node {
            let tid = if self.rng.chance(80) {
                bo::T_NODE
            } else {
                bo::T_LONELY
            };
            if !self.obj_new_into(n, tid, false, skips) {
                return false;
            }
        }
        self.lookup_into(bo::OBJS_MAP, bo::OBJS_SIZE, v, skips);
        self.graph_ops(v, if node { n } else { 0 }, skips);
        true
    }

    /// Lock `v`'s lock (or, as mistakes, none or another map's), run 1..3
    /// graph operations, unlock, drop what was taken out. `n` (non-zero)
    /// holds an owned node.
    fn graph_ops(&mut self, v: u8, n: u8, skips: &mut Skips) {
        let lock_reg = match self.rng.below(100) {
            x if x < self.mistakes * 2 => None,
            x if x < self.mistakes * 4 => {
                let (map, size) = self.rng.pick(&[
                    (LOCK_MAP, LOCK_VALUE_SIZE),
                    (bo::LOCK2_MAP, bo::VALUE2_SIZE),
                ]);
                self.lookup_into(map, size, 6, skips);
                Some(6)
            }
            _ => Some(v),
        };
        if let Some(l) = lock_reg {
            self.emit(Insn::new(0xbf, 1, l, 0, 0));
            self.emit(Insn::new(0x85, 0, 0, 0, SPIN_LOCK));
            self.clobber();
        }
        let mut taken: Vec<u8> = Vec::new();
        let mut pushed = false;
        for _ in 0..1 + self.rng.below(3) {
            match self.rng.below(6) {
                0 | 1 if n != 0 && (!pushed || self.rng.chance(self.mistakes * 5)) => {
                    pushed = true;
                    self.push(v, n);
                }
                2 => {
                    let head = self.near(
                        bo::OBJS_HEAD_OFF,
                        &[bo::OBJS_HEAD2_OFF, bo::OBJS_ROOT_OFF, 0, 12],
                    );
                    self.ptr_at(1, v, head);
                    let f = self.rng.pick(&[
                        "bpf_list_pop_front",
                        "bpf_list_pop_back",
                        "bpf_list_front",
                        "bpf_list_back",
                    ]);
                    if !self.kfunc(f) {
                        continue;
                    }
                    self.take_result(&mut taken, f.contains("pop"));
                }
                3 => {
                    let root = self.near(bo::OBJS_ROOT_OFF, &[bo::OBJS_HEAD_OFF, 0, 28]);
                    self.ptr_at(1, v, root);
                    if !self.kfunc("bpf_rbtree_first") {
                        continue;
                    }
                    if self.rng.chance(50) {
                        // remove(root, first) when it is not NULL.
                        let at = self.insns.len();
                        self.emit(Insn::new(0x15, 0, 0, 0, 0));
                        self.emit(Insn::new(0xbf, 2, 0, 0, 0));
                        self.ptr_at(1, v, root);
                        self.kfunc("bpf_rbtree_remove");
                        self.insns[at].off = (self.insns.len() - at - 1) as i16;
                        self.take_result(&mut taken, true);
                    } else {
                        self.take_result(&mut taken, false);
                    }
                }
                4 if n != 0 => {
                    // remove(root, n): n must be a non-owning reference.
                    self.ptr_at(1, v, bo::OBJS_ROOT_OFF);
                    let off = self.near(bo::NODE_RB_OFF, &[0, bo::NODE_LIST_OFF]);
                    self.ptr_at(2, n, off);
                    if self.kfunc("bpf_rbtree_remove") {
                        self.take_result(&mut taken, true);
                    }
                }
                _ => {
                    if n != 0 && self.rng.chance(50) {
                        // refcount_acquire of the (maybe non-owning) node.
                        self.emit(Insn::new(0xbf, 1, n, 0, 0));
                        self.emit(Insn::new(0xb7, 2, 0, 0, 0));
                        if self.kfunc("bpf_refcount_acquire_impl") {
                            self.take_result(&mut taken, true);
                        }
                    } else {
                        // A call other than a graph kfunc under the lock.
                        self.depth += 1;
                        self.block();
                        self.depth -= 1;
                    }
                }
            }
        }
        if let Some(l) = lock_reg {
            if !self.rng.chance(self.mistakes * 2) {
                self.emit(Insn::new(0xbf, 1, l, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, SPIN_UNLOCK));
                self.clobber();
            }
        }
        if n != 0 && !pushed && !self.rng.chance(self.mistakes * 3) {
            self.drop_obj(n, false);
        }
        for r in taken {
            if !self.rng.chance(self.mistakes * 2) {
                self.drop_if_set(r, false);
            }
        }
    }

    /// Keeps r0 of a graph kfunc in a callee-saved register: owning
    /// results are dropped later, non-owning ones read.
    fn take_result(&mut self, taken: &mut Vec<u8>, owning: bool) {
        let r = if taken.contains(&9) { 6 } else { 9 };
        self.emit(Insn::new(0xbf, r, 0, 0, 0));
        self.set(r, Kind::Uninit);
        if owning {
            taken.push(r);
        } else if self.rng.chance(50) {
            // Non-owning: read its key when not NULL.
            let off = self.rng.pick(&[0, 0, 8, -8, -16, 4]);
            self.emit(Insn::new(0x15, r, 0, 1, 0));
            self.emit(Insn::new(0x79, 0, r, off, 0));
        }
    }

    /// bpf_list_push_{front,back}(head, &n->l) or bpf_rbtree_add(root,
    /// &n->r, less), with offsets and arguments sometimes wrong.
    fn push(&mut self, v: u8, n: u8) {
        if self.rng.chance(60) {
            let head = self.near(
                bo::OBJS_HEAD_OFF,
                &[bo::OBJS_HEAD2_OFF, bo::OBJS_ROOT_OFF, 4],
            );
            let node = self.near(
                bo::NODE_LIST_OFF,
                &[0, bo::NODE_RB_OFF, bo::LONELY_LIST_OFF],
            );
            self.ptr_at(1, v, head);
            self.ptr_at(2, n, node);
            self.emit(Insn::new(0xb7, 3, 0, 0, 0));
            let off = self.near(node, &[0, 8, bo::NODE_RB_OFF]);
            self.emit(Insn::new(0xb7, 4, 0, 0, off));
            let f = self
                .rng
                .pick(&["bpf_list_push_front_impl", "bpf_list_push_back_impl"]);
            self.kfunc(f);
        } else {
            let root = self.near(bo::OBJS_ROOT_OFF, &[bo::OBJS_HEAD_OFF, 0]);
            let node = self.near(bo::NODE_RB_OFF, &[0, bo::NODE_LIST_OFF]);
            self.ptr_at(1, v, root);
            self.ptr_at(2, n, node);
            if self.can_add_sub() && !self.rng.chance(self.mistakes * 2) {
                let id = self.new_sub(super::SubKind::RbLess);
                self.calls.push((self.insns.len(), id));
                self.emit(Insn::new(0x18, 3, BPF_PSEUDO_FUNC, 0, 0));
                self.emit(Insn::new(0, 0, 0, 0, 0));
            } else {
                self.emit(Insn::new(0xb7, 3, 0, 0, 0));
            }
            self.emit(Insn::new(0xb7, 4, 0, 0, 0));
            let off = self.near(node, &[0, 8, bo::NODE_LIST_OFF]);
            self.emit(Insn::new(0xb7, 5, 0, 0, off));
            self.kfunc("bpf_rbtree_add_impl");
        }
        self.clobber();
    }

    /// The start of an rbtree `less` callback: mostly nothing, else (what
    /// the kernel forbids or finds needless there) a graph operation on its
    /// nodes, an RCU region, a drop or a read of the nodes' keys.
    pub(super) fn rb_less_prologue(&mut self) {
        match self.rng.below(8) {
            0 => {
                let f = self.rng.pick(&["bpf_rcu_read_lock", "bpf_rcu_read_unlock"]);
                self.kfunc(f);
            }
            1 => {
                self.emit(Insn::new(0xbf, 2, 1, 0, 0));
                let f = self.rng.pick(&[
                    "bpf_rbtree_remove",
                    "bpf_rbtree_first",
                    "bpf_list_pop_front",
                    "bpf_rbtree_left",
                ]);
                self.kfunc(f);
            }
            2 => {
                self.emit(Insn::new(0x07, 1, 0, 0, -bo::NODE_RB_OFF));
                self.emit(Insn::new(0xb7, 2, 0, 0, 0));
                let f = self
                    .rng
                    .pick(&["bpf_obj_drop_impl", "bpf_refcount_acquire_impl"]);
                self.kfunc(f);
            }
            3 | 4 => {
                // The nodes' keys, a->key and b->key.
                self.emit(Insn::new(0x79, 3, 1, -(bo::NODE_RB_OFF as i16), 0));
                self.emit(Insn::new(0x79, 4, 2, -(bo::NODE_RB_OFF as i16), 0));
            }
            _ => {}
        }
        self.clobber();
    }

    /// A kptr slot of a map value loaded, stored or exchanged with every
    /// instruction form, the loaded pointer used.
    fn kptr_block(&mut self, skips: &mut Skips) -> bool {
        let (map, size) = match self.rng.below(100) {
            x if x < self.mistakes => (super::ARRAY_MAP, super::ARRAY_VALUE_SIZE),
            x if x < self.mistakes * 2 => (bo::LOCK2_MAP, bo::VALUE2_SIZE),
            x if x < 50 => (bo::KPTRS_MAP, bo::KPTRS_SIZE),
            _ => (bo::OBJS_MAP, bo::OBJS_SIZE),
        };
        let v = 7;
        self.lookup_into(map, size, v, skips);
        let slot = self.rng.pick(&KptrSlot::ALL);
        let off = self.near(slot.off(map), &[4, 2, slot.off(map) + 4, -8, 32]);
        let wrong_form = self.rng.chance(self.mistakes * 3);
        match self.rng.below(4) {
            0 | 1 => {
                // r8 = *(u64 *)(v + off), then used.
                let code = if wrong_form {
                    self.rng.pick(&[0x61, 0x69, 0x71, 0x99, 0x91])
                } else {
                    0x79
                };
                self.emit(Insn::new(code, 8, v, off as i16, 0));
                self.set(8, Kind::Uninit);
                self.null_skip(8, skips);
                self.use_kptr(8, slot);
            }
            2 => {
                // Stores: a register or an immediate.
                let code = if wrong_form {
                    self.rng.pick(&[0x63, 0x6b, 0x73, 0xdb, 0xc3])
                } else {
                    self.rng.pick(&[0x7b, 0x7a])
                };
                if code == 0x7a {
                    let imm = if self.rng.chance(70) { 0 } else { 1 };
                    self.emit(Insn::new(code, v, 0, off as i16, imm));
                } else {
                    let src = self.kptr_source(slot, skips);
                    let imm = if code == 0xdb || code == 0xc3 {
                        self.rng.pick(&[0, 0xe1, 0xf1, 1])
                    } else {
                        0
                    };
                    self.emit(Insn::new(code, v, src, off as i16, imm));
                    if slot == KptrSlot::Task && src == 8 {
                        self.emit(Insn::new(0xbf, 1, 8, 0, 0));
                        self.kfunc("bpf_task_release");
                    }
                }
            }
            _ => {
                // old = bpf_kptr_xchg(v + off, new); release old.
                let src = self.kptr_source(slot, skips);
                if self.rng.chance(self.mistakes * 2) {
                    let s = self.scalar();
                    self.emit(Insn::new(0x57, s, 0, 0, 8));
                    self.ptr_at(1, v, off);
                    self.emit(Insn::new(0x0f, 1, s, 0, 0));
                } else {
                    self.ptr_at(1, v, off);
                }
                self.emit(Insn::new(0xbf, 2, src, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, KPTR_XCHG));
                self.clobber();
                self.emit(Insn::new(0xbf, 9, 0, 0, 0));
                self.set(9, Kind::Uninit);
                if !self.rng.chance(self.mistakes * 3) {
                    let at = self.insns.len();
                    self.emit(Insn::new(0x15, 9, 0, 0, 0));
                    self.release_kptr(9, slot);
                    self.insns[at].off = (self.insns.len() - at - 1) as i16;
                }
            }
        }
        true
    }

    /// Something to store into a kptr slot, in r8: mostly an object of the
    /// slot's kind (an acquired task, a new node or per-CPU object), else
    /// NULL, a scalar or ctx.
    fn kptr_source(&mut self, slot: KptrSlot, skips: &mut Skips) -> u8 {
        let fits = !self.rng.chance(self.mistakes * 3);
        let pick = if fits {
            slot
        } else {
            self.rng.pick(&KptrSlot::ALL)
        };
        match self.rng.below(8) {
            0 => self.emit(Insn::new(0xb7, 8, 0, 0, 0)),
            1 if !fits => {
                let k = self.scalar();
                self.emit(Insn::new(0xbf, 8, k, 0, 0));
            }
            2 if !fits => match self.ctx_reg() {
                Some(c) => self.emit(Insn::new(0xbf, 8, c, 0, 0)),
                None => self.emit(Insn::new(0xb7, 8, 0, 0, 0)),
            },
            _ => match pick {
                KptrSlot::Task | KptrSlot::Untrusted => {
                    self.emit(Insn::new(0xb7, 1, 0, 0, 1));
                    self.kfunc("bpf_task_from_pid");
                    self.emit(Insn::new(0xbf, 8, 0, 0, 0));
                    self.null_skip(8, skips);
                }
                KptrSlot::Local => {
                    self.obj_new_into(8, bo::T_NODE, false, skips);
                }
                KptrSlot::Percpu => {
                    self.obj_new_into(8, bo::T_PLAIN, true, skips);
                }
            },
        }
        self.set(8, Kind::Uninit);
        8
    }

    /// Releases an object taken out of a kptr slot of kind `slot` (or, as
    /// a mistake, with another kind's release).
    fn release_kptr(&mut self, r: u8, slot: KptrSlot) {
        let slot = if self.rng.chance(self.mistakes * 2) {
            self.rng.pick(&KptrSlot::ALL)
        } else {
            slot
        };
        match slot {
            KptrSlot::Task | KptrSlot::Untrusted => {
                self.emit(Insn::new(0xbf, 1, r, 0, 0));
                self.kfunc("bpf_task_release");
            }
            KptrSlot::Local => self.drop_obj(r, false),
            KptrSlot::Percpu => self.drop_obj(r, true),
        }
    }

    /// Uses a pointer loaded from a kptr slot: reads a field, passes it to
    /// an acquiring or releasing kfunc, or to the per-CPU helpers.
    fn use_kptr(&mut self, r: u8, slot: KptrSlot) {
        match self.rng.below(4) {
            0 => {
                let off = self.rng.pick(&[0, 8, 16, 4, -8, 4096]);
                let (size, _) = self.rng.pick(&super::SIZES);
                self.emit(Insn::new(0x61 | size, 0, r, off, 0));
            }
            1 => {
                // Writes through it.
                let off = self.rng.pick(&[0, 8, 16]);
                self.emit(Insn::new(0x7a, r, 0, off, 1));
            }
            2 => match slot {
                KptrSlot::Task | KptrSlot::Untrusted => {
                    self.emit(Insn::new(0xbf, 1, r, 0, 0));
                    if self.kfunc("bpf_task_acquire") {
                        self.emit(Insn::new(0xbf, 9, 0, 0, 0));
                        if !self.rng.chance(self.mistakes * 3) {
                            let at = self.insns.len();
                            self.emit(Insn::new(0x15, 9, 0, 0, 0));
                            self.emit(Insn::new(0xbf, 1, 9, 0, 0));
                            self.kfunc("bpf_task_release");
                            self.insns[at].off = (self.insns.len() - at - 1) as i16;
                        }
                    }
                }
                KptrSlot::Local => {
                    self.emit(Insn::new(0xbf, 1, r, 0, 0));
                    self.emit(Insn::new(0xb7, 2, 0, 0, 0));
                    if self.rng.chance(50) {
                        self.kfunc("bpf_refcount_acquire_impl");
                        self.emit(Insn::new(0xbf, 9, 0, 0, 0));
                        self.drop_if_set(9, false);
                    } else {
                        self.kfunc("bpf_obj_drop_impl");
                    }
                }
                KptrSlot::Percpu => {
                    self.emit(Insn::new(0xbf, 1, r, 0, 0));
                    self.emit(Insn::new(0xb7, 2, 0, 0, 0));
                    let helper = self.rng.pick(&[153, 154]);
                    self.emit(Insn::new(0x85, 0, 0, 0, helper));
                    self.emit(Insn::new(0x15, 0, 0, 1, 0));
                    self.emit(Insn::new(0x79, 1, 0, 0, 0));
                }
            },
            _ => {
                // A release of a pointer the program does not own.
                self.release_kptr(r, slot);
            }
        }
        self.clobber();
    }

    /// Two maps' values locked in turn or nested, with calls, another
    /// block or an early exit under the lock.
    fn lock_pair_block(&mut self, skips: &mut Skips) -> bool {
        let locks = [
            (LOCK_MAP, LOCK_VALUE_SIZE),
            (bo::OBJS_MAP, bo::OBJS_SIZE),
            (bo::LOCK2_MAP, bo::VALUE2_SIZE),
        ];
        let (m1, s1) = self.rng.pick(&locks);
        let (m2, s2) = self.rng.pick(&locks);
        self.lookup_into(m1, s1, 7, skips);
        self.lookup_into(m2, s2, 8, skips);
        let lock = |g: &mut Gen, r: u8, f: i32| {
            g.emit(Insn::new(0xbf, 1, r, 0, 0));
            g.emit(Insn::new(0x85, 0, 0, 0, f));
            g.clobber();
        };
        lock(self, 7, SPIN_LOCK);
        match self.rng.below(6) {
            0 => {
                // Nested: the second lock inside the first.
                lock(self, 8, SPIN_LOCK);
                lock(self, 8, SPIN_UNLOCK);
            }
            1 => {
                // Unlocks the other map's lock.
                lock(self, 8, SPIN_UNLOCK);
            }
            2 => {
                // A helper or a kfunc under the lock.
                if self.rng.chance(50) {
                    self.emit(Insn::new(0x85, 0, 0, 0, 7));
                } else {
                    let f = self.rng.pick(&[
                        "bpf_rcu_read_lock",
                        "bpf_preempt_disable",
                        "bpf_obj_new_impl",
                        "bpf_task_from_pid",
                    ]);
                    self.emit(Insn::new(0xb7, 1, 0, 0, bo::T_NODE));
                    self.emit(Insn::new(0xb7, 2, 0, 0, 0));
                    self.kfunc(f);
                }
                self.clobber();
            }
            3 => {
                // An exit under the lock.
                let s = self.scalar();
                let at = self.insns.len();
                self.emit(Insn::new(0x55, s, 0, 0, 0));
                self.emit(Insn::new(0xb7, 0, 0, 0, 0));
                self.emit(Insn::new(0x95, 0, 0, 0, 0));
                self.insns[at].off = 2;
                self.insns[at].imm = 3;
            }
            _ => {
                self.depth += 1;
                self.block();
                self.depth -= 1;
            }
        }
        if !self.rng.chance(self.mistakes) {
            lock(self, 7, SPIN_UNLOCK);
        }
        true
    }
}
