//! Qdisc_ops struct_ops programs for a guest built with bpf_qdisc
//! (feature `qdisc`, batch.sh `KERNEL=6.18` only: the host has no
//! Qdisc_ops). enqueue's stub names its skb `__ref`: the program holds
//! that reference from entry, so bodies release it once (bpf_kfree_skb,
//! bpf_qdisc_skb_drop), twice, on one path only, or never; read the
//! context slot again after the release; tail call; read and write skb and
//! Qdisc fields the type lets programs write and others; and call the
//! qdisc kfuncs from members whose set has them and from others. Members
//! and kfuncs are resolved by name in the guest's BTF.

use super::kfunc_blocks::{kfunc_id, vmlinux};
use super::{Rng, ARRAY_MAP, PROG_ARRAY_MAP};
use bpfvet_isa::opcode::{BPF_PSEUDO_KFUNC_CALL, BPF_PSEUDO_MAP_IDX};
use bpfvet_isa::Insn;
use bpfvet_object::btf::{Btf, Kind};
use bpfvet_object::StructOpsMember;

/// Members, weighted towards enqueue (the one with a `__ref` argument).
const MEMBERS: &[&str] = &[
    "enqueue", "enqueue", "enqueue", "enqueue", "enqueue", "init", "reset", "destroy", "dequeue",
];

/// The qdisc kfuncs and one the set does not take from programs.
const KFUNCS: &[&str] = &[
    "bpf_kfree_skb",
    "bpf_qdisc_skb_drop",
    "bpf_skb_get_hash",
    "bpf_qdisc_watchdog_schedule",
    "bpf_qdisc_bstats_update",
    "bpf_qdisc_init_prologue",
    "bpf_qdisc_reset_destroy_epilogue",
];

/// Fields written and read: (struct, member, writable by bpf_qdisc).
const FIELDS: &[(&str, &str, bool)] = &[
    ("sk_buff", "tstamp", true),
    ("sk_buff", "cb", true),
    ("sk_buff", "len", false),
    ("sk_buff", "mark", false),
    ("sk_buff", "priority", false),
    ("Qdisc", "limit", true),
    ("Qdisc", "q", true),
    ("Qdisc", "qstats", true),
    ("Qdisc", "flags", false),
    ("Qdisc", "handle", false),
];

const TAIL_CALL: i32 = 12;
const KTIME_GET_NS: i32 = 5;

/// Registers: r6 ctx, r7 the skb, r8 the Qdisc, r9 enqueue's to_free.
const CTX: u8 = 6;
const SKB: u8 = 7;
const SCH: u8 = 8;
const TO_FREE: u8 = 9;

/// A Qdisc_ops program: its member, body and sleepable flag; None where
/// the BTF has no Qdisc_ops.
pub(super) fn program(rng: &mut Rng) -> Option<(StructOpsMember, Vec<Insn>, bool)> {
    let btf = vmlinux()?;
    let name = rng.pick(MEMBERS);
    let member = StructOpsMember::by_ids(btf, "Qdisc_ops", name)?;
    let mut q = Body {
        rng,
        btf,
        insns: Vec::new(),
        enqueue: name == "enqueue",
        skb_live: false,
        to_free: false,
    };
    q.body();
    let sleepable = q.rng.chance(3);
    Some((member, q.insns, sleepable))
}

struct Body<'a> {
    rng: &'a mut Rng,
    btf: &'static Btf,
    insns: Vec<Insn>,
    enqueue: bool,
    /// r7 holds the skb whose reference is still held.
    skb_live: bool,
    /// r9 holds enqueue's to_free list.
    to_free: bool,
}

