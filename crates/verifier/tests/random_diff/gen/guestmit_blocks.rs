//! Variable-offset stack accesses for a guest booted with `mitigations=off`
//! (feature `mitigations_off`, batch.sh `KERNEL=... MITIGATIONS=off` with
//! PRIVILEGES=bpf or unprivileged; never drawn). There bpf_bypass_spec_v1
//! holds for every loader, so `fp + variable` is allowed without
//! CAP_PERFMON, while allow_ptr_leaks and allow_uninit_stack still need
//! it: check_stack_write_var_off then refuses a write whose range covers
//! any byte that is not plain data (`spilled ptr in range of var-offset
//! stack write`), and a helper reading such a range checks every byte.
//!
//! The block shapes a few stack words first (left alone, zeroed, a spilled
//! constant, a spilled pointer, half a word, one byte), then writes or
//! passes `fp + base + (random & mask)`.
//!
//! The same feature in a guest with its JIT off (batch.sh `JIT=0`) gives
//! a function near the 512-byte stack a may_goto: do_misc_fixups adds the
//! loop counter's slots to its depth, which the interpreter cannot run
//! past 512 bytes (`stack size %d(extra %d) is too large`). And it calls
//! the destructive kfunc crash_kexec, which only CAP_SYS_BOOT may call.

use super::{Gen, Kind, ARRAY_MAP};
use bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX;
use bpfvet_isa::Insn;

const MAP_LOOKUP_ELEM: i32 = 1;
const GET_PRANDOM_U32: i32 = 7;
/// Load/store size bits: byte, half, word, double word.
const SIZES: [(u8, i32); 4] = [(0x10, 1), (0x08, 2), (0x00, 4), (0x18, 8)];

impl Gen {
    pub(super) fn mitigations_off_block(&mut self) {
        match self.rng.below(100) {
            0..=24 => self.deep_stack_may_goto(),
            25..=34 => self.destructive_kfunc(),
            _ => self.var_off_stack_block(),
        }
    }

    /// `crash_kexec(NULL)`: a destructive kfunc, which a loader without
    /// CAP_SYS_BOOT may not call (the guest's kernel registers it with
    /// CONFIG_CRASH_DUMP; nothing is emitted where its BTF lacks it).
    fn destructive_kfunc(&mut self) {
        self.emit(Insn::new(0xb7, 1, 0, 0, 0));
        if !self.kfunc("crash_kexec") {
            self.set(1, Kind::Scalar);
        }
    }

    /// A store at the bottom of the stack, then `may_goto +1; r0 = 0`.
    fn deep_stack_may_goto(&mut self) {
        let (code, off) = self.rng.pick(&[
            (0x7a, -512),
            (0x7a, -504),
            (0x62, -500),
            (0x7a, -496),
            (0x7a, -488),
        ]);
        self.emit(Insn::new(code, 10, 0, off, 0));
        self.emit(Insn::new(0xe5, 0, 0, 1, 0));
        self.emit(Insn::new(0xb7, 0, 0, 0, 0));
        self.set(0, Kind::Scalar);
    }

    fn var_off_stack_block(&mut self) {
        let base = self.rng.pick(&[-64, -48, -32, -16, -8]);
        let words = 1 + self.rng.below(8) as i32;
        for k in 0..words {
            let o = base + 8 * k;
            if o >= 0 {
                break;
            }
            self.shape_stack_word(o);
        }
        // A variable offset from a random number, masked.
        self.emit(Insn::new(0x85, 0, 0, 0, GET_PRANDOM_U32));
        let mask = self
            .rng
            .pick(&[0x38, 0x18, 0x08, 0x30, 0x07, 0x06, 0x3f, 0x04]);
        self.emit(Insn::new(0x57, 0, 0, 0, mask));
        self.emit(Insn::new(0xbf, 1, 10, 0, 0));
        self.emit(Insn::new(0x07, 1, 0, 0, base));
        self.emit(Insn::new(0x0f, 1, 0, 0, 0));
        if self.rng.chance(25) {
            // The variable-offset key of a lookup: every byte it may read
            // must be initialised (check_stack_range_initialized).
            self.emit(Insn::new(0xbf, 2, 1, 0, 0));
            self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, ARRAY_MAP));
            self.emit(Insn::new(0, 0, 0, 0, 0));
            self.emit(Insn::new(0x85, 0, 0, 0, MAP_LOOKUP_ELEM));
        } else {
            let (sz, _) = self.rng.pick(&SIZES);
            let zero = self.rng.chance(40);
            if self.rng.chance(50) {
                let v = if zero { 0 } else { self.rng.imm() };
                self.emit(Insn::new(0xb7, 2, 0, 0, v));
                self.emit(Insn::new(0x63 | sz, 1, 2, 0, 0));
            } else {
                let imm = if zero { 0 } else { self.rng.imm() };
                self.emit(Insn::new(0x62 | sz, 1, 0, 0, imm));
            }
            if self.rng.chance(50) {
                // Read back one word of the range at a fixed offset.
                let o = base + 8 * self.rng.below(words as u64) as i32;
                if o < 0 {
                    self.emit(Insn::new(0x79, 0, 10, o as i16, 0));
                }
            }
        }
        // Spills in the range may be gone, pointers turned into data.
        let hi = base + 8 * words + 64;
        self.stack.retain(|&(o, _, _)| o < base || o >= hi);
        self.clobber();
    }

    /// Gives the stack word at `o` one of the slot states a variable
    /// write may meet.
    fn shape_stack_word(&mut self, o: i32) {
        let o16 = o as i16;
        match self.rng.below(7) {
            0 => {}
            1 => {
                self.emit(Insn::new(0x7a, 10, 0, o16, 0));
                self.stack.push((o, 8, Kind::Scalar));
            }
            2 => {
                let imm = self.rng.imm();
                self.emit(Insn::new(0x7a, 10, 0, o16, imm));
                self.stack.push((o, 8, Kind::Scalar));
            }
            3 => {
                self.emit(Insn::new(0x7b, 10, 10, o16, 0));
                self.stack.push((o, 8, Kind::Fp));
            }
            4 => {
                let half = self.rng.pick(&[0, 4]);
                let imm = self.rng.imm();
                self.emit(Insn::new(0x62, 10, 0, o16 + half, imm));
            }
            5 => {
                // A byte of an unknown scalar: plain data.
                let byte = o16 + self.rng.below(8) as i16;
                self.emit(Insn::new(0x85, 0, 0, 0, GET_PRANDOM_U32));
                self.emit(Insn::new(0x73, 10, 0, byte, 0));
                self.clobber();
            }
            _ => {
                // Every byte written as data.
                self.emit(Insn::new(0x85, 0, 0, 0, GET_PRANDOM_U32));
                self.emit(Insn::new(0x63, 10, 0, o16, 0));
                self.emit(Insn::new(0x63, 10, 0, o16 + 4, 0));
                self.clobber();
            }
        }
    }
}
