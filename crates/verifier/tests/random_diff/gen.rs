//! A seeded generator of random but plausible BPF programs: it tracks a
//! rough type for every register and mostly picks registers of the type an
//! instruction needs, so that programs are often valid, and makes a
//! deliberate mistake (wrong register, offset past a bound, missing check)
//! at a small rate, so that the kernel rejects a good share of them.

use bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX;
use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;

/// xorshift64*: deterministic and dependency-free.
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Never zero (xorshift would stay at zero).
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn imm(&mut self) -> i32 {
        match self.below(8) {
            0 => self.below(16) as i32,
            1 => self.pick(&[0xff, 0xffff, 0xf0, 0x7f, 0x7fff_ffff, 0x3f, 0x1f]),
            2 => -(self.below(300) as i32),
            3 => 1 << self.below(31),
            4 => self.below(300) as i32,
            5 => self.pick(&[i32::MIN, -1, 0]),
            _ => self.next() as i32,
        }
    }
}

/// The two maps every generated program may use (indexes into
/// `Object::maps`).
pub const ARRAY_MAP: i32 = 0;
pub const HASH_MAP: i32 = 1;
pub const ARRAY_VALUE_SIZE: i32 = 48;
pub const HASH_VALUE_SIZE: i32 = 32;
pub const HASH_KEY_SIZE: i32 = 8;

/// What the generator believes a register holds on every path reaching the
/// current instruction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Uninit,
    Scalar,
    Ctx,
    Fp,
    /// Map value pointer, maybe NULL: (map index, value size).
    MapOrNull(i32, i32),
    MapVal(i32, i32),
    Pkt,
    PktEnd,
}

const ALU_OPS: [u8; 13] = [
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x90, 0xa0, 0xc0, 0x80, 0xb0,
];
const JMP_OPS: [u8; 11] = [
    0x10, 0x50, 0x20, 0x30, 0xa0, 0xb0, 0x60, 0x70, 0xc0, 0xd0, 0x40,
];
/// (size code, bytes) for LDX/STX/ST.
const SIZES: [(u8, i32); 4] = [(0x00, 4), (0x08, 2), (0x10, 1), (0x18, 8)];

/// A generated program and the type it is loaded as.
#[derive(Clone, Debug)]
pub struct GenProgram {
    pub prog_type: ProgType,
    pub insns: Vec<Insn>,
}

struct Gen {
    rng: Rng,
    prog_type: ProgType,
    insns: Vec<Insn>,
    kinds: [Kind; 11],
    /// Stack slots (offset below r10, size, kind spilled) written so far on
    /// every path.
    stack: Vec<(i32, i32, Kind)>,
    /// Mistake rate, percent per register pick.
    mistakes: u64,
    depth: u32,
}

impl Gen {
    fn emit(&mut self, i: Insn) {
        self.insns.push(i);
    }

    /// A register of one of `want` kinds among r0..r9 (r6..r9 preferred),
    /// or, at the mistake rate or when none exists, any register.
    fn reg_of(&mut self, want: &dyn Fn(Kind) -> bool) -> Option<u8> {
        if self.rng.chance(self.mistakes) {
            return Some(self.rng.below(11) as u8);
        }
        let mut cands: Vec<u8> = (0..10u8)
            .filter(|&r| want(self.kinds[r as usize]))
            .collect();
        if cands.is_empty() {
            return None;
        }
        if self.rng.chance(70) {
            let callee: Vec<u8> = cands.iter().copied().filter(|&r| r >= 6).collect();
            if !callee.is_empty() {
                cands = callee;
            }
        }
        Some(self.rng.pick(&cands))
    }

    /// A scalar register, made by `rX = imm` when there is none.
    fn scalar(&mut self) -> u8 {
        if let Some(r) = self.reg_of(&|k| k == Kind::Scalar) {
            return r;
        }
        let r = self.dst();
        let imm = self.rng.imm();
        self.emit(Insn::new(0xb7, r, 0, 0, imm));
        self.kinds[r as usize] = Kind::Scalar;
        r
    }

