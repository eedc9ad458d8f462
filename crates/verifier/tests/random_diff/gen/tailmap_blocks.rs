//! One bpf_tail_call reached with two prog arrays (feature `tailmap`):
//! the harness's prog array on one path, a second one (map index
//! [`PROG_ARRAY2_MAP`]) or the same one on the other. Maps made by a loader
//! without CAP_PERFMON do not bypass Spectre v1, so do_misc_fixups masks
//! the call's index with its one map's index_mask and refuses a call site
//! that passed two maps (`tail_call abusing map_ptr`); as root both maps
//! bypass it and the call is accepted (an indirect jump, not a poke).
//!
//! Also three sites the swarm's other blocks reach only by a long chain of
//! draws (kept here, drawn under their blocks' features):
//! - a subprogram holding a tail call below a main frame of 256 bytes or
//!   more (`tail_calls are not allowed when call stack of previous frames
//!   is N bytes`; `calls` and `tail_calls`);
//! - bpf_kptr_xchg into a map value or an allocated object without a kptr
//!   field (`R1 has no valid kptr`; `btf_objects`);
//! - a per-CPU allocated object passed to bpf_obj_drop (`arg#0 expected
//!   for bpf_percpu_obj_drop_impl()`; `btf_objects`).

use super::btf_objects as bo;
use super::{Gen, Kind, Rng, ARRAY_MAP, LOCK_MAP, PROG_ARRAY_MAP};
use bpfvet_isa::opcode::{BPF_PSEUDO_CALL, BPF_PSEUDO_MAP_IDX};
use bpfvet_isa::Insn;

/// The second prog array's index in the harness's maps.
pub const PROG_ARRAY2_MAP: i32 = 100;
/// Its slots: not the first one's 16, so a key can be in range of one
/// map only.
const PROG_ARRAY2_ENTRIES: u32 = 4;

const TAIL_CALL: i32 = 12;
const MAP_LOOKUP_ELEM: i32 = 1;
const KPTR_XCHG: i32 = 194;

/// Whether a program names the second prog array.
fn names_second_prog_array(insns: &[Insn]) -> bool {
    insns.windows(2).any(|w| {
        w[0].is_ld_imm64() && matches!(w[0].src, 1 | 2 | 5 | 6) && w[0].imm == PROG_ARRAY2_MAP
    })
}

/// The harness maps from `have` (the object's map count so far) on when a
/// program names the second prog array: one-entry arrays up to
/// [`PROG_ARRAY2_MAP`], then it.
pub fn maps<'a>(
    mut progs: impl Iterator<Item = &'a [Insn]>,
    have: usize,
) -> Vec<bpfvet_object::MapDef> {
    use bpfvet_isa::uapi::MapType;
    use bpfvet_object::MapDef;
    if !progs.any(names_second_prog_array) {
        return Vec::new();
    }
    let mut maps: Vec<MapDef> = (have..PROG_ARRAY2_MAP as usize)
        .map(|k| MapDef::new(&format!("pad{k}"), MapType::ARRAY, 4, 8, 1))
        .collect();
    maps.push(MapDef::new(
        "progs2",
        MapType::PROG_ARRAY,
        4,
        4,
        PROG_ARRAY2_ENTRIES,
    ));
    maps
}

/// `# map:` lines of a case for [`maps`] (after `have` others).
pub fn case_maps(insns: &[Insn], have: usize) -> Vec<String> {
    if !names_second_prog_array(insns) {
        return Vec::new();
    }
    let mut lines =
        vec!["array 4 8 1".to_string(); (PROG_ARRAY2_MAP as usize).saturating_sub(have)];
    lines.push(format!("prog_array 4 4 {PROG_ARRAY2_ENTRIES}"));
    lines
}

impl Gen {
    /// `r2 = progs; if <scalar> goto +2; r2 = <other map>; tail_call`.
    pub(super) fn tail_call_two_maps(&mut self) {
        let Some(ctx) = self.ctx_reg() else {
            return self.alu();
        };
        // The branch's scalar, kept out of r1..r3.
        let mut cond = self.scalar();
        if (1..=3).contains(&cond) {
            self.emit(Insn::new(0xbf, 0, cond, 0, 0));
            cond = 0;
        }
        self.emit(Insn::new(0xbf, 1, ctx, 0, 0));
        if self.rng.chance(40) {
            let s = self.scalar();
            self.emit(Insn::new(0xbf, 3, s, 0, 0));
        } else {
            let key = self.rng.pick(&[0, 1, 3, 5]);
            self.emit(Insn::new(0xb7, 3, 0, 0, key));
        }
        let first = if self.rng.chance(50) {
            PROG_ARRAY_MAP
        } else {
            PROG_ARRAY2_MAP
        };
        let other = match self.rng.below(10) {
            0 => first,
            1 if self.rng.chance(self.mistakes * 3) => ARRAY_MAP,
            _ if first == PROG_ARRAY_MAP => PROG_ARRAY2_MAP,
            _ => PROG_ARRAY_MAP,
        };
        self.emit(Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, first));
        self.emit(Insn::new(0, 0, 0, 0, 0));
        let op = self.rng.pick(&[0x15, 0x55, 0x25, 0xa5]);
        let imm = self.rng.pick(&[0, 1, 7]);
        self.emit(Insn::new(op, cond, 0, 2, imm));
        self.emit(Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, other));
        self.emit(Insn::new(0, 0, 0, 0, 0));
        self.emit(Insn::new(0x85, 0, 0, 0, TAIL_CALL));
        self.clobber();
    }
}

