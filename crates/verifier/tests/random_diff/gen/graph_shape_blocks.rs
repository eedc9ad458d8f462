//! Whole-program shapes for graph, kptr and callback sites (feature
//! `graph_shapes`): locks, kptr slots and graph roots at a variable offset;
//! graph kfuncs inside bpf_rbtree_add's `less` callback on a tree whose
//! lock matches (a one-entry map's value by address, so the lock and the
//! root share map and id); bpf_rbtree_add in the deepest frames; 8,191 to
//! 8,193 pending paths before a call that queues one more (a resilient
//! lock's failure path, a workqueue, timer or task-work callback,
//! bpf_loop); task work on one map's value naming another map; untrusted
//! BTF pointers for a kfunc without trusted arguments; loads, stores and
//! atomics on a task storage value's `__uptr`. Each replaces the generated
//! program (`reshape`).

use super::btf_objects::{self as bo};
use super::kfunc_blocks::kfunc_id;
use super::{Rng, LOCK_MAP, WQ_MAP};
use bpfvet_isa::opcode::{
    BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC, BPF_PSEUDO_KFUNC_CALL, BPF_PSEUDO_MAP_IDX,
    BPF_PSEUDO_MAP_IDX_VALUE,
};
use bpfvet_isa::uapi::{MapType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_object::MapDef;

/// A one-entry array of `fz_objs` values (lock, list head, rbtree root):
/// its value by address has id 0 everywhere, callbacks included.
pub const OBJS1_MAP: i32 = 88;
/// A task storage whose value holds a `__uptr` ([`T_UPTR_VALUE`]).
pub const UPTR_MAP: i32 = 89;
/// Two arrays whose values hold a `bpf_task_work` ([`T_TW_VALUE`]).
pub const TW_MAP: i32 = 90;
pub const TW2_MAP: i32 = 91;
/// The first and last map index of this file.
const FIRST_MAP: i32 = OBJS1_MAP;
const LAST_MAP: i32 = TW2_MAP;
use bo::{TW_VALUE_SIZE, T_TW_VALUE, T_UPTR_VALUE, UPTR_VALUE_SIZE};

const LOOKUP: i32 = 1;
const PRANDOM: i32 = 7;
const SPIN_LOCK: i32 = 93;
const SPIN_UNLOCK: i32 = 94;
const TASK_STORAGE_GET: i32 = 156;
const CURRENT_TASK_BTF: i32 = 158;
const TIMER_SET_CALLBACK: i32 = 170;
const LOOP: i32 = 181;
const KPTR_XCHG: i32 = 194;

/// Instructions being laid out, with forward jumps and function addresses
/// patched once their targets are known.
struct B(Vec<Insn>);

impl B {
    fn i(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) {
        self.0.push(Insn::new(code, dst, src, off, imm));
    }
    fn here(&self) -> usize {
        self.0.len()
    }
    fn map(&mut self, r: u8, map: i32) {
        self.i(0x18, r, BPF_PSEUDO_MAP_IDX, 0, map);
        self.i(0, 0, 0, 0, 0);
    }
    /// `r = &map's value + off` (a one-entry array).
    fn map_value(&mut self, r: u8, map: i32, off: i32) {
        self.i(0x18, r, BPF_PSEUDO_MAP_IDX_VALUE, 0, map);
        self.i(0, 0, 0, 0, off);
    }
    fn call(&mut self, helper: i32) {
        self.i(0x85, 0, 0, 0, helper);
    }
    fn kcall(&mut self, name: &str) -> Option<()> {
        let id = kfunc_id(name)?;
        self.i(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, id);
        Some(())
    }
    /// `if r == 0 goto ?`: its index, for [`B::land`].
    fn if_zero(&mut self, r: u8) -> usize {
        self.i(0x15, r, 0, 0, 0);
        self.here() - 1
    }
    /// Points the jump at `at` to the next instruction.
    fn land(&mut self, at: usize) {
        self.0[at].off = (self.here() - at - 1) as i16;
    }
    /// `r = func ?`: its index, for [`B::func_at`].
    fn func_ref(&mut self, r: u8) -> usize {
        self.i(0x18, r, BPF_PSEUDO_FUNC, 0, 0);
        self.i(0, 0, 0, 0, 0);
        self.here() - 2
    }
    /// `call ?` (bpf-to-bpf): its index, for [`B::func_at`].
    fn call_ref(&mut self) -> usize {
        self.i(0x85, 0, BPF_PSEUDO_CALL, 0, 0);
        self.here() - 1
    }
    /// Points the call or function load at `at` to the next instruction.
    fn func_at(&mut self, at: usize) {
        self.0[at].imm = (self.here() - at - 1) as i32;
    }
    /// `r = lookup(map, key 0)` with the NULL check's jump returned.
    fn lookup(&mut self, map: i32, r: u8) -> usize {
        self.i(0x62, 10, 0, -4, 0);
        self.i(0xbf, 2, 10, 0, 0);
        self.i(0x07, 2, 0, 0, -4);
        self.map(1, map);
        self.call(LOOKUP);
        self.i(0xbf, r, 0, 0, 0);
        self.if_zero(r)
    }
    fn exit(&mut self, ret: i32) {
        self.i(0xb7, 0, 0, 0, ret);
        self.i(0x95, 0, 0, 0, 0);
    }
}

/// A whole program of this file: type, instructions, sleepable.
pub struct Shape {
    pub prog_type: ProgType,
    pub insns: Vec<Insn>,
    pub sleepable: bool,
}

/// Replaces a third of the programs by one of the shapes above (none when
/// the host lacks a kfunc a shape needs).
pub fn reshape(rng: &mut Rng) -> Option<Shape> {
    if !rng.chance(35) {
        return None;
    }
    // tc, where every kfunc of these shapes may be called.
    let plain = |insns| Shape {
        prog_type: ProgType::SCHED_CLS,
        insns,
        sleepable: false,
    };
    match rng.below(100) {
        0..=24 => var_offset(rng).map(plain),
        25..=29 => untrusted_arg(rng).map(plain),
        30..=49 => less_callback(rng).map(plain),
        50..=62 => deep_rbtree_add(rng).map(plain),
        63..=70 => pending_limit(rng).map(plain),
        71..=84 => task_work(rng).map(|insns| Shape {
            prog_type: ProgType::KPROBE,
            insns,
            sleepable: false,
        }),
        _ => uptr(rng).map(|insns| Shape {
            prog_type: ProgType::SYSCALL,
            insns,
            sleepable: true,
        }),
    }
}

/// bpf_spin_lock, bpf_res_spin_lock, bpf_kptr_xchg's slot or a graph root
/// at `value + (random & mask)` (a mask of 0 keeps the offset constant).
fn var_offset(rng: &mut Rng) -> Option<Vec<Insn>> {
    let mut b = B(Vec::new());
    b.call(PRANDOM);
    b.i(0xbf, 7, 0, 0, 0);
    let mask = rng.pick(&[8, 16, 8, 0, 0xff, 4]);
    b.i(0x57, 7, 0, 0, mask);
    let which = rng.below(5);
    let map = match which {
        0 => rng.pick(&[LOCK_MAP, bo::OBJS_MAP]),
        1 => bo::RES_LOCK_MAP,
        2 => rng.pick(&[bo::KPTRS_MAP, bo::OBJS_MAP]),
        _ => bo::OBJS_MAP,
    };
    let null = b.lookup(map, 6);
    b.i(0xbf, 1, 6, 0, 0);
    match which {
        0 => {
            b.i(0x0f, 1, 7, 0, 0);
            b.call(SPIN_LOCK);
            b.i(0xbf, 1, 6, 0, 0);
            b.i(0x0f, 1, 7, 0, 0);
            b.call(SPIN_UNLOCK);
        }
        1 => {
            b.i(0x0f, 1, 7, 0, 0);
            b.kcall("bpf_res_spin_lock")?;
            let failed = b.here();
            b.i(0x55, 0, 0, 0, 0);
            b.i(0xbf, 1, 6, 0, 0);
            b.i(0x0f, 1, 7, 0, 0);
            b.kcall("bpf_res_spin_unlock")?;
            b.land(failed);
        }
        2 => {
            let slot = if map == bo::OBJS_MAP {
                bo::OBJS_KPTR_OFF
            } else {
                0
            };
            b.i(0x07, 1, 0, 0, slot + 8 * rng.below(4) as i32);
            b.i(0x0f, 1, 7, 0, 0);
            b.i(0xb7, 2, 0, 0, 0);
            b.call(KPTR_XCHG);
            // Release what came out (a task, as the first slot holds).
            let none = b.if_zero(0);
            b.i(0xbf, 1, 0, 0, 0);
            b.kcall("bpf_task_release")?;
            b.land(none);
        }
        _ => {
            b.call(SPIN_LOCK);
            let (root, f) = if which == 3 {
                (
                    bo::OBJS_HEAD_OFF,
                    rng.pick(&["bpf_list_front", "bpf_list_back"]),
                )
            } else {
                (bo::OBJS_ROOT_OFF, "bpf_rbtree_first")
            };
            b.i(0xbf, 1, 6, 0, 0);
            b.i(0x07, 1, 0, 0, root);
            b.i(0x0f, 1, 7, 0, 0);
            b.kcall(f)?;
            b.i(0xbf, 1, 6, 0, 0);
            b.call(SPIN_UNLOCK);
        }
    }
    b.land(null);
    b.exit(0);
    Some(b.0)
}

/// main: a new node added to the one-entry map's tree under its lock with
/// a `less` callback that calls a graph kfunc on that tree (or another
/// map's, or drops, or reads): what the kernel refuses in the callback.
fn less_callback(rng: &mut Rng) -> Option<Vec<Insn>> {
    let mut b = B(Vec::new());
    let cb = rbtree_add_main(&mut b, rng, true)?;
    b.exit(0);
    b.func_at(cb);
    less_body(&mut b, rng)?;
    Some(b.0)
}

/// Allocates a node and adds it to [`OBJS1_MAP`]'s tree under its lock (or,
/// rarely, without it); returns the callback load to point at the `less`
/// body.
fn rbtree_add_main(b: &mut B, rng: &mut Rng, locked: bool) -> Option<usize> {
    let locked = locked && !rng.chance(5);
    b.i(0xb7, 1, 0, 0, bo::T_NODE);
    b.i(0xb7, 2, 0, 0, 0);
    b.kcall("bpf_obj_new_impl")?;
    let null = b.if_zero(0);
    b.i(0xbf, 6, 0, 0, 0);
    if locked {
        b.map_value(1, OBJS1_MAP, 0);
        b.call(SPIN_LOCK);
    }
    b.map_value(1, OBJS1_MAP, bo::OBJS_ROOT_OFF);
    b.i(0xbf, 2, 6, 0, 0);
    b.i(0x07, 2, 0, 0, bo::NODE_RB_OFF);
    let cb = b.func_ref(3);
    b.i(0xb7, 4, 0, 0, 0);
    b.i(0xb7, 5, 0, 0, bo::NODE_RB_OFF);
    b.kcall("bpf_rbtree_add_impl")?;
    if locked {
        b.map_value(1, OBJS1_MAP, 0);
        b.call(SPIN_UNLOCK);
    }
    b.land(null);
    Some(cb)
}

/// The `less(a, b)` callback: a graph kfunc, a drop or a read on its
/// nodes, returning 0 or 1.
fn less_body(b: &mut B, rng: &mut Rng) -> Option<()> {
    match rng.below(8) {
        0..=2 => {
            // remove/left/right(root, a) on the locked tree (or a lookup's
            // value, whose lock is not held).
            b.i(0xbf, 2, rng.pick(&[1, 1, 2]), 0, 0);
            if rng.chance(85) {
                b.map_value(1, OBJS1_MAP, bo::OBJS_ROOT_OFF);
            } else {
                b.i(0xbf, 7, 2, 0, 0);
                let null = b.lookup(bo::OBJS_MAP, 1);
                b.i(0x07, 1, 0, 0, bo::OBJS_ROOT_OFF);
                b.i(0xbf, 2, 7, 0, 0);
                let f = rng.pick(&["bpf_rbtree_remove", "bpf_rbtree_left"]);
                b.kcall(f)?;
                b.land(null);
                b.exit(0);
                return Some(());
            }
            let f = rng.pick(&["bpf_rbtree_remove", "bpf_rbtree_left", "bpf_rbtree_right"]);
            b.kcall(f)?;
        }
        3 => {
            // first/root(root): no node argument.
            b.map_value(1, OBJS1_MAP, bo::OBJS_ROOT_OFF);
            b.kcall(rng.pick(&["bpf_rbtree_first", "bpf_rbtree_root"]))?;
        }
        4 => {
            // add(root, a, less) again, from the callback.
            b.i(0xbf, 2, 1, 0, 0);
            b.map_value(1, OBJS1_MAP, bo::OBJS_ROOT_OFF);
            let cb = b.func_ref(3);
            b.i(0xb7, 4, 0, 0, 0);
            b.i(0xb7, 5, 0, 0, bo::NODE_RB_OFF);
            b.kcall("bpf_rbtree_add_impl")?;
            b.exit(0);
            b.func_at(cb);
            b.exit(0);
            return Some(());
        }
        5 => {
            // A drop or refcount-acquire of the non-owning node.
            b.i(0x07, 1, 0, 0, -bo::NODE_RB_OFF);
            b.i(0xb7, 2, 0, 0, 0);
            b.kcall(rng.pick(&["bpf_obj_drop_impl", "bpf_refcount_acquire_impl"]))?;
        }
        6 => {
            // A list kfunc on the value's list.
            b.map_value(1, OBJS1_MAP, bo::OBJS_HEAD_OFF);
            b.kcall(rng.pick(&["bpf_list_front", "bpf_list_pop_front"]))?;
        }
        _ => {
            // a->key < b->key
            b.i(0x79, 3, 1, -(bo::NODE_RB_OFF as i16), 0);
            b.i(0x79, 4, 2, -(bo::NODE_RB_OFF as i16), 0);
            b.i(0xb7, 0, 0, 0, 1);
            b.i(0xad, 3, 4, 1, 0);
            b.i(0xb7, 0, 0, 0, 0);
            b.i(0x95, 0, 0, 0, 0);
            return Some(());
        }
    }
    b.exit(rng.pick(&[0, 1, 1, 2]));
    Some(())
}

/// bpf_rbtree_add in frame 6, 7 or 8 (a chain of static calls): in the
/// eighth its callback would be a ninth frame.
fn deep_rbtree_add(rng: &mut Rng) -> Option<Vec<Insn>> {
    let depth = rng.pick(&[7u32, 7, 7, 6, 5]);
    let mut b = B(Vec::new());
    for _ in 0..depth {
        let c = b.call_ref();
        b.exit(0);
        b.func_at(c);
    }
    let cb = rbtree_add_main(&mut b, rng, true)?;
    b.exit(0);
    b.func_at(cb);
    if rng.chance(70) {
        b.exit(0);
    } else {
        less_body(&mut b, rng)?;
    }
    Some(b.0)
}

/// `n` pending paths (one per `if r6 == 5` on an unknown r6), then a call
/// that queues one more: over 8,192 it fails.
fn pending_limit(rng: &mut Rng) -> Option<Vec<Insn>> {
    let n = rng.pick(&[8192u32, 8192, 8191, 8193]);
    let tail = rng.below(4);
    let map = match tail {
        0 => bo::RES_LOCK_MAP,
        1 => WQ_MAP,
        2 => bo::TIMER_MAP,
        _ => LOCK_MAP,
    };
    let mut b = B(Vec::new());
    let null = b.lookup(map, 7);
    b.call(PRANDOM);
    b.i(0xbf, 6, 0, 0, 0);
    for _ in 0..n {
        b.i(0x15, 6, 0, 1, 5);
        b.i(0xa7, 6, 0, 0, 1);
    }
    let mut cb = None;
    match tail {
        0 => {
            b.i(0xbf, 1, 7, 0, 0);
            b.kcall("bpf_res_spin_lock")?;
            let failed = b.here();
            b.i(0x55, 0, 0, 0, 0);
            b.i(0xbf, 1, 7, 0, 0);
            b.kcall("bpf_res_spin_unlock")?;
            b.land(failed);
        }
        1 => {
            b.i(0xbf, 1, 7, 0, 0);
            cb = Some(b.func_ref(2));
            b.i(0xb7, 3, 0, 0, 0);
            b.i(0xb7, 4, 0, 0, 0);
            b.kcall("bpf_wq_set_callback_impl")?;
        }
        2 => {
            b.i(0xbf, 1, 7, 0, 0);
            cb = Some(b.func_ref(2));
            b.call(TIMER_SET_CALLBACK);
        }
        _ => {
            b.i(0xb7, 1, 0, 0, 4);
            cb = Some(b.func_ref(2));
            b.i(0xb7, 3, 0, 0, 0);
            b.i(0xb7, 4, 0, 0, 0);
            b.call(LOOP);
        }
    }
    b.land(null);
    b.exit(0);
    if let Some(cb) = cb {
        b.func_at(cb);
        b.exit(0);
    }
    Some(b.0)
}

/// A BTF pointer passed where bpf_skb_ct_lookup (no trusted-args flag)
/// takes `struct bpf_sock_tuple *`: bpf_rdonly_cast's (untrusted) of that
/// struct or another, or the context cast to `struct sk_buff`.
fn untrusted_arg(rng: &mut Rng) -> Option<Vec<Insn>> {
    let mut b = B(Vec::new());
    b.i(0xbf, 6, 1, 0, 0);
    if rng.chance(80) {
        let name = rng.pick(&["bpf_sock_tuple", "bpf_sock_tuple", "sk_buff", "task_struct"]);
        let id = super::kfunc_blocks::struct_id(name)?;
        b.i(0xb7, 2, 0, 0, id);
        b.kcall("bpf_rdonly_cast")?;
    } else {
        b.kcall("bpf_cast_to_kern_ctx")?;
    }
    b.i(0xbf, 2, 0, 0, 0);
    b.i(0xbf, 1, 6, 0, 0);
    b.i(0xb7, 3, 0, 0, 12);
    b.i(0x7a, 10, 0, -16, 0);
    b.i(0x7a, 10, 0, -8, 0);
    b.i(0xbf, 4, 10, 0, 0);
    b.i(0x07, 4, 0, 0, -16);
    b.i(0xb7, 5, 0, 0, 16);
    b.kcall("bpf_skb_ct_lookup")?;
    let none = b.if_zero(0);
    b.i(0xbf, 1, 0, 0, 0);
    b.kcall("bpf_ct_release")?;
    b.land(none);
    b.exit(0);
    Some(b.0)
}

/// bpf_task_work_schedule_{signal,resume}_impl on the current task with a
/// value of one task-work map and that map or the other as `map__map`,
/// sometimes after 8,192 pending paths (its callback cannot be queued).
fn task_work(rng: &mut Rng) -> Option<Vec<Insn>> {
    let mut b = B(Vec::new());
    b.call(CURRENT_TASK_BTF);
    b.i(0xbf, 6, 0, 0, 0);
    let map = rng.pick(&[TW_MAP, TW2_MAP]);
    let null = b.lookup(map, 7);
    if rng.chance(25) {
        b.call(PRANDOM);
        b.i(0xbf, 8, 0, 0, 0);
        for _ in 0..rng.pick(&[8192u32, 8191]) {
            b.i(0x15, 8, 0, 1, 5);
            b.i(0xa7, 8, 0, 0, 1);
        }
    }
    b.i(0xbf, 1, 6, 0, 0);
    b.i(0xbf, 2, 7, 0, 0);
    let other = if rng.chance(50) {
        map
    } else {
        TW_MAP + TW2_MAP - map
    };
    b.map(3, other);
    let cb = b.func_ref(4);
    b.i(0xb7, 5, 0, 0, 0);
    b.kcall(rng.pick(&[
        "bpf_task_work_schedule_signal_impl",
        "bpf_task_work_schedule_resume_impl",
    ]))?;
    b.land(null);
    b.exit(0);
    b.func_at(cb);
    b.exit(0);
    Some(b.0)
}

/// A task storage value of the current task, its `__uptr` loaded, stored
/// (a register, an immediate), used by an atomic or by a sign-extending
/// load, or its plain field written.
fn uptr(rng: &mut Rng) -> Option<Vec<Insn>> {
    let mut b = B(Vec::new());
    b.call(CURRENT_TASK_BTF);
    b.i(0xbf, 2, 0, 0, 0);
    b.map(1, UPTR_MAP);
    b.i(0xb7, 3, 0, 0, 0);
    b.i(0xb7, 4, 0, 0, 1);
    b.call(TASK_STORAGE_GET);
    let null = b.if_zero(0);
    let off = rng.pick(&[0i16, 0, 0, 8, 4]);
    match rng.below(7) {
        0 | 1 => {
            // Load it, then read through it when set.
            b.i(0x79, 1, 0, off, 0);
            let unset = b.if_zero(1);
            let at = rng.pick(&[0i16, 8, 16, -8]);
            b.i(0x79, 2, 1, at, 0);
            b.land(unset);
        }
        2 => b.i(0x7a, 0, 0, off, 0),
        3 => {
            b.i(0xb7, 1, 0, 0, 0);
            b.i(0x7b, 0, 1, off, 0);
        }
        4 => {
            b.i(0xb7, 1, 0, 0, 0);
            b.i(0xdb, 0, 1, off, rng.pick(&[0, 0xe1, 0xf1]));
        }
        5 => b.i(0x99, 1, 0, off, 0),
        _ => b.i(0x72, 0, 0, off, 1),
    }
    b.land(null);
    b.exit(0);
    Some(b.0)
}

/// Whether a program names one of this file's maps.
fn names_map(insns: &[Insn]) -> bool {
    insns.windows(2).any(|w| {
        w[0].is_ld_imm64()
            && matches!(w[0].src, 1 | 2 | 5 | 6)
            && (FIRST_MAP..=LAST_MAP).contains(&w[0].imm)
    })
}

fn objs1_map() -> MapDef {
    let mut m = MapDef::new("objs1", MapType::ARRAY, 4, bo::OBJS_SIZE as u32, 1);
    m.btf_key_type_id = 1;
    m.btf_value_type_id = bo::T_OBJS as u32;
    m
}

fn tw_map(name: &str) -> MapDef {
    let mut m = MapDef::new(name, MapType::ARRAY, 4, TW_VALUE_SIZE, 16);
    m.btf_key_type_id = 1;
    m.btf_value_type_id = T_TW_VALUE;
    m
}

fn uptr_map() -> MapDef {
    let mut m = MapDef::new("uptrs", MapType::TASK_STORAGE, 4, UPTR_VALUE_SIZE, 0);
    m.map_flags = bpfvet_isa::uapi::BPF_F_NO_PREALLOC;
    m.btf_key_type_id = 1;
    m.btf_value_type_id = T_UPTR_VALUE;
    m
}

/// This file's maps, when some program of `progs` names one, after plain
/// arrays from `present` (the maps before them) up to [`FIRST_MAP`].
pub fn maps<'a>(mut progs: impl Iterator<Item = &'a [Insn]>, present: usize) -> Vec<MapDef> {
    if !progs.any(names_map) {
        return Vec::new();
    }
    (present..FIRST_MAP as usize)
        .map(|k| MapDef::new(&format!("pad{k}"), MapType::ARRAY, 4, 8, 1))
        .chain([objs1_map(), uptr_map(), tw_map("tw"), tw_map("tw2")])
        .collect()
}

/// `# map:` lines of a case for [`maps`] after `present` others.
pub fn case_maps(insns: &[Insn], present: usize) -> Vec<String> {
    if !names_map(insns) {
        return Vec::new();
    }
    let mut v = vec!["array 4 8 1".to_string(); (FIRST_MAP as usize).saturating_sub(present)];
    v.push(format!("array 4 {} 1 btf={}", bo::OBJS_SIZE, bo::T_OBJS));
    v.push(format!(
        "task_storage 4 {UPTR_VALUE_SIZE} 0 no_prealloc btf={T_UPTR_VALUE}"
    ));
    v.push(format!("array 4 {TW_VALUE_SIZE} 16 btf={T_TW_VALUE}"));
    v.push(format!("array 4 {TW_VALUE_SIZE} 16 btf={T_TW_VALUE}"));
    v
}

/// Whether a program's case needs the fuzz BTF (`# btf: fuzz`).
pub fn needs_fuzz_btf(insns: &[Insn]) -> bool {
    names_map(insns)
}