    /// A destination for a new value: r7..r9 mostly, r0..r5 sometimes.
    fn dst(&mut self) -> u8 {
        if self.rng.chance(75) {
            7 + self.rng.below(3) as u8
        } else {
            self.rng.pick(&[0, 2, 3, 4, 5, 6])
        }
    }

    fn set(&mut self, r: u8, k: Kind) {
        if (r as usize) < 10 {
            self.kinds[r as usize] = k;
        }
    }

    fn alu(&mut self) {
        let op = self.rng.pick(&ALU_OPS);
        let alu32 = self.rng.chance(35);
        let d = self.scalar();
        let class = if alu32 { 0x04 } else { 0x07 };
        let mov_or_neg = op == 0x80 || op == 0xb0;
        if op == 0x80 {
            self.emit(Insn::new(class | op, d, 0, 0, 0));
        } else if self.rng.chance(60) || mov_or_neg {
            let mut imm = self.rng.imm();
            if matches!(op, 0x60 | 0x70 | 0xc0) && self.rng.chance(90) {
                imm = self.rng.below(if alu32 { 32 } else { 64 }) as i32;
            }
            if matches!(op, 0x30 | 0x90) && imm == 0 && self.rng.chance(80) {
                imm = 7;
            }
            let off = i16::from(matches!(op, 0x30 | 0x90) && self.rng.chance(25));
            self.emit(Insn::new(class | op, d, 0, off, imm));
        } else {
            let s = self.scalar();
            self.emit(Insn::new(class | op | 0x08, d, s, 0, 0));
        }
        self.set(d, Kind::Scalar);
    }

    /// Pointer arithmetic: `ptr += const`, `ptr += bounded scalar`, or a
    /// forbidden op at the mistake rate.
    fn ptr_arith(&mut self) {
        let Some(p) = self.reg_of(&|k| matches!(k, Kind::MapVal(..) | Kind::Pkt | Kind::Fp)) else {
            return self.alu();
        };
        let p = if p == 10 { self.copy_fp() } else { p };
        if self.rng.chance(50) {
            let imm = self.rng.pick(&[1, 2, 4, 8, 14, 16, -8, 40, 64]);
            let class = if self.rng.chance(self.mistakes * 2) {
                0x04
            } else {
                0x07
            };
            self.emit(Insn::new(class, p, 0, 0, imm));
        } else {
            let s = self.scalar();
            if self.rng.chance(80) {
                let mask = self.rng.pick(&[0x7, 0xf, 0x1f, 0x3f, 0xff]);
                self.emit(Insn::new(0x57, s, 0, 0, mask));
            }
            let op = if self.rng.chance(90) {
                0x0f
            } else {
                self.rng.pick(&[0x1f, 0x2f, 0x5f, 0x4f, 0xcc])
            };
            self.emit(Insn::new(op, p, s, 0, 0));
        }
        self.set(p, self.kinds[p as usize]);
    }

    /// `rX = r10` so frame-pointer arithmetic does not target r10.
    fn copy_fp(&mut self) -> u8 {
        let r = self.dst();
        self.emit(Insn::new(0xbf, r, 10, 0, 0));
        self.set(r, Kind::Fp);
        r
    }

