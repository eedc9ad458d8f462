//! Pointer alignment (feature `alignment`): programs loaded with
//! BPF_F_STRICT_ALIGNMENT (sometimes with BPF_F_ANY_ALIGNMENT, which
//! turns it off again, or with neither) whose blocks read and write
//! packets, packet metadata, map values, the stack and the context at odd
//! constant offsets and at variable offsets whose known-zero low bits
//! make the access aligned or not. Under the flag the kernel holds every
//! access to its size's alignment, packets as if they started 2 bytes past
//! an aligned address (NET_IP_ALIGN); atomics and the stack are always
//! held to it.

use super::{Gen, Kind, SIZES};
use bpfvet_isa::uapi::{ProgType, BPF_F_ANY_ALIGNMENT, BPF_F_STRICT_ALIGNMENT};
use bpfvet_isa::Insn;

const GET_PRANDOM_U32: i32 = 7;
const MAP_LOOKUP_ELEM: i32 = 1;

/// The program flags a program of the feature is loaded with: mostly
/// strict, sometimes strict overridden, rarely neither.
pub fn prog_flags(rng: &mut super::Rng) -> u32 {
    match rng.below(20) {
        0..=13 => BPF_F_STRICT_ALIGNMENT,
        14..=16 => BPF_F_STRICT_ALIGNMENT | BPF_F_ANY_ALIGNMENT,
        17..=18 => BPF_F_ANY_ALIGNMENT,
        _ => 0,
    }
}

/// Masks for a variable offset: some keep 2, 4 or 8 bytes aligned, some
/// leave the low bits unknown.
const VAR_MASKS: [i32; 10] = [0x38, 0x3c, 0x3e, 0x3f, 0x30, 0x1c, 0x1e, 0x0c, 0x06, 0x18];

impl Gen {
    pub(super) fn align_block(&mut self) {
        match self.rng.below(10) {
            0..=3 => self.align_packet(),
            4..=6 => self.align_map_value(),
            7..=8 => self.align_stack(),
            _ => self.align_ctx(),
        }
    }

    /// `r0 = bpf_get_prandom_u32() & mask` (the mask, at most `max`, is
    /// returned) into `dst`, or no variable part (0).
    fn align_var_offset(&mut self, dst: u8, max: i32) -> i32 {
        let masks: Vec<i32> = VAR_MASKS.into_iter().filter(|&m| m <= max).collect();
        if masks.is_empty() || !self.rng.chance(55) {
            return 0;
        }
        let mask = self.rng.pick(&masks);
        self.emit(Insn::new(0x85, 0, 0, 0, GET_PRANDOM_U32));
        self.clobber();
        self.emit(Insn::new(0x57, 0, 0, 0, mask));
        if dst != 0 {
            self.emit(Insn::new(0xbf, dst, 0, 0, 0));
        }
        self.set(dst, Kind::Scalar);
        mask
    }

