//! Memory and helper-argument blocks (feature `memory`): stores of stack
//! pointers through a pointer into the caller's frame, stack operations at
//! a variable offset, the for_each callback's key, ring buffer records,
//! `bpf_snprintf` with read-only map strings, writes into a read-only map
//! sockmap value arguments, cgroup storage, arena and bpf_wq map uses.

use super::{
    Gen, Kind, ARENA2_MAP, ARENA_MAP, ARRAY_MAP, CGROUP_STORAGE2_MAP, CGROUP_STORAGE_MAP, HASH_MAP,
    RINGBUF_MAP, RINGBUF_SIZE, RODATA2_MAP, RODATA_MAP, RODATA_VALUE_SIZE, SIZES, SOCKMAP, WQ_MAP,
};
use bpfvet_isa::opcode::{BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE};
use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;

const RINGBUF_OUTPUT: i32 = 130;
const RINGBUF_RESERVE: i32 = 131;
const RINGBUF_SUBMIT: i32 = 132;
const RINGBUF_DISCARD: i32 = 133;
const SNPRINTF: i32 = 165;
const PROBE_READ_KERNEL: i32 = 113;
const MAP_UPDATE_ELEM: i32 = 2;
const MAP_PEEK_ELEM: i32 = 89;
const MAP_LOOKUP_ELEM: i32 = 1;
const MAP_DELETE_ELEM: i32 = 3;
/// `struct __sk_buff`'s sk pointer.
const SKB_SK: i16 = 168;
const CSUM_DIFF: i32 = 28;
const GET_LOCAL_STORAGE: i32 = 81;
const GET_CURRENT_TASK_BTF: i32 = 158;

impl Gen {
    pub(super) fn mem_block(&mut self) {
        match self.rng.below(13) {
            12 => self.arena_or_wq_ref(),
            11 => self.cgroup_storage(),
            9 => self.two_records_one_call(),
            10 => self.task_btf_access(),
            0 => self.store_stack_ptr_through(),
            1 | 2 => self.var_off_stack_op(),
            3 => self.key_access(),
            4 => self.ringbuf_record(),
            5 => self.snprintf_call(),
            6 => self.rodata_write(),
            7 => self.sockmap_value_arg(),
            _ => self.spill_then_var_write(),
        }
    }

    /// `rX = map value address (ld_imm64 of a map index and offset)`.
    fn map_value_addr(&mut self, r: u8, map: i32, off: i32) {
        self.emit(Insn::new(0x18, r, BPF_PSEUDO_MAP_IDX_VALUE, 0, map));
        self.emit(Insn::new(0, 0, 0, 0, off));
    }

    fn map_addr(&mut self, r: u8, map: i32) {
        self.emit(Insn::new(0x18, r, BPF_PSEUDO_MAP_IDX, 0, map));
        self.emit(Insn::new(0, 0, 0, 0, 0));
    }

    /// `*(u64 *)(rP + off) = <stack pointer>` through any stack pointer:
    /// in a subprogram whose argument is the caller's stack, a spill of a
    /// stack pointer into the caller's frame.
    fn store_stack_ptr_through(&mut self) {
        let base = match self.reg_of(&|k| k == Kind::Fp) {
            Some(r) if r != 10 => r,
            _ => self.copy_fp(),
        };
        let v = match self.reg_of(&|k| k != Kind::Uninit) {
            Some(v) if self.rng.chance(30) => v,
            _ => 10,
        };
        let off = self.rng.pick(&[0, 0, -8, 8, -16, 4]);
        let sz = if self.rng.chance(85) { 0x18 } else { 0x00 };
        self.emit(Insn::new(0x63 | sz, base, v, off, 0));
    }