    /// ctx field offsets worth trying per program type, with the kind of
    /// the value loaded.
    fn ctx_field(&mut self) -> (i16, u8, Kind) {
        let (fields, span): (&[(i16, Kind)], i16) = match self.prog_type {
            ProgType::XDP => (
                &[
                    (0, Kind::Pkt),
                    (4, Kind::PktEnd),
                    (8, Kind::Pkt),
                    (12, Kind::Scalar),
                    (16, Kind::Scalar),
                    (20, Kind::Scalar),
                ],
                28,
            ),
            ProgType::SCHED_CLS => (
                &[
                    (0, Kind::Scalar),
                    (8, Kind::Scalar),
                    (16, Kind::Scalar),
                    (48, Kind::Scalar),
                    (76, Kind::Pkt),
                    (80, Kind::PktEnd),
                    (140, Kind::Pkt),
                    (64, Kind::Scalar),
                ],
                200,
            ),
            _ => (
                &[
                    (0, Kind::Scalar),
                    (4, Kind::Scalar),
                    (16, Kind::Scalar),
                    (48, Kind::Scalar),
                    (56, Kind::Scalar),
                    (76, Kind::Pkt),
                    (80, Kind::PktEnd),
                ],
                200,
            ),
        };
        if self.rng.chance(self.mistakes * 2) {
            let off = self.rng.below(span as u64) as i16;
            let (sz, _) = self.rng.pick(&SIZES);
            return (off, sz, Kind::Scalar);
        }
        let (off, k) = self.rng.pick(fields);
        (off, 0x00, k)
    }

    fn ctx_load(&mut self) {
        let Some(c) = self.reg_of(&|k| k == Kind::Ctx) else {
            return self.alu();
        };
        let (off, sz, k) = self.ctx_field();
        let d = self.dst();
        self.emit(Insn::new(0x61 | sz, d, c, off, 0));
        self.set(d, k);
    }

    fn ctx_store(&mut self) {
        let Some(c) = self.reg_of(&|k| k == Kind::Ctx) else {
            return self.alu();
        };
        let off = self.rng.pick(&[8, 48, 52, 56, 60, 64, 0, 4]);
        let s = self.scalar();
        self.emit(Insn::new(0x63, c, s, off, 0));
    }

    fn stack_off(&mut self, size: i32) -> i32 {
        if self.rng.chance(self.mistakes) {
            return self.rng.pick(&[-3, -520, 0, -1, 8, -516, -2]);
        }
        -(size.max(8) * (1 + self.rng.below(8) as i32))
    }

    fn spill(&mut self) {
        let (sz, bytes) = if self.rng.chance(60) {
            (0x18, 8)
        } else {
            self.rng.pick(&SIZES)
        };
        let off = self.stack_off(bytes);
        if self.rng.chance(25) {
            let imm = self.rng.imm();
            self.emit(Insn::new(0x62 | sz, 10, 0, off as i16, imm));
            self.stack.push((off, bytes, Kind::Scalar));
            return;
        }
        let s = match self.reg_of(&|k| k != Kind::Uninit && k != Kind::Fp) {
            Some(s) => s,
            None => self.scalar(),
        };
        let k = if bytes == 8 {
            self.kinds[s as usize % 10]
        } else {
            Kind::Scalar
        };
        self.emit(Insn::new(0x63 | sz, 10, s, off as i16, 0));
        self.stack.push((off, bytes, k));
    }

    fn fill(&mut self) {
        let (off, bytes, k) = if !self.stack.is_empty() && self.rng.chance(85) {
            let (o, b, k) = self.rng.pick(&self.stack);
            if self.rng.chance(20) {
                // A narrower read of the slot.
                let b2 = self.rng.pick(&[1, 2, 4]).min(b);
                (o, b2, if b2 == b { k } else { Kind::Scalar })
            } else {
                (o, b, k)
            }
        } else {
            let (_, b) = self.rng.pick(&SIZES);
            (self.stack_off(b), b, Kind::Scalar)
        };
        let sz = SIZES.iter().find(|s| s.1 == bytes).map_or(0x18, |s| s.0);
        let d = self.dst();
        self.emit(Insn::new(0x61 | sz, d, 10, off as i16, 0));
        self.set(d, k);
    }

    /// Picks a map: (index, value size, key size).
    fn pick_map(&mut self) -> (i32, i32, i32) {
        if self.rng.chance(35) {
            (HASH_MAP, HASH_VALUE_SIZE, HASH_KEY_SIZE)
        } else {
            (ARRAY_MAP, ARRAY_VALUE_SIZE, 4)
        }
    }

