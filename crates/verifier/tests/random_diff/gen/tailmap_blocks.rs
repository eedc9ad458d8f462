//! One bpf_tail_call reached with two prog arrays (feature `tailmap`):
//! the harness's prog array on one path, a second one (map index
//! [`PROG_ARRAY2_MAP`]) or the same one on the other. Maps made by a loader
//! without CAP_PERFMON do not bypass Spectre v1, so do_misc_fixups masks
//! the call's index with its one map's index_mask and refuses a call site
//! that passed two maps (`tail_call abusing map_ptr`); as root both maps
//! bypass it and the call is accepted (an indirect jump, not a poke).

use super::{Gen, ARRAY_MAP, PROG_ARRAY_MAP};
use bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX;
use bpfvet_isa::Insn;

/// The second prog array's index in the harness's maps.
pub const PROG_ARRAY2_MAP: i32 = 100;
/// Its slots: not the first one's 16, so a key can be in range of one
/// map only.
const PROG_ARRAY2_ENTRIES: u32 = 4;

const TAIL_CALL: i32 = 12;

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