    /// `r = r10 + base + (scalar & mask)`, then an atomic, a helper
    /// argument or a store there.
    fn var_off_stack_op(&mut self) {
        let s = self.scalar();
        let mask = self.rng.pick(&[0x8, 0x18, 0x38, 0x7, 0x3f]);
        self.emit(Insn::new(0x57, s, 0, 0, mask));
        let d = self.copy_fp();
        let base = self.rng.pick(&[-64, -128, -72, -8]);
        if self.rng.chance(50) {
            // Initialise the range first (root reads uninitialised stack
            // anyway; other levels do not).
            for k in 0..(mask + 8) / 8 + 1 {
                let o = base + 8 * k;
                if (-512..0).contains(&o) {
                    self.emit(Insn::new(0x7a, 10, 0, o as i16, 0));
                }
            }
        }
        self.emit(Insn::new(0x07, d, 0, 0, base));
        self.emit(Insn::new(0x0f, d, s, 0, 0));
        match self.rng.below(5) {
            0 | 1 => {
                let v = self.scalar();
                let (code, op) =
                    self.rng
                        .pick(&[(0xdb, 0x00), (0xc3, 0x40), (0xdb, 0x01), (0xdb, 0xe1)]);
                self.emit(Insn::new(code, d, v, 0, op));
                if op & 1 != 0 {
                    self.set(v, Kind::Scalar);
                }
            }
            2 => {
                // A helper reading or writing the range.
                let n = self.rng.pick(&[1, 4, 8, 16]);
                self.emit(Insn::new(0xbf, 1, d, 0, 0));
                self.emit(Insn::new(0xb7, 2, 0, 0, n));
                self.emit(Insn::new(0xb7, 3, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, PROBE_READ_KERNEL));
                self.clobber();
            }
            3 => {
                // The range as a map key.
                self.emit(Insn::new(0xbf, 2, d, 0, 0));
                let map = self.rng.pick(&[ARRAY_MAP, HASH_MAP]);
                self.map_addr(1, map);
                self.emit(Insn::new(0x85, 0, 0, 0, MAP_LOOKUP_ELEM));
                self.clobber();
            }
            _ => {
                let (sz, _) = self.rng.pick(&SIZES);
                let p = self.reg_of(&|k| k != Kind::Uninit).unwrap_or(10);
                self.emit(Insn::new(0x63 | sz, d, p, 0, 0));
            }
        }
    }

    /// A pointer spilled, then a variable-offset write over its slot.
    fn spill_then_var_write(&mut self) {
        let p = self
            .reg_of(&|k| !matches!(k, Kind::Uninit | Kind::Scalar))
            .unwrap_or(10);
        let slot = self.rng.pick(&[-8, -16, -24]);
        self.emit(Insn::new(0x7b, 10, p, slot, 0));
        let s = self.scalar();
        let mask = self.rng.pick(&[0x8, 0x18, 0x10]);
        self.emit(Insn::new(0x57, s, 0, 0, mask));
        let d = self.copy_fp();
        self.emit(Insn::new(0x07, d, 0, 0, -32));
        self.emit(Insn::new(0x0f, d, s, 0, 0));
        let (sz, _) = self.rng.pick(&SIZES);
        if self.rng.chance(50) {
            let imm = self.rng.imm();
            self.emit(Insn::new(0x62 | sz, d, 0, 0, imm));
        } else {
            let v = self.scalar();
            self.emit(Insn::new(0x63 | sz, d, v, 0, 0));
        }
    }

    /// Loads and stores through the for_each callback's key (a read-only
    /// key of the map's key size), in range or not; elsewhere a
    /// for_each call whose callback will use it.
    pub(super) fn key_access(&mut self) {
        let Some(k) = self.reg_of(&|k| matches!(k, Kind::MapKey(_))) else {
            if self.features.has(super::Features::CALLBACKS) {
                return self.callback_call();
            }
            return self.alu();
        };
        let ks = match self.kinds[k as usize % 10] {
            Kind::MapKey(n) => n,
            _ => 4,
        };
        let (sz, bytes) = self.rng.pick(&SIZES);
        let off = self.rng.pick(&[0, ks - bytes, ks, -1, 4, ks - 1]);
        match self.rng.below(4) {
            0 => {
                let v = self.scalar();
                self.emit(Insn::new(0x63 | sz, k, v, off as i16, 0));
            }
            1 => {
                let imm = self.rng.imm();
                self.emit(Insn::new(0x62 | sz, k, 0, off as i16, imm));
            }
            _ => {
                let d = self.dst();
                self.emit(Insn::new(0x61 | sz, d, k, off as i16, 0));
                self.set(d, Kind::Scalar);
            }
        }
    }