    /// One load, store or atomic through `p` at an offset in
    /// `0..=room - size` (past it, as a mistake). `base` is the constant
    /// the kernel adds before the offset (2 for packets, the pointer's
    /// own offset) and `mask` the variable part: two times in three the
    /// size and offset are picked to come out aligned, else anyhow.
    fn align_access(
        &mut self,
        p: u8,
        room: i32,
        base: i32,
        mask: i32,
        writable: bool,
        atomic: bool,
    ) {
        let what = match self.rng.below(10) {
            0..=4 => 0,
            5..=6 if writable => 1,
            7..=8 if writable => 2,
            9 if atomic => 3,
            _ => 0,
        };
        let sizes: &[(u8, i32)] = if what == 3 {
            &[(0x00, 4), (0x18, 8)]
        } else {
            &SIZES
        };
        let mut aligned = self.rng.chance(65);
        let mut fits: Vec<(u8, i32)> = sizes
            .iter()
            .copied()
            .filter(|&(_, b)| !aligned || mask & (b - 1) == 0)
            .collect();
        if fits.is_empty() {
            // No atomic size is aligned past this variable offset.
            (aligned, fits) = (false, sizes.to_vec());
        }
        let (sz, bytes) = self.rng.pick(&fits);
        let top = room - bytes;
        let offs: Vec<i32> = (0..=top.max(0))
            .filter(|k| !aligned || (base + k).rem_euclid(bytes) == 0)
            .collect();
        let off = if top < 0 || offs.is_empty() || self.rng.chance(self.mistakes) {
            room - bytes + 1
        } else {
            self.rng.pick(&offs)
        } as i16;
        match what {
            1 => {
                let imm = self.rng.imm();
                self.emit(Insn::new(0x62 | sz, p, 0, off, imm));
            }
            2 | 3 => {
                let s = self.rng.pick(&[1, 5]);
                self.emit(Insn::new(0xb7, s, 0, 0, 1));
                self.set(s, Kind::Scalar);
                // A store, or a lock add of a word or a double word.
                let code = if what == 2 { 0x63 } else { 0xc3 };
                self.emit(Insn::new(code | sz, p, s, off, 0));
            }
            _ => {
                // Registers no block here keeps a pointer in.
                let d = if p == 0 {
                    self.rng.pick(&[1, 5])
                } else {
                    self.rng.pick(&[0, 1, 5])
                };
                self.emit(Insn::new(0x61 | sz, d, p, off, 0));
                self.set(d, Kind::Scalar);
            }
        }
    }

    /// Packet data (or metadata) moved by a variable and a constant
    /// offset, bounds-checked, then accessed at odd and even offsets.
    fn align_packet(&mut self) {
        let (data, end, meta) = match self.prog_type {
            ProgType::XDP => (0, 4, Some(8)),
            ProgType::SCHED_CLS => (76, 80, Some(140)),
            ProgType::CGROUP_SKB => (76, 80, None),
            _ => return self.align_map_value(),
        };
        let Some(c) = self.ctx_reg().filter(|&c| c >= 6) else {
            return self.align_map_value();
        };
        let writable = self.prog_type != ProgType::CGROUP_SKB;
        let mask = self.align_var_offset(0, 0x3f);
        // Pointers in registers the ctx is not in.
        let (pd, pe, pc) = if c == 6 && self.rng.chance(70) {
            (7, 8, 9)
        } else {
            (2, 3, 4)
        };
        let (lo, hi) = match meta {
            Some(m) if self.rng.chance(25) => (m, data),
            _ => (data, end),
        };
        self.emit(Insn::new(0x61, pd, c, lo, 0));
        self.emit(Insn::new(0x61, pe, c, hi, 0));
        if mask != 0 {
            self.emit(Insn::new(0x0f, pd, 0, 0, 0));
        }
        let shift = if self.rng.chance(40) {
            self.rng.pick(&[1, 2, 3, 4, 6, 14])
        } else {
            0
        };
        if shift != 0 {
            self.emit(Insn::new(0x07, pd, 0, 0, shift));
        }
        let len = self.rng.pick(&[4, 8, 14, 16, 20]);
        self.emit(Insn::new(0xbf, pc, pd, 0, 0));
        self.emit(Insn::new(0x07, pc, 0, 0, len));
        self.set(pd, Kind::Pkt);
        self.set(pe, Kind::PktEnd);
        self.set(pc, Kind::Pkt);
        let n = 1 + self.rng.below(3);
        self.guarded(
            move |_| (0x2d, pc, pe, 0),
            false,
            move |g| {
                for _ in 0..n {
                    g.align_access(pd, len, 2 + shift, mask, writable, false);
                }
            },
        );
        for r in [pd, pe, pc] {
            self.set(r, Kind::Uninit);
        }
    }