/// Puts a main frame of about `depth` bytes and a call to a new last
/// subprogram holding a tail call in front of `insns` (one function or
/// more, none with func_info): `r9 = r1; *(u64 *)(r10 - depth) = 0;
/// call sub; r1 = r9; <insns>` and `sub: r2 = progs; r3 = k; tail_call;
/// r0 = 0; exit`. From 256 bytes the kernel refuses the tail call.
pub fn tail_call_below_big_frame(rng: &mut Rng, insns: &mut Vec<Insn>) {
    let depth = rng.pick(&[256, 264, 320, 504, 248, 128]);
    let prefix_len = 4;
    let sub_at = prefix_len + insns.len();
    let call_at = 2;
    let mut out = vec![
        Insn::new(0xbf, 9, 1, 0, 0),
        Insn::new(0x7a, 10, 0, -depth as i16, 0),
        Insn::new(0x85, 0, BPF_PSEUDO_CALL, 0, (sub_at - call_at - 1) as i32),
        Insn::new(0xbf, 1, 9, 0, 0),
    ];
    out.append(insns);
    out.extend([
        Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, PROG_ARRAY_MAP),
        Insn::new(0, 0, 0, 0, 0),
        Insn::new(0xb7, 3, 0, 0, rng.pick(&[0, 1, 20])),
        Insn::new(0x85, 0, 0, 0, TAIL_CALL),
        Insn::new(0xb7, 0, 0, 0, 0),
        Insn::new(0x95, 0, 0, 0, 0),
    ]);
    *insns = out;
}

impl Gen {
    /// One of the two object sites: bpf_kptr_xchg where no kptr field
    /// is, or a per-CPU object dropped with bpf_obj_drop.
    pub(super) fn kptr_and_percpu_drop_sites(&mut self) {
        self.prog_btf = true;
        let ok = if self.rng.chance(50) {
            self.xchg_without_kptr_field()
        } else {
            self.percpu_obj_plain_drop()
        };
        for r in [6u8, 7, 8, 9] {
            if !matches!(self.kinds[r as usize], Kind::Ctx) {
                self.set(r, Kind::Uninit);
            }
        }
        self.clobber();
        if !ok {
            self.alu();
        }
    }

    /// `v = lookup(locked, 0)` (a map whose BTF value holds only a
    /// bpf_spin_lock) or `v = bpf_obj_new(plain)`, then
    /// `bpf_kptr_xchg(v + off, NULL)`.
    fn xchg_without_kptr_field(&mut self) -> bool {
        let v = 8;
        if self.rng.chance(50) {
            self.emit(Insn::new(0x7a, 10, 0, -8, 0));
            self.emit(Insn::new(0xbf, 2, 10, 0, 0));
            self.emit(Insn::new(0x07, 2, 0, 0, -8));
            self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, LOCK_MAP));
            self.emit(Insn::new(0, 0, 0, 0, 0));
            self.emit(Insn::new(0x85, 0, 0, 0, MAP_LOOKUP_ELEM));
        } else {
            self.emit(Insn::new(0xb7, 1, 0, 0, bo::T_PLAIN));
            self.emit(Insn::new(0xb7, 2, 0, 0, 0));
            if !self.kfunc("bpf_obj_new_impl") {
                return false;
            }
        }
        self.emit(Insn::new(0xbf, v, 0, 0, 0));
        let skip = self.insns.len();
        self.emit(Insn::new(0x15, v, 0, 0, 0));
        self.emit(Insn::new(0xbf, 1, v, 0, 0));
        let off = self.rng.pick(&[0, 8, 16]);
        if off != 0 {
            self.emit(Insn::new(0x07, 1, 0, 0, off));
        }
        self.emit(Insn::new(0xb7, 2, 0, 0, 0));
        self.emit(Insn::new(0x85, 0, 0, 0, KPTR_XCHG));
        self.insns[skip].off = (self.insns.len() - skip - 1) as i16;
        true
    }

    /// `p = bpf_percpu_obj_new(plain); if p { bpf_obj_drop(p) }`.
    fn percpu_obj_plain_drop(&mut self) -> bool {
        let p = 8;
        self.emit(Insn::new(0xb7, 1, 0, 0, bo::T_PLAIN));
        self.emit(Insn::new(0xb7, 2, 0, 0, 0));
        if !self.kfunc("bpf_percpu_obj_new_impl") {
            return false;
        }
        self.emit(Insn::new(0xbf, p, 0, 0, 0));
        let skip = self.insns.len();
        self.emit(Insn::new(0x15, p, 0, 0, 0));
        self.emit(Insn::new(0xbf, 1, p, 0, 0));
        self.emit(Insn::new(0xb7, 2, 0, 0, 0));
        if !self.kfunc("bpf_obj_drop_impl") {
            return false;
        }
        self.insns[skip].off = (self.insns.len() - skip - 1) as i16;
        true
    }
}
