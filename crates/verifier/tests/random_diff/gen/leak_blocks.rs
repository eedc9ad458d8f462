//! Pointer-leak and speculation blocks (feature `leaks`), whose checks
//! bite below CAP_PERFMON (`PRIVILEGES=bpf|unprivileged|net_admin` runs; as root most
//! of them are accepted): pointers stored into map values, passed where a
//! helper takes a plain number, or used as numbers by an atomic on the
//! stack slot they were spilled to; map helpers given a key of a ring
//! buffer (0-byte keys); loops that push a speculative path per pointer
//! add and per decided branch, around the 8192 pending paths the kernel
//! keeps.

use super::{Gen, Kind, ARRAY_MAP, ARRAY_VALUE_SIZE, HASH_MAP, RINGBUF_MAP, SIZES};
use bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX;
use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;

const MAP_LOOKUP_ELEM: i32 = 1;
const MAP_UPDATE_ELEM: i32 = 2;
const MAP_DELETE_ELEM: i32 = 3;
const SKB_LOAD_BYTES: i32 = 26;

impl Gen {
    pub(super) fn leak_block(&mut self) {
        match self.rng.below(11) {
            10 => self.pointer_into_packet(),
            0..=2 => self.pointer_into_map_value(),
            3..=4 => self.pointer_as_helper_number(),
            5..=6 => self.atomic_on_spilled_pointer(),
            7..=8 => self.ring_buffer_key(),
            _ => self.speculative_flood(),
        }
    }

    /// Any register that holds a pointer (r10 when none does).
    fn some_pointer(&mut self) -> u8 {
        self.reg_of(&|k| !matches!(k, Kind::Uninit | Kind::Scalar))
            .unwrap_or(10)
    }

    /// `*(size *)(map_value + off) = pointer`, looking a value up first
    /// when no register holds one.
    fn pointer_into_map_value(&mut self) {
        let p = match self.reg_of(&|k| matches!(k, Kind::MapVal(..))) {
            Some(p) if p < 10 && matches!(self.kinds[p as usize], Kind::MapVal(..)) => p,
            _ => return self.map_lookup(),
        };
        let v = self.some_pointer();
        let (sz, bytes) = if self.rng.chance(80) {
            (0x18, 8)
        } else {
            self.rng.pick(&SIZES)
        };
        let off = bytes * self.rng.below(4) as i32;
        if self.rng.chance(20) {
            // An atomic with the pointer as its operand.
            let sz = if bytes == 8 { 0x18 } else { 0x00 };
            self.emit(Insn::new(0xc3 | sz, p, v, off as i16, 0));
        } else {
            self.emit(Insn::new(0x63 | sz, p, v, off as i16, 0));
        }
    }

    /// `*(u64 *)(data + off) = pointer` under a bounds check, in the
    /// program types with a writable packet.
    fn pointer_into_packet(&mut self) {
        let (data, end) = match self.prog_type {
            ProgType::XDP => (0, 4),
            ProgType::SCHED_CLS => (76, 80),
            _ => return self.pointer_into_map_value(),
        };
        let Some(ctx) = self.ctx_reg() else {
            return self.alu();
        };
        let v = self.some_pointer();
        let off = self.rng.pick(&[0i16, 8, 4]);
        self.emit(Insn::new(0x61, 2, ctx, data, 0));
        self.emit(Insn::new(0x61, 3, ctx, end, 0));
        self.emit(Insn::new(0xbf, 4, 2, 0, 0));
        self.emit(Insn::new(0x07, 4, 0, 0, 16));
        self.emit(Insn::new(0x2d, 4, 3, 1, 0));
        self.emit(Insn::new(0x7b, 2, v, off, 0));
        for r in 2..=4 {
            self.set(r, Kind::Uninit);
        }
    }