    /// A map value moved by a variable and a constant offset, then
    /// accessed (atomics too) at odd and even offsets within the value.
    fn align_map_value(&mut self) {
        let Some(v) = [7u8, 8, 9]
            .into_iter()
            .find(|&r| self.kinds[r as usize] != Kind::Ctx)
        else {
            return self.alu();
        };
        let (map, vsize, ksize) = self.pick_map();
        let mask = self.align_var_offset(v, vsize - 8);
        self.map_and_key(map, ksize);
        self.emit(Insn::new(0x85, 0, 0, 0, MAP_LOOKUP_ELEM));
        self.clobber();
        self.kinds[0] = Kind::MapOrNull(map, vsize);
        let shift = if self.rng.chance(30) {
            self.rng.pick(&[1, 2, 3, 4, 6])
        } else {
            0
        };
        let room = vsize - mask - shift;
        let n = 1 + self.rng.below(3);
        let body = move |g: &mut Gen| {
            g.kinds[0] = Kind::MapVal(map, vsize);
            if mask != 0 {
                g.emit(Insn::new(0x0f, 0, v, 0, 0));
            }
            if shift != 0 {
                g.emit(Insn::new(0x07, 0, 0, 0, shift));
            }
            for _ in 0..n {
                g.align_access(0, room, shift, mask, true, true);
            }
        };
        if self.rng.chance(self.mistakes * 3) {
            // No NULL check: the access is checked for alignment first.
            body(self);
        } else {
            self.guarded(move |_| (0x15, 0, 0, 0), false, body);
        }
        self.kinds[0] = Kind::Scalar;
    }

    /// The stack through a pointer below r10 at an odd or even base,
    /// maybe moved by a variable offset.
    fn align_stack(&mut self) {
        let Some(p) = [7u8, 8, 9]
            .into_iter()
            .find(|&r| self.kinds[r as usize] != Kind::Ctx)
        else {
            return self.alu();
        };
        let base = self.rng.pick(&[-64, -63, -62, -60, -56, -48, -40]);
        let mask = self.align_var_offset(0, -base - 8);
        self.emit(Insn::new(0xbf, p, 10, 0, 0));
        self.emit(Insn::new(0x07, p, 0, 0, base));
        if mask != 0 {
            self.emit(Insn::new(0x0f, p, 0, 0, 0));
        }
        self.set(p, Kind::Fp);
        // What the generator knew of the slots up to r10 is gone.
        self.stack.retain(|&(o, _, _)| o < base - 8);
        let room = -base - mask;
        for _ in 0..1 + self.rng.below(3) {
            self.align_access(p, room, base, mask, true, true);
        }
        self.set(p, Kind::Uninit);
    }

    /// Context loads (and a few stores) of any size at odd and even
    /// offsets of the program type's context.
    fn align_ctx(&mut self) {
        let Some(c) = self.ctx_reg() else {
            return self.alu();
        };
        let offs: &[i16] = match self.prog_type {
            ProgType::XDP => &[0, 1, 2, 3, 4, 6, 8, 12, 14, 16, 20, 22],
            ProgType::KPROBE | ProgType::TRACEPOINT => &[0, 1, 2, 4, 6, 8, 12, 16, 20],
            _ => &[
                0, 1, 2, 3, 4, 6, 8, 9, 10, 12, 16, 18, 48, 49, 50, 52, 54, 76, 78, 140,
            ],
        };
        for _ in 0..1 + self.rng.below(3) {
            let off = self.rng.pick(offs);
            let (sz, _) = self.rng.pick(&SIZES);
            if self.rng.chance(15) {
                // cb[] and mark are writable in socket programs.
                let off = self.rng.pick(&[8, 9, 10, 48, 50, 51, 52, 56, 60]);
                self.emit(Insn::new(0x62 | sz, c, 0, off, 1));
            } else {
                let d = self.rng.pick(&[0, 1, 2, 3, 4, 5]);
                self.emit(Insn::new(0x61 | sz, d, c, off, 0));
                self.set(d, Kind::Scalar);
            }
        }
    }
}