impl Body<'_> {
    fn emit(&mut self, i: Insn) {
        self.insns.push(i);
    }

    fn body(&mut self) {
        self.emit(Insn::new(0xbf, CTX, 1, 0, 0));
        // The Qdisc: enqueue's second argument, the others' first.
        let sch_off = if self.enqueue { 8 } else { 0 };
        self.emit(Insn::new(0x79, SCH, CTX, sch_off, 0));
        if self.enqueue {
            self.load_skb();
            if self.rng.chance(80) {
                self.load_to_free();
            }
        }
        for _ in 0..1 + self.rng.below(5) {
            match self.rng.below(12) {
                0..=2 => self.field_access(),
                3..=5 => self.release(),
                6 => self.load_skb(),
                7 => self.kfunc(),
                8 => self.tail_call(),
                9 => self.helper(),
                10 => self.release_on_one_path(),
                _ => self.kfunc(),
            }
        }
        // Most programs hand the skb back before returning.
        if self.enqueue && self.skb_live && self.rng.chance(75) {
            self.release();
        }
        let ret = self.rng.pick(&[0, 0, 1, 2, -1]);
        self.emit(Insn::new(0xb7, 0, 0, 0, ret));
        self.emit(Insn::new(0x95, 0, 0, 0, 0));
    }

    /// `r7 = ctx[0]`: the `__ref` skb (again after a release: the context
    /// slot then names a reference the program no longer holds); at times
    /// from another width or slot.
    fn load_skb(&mut self) {
        let (off, code) = if self.rng.chance(90) {
            (0, 0x79)
        } else {
            self.rng
                .pick(&[(0, 0x61), (4, 0x61), (8, 0x79), (24, 0x79)])
        };
        self.emit(Insn::new(code, SKB, CTX, off, 0));
        self.skb_live = self.enqueue && off == 0 && code == 0x79;
    }

    /// `r9 = ctx[16]`: enqueue's to_free list, at any width.
    fn load_to_free(&mut self) {
        let (off, code) = if self.rng.chance(85) {
            (16, 0x79)
        } else {
            self.rng
                .pick(&[(16, 0x61), (20, 0x61), (17, 0x71), (16, 0x69)])
        };
        self.emit(Insn::new(code, TO_FREE, CTX, off, 0));
        self.to_free = true;
    }

    /// The skb register where the member has one, else the Qdisc (whose
    /// type the kfuncs refuse): other members never load r7.
    fn skb_or_sch(&self) -> u8 {
        if self.enqueue {
            SKB
        } else {
            SCH
        }
    }

    /// Reads or writes a field of the skb or the Qdisc, in or beside the
    /// places bpf_qdisc lets programs write.
    fn field_access(&mut self) {
        let (st, name, _) = self.rng.pick(FIELDS);
        let Some((off, size)) = member(self.btf, st, name) else {
            return;
        };
        let base = if st == "sk_buff" { SKB } else { SCH };
        if base == SKB && !self.enqueue {
            return;
        }
        // Into the control block's private data, the queue's length.
        let off = match name {
            "cb" => off + 8 + self.rng.below(24) as i32,
            "q" => off + self.rng.pick(&[16, 16, 0, 20]),
            _ => off,
        };
        let off = match self.rng.below(10) {
            0 => off + size,
            1 => off + 1,
            2 if size > 8 => off + size - 4,
            _ => off,
        };
        let bytes = self.rng.pick(&[8, 4, 4, 2, 1]);
        let sz = match bytes {
            8 => 0x18,
            4 => 0x00,
            2 => 0x08,
            _ => 0x10,
        };
        match self.rng.below(4) {
            0 => self.emit(Insn::new(0x61 | sz, 0, base, off as i16, 0)),
            1 => self.emit(Insn::new(0x62 | sz, base, 0, off as i16, 7)),
            _ => {
                self.emit(Insn::new(0xb7, 1, 0, 0, 5));
                self.emit(Insn::new(0x63 | sz, base, 1, off as i16, 0));
            }
        }
    }

    /// bpf_kfree_skb(skb) or bpf_qdisc_skb_drop(skb, to_free); again after
    /// a release at times (r7 is then no pointer).
    fn release(&mut self) {
        let drop = self.rng.chance(35);
        let name = if drop {
            "bpf_qdisc_skb_drop"
        } else {
            "bpf_kfree_skb"
        };
        let Some(id) = kfunc_id(name) else {
            return;
        };
        let arg = if self.rng.chance(90) {
            self.skb_or_sch()
        } else if self.to_free {
            self.rng.pick(&[SCH, TO_FREE, CTX])
        } else {
            self.rng.pick(&[SCH, CTX])
        };
        self.emit(Insn::new(0xbf, 1, arg, 0, 0));
        if drop {
            let list = match (self.to_free, self.rng.chance(85)) {
                (true, true) => TO_FREE,
                _ => self.skb_or_sch(),
            };
            self.emit(Insn::new(0xbf, 2, list, 0, 0));
        }
        self.emit(Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, id));
        if arg == SKB {
            self.skb_live = false;
        }
    }

    /// The skb released on one side of a branch on its length only.
    fn release_on_one_path(&mut self) {
        let Some(id) = kfunc_id("bpf_kfree_skb") else {
            return;
        };
        if !self.enqueue {
            return;
        }
        self.emit(Insn::new(0x85, 0, 0, 0, KTIME_GET_NS));
        self.emit(Insn::new(0x55, 0, 0, 2, 0));
        self.emit(Insn::new(0xbf, 1, SKB, 0, 0));
        self.emit(Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, id));
    }

    /// A qdisc kfunc with plausible arguments, from whichever member.
    fn kfunc(&mut self) {
        let name = self.rng.pick(KFUNCS);
        let Some(id) = kfunc_id(name) else {
            return;
        };
        match name {
            "bpf_kfree_skb" | "bpf_qdisc_skb_drop" => return self.release(),
            "bpf_skb_get_hash" => self.emit(Insn::new(0xbf, 1, self.skb_or_sch(), 0, 0)),
            "bpf_qdisc_watchdog_schedule" => {
                self.emit(Insn::new(0xbf, 1, SCH, 0, 0));
                self.emit(Insn::new(0xb7, 2, 0, 0, 1000));
                self.emit(Insn::new(0xb7, 3, 0, 0, 0));
            }
            "bpf_qdisc_bstats_update" => {
                self.emit(Insn::new(0xbf, 1, SCH, 0, 0));
                self.emit(Insn::new(0xbf, 2, self.skb_or_sch(), 0, 0));
            }
            "bpf_qdisc_init_prologue" => {
                self.emit(Insn::new(0xbf, 1, SCH, 0, 0));
                self.emit(Insn::new(0xb7, 2, 0, 0, 0));
            }
            _ => self.emit(Insn::new(0xbf, 1, SCH, 0, 0)),
        }
        self.emit(Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, id));
    }

    /// bpf_tail_call(ctx, prog_array, 0): refused for a program with a
    /// `__ref` argument, wherever it stands.
    fn tail_call(&mut self) {
        self.emit(Insn::new(0xbf, 1, CTX, 0, 0));
        let map = if self.rng.chance(90) {
            PROG_ARRAY_MAP
        } else {
            ARRAY_MAP
        };
        self.emit(Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, map));
        self.emit(Insn::new(0, 0, 0, 0, 0));
        self.emit(Insn::new(0xb7, 3, 0, 0, 0));
        self.emit(Insn::new(0x85, 0, 0, 0, TAIL_CALL));
    }

    /// A base helper.
    fn helper(&mut self) {
        self.emit(Insn::new(0x85, 0, 0, 0, KTIME_GET_NS));
    }
}

/// Byte offset and size of `name` in struct `st`, through anonymous
/// members (sk_buff's tstamp is in a union).
fn member(btf: &Btf, st: &str, name: &str) -> Option<(i32, i32)> {
    fn find(btf: &Btf, id: u32, name: &str, depth: u32) -> Option<(i32, i32)> {
        let (_, t) = btf.skip_mods_and_typedefs(id)?;
        if depth > 8 || !matches!(t.kind, Kind::Struct | Kind::Union) {
            return None;
        }
        for m in btf.members(t) {
            let mname = btf.str_at(m.name_off).unwrap_or("");
            if mname == name {
                let size = btf.resolve_size(m.type_id).ok()? as i32;
                return Some(((m.bit_offset / 8) as i32, size.max(1)));
            }
            if mname.is_empty() {
                if let Some((o, l)) = find(btf, m.type_id, name, depth + 1) {
                    return Some(((m.bit_offset / 8) as i32 + o, l));
                }
            }
        }
        None
    }
    find(btf, btf.find_by_name_kind(st, Kind::Struct)?, name, 0)
}