    /// `bpf_ringbuf_reserve` (constant, variable or odd sizes and flags),
    /// a use of the record, then submit or discard (or neither);
    /// or `bpf_ringbuf_output` of a stack buffer.
    fn ringbuf_record(&mut self) {
        if self.rng.chance(25) {
            let n = self.rng.pick(&[8, 16, 0, 24]);
            self.stack_buf_into(2, -32, 4);
            self.emit(Insn::new(0xb7, 3, 0, 0, n));
            self.emit(Insn::new(0xb7, 4, 0, 0, 0));
            self.map_addr(1, RINGBUF_MAP);
            self.emit(Insn::new(0x85, 0, 0, 0, RINGBUF_OUTPUT));
            self.clobber();
            return;
        }
        let size = self.rng.pick(&[8, 16, 48, 0, RINGBUF_SIZE, 7]);
        if self.rng.chance(20) {
            let s = self.scalar();
            self.emit(Insn::new(0x57, s, 0, 0, 0x3f));
            self.emit(Insn::new(0xbf, 2, s, 0, 0));
        } else {
            self.emit(Insn::new(0xb7, 2, 0, 0, size));
        }
        let flags = if self.rng.chance(self.mistakes * 3) {
            1
        } else {
            0
        };
        self.emit(Insn::new(0xb7, 3, 0, 0, flags));
        let map = if self.rng.chance(100 - self.mistakes * 3) {
            RINGBUF_MAP
        } else {
            ARRAY_MAP
        };
        self.map_addr(1, map);
        self.emit(Insn::new(0x85, 0, 0, 0, RINGBUF_RESERVE));
        self.clobber();
        let r = 7 + self.rng.below(3) as u8;
        self.emit(Insn::new(0xbf, r, 0, 0, 0));
        self.set(r, Kind::Uninit);
        let checked = !self.rng.chance(self.mistakes * 3);
        // `if r == 0 goto +len; <use>; submit|discard`
        let at = self.insns.len();
        if checked {
            self.emit(Insn::new(0x15, r, 0, 0, 0));
        }
        let body = self.insns.len();
        let (sz, bytes) = self.rng.pick(&SIZES);
        let off = self.rng.pick(&[0, 8, size - bytes, size, -8, 4]);
        if self.rng.chance(50) {
            let v = self.reg_of(&|k| k == Kind::Scalar).unwrap_or(10);
            self.emit(Insn::new(0x63 | sz, r, v, off as i16, 0));
        } else {
            self.emit(Insn::new(0x61 | sz, 0, r, off as i16, 0));
        }
        if !self.rng.chance(self.mistakes * 3) {
            self.emit(Insn::new(0xbf, 1, r, 0, 0));
            if self.rng.chance(self.mistakes * 2) {
                self.emit(Insn::new(0x07, 1, 0, 0, 8));
            }
            self.emit(Insn::new(0xb7, 2, 0, 0, 0));
            let release = self.rng.pick(&[RINGBUF_SUBMIT, RINGBUF_DISCARD]);
            self.emit(Insn::new(0x85, 0, 0, 0, release));
        }
        if checked {
            self.insns[at].off = (self.insns.len() - body) as i16;
        }
        self.clobber();
        self.set(r, Kind::Uninit);
    }

    /// `bpf_snprintf(buf, size, fmt, data, len)` with the format from a
    /// read-only map (constant, variable or past-the-end offsets, a map
    /// without direct addresses, a writable map, the stack).
    fn snprintf_call(&mut self) {
        // The format from a lookup in a read-only map (of one or two
        // entries): r0, the path without it returning.
        let looked_up = self.rng.chance(20);
        if looked_up {
            self.stack_buf_into(2, -8, 1);
            let map = self.rng.pick(&[RODATA_MAP, RODATA2_MAP]);
            self.map_addr(1, map);
            self.emit(Insn::new(0x85, 0, 0, 0, MAP_LOOKUP_ELEM));
            self.emit(Insn::new(0x55, 0, 0, 2, 0));
            self.emit(Insn::new(0xb7, 0, 0, 0, 0));
            self.emit(Insn::new(0x95, 0, 0, 0, 0));
        }
        let buf = self.rng.pick(&[16, 32]);
        self.stack_buf_into(1, -64, 8);
        self.emit(Insn::new(0x07, 1, 0, 0, 64 - buf));
        self.emit(Insn::new(0xb7, 2, 0, 0, buf));
        let off = self.rng.pick(&[0, 8, 16, 24, 32, 40, 48, 56, 60, 3, 64]);
        match self.rng.below(10) {
            _ if looked_up => self.emit(Insn::new(0xbf, 3, 0, 0, 0)),
            0 => self.map_value_addr(3, RODATA2_MAP, off),
            1 => self.map_value_addr(3, ARRAY_MAP, off.min(40)),
            2 => {
                self.map_value_addr(3, RODATA_MAP, 0);
                let s = self.scalar();
                self.emit(Insn::new(0x57, s, 0, 0, 0x38));
                self.emit(Insn::new(0x0f, 3, s, 0, 0));
            }
            3 => self.stack_buf_into(3, -72, 1),
            _ => self.map_value_addr(3, RODATA_MAP, off),
        }
        // Data: none, or a stack array of u64s.
        match self.rng.below(4) {
            0 => {
                self.emit(Insn::new(0xb7, 4, 0, 0, 0));
                self.emit(Insn::new(0xb7, 5, 0, 0, 0));
            }
            _ => {
                let words = self.rng.pick(&[1, 2, 3]);
                self.stack_buf_into(4, -96, 3);
                self.emit(Insn::new(0xb7, 5, 0, 0, 8 * words));
            }
        }
        self.emit(Insn::new(0x85, 0, 0, 0, SNPRINTF));
        self.clobber();
    }

