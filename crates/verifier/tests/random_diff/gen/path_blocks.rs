//! Paths the other blocks keep apart (feature `paths`):
//!
//! - a callback's r0 of any kind the generator makes, where the other
//!   blocks always return 0 or 1 (or a constant out of the callback's
//!   range). prepare_func_exit refuses a stack pointer first (`cannot
//!   return stack pointer to the caller`), then anything else that is not
//!   a scalar (`R0 not a scalar value`), then a scalar out of range;
//! - one `ptr += scalar` reached from two paths whose offsets differ in
//!   range (or one is a constant): below CAP_PERFMON the instruction gets
//!   one Spectre mask, so the second path's other limit is refused (`tried
//!   to add from different maps, paths or scalars`); as root both pass.

use super::{Gen, Kind, ARRAY_MAP, HASH_MAP};
use bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX;
use bpfvet_isa::Insn;

const MAP_LOOKUP_ELEM: i32 = 1;

impl Gen {
    /// `r0 = <any kind>; exit` closing a callback body.
    pub(super) fn callback_return_any(&mut self) {
        self.load_kind_into(0);
        self.emit(Insn::new(0x95, 0, 0, 0, 0));
    }

    /// Looks up key 0 of `map` into `dst` (r6..r9), NULL-checked: the
    /// `if dst == 0` jump is left for the caller to patch (its index is
    /// returned).
    fn lookup_key0_into(&mut self, map: i32, dst: u8) -> usize {
        self.emit(Insn::new(0x7a, 10, 0, -8, 0));
        self.emit(Insn::new(0xbf, 2, 10, 0, 0));
        self.emit(Insn::new(0x07, 2, 0, 0, -8));
        self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, map));
        self.emit(Insn::new(0, 0, 0, 0, 0));
        self.emit(Insn::new(0x85, 0, 0, 0, MAP_LOOKUP_ELEM));
        self.emit(Insn::new(0xbf, dst, 0, 0, 0));
        self.insns.len()
    }

    /// Two map value pointers (or one at two offsets) meet at one
    /// `ptr +=/-= variable scalar`, then a byte is read through it.
    pub(super) fn masks_from_two_paths(&mut self) {
        let (a, b, p, off) = (6u8, 7u8, 8u8, 9u8);
        let other_map = self.rng.chance(40);
        let null_a = self.lookup_key0_into(ARRAY_MAP, a);
        self.emit(Insn::new(0x15, a, 0, 0, 0));
        let null_b = if other_map {
            let j = self.lookup_key0_into(HASH_MAP, b);
            self.emit(Insn::new(0x15, b, 0, 0, 0));
            Some(j)
        } else {
            None
        };
        // A variable offset in [0, 7] and a condition, both read from the
        // value.
        self.emit(Insn::new(0x71, off, a, 0, 0));
        self.emit(Insn::new(0x57, off, 0, 0, 7));
        self.emit(Insn::new(0x71, 0, a, 1, 0));
        self.emit(Insn::new(0xbf, p, a, 0, 0));
        // One path narrows the offset (a smaller mask, or a constant, which
        // is masked differently), and maybe takes the other map's value or
        // moves the pointer: the kernel's mask is the distance the add
        // may move the pointer, so a moved pointer or another map alone
        // leave it the same.
        let narrow = self.rng.chance(85);
        let len = i16::from(narrow) + 1;
        self.emit(Insn::new(0x15, 0, 0, len, 0));
        if narrow {
            let mask = self.rng.pick(&[3, 1, 0]);
            self.emit(Insn::new(0x57, off, 0, 0, mask));
        }
        if other_map {
            self.emit(Insn::new(0xbf, p, b, 0, 0));
        } else {
            let moved = self.rng.pick(&[8, 16, 1]);
            self.emit(Insn::new(0x07, p, 0, 0, moved));
        }
        let sub = self.rng.chance(10);
        if sub {
            // Subtracting keeps within the value from the moved pointer
            // only: the other path is out of bounds, as a mistake.
            self.emit(Insn::new(0x1f, p, off, 0, 0));
        } else {
            self.emit(Insn::new(0x0f, p, off, 0, 0));
        }
        self.emit(Insn::new(0x71, 0, p, 0, 0));
        let end = self.insns.len();
        for j in [Some(null_a), null_b].into_iter().flatten() {
            self.insns[j].off = (end - j - 1) as i16;
        }
        for r in [a, b, p, off] {
            self.set(r, Kind::Uninit);
        }
        self.clobber();
        self.kinds[0] = Kind::Uninit;
    }
}