    /// `r1 = &map; r2 = &key` with the key written on the stack (unless
    /// the mistake is to forget it).
    fn map_and_key(&mut self, map: i32, ksize: i32) {
        let key_off = -(8 * (1 + self.rng.below(4) as i32));
        if !self.rng.chance(self.mistakes) {
            let imm = self.rng.below(4) as i32;
            let sz = if ksize == 8 { 0x18 } else { 0x00 };
            self.emit(Insn::new(0x62 | sz, 10, 0, key_off as i16, imm));
            self.stack.push((key_off, ksize, Kind::Scalar));
        }
        self.emit(Insn::new(0xbf, 2, 10, 0, 0));
        self.emit(Insn::new(0x07, 2, 0, 0, key_off));
        self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, map));
        self.emit(Insn::new(0, 0, 0, 0, 0));
    }

    /// `bpf_map_lookup_elem(&map, &key)`.
    fn map_lookup(&mut self) {
        let (map, vsize, ksize) = self.pick_map();
        self.map_and_key(map, ksize);
        self.emit(Insn::new(0x85, 0, 0, 0, 1));
        self.clobber();
        self.kinds[0] = Kind::MapOrNull(map, vsize);
        if self.rng.chance(60) {
            let d = 7 + self.rng.below(3) as u8;
            self.emit(Insn::new(0xbf, d, 0, 0, 0));
            self.kinds[d as usize] = Kind::MapOrNull(map, vsize);
        }
        if self.rng.chance(100 - self.mistakes * 3) {
            self.null_check();
        }
    }

    fn clobber(&mut self) {
        for r in 0..=5 {
            self.kinds[r] = Kind::Uninit;
        }
        self.kinds[0] = Kind::Scalar;
    }

    /// `if rX == 0 goto +len; <body using rX as a map value>`, or, as a
    /// mistake, the body without the check.
    fn null_check(&mut self) {
        let Some(p) = self.reg_of(&|k| matches!(k, Kind::MapOrNull(..))) else {
            return;
        };
        let orig = self.kinds[p as usize % 10];
        let refined = match orig {
            Kind::MapOrNull(m, s) => Kind::MapVal(m, s),
            k => k,
        };
        // `if rX != 0 goto +1; ja +len; body` or `if rX == 0 goto +len; body`.
        let (code, invert) = if self.rng.chance(30) {
            (0x55, true)
        } else {
            (0x15, false)
        };
        self.guarded(
            move |_| (code, p, 0, 0),
            invert,
            move |g| {
                // Copies made before the check share its id: refined too.
                for r in 0..10 {
                    if g.kinds[r] == orig {
                        g.kinds[r] = refined;
                    }
                }
                g.map_access(Some(p));
                let n = g.rng.below(3);
                for _ in 0..n {
                    g.block();
                }
            },
        );
    }

    /// A load or store through a map value pointer.
    fn map_access(&mut self, p: Option<u8>) {
        let p = match p {
            Some(p) => p,
            None => match self.reg_of(&|k| matches!(k, Kind::MapVal(..))) {
                Some(p) => p,
                None => return self.alu(),
            },
        };
        let vsize = match self.kinds[p as usize % 10] {
            Kind::MapVal(_, s) | Kind::MapOrNull(_, s) => s,
            _ => 8,
        };
        if self.rng.chance(25) {
            self.ptr_arith_on(p);
        }
        let (sz, bytes) = self.rng.pick(&SIZES);
        let off = if self.rng.chance(self.mistakes * 2) {
            self.rng
                .pick(&[vsize, vsize - 1, -1, -8, vsize - bytes + 1, 1, 3])
        } else {
            bytes * self.rng.below((vsize / bytes) as u64) as i32
        };
        if self.rng.chance(60) {
            let d = self.dst();
            self.emit(Insn::new(0x61 | sz, d, p, off as i16, 0));
            self.set(d, Kind::Scalar);
        } else if self.rng.chance(70) {
            let s = self.scalar();
            self.emit(Insn::new(0x63 | sz, p, s, off as i16, 0));
        } else {
            let imm = self.rng.imm();
            self.emit(Insn::new(0x62 | sz, p, 0, off as i16, imm));
        }
    }

    fn ptr_arith_on(&mut self, p: u8) {
        let s = self.scalar();
        let mask = self.rng.pick(&[0x7, 0xf, 0x1f, 0x3f, 0x8]);
        if !self.rng.chance(self.mistakes * 2) {
            self.emit(Insn::new(0x57, s, 0, 0, mask));
        }
        self.emit(Insn::new(0x0f, p, s, 0, 0));
    }

    /// Loads data/data_end, compares, and reads the packet under the check
    /// (or without it, as a mistake).
    fn packet(&mut self) {
        if !matches!(self.prog_type, ProgType::XDP | ProgType::SCHED_CLS) {
            return self.ctx_load();
        }
        let Some(c) = self.reg_of(&|k| k == Kind::Ctx) else {
            return self.alu();
        };
        let (doff, eoff) = if self.prog_type == ProgType::XDP {
            (0, 4)
        } else {
            (76, 80)
        };
        let (pd, pe, pc) = (7u8, 8u8, 9u8);
        let (pd, pe, pc) = if self.rng.chance(30) {
            (2, 3, 4)
        } else {
            (pd, pe, pc)
        };
        self.emit(Insn::new(0x61, pd, c, doff, 0));
        self.emit(Insn::new(0x61, pe, c, eoff, 0));
        self.set(pd, Kind::Pkt);
        self.set(pe, Kind::PktEnd);
        let len = self.rng.pick(&[1, 2, 4, 8, 14, 20, 34, 54]);
        self.emit(Insn::new(0xbf, pc, pd, 0, 0));
        self.emit(Insn::new(0x07, pc, 0, 0, len));
        self.set(pc, Kind::Pkt);
        if self.rng.chance(self.mistakes * 2) {
            self.pkt_access(pd, len);
            return;
        }
        // if pc > pe goto +len (jgt), or pe < pc, jge..., as clang emits.
        let (code, a, b) = self.rng.pick(&[
            (0x2d, pc, pe),
            (0xad, pe, pc),
            (0x3d, pc, pe),
            (0xbd, pe, pc),
        ]);
        self.guarded(
            move |_| (code, a, b, 0),
            false,
            move |g| {
                g.pkt_access(pd, len);
                if g.rng.chance(40) {
                    g.pkt_access(pd, len);
                }
                if g.rng.chance(30) {
                    g.block();
                }
            },
        );
    }

    fn pkt_access(&mut self, p: u8, len: i32) {
        let (_, bytes) = self.rng.pick(&SIZES);
        let bytes = bytes.min(len.max(1));
        let sz = SIZES.iter().find(|s| s.1 == bytes).map_or(0x10, |s| s.0);
        let off = if self.rng.chance(self.mistakes * 2) {
            len - bytes + 1
        } else {
            self.rng.below((len - bytes + 1).max(1) as u64) as i32
        };
        if self.kinds[p as usize] != Kind::Pkt {
            return self.alu();
        }
        if self.rng.chance(75) {
            let d = self.rng.pick(&[0, 5, 6]);
            self.emit(Insn::new(0x61 | sz, d, p, off as i16, 0));
            self.set(d, Kind::Scalar);
        } else {
            let s = self.scalar();
            self.emit(Insn::new(0x63 | sz, p, s, off as i16, 0));
        }
    }

    /// `if <cond> goto +len(body); body` (or, with `invert`, `if <cond>
    /// goto +1; ja +len; body`). Register kinds that the body changes are
    /// unknown after the join.
    fn guarded(
        &mut self,
        cond: impl FnOnce(&mut Gen) -> (u8, u8, u8, i32),
        invert: bool,
        body: impl FnOnce(&mut Gen),
    ) {
        let (code, dst, src, imm) = cond(self);
        let before = self.kinds;
        let stack_before = self.stack.len();
        let at = self.insns.len();
        self.emit(Insn::new(code, dst, src, 0, imm));
        if invert {
            self.emit(Insn::new(0x05, 0, 0, 0, 0));
        }
        let body_start = self.insns.len();
        self.depth += 1;
        body(self);
        self.depth -= 1;
        let len = (self.insns.len() - body_start) as i16;
        if invert {
            self.insns[at].off = 1;
            self.insns[at + 1].off = len;
        } else {
            self.insns[at].off = len;
        }
        for (now, was) in self.kinds.iter_mut().zip(before) {
            if *now != was {
                *now = Kind::Uninit;
            }
        }
        self.stack.truncate(stack_before);
    }

    fn branch(&mut self) {
        let op = self.rng.pick(&JMP_OPS);
        let class = if self.rng.chance(35) { 0x06 } else { 0x05 };
        let d = self.scalar();
        let (code, src, imm) = if self.rng.chance(60) {
            (class | op, 0, self.rng.imm())
        } else {
            let s = self.scalar();
            (class | op | 0x08, s, 0)
        };
        let n = 1 + self.rng.below(3);
        self.guarded(
            move |_| (code, d, src, imm),
            false,
            move |g| {
                for _ in 0..n {
                    g.block();
                }
                if g.rng.chance(20) {
                    // An early exit inside the branch.
                    g.epilogue();
                }
            },
        );
    }

    fn helper(&mut self) {
        match self.rng.below(4) {
            0 => self.map_update(),
            1 => {
                let (map, _, ksize) = self.pick_map();
                self.map_and_key(map, ksize);
                self.emit(Insn::new(0x85, 0, 0, 0, 3));
                self.clobber();
            }
            _ => {
                let id = self.rng.pick(&[5, 7, 8]);
                self.emit(Insn::new(0x85, 0, 0, 0, id));
                self.clobber();
            }
        }
    }

    /// `bpf_map_update_elem(&map, &key, value, 0)` with the value from a
    /// map value pointer or zeroed on the stack.
    fn map_update(&mut self) {
        let (map, vsize, ksize) = self.pick_map();
        let from_map = self.reg_of(&|k| matches!(k, Kind::MapVal(m, _) if m == map));
        let base = -(64 + vsize);
        if from_map.is_none() {
            let skip = if self.rng.chance(self.mistakes * 3) {
                self.rng.below((vsize / 8) as u64) as i32
            } else {
                -1
            };
            for k in 0..vsize / 8 {
                if k != skip {
                    self.emit(Insn::new(0x7a, 10, 0, (base + 8 * k) as i16, 0));
                    self.stack.push((base + 8 * k, 8, Kind::Scalar));
                }
            }
        }
        // r3 first: r1/r2 setup must not clobber the value register.
        match from_map {
            Some(r) => self.emit(Insn::new(0xbf, 3, r, 0, 0)),
            None => {
                self.emit(Insn::new(0xbf, 3, 10, 0, 0));
                self.emit(Insn::new(0x07, 3, 0, 0, base));
            }
        }
        self.map_and_key(map, ksize);
        self.emit(Insn::new(0xb7, 4, 0, 0, 0));
        self.emit(Insn::new(0x85, 0, 0, 0, 2));
        self.clobber();
    }

    /// `i = 0; loop: <body>; i += step; if i < n goto loop`.
    fn bounded_loop(&mut self) {
        let i = 7 + self.rng.below(3) as u8;
        let n = 2 + self.rng.below(7) as i32;
        self.emit(Insn::new(0xb7, i, 0, 0, 0));
        self.kinds[i as usize] = Kind::Scalar;
        let start = self.insns.len();
        if self.rng.chance(60) {
            // An accumulator other than the counter.
            let mut acc = self.scalar();
            if acc == i {
                acc = if i == 9 { 8 } else { 9 };
                self.emit(Insn::new(0xb7, acc, 0, 0, 1));
                self.kinds[acc as usize] = Kind::Scalar;
            }
            self.emit(Insn::new(0x0f, acc, i, 0, 0));
        }
        let step = if self.rng.chance(100 - self.mistakes) {
            1
        } else {
            0
        };
        self.emit(Insn::new(0x07, i, 0, 0, step));
        let code = self.rng.pick(&[0xa5, 0x55, 0xb5, 0xa6]);
        let back = start as i64 - self.insns.len() as i64 - 1;
        self.emit(Insn::new(code, i, 0, back as i16, n));
    }

    fn block(&mut self) {
        if self.depth > 3 {
            return self.alu();
        }
        match self.rng.below(100) {
            0..=5 => self.extra(),
            6..=21 => self.alu(),
            22..=31 => self.ctx_load(),
            32..=33 => self.ctx_store(),
            34..=42 => self.spill(),
            43..=50 => self.fill(),
            51..=60 => self.map_lookup(),
            61..=64 => self.map_access(None),
            65..=74 => self.packet(),
            75..=87 => self.branch(),
            88..=91 => self.helper(),
            92..=95 => self.ptr_arith(),
            _ => self.bounded_loop(),
        }
    }

    /// Less common instructions: byte swaps, sign-extending moves and
    /// loads, atomics, and a helper that writes a stack buffer.
    fn extra(&mut self) {
        match self.rng.below(5) {
            0 => {
                let d = self.scalar();
                let code = self.rng.pick(&[0xd4, 0xdc, 0xd7]);
                let bits = self.rng.pick(&[16, 32, 64]);
                self.emit(Insn::new(code, d, 0, 0, bits));
            }
            1 => {
                let s = self.scalar();
                let d = self.dst();
                let (code, bits) =
                    self.rng
                        .pick(&[(0xbf, 8), (0xbf, 16), (0xbf, 32), (0xbc, 8), (0xbc, 16)]);
                self.emit(Insn::new(code, d, s, bits, 0));
                self.set(d, Kind::Scalar);
            }
            2 => self.memsx_load(),
            3 => self.atomic(),
            _ => self.probe_read(),
        }
    }

    /// A sign-extending load from the stack, a map value or the ctx.
    fn memsx_load(&mut self) {
        let (code, bytes) = self.rng.pick(&[(0x91, 1), (0x89, 2), (0x81, 4)]);
        let d = self.dst();
        match self.reg_of(&|k| matches!(k, Kind::MapVal(..) | Kind::Ctx)) {
            Some(p) if self.rng.chance(50) => {
                let off = match self.kinds[p as usize % 10] {
                    Kind::MapVal(_, vs) => bytes * self.rng.below((vs / bytes) as u64) as i32,
                    _ => self.ctx_field().0 as i32,
                };
                self.emit(Insn::new(code, d, p, off as i16, 0));
            }
            _ => {
                let off = if !self.stack.is_empty() && self.rng.chance(80) {
                    self.rng.pick(&self.stack).0
                } else {
                    self.stack_off(bytes)
                };
                self.emit(Insn::new(code, d, 10, off as i16, 0));
            }
        }
        self.set(d, Kind::Scalar);
    }

    /// An atomic read-modify-write on the stack or a map value.
    fn atomic(&mut self) {
        let (code, bytes) = self.rng.pick(&[(0xdb, 8), (0xc3, 4)]);
        let op = self
            .rng
            .pick(&[0x00, 0x01, 0x40, 0x41, 0x50, 0x51, 0xa0, 0xa1, 0xe1, 0xf1]);
        let s = self.scalar();
        if op == 0xf1 && self.kinds[0] != Kind::Scalar {
            self.emit(Insn::new(0xb7, 0, 0, 0, 0));
            self.kinds[0] = Kind::Scalar;
        }
        let (p, off) = match self.reg_of(&|k| matches!(k, Kind::MapVal(..))) {
            Some(p) if self.rng.chance(50) => {
                let vs = match self.kinds[p as usize % 10] {
                    Kind::MapVal(_, vs) => vs,
                    _ => 8,
                };
                (p, bytes * self.rng.below((vs / bytes) as u64) as i32)
            }
            _ => {
                let off = self.stack_off(bytes);
                if !self.rng.chance(self.mistakes * 3) {
                    self.emit(Insn::new(0x7a, 10, 0, off as i16, 0));
                    self.stack.push((off, 8, Kind::Scalar));
                }
                (10, off)
            }
        };
        self.emit(Insn::new(code, p, s, off as i16, op));
        if op & 0x01 != 0 {
            let fetched = if op == 0xf1 { 0 } else { s };
            self.set(fetched, Kind::Scalar);
        }
    }

    /// `bpf_probe_read_kernel(stack buf, size, src)`: the size constant or
    /// a bounded scalar, sometimes larger than the buffer.
    fn probe_read(&mut self) {
        let buf = self.rng.pick(&[8, 16, 32, 64]);
        let size_reg = if self.rng.chance(50) {
            let n = if self.rng.chance(self.mistakes * 3) {
                buf + 8
            } else {
                1 + self.rng.below(buf as u64) as i32
            };
            self.emit(Insn::new(0xb7, 2, 0, 0, n));
            None
        } else {
            let s = self.scalar();
            let mask = self.rng.pick(&[0x7, 0xf, 0x1f, 0x3f]);
            if !self.rng.chance(self.mistakes * 2) {
                self.emit(Insn::new(0x57, s, 0, 0, mask));
            }
            Some(s)
        };
        self.emit(Insn::new(0xb7, 3, 0, 0, 0));
        if let Some(s) = size_reg {
            self.emit(Insn::new(0xbf, 2, s, 0, 0));
        }
        self.emit(Insn::new(0xbf, 1, 10, 0, 0));
        self.emit(Insn::new(0x07, 1, 0, 0, -buf));
        self.emit(Insn::new(0x85, 0, 0, 0, 113));
        self.clobber();
    }

    fn epilogue(&mut self) {
        match self.rng.below(100) {
            0..=59 => {
                let imm = self.rng.pick(&[0, 1, 2, 3, -1, 0xffff]);
                self.emit(Insn::new(0xb7, 0, 0, 0, imm));
            }
            60..=89 => {
                let s = self.scalar();
                self.emit(Insn::new(0xbf, 0, s, 0, 0));
            }
            _ => {
                let s = self.rng.below(10) as u8;
                self.emit(Insn::new(0xbf, 0, s, 0, 0));
            }
        }
        self.emit(Insn::new(0x95, 0, 0, 0, 0));
    }
}

/// Program `index` of the run with `seed`.
pub fn program(seed: u64, index: u64) -> GenProgram {
    let mut rng = Rng::new(seed ^ index.wrapping_mul(0x0010_0000_01b3));
    let prog_type = rng.pick(&[ProgType::SOCKET_FILTER, ProgType::XDP, ProgType::SCHED_CLS]);
    let mut kinds = [Kind::Uninit; 11];
    kinds[1] = Kind::Ctx;
    kinds[10] = Kind::Fp;
    let mistakes = rng.pick(&[0, 1, 1, 2, 3]);
    let blocks = 3 + rng.below(18);
    let mut g = Gen {
        rng,
        prog_type,
        insns: Vec::new(),
        kinds,
        stack: Vec::new(),
        mistakes,
        depth: 0,
    };
    if g.rng.chance(90) {
        g.emit(Insn::new(0xbf, 6, 1, 0, 0));
        g.kinds[6] = Kind::Ctx;
    }
    for _ in 0..blocks {
        g.block();
    }
    g.epilogue();
    GenProgram {
        prog_type,
        insns: g.insns,
    }
}