    /// A store, an atomic or a helper write into the read-only map.
    fn rodata_write(&mut self) {
        let off = self.rng.pick(&[0, 8, 60, 56]);
        let map = self.rng.pick(&[RODATA_MAP, RODATA_MAP, RODATA2_MAP]);
        match self.rng.below(5) {
            4 => {
                // Update or delete an element of the read-only map.
                self.stack_buf_into(2, -8, 1);
                self.map_addr(1, map);
                if self.rng.chance(50) {
                    self.emit(Insn::new(0x85, 0, 0, 0, MAP_DELETE_ELEM));
                } else {
                    self.stack_buf_into(3, -8 - RODATA_VALUE_SIZE, 8);
                    self.emit(Insn::new(0xb7, 4, 0, 0, 0));
                    self.emit(Insn::new(0x85, 0, 0, 0, MAP_UPDATE_ELEM));
                }
                self.clobber();
            }
            0 => {
                self.map_value_addr(1, map, off);
                self.emit(Insn::new(0xb7, 2, 0, 0, 4));
                self.emit(Insn::new(0xb7, 3, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, PROBE_READ_KERNEL));
                self.clobber();
            }
            1 => {
                let r = self.dst();
                self.map_value_addr(r, map, off);
                let v = self.scalar();
                self.emit(Insn::new(0xdb, r, v, 0, 0x00));
                self.set(r, Kind::Uninit);
            }
            2 => {
                // A read: constant from the frozen value.
                let r = self.dst();
                self.map_value_addr(r, map, off);
                let (sz, _) = self.rng.pick(&SIZES);
                self.emit(Insn::new(0x61 | sz, r, r, 0, 0));
                self.set(r, Kind::Scalar);
            }
            _ => {
                let r = self.dst();
                self.map_value_addr(r, map, off);
                let (sz, _) = self.rng.pick(&SIZES);
                self.emit(Insn::new(0x62 | sz, r, 0, 0, 1));
                self.set(r, Kind::Uninit);
            }
        }
    }

    /// Sockmap helpers whose value argument must be a socket: update with
    /// a stack value, peek (a value argument of another form), lookup.
    fn sockmap_value_arg(&mut self) {
        self.stack_buf_into(2, -16, 2);
        self.map_addr(1, SOCKMAP);
        match self.rng.below(4) {
            3 => {
                // The skb's socket (NULL-checked) as the value: which
                // program types may update a sockmap.
                let Some(c) = self.ctx_reg().filter(|&c| c >= 6) else {
                    return self.clobber();
                };
                self.emit(Insn::new(0xb7, 0, 0, 0, 0));
                self.emit(Insn::new(0x79, 3, c, SKB_SK, 0));
                self.emit(Insn::new(0x15, 3, 0, 2, 0));
                self.emit(Insn::new(0xb7, 4, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, MAP_UPDATE_ELEM));
            }
            0 => {
                self.stack_buf_into(3, -32, 1);
                self.emit(Insn::new(0xb7, 4, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, MAP_UPDATE_ELEM));
            }
            1 => self.emit(Insn::new(0x85, 0, 0, 0, MAP_PEEK_ELEM)),
            _ => self.emit(Insn::new(0x85, 0, 0, 0, MAP_LOOKUP_ELEM)),
        }
        self.clobber();
    }