    /// A pointer where a helper takes any value: `bpf_skb_load_bytes`'
    /// offset, `bpf_map_update_elem`'s flags.
    fn pointer_as_helper_number(&mut self) {
        let v = self.some_pointer();
        let skb = matches!(
            self.prog_type,
            ProgType::SOCKET_FILTER | ProgType::SCHED_CLS | ProgType::CGROUP_SKB
        );
        if skb && self.rng.chance(50) {
            let Some(ctx) = self.ctx_reg() else {
                return self.alu();
            };
            self.emit(Insn::new(0xbf, 1, ctx, 0, 0));
            if v != 2 {
                self.emit(Insn::new(0xbf, 2, v, 0, 0));
            }
            self.emit(Insn::new(0xbf, 3, 10, 0, 0));
            self.emit(Insn::new(0x07, 3, 0, 0, -16));
            self.emit(Insn::new(0xb7, 4, 0, 0, 4));
            self.emit(Insn::new(0x85, 0, 0, 0, SKB_LOAD_BYTES));
        } else {
            // Key and value on the stack, the flags a pointer.
            if v != 4 {
                self.emit(Insn::new(0xbf, 4, v, 0, 0));
            }
            for off in [-8i16, -16, -24, -32, -40, -48, -56] {
                self.emit(Insn::new(0x7a, 10, 0, off, 0));
                self.stack.push((off as i32, 8, Kind::Scalar));
            }
            self.emit(Insn::new(0xbf, 2, 10, 0, 0));
            self.emit(Insn::new(0x07, 2, 0, 0, -8));
            self.emit(Insn::new(0xbf, 3, 10, 0, 0));
            self.emit(Insn::new(0x07, 3, 0, 0, -56));
            let map = self.rng.pick(&[ARRAY_MAP, HASH_MAP]);
            self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, map));
            self.emit(Insn::new(0, 0, 0, 0, 0));
            self.emit(Insn::new(0x85, 0, 0, 0, MAP_UPDATE_ELEM));
        }
        self.clobber();
    }

    /// A pointer spilled to the stack, then an atomic on that slot: one
    /// without a fetch reads the slot as a number.
    fn atomic_on_spilled_pointer(&mut self) {
        let v = self.some_pointer();
        let off = self.rng.pick(&[-8i16, -16, -24, -64]);
        self.emit(Insn::new(0x7b, 10, v, off, 0));
        let s = self.scalar();
        let wide = self.rng.chance(80);
        let (code, op) = if wide { (0xdb, 0) } else { (0xc3, 0) };
        // add, or, and, xor; now and then with a fetch, or an exchange.
        let op = op | self.rng.pick(&[0x00, 0x40, 0x50, 0xa0, 0x00, 0x01, 0xe1]);
        let atomic_off = if wide || self.rng.chance(50) {
            off
        } else {
            off + 4
        };
        self.emit(Insn::new(code, 10, s, atomic_off, op));
        if op & 1 != 0 {
            self.set(s, Kind::Uninit);
        }
        // The slot holds no scalar the generator may count on any more.
        let off = off as i32;
        self.stack.retain(|&(o, n, _)| o + n <= off || o >= off + 8);
    }

    /// A map helper on the ring buffer (0-byte keys) with a key of any
    /// kind: a stack key is a zero-sized read.
    fn ring_buffer_key(&mut self) {
        let func = self
            .rng
            .pick(&[MAP_LOOKUP_ELEM, MAP_DELETE_ELEM, MAP_UPDATE_ELEM]);
        if self.rng.chance(70) {
            self.emit(Insn::new(0xbf, 2, 10, 0, 0));
            self.emit(Insn::new(0x07, 2, 0, 0, -8));
        } else {
            self.load_kind_into(2);
        }
        if func == MAP_UPDATE_ELEM {
            self.emit(Insn::new(0xbf, 3, 10, 0, 0));
            self.emit(Insn::new(0x07, 3, 0, 0, -16));
            self.emit(Insn::new(0xb7, 4, 0, 0, 0));
        }
        self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, RINGBUF_MAP));
        self.emit(Insn::new(0, 0, 0, 0, 0));
        self.emit(Insn::new(0x85, 0, 0, 0, func));
        self.clobber();
    }

    /// A loop adding a bounded scalar to a map value pointer once or twice
    /// per iteration: without CAP_PERFMON each add and each decided loop
    /// branch pushes a speculative path, past the 8192 the kernel keeps
    /// (at an add or at the branch, by the count's parity).
    fn speculative_flood(&mut self) {
        let key_off = -8;
        self.emit(Insn::new(0x62, 10, 0, key_off, 0));
        self.emit(Insn::new(0xbf, 2, 10, 0, 0));
        self.emit(Insn::new(0x07, 2, 0, 0, key_off as i32));
        self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, ARRAY_MAP));
        self.emit(Insn::new(0, 0, 0, 0, 0));
        self.emit(Insn::new(0x85, 0, 0, 0, MAP_LOOKUP_ELEM));
        let adds = 1 + self.rng.below(2) as i16;
        let iterations = self.rng.pick(&[0x800, 0x1000, 0x1001, 0x2000, 0x2001]);
        let (val, counter) = (8u8, 9u8);
        // Null check over: 3 setup insns, then per loop `adds` + 3.
        self.emit(Insn::new(0x15, 0, 0, 3 + adds + 3, 0));
        self.emit(Insn::new(0x71, val, 0, 0, 0));
        self.emit(Insn::new(0x57, val, 0, 0, (ARRAY_VALUE_SIZE - 1) & 7));
        self.emit(Insn::new(0xb7, counter, 0, 0, 0));
        self.emit(Insn::new(0xbf, 1, 0, 0, 0));
        for _ in 0..adds {
            self.emit(Insn::new(0x0f, 1, val, 0, 0));
        }
        self.emit(Insn::new(0x07, counter, 0, 0, 1));
        self.emit(Insn::new(0xa5, counter, 0, -(adds + 3), iterations));
        self.clobber();
        self.kinds[0] = Kind::Uninit;
        self.set(val, Kind::Uninit);
        self.set(counter, Kind::Uninit);
    }
}