    /// Two ring buffer records (each NULL-checked, the path without one
    /// returning) passed to one helper call, then both released.
    fn two_records_one_call(&mut self) {
        for (k, r) in [8u8, 9].into_iter().enumerate() {
            self.map_addr(1, RINGBUF_MAP);
            self.emit(Insn::new(0xb7, 2, 0, 0, 8));
            self.emit(Insn::new(0xb7, 3, 0, 0, 0));
            self.emit(Insn::new(0x85, 0, 0, 0, RINGBUF_RESERVE));
            self.emit(Insn::new(0xbf, r, 0, 0, 0));
            if k == 0 {
                self.emit(Insn::new(0x55, r, 0, 2, 0));
            } else {
                self.emit(Insn::new(0x55, r, 0, 5, 0));
                self.emit(Insn::new(0xbf, 1, 8, 0, 0));
                self.emit(Insn::new(0xb7, 2, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, RINGBUF_DISCARD));
            }
            self.emit(Insn::new(0xb7, 0, 0, 0, 0));
            self.emit(Insn::new(0x95, 0, 0, 0, 0));
        }
        self.emit(Insn::new(0xbf, 1, 8, 0, 0));
        self.emit(Insn::new(0xb7, 2, 0, 0, 8));
        self.emit(Insn::new(0xbf, 3, 9, 0, 0));
        self.emit(Insn::new(0xb7, 4, 0, 0, 8));
        self.emit(Insn::new(0xb7, 5, 0, 0, 0));
        self.emit(Insn::new(0x85, 0, 0, 0, CSUM_DIFF));
        for r in [8u8, 9] {
            self.emit(Insn::new(0xbf, 1, r, 0, 0));
            self.emit(Insn::new(0xb7, 2, 0, 0, 0));
            self.emit(Insn::new(0x85, 0, 0, 0, RINGBUF_SUBMIT));
        }
        self.clobber();
        self.set(8, Kind::Uninit);
        self.set(9, Kind::Uninit);
    }

    /// In tracing programs, `bpf_get_current_task_btf()` and loads or
    /// stores through it: constant offsets in and past the struct, a
    /// variable offset.
    fn task_btf_access(&mut self) {
        if !matches!(self.prog_type, ProgType::KPROBE | ProgType::TRACEPOINT) {
            return self.ringbuf_record();
        }
        self.emit(Insn::new(0x85, 0, 0, 0, GET_CURRENT_TASK_BTF));
        self.clobber();
        let r = 7 + self.rng.below(3) as u8;
        self.emit(Insn::new(0xbf, r, 0, 0, 0));
        let (sz, _) = self.rng.pick(&SIZES);
        let off = self.rng.pick(&[0, 8, 16, 24, -8, 4096, 1 << 14]);
        match self.rng.below(4) {
            0 => {
                let s = self.scalar();
                self.emit(Insn::new(0x57, s, 0, 0, 0x38));
                self.emit(Insn::new(0x0f, r, s, 0, 0));
                self.emit(Insn::new(0x61 | sz, 0, r, 0, 0));
            }
            1 => self.emit(Insn::new(0x62 | sz, r, 0, off, 0)),
            _ => self.emit(Insn::new(0x61 | sz, 0, r, off, 0)),
        }
        self.set(r, Kind::Uninit);
        self.kinds[0] = Kind::Uninit;
    }

    /// `bpf_get_local_storage` of a cgroup storage map, sometimes after
    /// naming the other one (a second map of the same kind).
    fn cgroup_storage(&mut self) {
        if self.rng.chance(50) {
            self.map_addr(2, CGROUP_STORAGE2_MAP);
        }
        self.map_addr(1, CGROUP_STORAGE_MAP);
        let flags = if self.rng.chance(self.mistakes * 3) {
            1
        } else {
            0
        };
        self.emit(Insn::new(0xb7, 2, 0, 0, flags));
        self.emit(Insn::new(0x85, 0, 0, 0, GET_LOCAL_STORAGE));
        self.clobber();
    }

    /// Names an arena (sometimes both: one per program) or the bpf_wq
    /// array (which tracing programs may not use), then looks up the
    /// array.
    fn arena_or_wq_ref(&mut self) {
        if self.rng.chance(50) {
            self.map_addr(1, ARENA_MAP);
            let other = self.rng.pick(&[ARENA_MAP, ARENA2_MAP]);
            self.map_addr(2, other);
            self.set(1, Kind::Uninit);
            self.set(2, Kind::Uninit);
            return;
        }
        self.stack_buf_into(2, -8, 1);
        self.map_addr(1, WQ_MAP);
        self.emit(Insn::new(0x85, 0, 0, 0, MAP_LOOKUP_ELEM));
        self.clobber();
        self.kinds[0] = Kind::Uninit;
    }
}