const KTIME_GET_NS: i32 = 5;
const GET_PRANDOM_U32: i32 = 7;
const D_PATH: i32 = 147;
const GET_FUNC_IP: i32 = 173;
const GET_FUNC_ARG: i32 = 183;
const GET_FUNC_RET: i32 = 184;
const GET_FUNC_ARG_CNT: i32 = 185;

/// A whole tracing program without a trampoline (the host refuses
/// fentry/fexit and LSM programs before verification): a raw tracepoint
/// (`tp_btf`) calling helpers meant for trampolines or allow-listed
/// functions and reading its arguments, or a map element iterator reading
/// and writing its key (read-only) and value buffers at any offset.
pub(super) fn tracing_program(
    rng: &mut super::Rng,
) -> (
    ProgType,
    (bpfvet_isa::uapi::AttachType, &'static str),
    Vec<Insn>,
) {
    use bpfvet_isa::uapi::AttachType;
    let mut insns = vec![Insn::new(0xbf, 6, 1, 0, 0)];
    let attach = if rng.chance(40) {
        for _ in 0..1 + rng.below(3) {
            if rng.chance(30) {
                // sys_enter's arguments: struct pt_regs *regs, long id.
                let off = rng.pick(&[0i16, 8, 16, 4, -8]);
                let (sz, _) = rng.pick(&SIZES);
                insns.push(Insn::new(0x61 | sz, 7, 6, off, 0));
                continue;
            }
            let func = rng.pick(&[
                GET_FUNC_IP,
                D_PATH,
                GET_FUNC_ARG,
                GET_FUNC_RET,
                GET_FUNC_ARG_CNT,
                KTIME_GET_NS,
            ]);
            insns.push(Insn::new(0xbf, 1, 6, 0, 0));
            insns.push(Insn::new(0xb7, 2, 0, 0, 0));
            insns.push(Insn::new(0xbf, 3, 10, 0, 0));
            insns.push(Insn::new(0x07, 3, 0, 0, -8));
            insns.push(Insn::new(0x85, 0, 0, 0, func));
        }
        (AttachType::TRACE_RAW_TP, "tp_btf/sys_enter")
    } else {
        // struct bpf_iter__bpf_map_elem: meta, map, key (read-only buffer
        // or NULL), value (buffer or NULL).
        insns.push(Insn::new(0x79, 7, 6, 16, 0));
        insns.push(Insn::new(0x79, 8, 6, 24, 0));
        for _ in 0..1 + rng.below(3) {
            let (buf, write) = if rng.chance(50) {
                (7u8, rng.chance(20))
            } else {
                (8u8, rng.chance(50))
            };
            let (sz, _) = rng.pick(&SIZES);
            let off = rng.pick(&[0i16, 0, 4, 8, 100, -1, -8, 4096, 0x7fff]);
            let variable = rng.chance(20);
            let mut body = Vec::new();
            let p = if variable {
                body.push(Insn::new(0x85, 0, 0, 0, GET_PRANDOM_U32));
                body.push(Insn::new(0x57, 0, 0, 0, rng.pick(&[7, 0xff, 0x7fff_ffff])));
                body.push(Insn::new(0xbf, 9, buf, 0, 0));
                body.push(Insn::new(0x0f, 9, 0, 0, 0));
                9
            } else {
                buf
            };
            if write {
                body.push(Insn::new(0x62 | sz, p, 0, off, 1));
            } else {
                body.push(Insn::new(0x61 | sz, 0, p, off, 0));
            }
            // The NULL check, forgotten now and then.
            if !rng.chance(10) {
                insns.push(Insn::new(0x15, buf, 0, body.len() as i16, 0));
            }
            insns.extend(body);
        }
        (AttachType::TRACE_ITER, "iter/bpf_map_elem")
    };
    insns.push(Insn::new(0xb7, 0, 0, 0, rng.pick(&[0, 0, 0, 1, 2])));
    insns.push(Insn::new(0x95, 0, 0, 0, 0));
    (ProgType::TRACING, attach, insns)
}
