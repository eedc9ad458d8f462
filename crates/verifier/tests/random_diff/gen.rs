//! A seeded generator of random but plausible BPF programs: it tracks a
//! rough type for every register and mostly picks registers of the type an
//! instruction needs, so that programs are often valid, and makes a
//! deliberate mistake (wrong register, offset past a bound, missing check)
//! at a small rate, so that the kernel rejects a good share of them.

use bpfvet_isa::opcode::{BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC, BPF_PSEUDO_MAP_IDX};
use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;

mod align_blocks;
pub mod btf_objects;
mod graph_blocks;
pub mod graph_shape_blocks;
mod guest_blocks;
mod guestmit_blocks;
mod kfunc_blocks;
mod leak_blocks;
pub mod load_blocks;
mod loader_blocks;
mod mem_blocks;
mod path_blocks;
pub mod prog_blocks;
mod qdisc_blocks;
mod region_blocks;
pub mod structops_blocks;
pub mod tailmap_blocks;

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
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
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
pub const PROG_ARRAY_MAP: i32 = 2;
/// An array whose value has BTF with a bpf_spin_lock at offset 0.
pub const LOCK_MAP: i32 = 3;
pub const LOCK_VALUE_SIZE: i32 = btf_objects::LOCK_VALUE_SIZE;
/// A ring buffer of one page.
pub const RINGBUF_MAP: i32 = 4;
pub const RINGBUF_SIZE: i32 = 4096;
/// Read-only (BPF_F_RDONLY_PROG), frozen arrays holding `RODATA`: one
/// entry (its strings are constant for helpers), and two entries (no
/// direct value address).
pub const RODATA_MAP: i32 = 5;
pub const RODATA2_MAP: i32 = 6;
pub const RODATA_VALUE_SIZE: i32 = 64;
/// Format strings every 8 bytes, the last 4 bytes without a terminator.
pub const RODATA: &[u8; 64] =
    b"%d\0\0\0\0\0\0%z\0\0\0\0\0\0%s %s\0\0\0%pK\0\0\0\0\0abc\0\0\0\0\0%%\0\0\0\0\0\0%-08llx\0%c\0\0%%%%";
/// A sockmap (values are sockets).
pub const SOCKMAP: i32 = 7;
/// Two cgroup storage maps (a program may use one of each kind).
pub const CGROUP_STORAGE_MAP: i32 = 8;
pub const CGROUP_STORAGE2_MAP: i32 = 9;
/// Two arenas (a program may use one) and an array of bpf_wq values.
pub const ARENA_MAP: i32 = 10;
pub const ARENA2_MAP: i32 = 11;
pub const WQ_MAP: i32 = 12;

/// Feature blocks a batch may enable (swarm testing: each seed draws a
/// subset, so rare combinations get room that a uniform mix would crowd
/// out). [`Features::ALL`] is the CI smoke batch's set.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Features(pub u32);

impl Features {
    /// bpf-to-bpf calls, deep call chains, large frames.
    pub const CALLS: u32 = 1 << 0;
    /// Calls only reachable through branches the verifier proves dead.
    pub const DEAD_CALLS: u32 = 1 << 1;
    /// bpf_tail_call, also from subprograms.
    pub const TAIL_CALLS: u32 = 1 << 2;
    /// bpf_loop and bpf_for_each_map_elem callbacks.
    pub const CALLBACKS: u32 = 1 << 3;
    /// Helper memory arguments from registers of every kind.
    pub const HELPER_ARGS: u32 = 1 << 4;
    /// cgroup_skb, kprobe and tracepoint programs (ctx layouts, read-only
    /// packets).
    pub const MORE_PROG_TYPES: u32 = 1 << 5;
    /// Packet reads and writes, in every program type.
    pub const PACKET: u32 = 1 << 6;
    /// 32-bit ALU on pointers, pointer comparisons, pointer arithmetic.
    pub const PTR_ALU: u32 = 1 << 7;
    /// Atomics of every kind and width (load-acquire/store-release).
    pub const ATOMICS: u32 = 1 << 8;
    /// Variable-offset stack accesses, bounded and not.
    pub const VAR_STACK: u32 = 1 << 9;
    /// Loops: counted, nested, may_goto.
    pub const LOOPS: u32 = 1 << 10;
    /// Spills and fills of every width, of pointers too.
    pub const SPILLS: u32 = 1 << 11;
    /// Half of the programs get one encoding-level change after layout
    /// (`corrupt`): opcodes, reserved fields, LD_IMM64 forms, jump and
    /// call targets, LD_ABS/IND, kfunc ids.
    pub const ENCODING: u32 = 1 << 12;
    /// Kfunc calls by the host's BTF ids (`gen/kfunc_blocks.rs`): RCU,
    /// preemption and irq regions, iterators, casts, acquire/release.
    pub const KFUNCS: u32 = 1 << 13;
    /// Memory and helper-argument sites (`gen/mem_blocks.rs`): caller-frame
    /// spills, variable-offset stack operations, callback keys, ring
    /// buffers, read-only map strings, sockmap arguments.
    pub const MEMORY: u32 = 1 << 14;
    /// Whole-program shapes checked at load (`gen/loader_blocks.rs`): many
    /// subprograms.
    pub const LOADER: u32 = 1 << 15;
    /// Program BTF objects (`gen/graph_blocks.rs`): bpf_obj_new and drop,
    /// list and rbtree operations under a map value's lock, kptr slots
    /// loaded, stored and exchanged, two maps' locks.
    pub const BTF_OBJECTS: u32 = 1 << 16;
    /// Whole-program shapes with their own func_info
    /// (`gen/prog_blocks.rs`): exception callbacks, global and void
    /// subprograms, arenas, kfunc and tail-call counts.
    pub const PROGRAM: u32 = 1 << 17;
    /// Sleepable syscall programs; regions meeting calls that may sleep,
    /// RCU-protected and css iterators, local dynptrs, timer/wq/resilient
    /// lock arguments without the field, `__str` formats
    /// (`gen/region_blocks.rs`).
    pub const REGIONS: u32 = 1 << 18;
    /// Pointer leaks and speculation limits met below CAP_PERFMON
    /// (`gen/leak_blocks.rs`): pointers stored into map values, passed as
    /// helper scalars, used by atomics from a stack slot; zero-sized map
    /// keys; loops pushing speculative paths; tracing programs without a
    /// trampoline (`tp_btf`, `iter`).
    pub const LEAKS: u32 = 1 << 19;
    /// struct_ops programs by the host's struct_ops types and members, and
    /// wrong attach ids (`gen/structops_blocks.rs`): argument pointers
    /// read and written, congestion-control helpers and kfuncs, struct_ops
    /// maps named in programs.
    pub const STRUCT_OPS: u32 = 1 << 20;
    /// Whole-program graph, kptr and callback shapes
    /// (`gen/graph_shape_blocks.rs`): locks, kptr slots and graph roots at a
    /// variable offset, graph kfuncs in rbtree callbacks, bpf_rbtree_add in
    /// the deepest frames, calls queueing a path past 8,192 pending ones,
    /// `__uptr` fields.
    pub const GRAPH_SHAPES: u32 = 1 << 22;
    /// BPF_PROG_LOAD attributes (`gen/load_blocks.rs`): license,
    /// fd_array and fd_array_cnt, func_info_rec_size, CO-RE records.
    pub const LOAD_ATTRS: u32 = 1 << 21;
    /// Paths the other blocks keep apart (`gen/path_blocks.rs`):
    /// callbacks returning r0 of any kind, one pointer add reached from
    /// two paths with different Spectre masks.
    pub const PATHS: u32 = 1 << 23;
    /// Tracing and LSM programs for a lockdown-free guest
    /// (`gen/guest_blocks.rs`; batch.sh `KERNEL=...` only, never drawn).
    pub const GUEST_TRACING: u32 = 1 << 24;
    /// Programs loaded with BPF_F_STRICT_ALIGNMENT (sometimes overridden
    /// by BPF_F_ANY_ALIGNMENT) whose packet, map value, stack and ctx
    /// accesses sit at odd constant and variable offsets
    /// (`gen/align_blocks.rs`).
    pub const ALIGNMENT: u32 = 1 << 25;
    /// One tail call reached with two prog arrays (`gen/tailmap_blocks.rs`).
    pub const TAILMAP: u32 = 1 << 26;
    /// Variable-offset stack writes and helper ranges over spills, zeros
    /// and uninitialised bytes, for a guest with CPU mitigations off
    /// (`gen/guestmit_blocks.rs`; batch.sh `MITIGATIONS=off`, never drawn).
    pub const MITIGATIONS_OFF: u32 = 1 << 27;
    /// Qdisc_ops struct_ops programs for a guest with bpf_qdisc
    /// (`gen/qdisc_blocks.rs`; batch.sh `KERNEL=6.18` only, never drawn).
    pub const QDISC: u32 = 1 << 28;
    /// Every feature the host can run (`GUEST_TRACING`, `MITIGATIONS_OFF`
    /// and `QDISC` need the guest).
    pub const ALL: Features = Features(((1 << 24) - 1) | Self::ALIGNMENT | Self::TAILMAP);
    pub const NAMES: [(u32, &'static str); 29] = [
        (Self::CALLS, "calls"),
        (Self::DEAD_CALLS, "dead_calls"),
        (Self::TAIL_CALLS, "tail_calls"),
        (Self::CALLBACKS, "callbacks"),
        (Self::HELPER_ARGS, "helper_args"),
        (Self::MORE_PROG_TYPES, "more_prog_types"),
        (Self::PACKET, "packet"),
        (Self::PTR_ALU, "ptr_alu"),
        (Self::ATOMICS, "atomics"),
        (Self::VAR_STACK, "var_stack"),
        (Self::LOOPS, "loops"),
        (Self::SPILLS, "spills"),
        (Self::ENCODING, "encoding"),
        (Self::KFUNCS, "kfuncs"),
        (Self::MEMORY, "memory"),
        (Self::LOADER, "loader"),
        (Self::BTF_OBJECTS, "btf_objects"),
        (Self::PROGRAM, "program"),
        (Self::REGIONS, "regions"),
        (Self::LEAKS, "leaks"),
        (Self::GRAPH_SHAPES, "graph_shapes"),
        (Self::STRUCT_OPS, "struct_ops"),
        (Self::LOAD_ATTRS, "load_attrs"),
        (Self::PATHS, "paths"),
        (Self::GUEST_TRACING, "guest_tracing"),
        (Self::ALIGNMENT, "alignment"),
        (Self::TAILMAP, "tailmap"),
        (Self::QDISC, "qdisc"),
        (Self::MITIGATIONS_OFF, "mitigations_off"),
    ];

    /// The subset a batch seed enables: each feature with probability one
    /// half, never none.
    pub fn swarm(seed: u64) -> Features {
        let mut rng = Rng::new(seed ^ 0x5357_4152_4d21);
        let bits = (rng.next() as u32) & Self::ALL.0;
        Features(if bits == 0 { Self::ALL.0 } else { bits })
    }

    pub fn has(self, f: u32) -> bool {
        self.0 & f != 0
    }

    pub fn names(self) -> String {
        let v: Vec<&str> = Self::NAMES
            .iter()
            .filter(|(b, _)| self.has(*b))
            .map(|(_, n)| *n)
            .collect();
        v.join(",")
    }
}

/// What a subprogram is and how it is entered.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SubKind {
    /// A bpf-to-bpf call with r1 of this kind.
    Call(Kind),
    /// A bpf_loop callback: (u32 index, void *ctx).
    LoopCb,
    /// A bpf_rbtree_add `less` callback: (node a, node b), non-owning
    /// (`gen/graph_blocks.rs` opens its body).
    RbLess,
    /// A bpf_for_each_map_elem callback: (map, key, value, ctx) of the map.
    ForEachCb(i32, i32),
}

#[derive(Clone, Debug)]
struct Sub {
    kind: SubKind,
    /// Call-chain depth of its frame (main is 0).
    level: u32,
    insns: Vec<Insn>,
    /// (insn index in `insns`, callee sub) of its calls and func loads.
    calls: Vec<(usize, usize)>,
}

/// Call-chain depth the generator goes to (the kernel allows 8 frames).
const MAX_LEVEL: u32 = 9;
const MAX_SUBS: usize = 8;

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
    /// A map pointer (ld_imm64 of a map): (map index).
    MapPtr(i32),
    /// A bpf_for_each_map_elem callback's key: (key size).
    MapKey(i32),
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
    /// Loaded with BPF_F_SLEEPABLE.
    pub sleepable: bool,
    /// Loaded with func_info even as a single function, so the kernel
    /// keeps the object's BTF as the program's (bpf_obj_new's types).
    pub prog_btf: bool,
    /// Expected attach type and ELF section naming the BTF target
    /// (`tp_btf/NAME`, `iter/NAME`) of a tracing program.
    pub attach: Option<(bpfvet_isa::uapi::AttachType, &'static str)>,
    /// func_info records (first insn, FUNC type id of the object BTF)
    /// given by a block of `gen/prog_blocks.rs`; empty: `f` at every
    /// function start (`diff::func_info`).
    pub funcs: Vec<(usize, u32)>,
    /// The struct_ops member a struct_ops program implements (ids as they
    /// are, `gen/structops_blocks.rs`).
    pub struct_ops: Option<bpfvet_object::StructOpsMember>,
    /// BPF_PROG_LOAD attributes of its own (`gen/load_blocks.rs`).
    pub load: bpfvet_object::LoadAttrs,
    /// The object's license.
    pub license: &'static str,
    /// BPF_PROG_LOAD prog_flags besides BPF_F_SLEEPABLE
    /// (`gen/align_blocks.rs`).
    pub prog_flags: u32,
}

impl GenProgram {
    /// A program of `prog_type` with nothing but its instructions: no
    /// BTF, attach target, struct_ops member or load attributes, GPL.
    pub fn plain(prog_type: ProgType, insns: Vec<Insn>) -> GenProgram {
        GenProgram {
            prog_type,
            insns,
            sleepable: false,
            prog_btf: false,
            attach: None,
            funcs: Vec::new(),
            struct_ops: None,
            load: Default::default(),
            license: "GPL",
            prog_flags: 0,
        }
    }
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
    features: Features,
    /// Subprograms, generated after main; `calls` of the function being
    /// generated now.
    subs: Vec<Sub>,
    calls: Vec<(usize, usize)>,
    level: u32,
    /// Whether the function being generated is a callback.
    in_callback: bool,
    /// A block used the program BTF's types (`GenProgram::prog_btf`).
    prog_btf: bool,
    /// The member a struct_ops program implements.
    struct_ops: Option<structops_blocks::Target>,
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
            ProgType::KPROBE => {
                // struct pt_regs: 21 words, read-only.
                if self.rng.chance(self.mistakes * 2) {
                    let off = self.rng.below(180) as i16;
                    let (sz, _) = self.rng.pick(&SIZES);
                    return (off, sz, Kind::Scalar);
                }
                return (8 * self.rng.below(21) as i16, 0x18, Kind::Scalar);
            }
            ProgType::TRACEPOINT => {
                if self.rng.chance(self.mistakes * 2) {
                    let off = self.rng.pick(&[-8, 3, 2048, 4096, 6]);
                    let (sz, _) = self.rng.pick(&SIZES);
                    return (off, sz, Kind::Scalar);
                }
                // The first word (common fields) is not readable.
                let (sz, b) = self.rng.pick(&SIZES);
                return (8 + b as i16 * self.rng.below(8) as i16, sz, Kind::Scalar);
            }
            ProgType::STRUCT_OPS => return self.struct_ops_ctx_field(),
            ProgType::CGROUP_SKB => (
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
            // socket_filter: no data/data_end (those are mistakes here).
            _ => (
                &[
                    (0, Kind::Scalar),
                    (4, Kind::Scalar),
                    (8, Kind::Scalar),
                    (16, Kind::Scalar),
                    (48, Kind::Scalar),
                    (56, Kind::Scalar),
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
        // Pointers spill whole; a narrow spill takes a scalar (unless the
        // pick is a mistake).
        let s = if bytes == 8 {
            self.reg_of(&|k| k != Kind::Uninit && k != Kind::Fp)
        } else {
            self.reg_of(&|k| k == Kind::Scalar)
        };
        let s = match s {
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
        let (doff, eoff) = match self.prog_type {
            ProgType::XDP => (0, 4),
            ProgType::SCHED_CLS | ProgType::CGROUP_SKB => (76, 80),
            // Program types without direct packet access, as a mistake.
            _ if self.features.has(Features::PACKET) && self.rng.chance(15) => (76, 80),
            _ => return self.ctx_load(),
        };
        let Some(c) = self.reg_of(&|k| k == Kind::Ctx) else {
            return self.alu();
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
        if self.features.has(Features::PACKET) && self.rng.chance(10) {
            // Both edges rejoin at once.
            self.emit(Insn::new(code, a, b, 0, 0));
            self.pkt_access(pd, len);
            return;
        }
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
        let read = if self.features.has(Features::PACKET) {
            50
        } else {
            75
        };
        if self.rng.chance(read) {
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
        let f = self.features;
        if f.has(Features::MEMORY) && self.rng.chance(6) {
            return self.mem_block();
        }
        if f.has(Features::REGIONS) && self.rng.chance(8) {
            return self.region_feature_block();
        }
        if f.has(Features::LEAKS) && self.rng.chance(6) {
            return self.leak_block();
        }
        if f.has(Features::STRUCT_OPS) && self.rng.chance(12) {
            return self.struct_ops_block();
        }
        if f.has(Features::PATHS) && self.rng.chance(8) {
            return self.masks_from_two_paths();
        }
        if f.has(Features::ALIGNMENT) && self.rng.chance(15) {
            return self.align_block();
        }
        if f.has(Features::TAILMAP) && self.rng.chance(8) {
            return self.tail_call_two_maps();
        }
        if f.has(Features::BTF_OBJECTS) && self.rng.below(1000) < 2 {
            return self.kptr_and_percpu_drop_sites();
        }
        if f.has(Features::MITIGATIONS_OFF) && self.rng.chance(12) {
            return self.mitigations_off_block();
        }
        match self.rng.below(128) {
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
            96..=99 => self.bounded_loop(),
            100..=103 if f.has(Features::CALLS) => self.call_sub(),
            104..=105 if f.has(Features::DEAD_CALLS) => self.dead_call(),
            106..=107 if f.has(Features::TAIL_CALLS) => self.tail_call(),
            108..=110 if f.has(Features::CALLBACKS) => self.callback_call(),
            111..=114 if f.has(Features::HELPER_ARGS) => self.helper_mem_arg(),
            115..=116 if f.has(Features::PTR_ALU) => self.ptr_alu(),
            117..=118 if f.has(Features::VAR_STACK) => self.var_stack(),
            119 if f.has(Features::LOOPS) => self.loop_with_body(),
            120..=121 if f.has(Features::ATOMICS) => self.atomic_any(),
            122..=123 if f.has(Features::SPILLS) => self.spill_any(),
            124..=127 if f.has(Features::BTF_OBJECTS) && self.rng.chance(60) => {
                self.btf_object_block()
            }
            124..=127 if f.has(Features::KFUNCS) => self.kfunc_block(),
            _ => self.alu(),
        }
    }

    /// The register holding ctx (r6..r9 first), if any.
    fn ctx_reg(&self) -> Option<u8> {
        [6u8, 7, 8, 9, 1, 2, 3, 4, 5, 0]
            .into_iter()
            .find(|&r| self.kinds[r as usize] == Kind::Ctx)
    }

    /// `r = r10 + off` over `words` zeroed stack words (a buffer the
    /// helpers may read).
    fn stack_buf_into(&mut self, r: u8, off: i32, words: i32) {
        for k in 0..words {
            let o = off + 8 * k;
            if (-512..0).contains(&o) {
                self.emit(Insn::new(0x7a, 10, 0, o as i16, 0));
                self.stack.push((o, 8, Kind::Scalar));
            }
        }
        self.emit(Insn::new(0xbf, r, 10, 0, 0));
        self.emit(Insn::new(0x07, r, 0, 0, off));
        self.set(r, Kind::Fp);
    }

    /// Sets `r` to a value of a random kind, the way a helper memory
    /// argument or a subprogram argument might be fed: stack buffers of
    /// every size and offset, ctx, packet and packet end, map pointers,
    /// scalars, map values maybe NULL, whatever a register holds.
    fn load_kind_into(&mut self, r: u8) {
        let copy_of = |g: &mut Gen, want: &dyn Fn(Kind) -> bool| -> bool {
            let cands: Vec<u8> = (0..10u8)
                .filter(|&x| x != r && want(g.kinds[x as usize]))
                .collect();
            if cands.is_empty() {
                return false;
            }
            let s = g.rng.pick(&cands);
            g.emit(Insn::new(0xbf, r, s, 0, 0));
            g.set(r, g.kinds[s as usize]);
            true
        };
        match self.rng.below(10) {
            0 | 1 => {
                let words = self.rng.below(7) as i32;
                let off = -(8 * (1 + self.rng.below(8) as i32));
                self.stack_buf_into(r, off, words);
            }
            2 => {
                let off = self.rng.pick(&[-1, -4, -12, -512, -516, 0, 8, -600, -60]);
                self.emit(Insn::new(0xbf, r, 10, 0, 0));
                self.emit(Insn::new(0x07, r, 0, 0, off));
                self.set(r, Kind::Fp);
            }
            3 => {
                if !copy_of(self, &|k| k == Kind::Ctx) {
                    self.emit(Insn::new(0xb7, r, 0, 0, 0));
                    self.set(r, Kind::Scalar);
                }
            }
            4 => {
                let m = self.rng.pick(&[ARRAY_MAP, HASH_MAP, PROG_ARRAY_MAP]);
                self.emit(Insn::new(0x18, r, BPF_PSEUDO_MAP_IDX, 0, m));
                self.emit(Insn::new(0, 0, 0, 0, 0));
                self.set(r, Kind::MapPtr(m));
            }
            5 => {
                let imm = self.rng.pick(&[0, 0, 1, 8, -8, 4096]);
                self.emit(Insn::new(0xb7, r, 0, 0, imm));
                self.set(r, Kind::Scalar);
            }
            6 => {
                if !copy_of(self, &|k| {
                    matches!(k, Kind::MapVal(..) | Kind::MapOrNull(..))
                }) {
                    self.emit(Insn::new(0xb7, r, 0, 0, 0));
                    self.set(r, Kind::Scalar);
                }
            }
            7 => {
                if !copy_of(self, &|k| matches!(k, Kind::Pkt | Kind::PktEnd)) {
                    self.emit(Insn::new(0xbf, r, 10, 0, 0));
                    self.set(r, Kind::Fp);
                }
            }
            _ => {
                if !copy_of(self, &|k| k != Kind::Uninit) {
                    self.emit(Insn::new(0xb7, r, 0, 0, 0));
                    self.set(r, Kind::Scalar);
                }
            }
        }
        // Sometimes moved off its start.
        if self.rng.chance(10) {
            let d = self.rng.pick(&[1, 4, 8, -8, 16]);
            self.emit(Insn::new(0x07, r, 0, 0, d));
        }
    }

    /// A helper whose memory argument comes from a register of any kind
    /// (and sizes of any value).
    fn helper_mem_arg(&mut self) {
        match self.rng.below(5) {
            0 | 1 => {
                let (map, vsize, _) = self.pick_map();
                self.load_kind_into(2);
                self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, map));
                self.emit(Insn::new(0, 0, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, 1));
                self.clobber();
                self.kinds[0] = Kind::MapOrNull(map, vsize);
                if self.rng.chance(70) {
                    self.null_check();
                }
            }
            2 => {
                let (map, _, ksize) = self.pick_map();
                self.load_kind_into(3);
                self.map_and_key(map, ksize);
                self.emit(Insn::new(0xb7, 4, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, 2));
                self.clobber();
            }
            3 => {
                self.load_kind_into(1);
                let size = self.rng.pick(&[0, 1, 4, 8, 16, 48, 64, 512, -1, 7]);
                self.emit(Insn::new(0xb7, 2, 0, 0, size));
                self.emit(Insn::new(0xb7, 3, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, 113));
                self.clobber();
            }
            _ => {
                let (map, _, _) = self.pick_map();
                self.load_kind_into(2);
                self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, map));
                self.emit(Insn::new(0, 0, 0, 0, 0));
                self.emit(Insn::new(0x85, 0, 0, 0, 3));
                self.clobber();
            }
        }
    }

    fn new_sub(&mut self, kind: SubKind) -> usize {
        self.subs.push(Sub {
            kind,
            level: self.level + 1,
            insns: Vec::new(),
            calls: Vec::new(),
        });
        self.subs.len() - 1
    }

    fn can_add_sub(&self) -> bool {
        self.subs.len() < MAX_SUBS && self.level < MAX_LEVEL
    }

    /// `r1 = <argument>; call pc+N` to a new or a deeper subprogram.
    fn call_sub(&mut self) {
        let deeper: Vec<usize> = (0..self.subs.len())
            .filter(|&i| {
                self.subs[i].level > self.level && matches!(self.subs[i].kind, SubKind::Call(_))
            })
            .collect();
        let id = if !deeper.is_empty() && (self.rng.chance(30) || !self.can_add_sub()) {
            self.rng.pick(&deeper)
        } else if self.can_add_sub() {
            let arg = match self.rng.below(10) {
                0..=3 if self.ctx_reg().is_some() => Kind::Ctx,
                0..=5 => Kind::Scalar,
                _ => Kind::Fp,
            };
            self.new_sub(SubKind::Call(arg))
        } else {
            return self.alu();
        };
        let SubKind::Call(arg) = self.subs[id].kind else {
            return self.alu();
        };
        if self.rng.chance(self.mistakes * 2) {
            self.load_kind_into(1);
        } else {
            match arg {
                Kind::Ctx => match self.ctx_reg() {
                    Some(c) => self.emit(Insn::new(0xbf, 1, c, 0, 0)),
                    None => self.emit(Insn::new(0xb7, 1, 0, 0, 0)),
                },
                Kind::Fp => {
                    let off = -(8 * (1 + self.rng.below(4) as i32));
                    self.stack_buf_into(1, off, 1);
                }
                _ => {
                    let s = self.scalar();
                    self.emit(Insn::new(0xbf, 1, s, 0, 0));
                }
            }
        }
        if self.rng.chance(30) {
            let s = self.scalar();
            self.emit(Insn::new(0xbf, 2, s, 0, 0));
        }
        self.calls.push((self.insns.len(), id));
        self.emit(Insn::new(0x85, 0, BPF_PSEUDO_CALL, 0, 0));
        self.clobber();
    }

    /// `rX = K; if rX == K goto +len; <a call>`: the call (and whatever
    /// it reaches) is only on a path the verifier proves dead, but the
    /// static checks (call graph, stack depth, tail-call reachability)
    /// still see it.
    fn dead_call(&mut self) {
        let r = self.dst();
        let k = self.rng.below(4) as i32;
        self.emit(Insn::new(0xb7, r, 0, 0, k));
        self.set(r, Kind::Scalar);
        let live = self.rng.chance(15);
        let code = if live { 0x55 } else { 0x15 };
        self.guarded(
            move |_| (code, r, 0, k),
            false,
            move |g| match g.rng.below(4) {
                0 => g.tail_call(),
                1 => g.callback_call(),
                _ => g.call_sub(),
            },
        );
    }

    /// `bpf_tail_call(ctx, &prog_array, index)`.
    fn tail_call(&mut self) {
        if self.rng.chance(self.mistakes * 2) {
            self.load_kind_into(1);
        } else {
            match self.ctx_reg() {
                Some(c) => self.emit(Insn::new(0xbf, 1, c, 0, 0)),
                None => return self.alu(),
            }
        }
        if self.rng.chance(50) {
            let s = self.scalar();
            self.emit(Insn::new(0xbf, 3, s, 0, 0));
        } else {
            let idx = self.rng.pick(&[0, 1, 3, 15, 16, -1]);
            self.emit(Insn::new(0xb7, 3, 0, 0, idx));
        }
        let map = if self.rng.chance(100 - self.mistakes * 3) {
            PROG_ARRAY_MAP
        } else {
            ARRAY_MAP
        };
        self.emit(Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, map));
        self.emit(Insn::new(0, 0, 0, 0, 0));
        self.emit(Insn::new(0x85, 0, 0, 0, 12));
        self.clobber();
    }

    /// `bpf_loop(n, cb, ctx, 0)` or `bpf_for_each_map_elem(&map, cb, ctx, 0)`.
    fn callback_call(&mut self) {
        if !self.can_add_sub() {
            return self.alu();
        }
        let for_each = self.rng.chance(40);
        let kind = if for_each {
            let (map, vsize, _) = self.pick_map();
            if self.rng.chance(self.mistakes * 2) {
                // A map type that takes no callbacks.
                SubKind::ForEachCb(PROG_ARRAY_MAP, 8)
            } else {
                SubKind::ForEachCb(map, vsize)
            }
        } else {
            SubKind::LoopCb
        };
        let id = self.new_sub(kind);
        if self.rng.chance(30) {
            let off = -(8 * (1 + self.rng.below(4) as i32));
            self.stack_buf_into(3, off, 1);
        } else {
            self.emit(Insn::new(0xb7, 3, 0, 0, 0));
        }
        let flags = if self.rng.chance(self.mistakes * 2) {
            1
        } else {
            0
        };
        self.emit(Insn::new(0xb7, 4, 0, 0, flags));
        match kind {
            SubKind::ForEachCb(map, _) => {
                self.emit(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, map));
                self.emit(Insn::new(0, 0, 0, 0, 0));
            }
            _ => {
                if self.rng.chance(20) {
                    let s = self.scalar();
                    self.emit(Insn::new(0xbf, 1, s, 0, 0));
                } else {
                    let n = self.rng.pick(&[1, 2, 4, 8, 0, 1 << 23, (1 << 23) + 1]);
                    self.emit(Insn::new(0xb7, 1, 0, 0, n));
                }
            }
        }
        self.calls.push((self.insns.len(), id));
        self.emit(Insn::new(0x18, 2, BPF_PSEUDO_FUNC, 0, 0));
        self.emit(Insn::new(0, 0, 0, 0, 0));
        let helper = if for_each { 164 } else { 181 };
        self.emit(Insn::new(0x85, 0, 0, 0, helper));
        self.clobber();
    }

    /// ALU on pointers: 32-bit moves and arithmetic, pointer-pointer
    /// subtraction and comparisons, unbounded offsets; then a use.
    fn ptr_alu(&mut self) {
        let Some(p) = self.reg_of(&|k| {
            matches!(
                k,
                Kind::Ctx
                    | Kind::Fp
                    | Kind::MapVal(..)
                    | Kind::MapOrNull(..)
                    | Kind::Pkt
                    | Kind::PktEnd
                    | Kind::MapPtr(_)
            )
        }) else {
            return self.alu();
        };
        let p = if p == 10 { self.copy_fp() } else { p };
        match self.rng.below(6) {
            0 => {
                // w_d = w_p, then pointer-like use.
                let d = self.dst();
                self.emit(Insn::new(0xbc, d, p, 0, 0));
                self.set(d, Kind::Scalar);
                if self.rng.chance(50) {
                    self.emit(Insn::new(0x07, d, 0, 0, 8));
                }
                if self.rng.chance(60) {
                    let (sz, _) = self.rng.pick(&SIZES);
                    let r = self.rng.pick(&[0, 5]);
                    self.emit(Insn::new(0x61 | sz, r, d, 0, 0));
                    self.set(r, Kind::Scalar);
                }
            }
            1 => {
                let op = self.rng.pick(&[0x04, 0x14, 0x54, 0x64, 0xa4, 0x84]);
                self.emit(Insn::new(op, p, 0, 0, 4));
                if self.rng.chance(50) {
                    self.emit(Insn::new(0x61, 0, p, 0, 0));
                    self.set(0, Kind::Scalar);
                }
                self.set(p, Kind::Scalar);
            }
            2 => {
                let q = self.reg_of(&|k| k != Kind::Uninit).unwrap_or(10);
                let class = if self.rng.chance(25) { 0x06 } else { 0x05 };
                let op = self.rng.pick(&JMP_OPS);
                let n = 1 + self.rng.below(2);
                self.guarded(
                    move |_| (class | op | 0x08, p, q, 0),
                    false,
                    move |g| {
                        for _ in 0..n {
                            g.block();
                        }
                    },
                );
            }
            3 => {
                let q = self.reg_of(&|k| k != Kind::Uninit).unwrap_or(10);
                let d = self.dst();
                self.emit(Insn::new(0xbf, d, p, 0, 0));
                self.emit(Insn::new(0x1f, d, q, 0, 0));
                self.set(d, Kind::Scalar);
                if self.rng.chance(40) {
                    self.emit(Insn::new(0x0f, p, d, 0, 0));
                    self.emit(Insn::new(0x71, 0, p, 0, 0));
                    self.set(0, Kind::Scalar);
                }
            }
            4 => {
                // An offset with no bound, or a bound only on one side.
                let s = self.scalar();
                if self.rng.chance(50) {
                    let sh = self.rng.pick(&[1, 32, 56, 60]);
                    self.emit(Insn::new(0x77, s, 0, 0, sh));
                }
                self.emit(Insn::new(0x0f, p, s, 0, 0));
                if self.rng.chance(70) {
                    let (sz, _) = self.rng.pick(&SIZES);
                    self.emit(Insn::new(0x61 | sz, 0, p, 0, 0));
                    self.set(0, Kind::Scalar);
                }
            }
            _ => {
                // Pointer as a scalar operand, both ways.
                let s = self.scalar();
                let op = self.rng.pick(&[0x0f, 0x1f, 0x2f, 0xaf, 0x5f, 0xcf, 0x6f]);
                if self.rng.chance(50) {
                    self.emit(Insn::new(op, s, p, 0, 0));
                } else {
                    self.emit(Insn::new(op, p, s, 0, 0));
                }
                self.set(s, Kind::Scalar);
            }
        }
    }

    /// A stack access at a variable offset: masked, one-sided, or
    /// unbounded.
    fn var_stack(&mut self) {
        let s = self.scalar();
        match self.rng.below(4) {
            0 => self.emit(Insn::new(0x57, s, 0, 0, 0x38)),
            1 => self.emit(Insn::new(0x57, s, 0, 0, 0x3f)),
            2 => {
                self.emit(Insn::new(0x57, s, 0, 0, 0xff));
                self.emit(Insn::new(0x87, s, 0, 0, 0));
            }
            _ => {}
        }
        let d = self.copy_fp();
        let base = self.rng.pick(&[-64, -128, -256, -512, -8]);
        self.emit(Insn::new(0x07, d, 0, 0, base));
        self.emit(Insn::new(0x0f, d, s, 0, 0));
        let (sz, _) = self.rng.pick(&SIZES);
        match self.rng.below(3) {
            0 => {
                let r = self.rng.pick(&[0, 5]);
                self.emit(Insn::new(0x61 | sz, r, d, 0, 0));
                self.set(r, Kind::Scalar);
            }
            1 => {
                let v = self.scalar();
                self.emit(Insn::new(0x63 | sz, d, v, 0, 0));
            }
            _ => {
                let imm = self.rng.imm();
                self.emit(Insn::new(0x62 | sz, d, 0, 0, imm));
            }
        }
    }

    /// A loop whose body holds other blocks: a counter on the stack (the
    /// body may clobber any register), or may_goto.
    fn loop_with_body(&mut self) {
        let before = self.kinds;
        let stack_before = self.stack.len();
        self.depth += 1;
        if self.rng.chance(50) {
            let slot = -504;
            let n = 1 + self.rng.below(6) as i32;
            self.emit(Insn::new(0x7a, 10, 0, slot, 0));
            let start = self.insns.len();
            for _ in 0..1 + self.rng.below(2) {
                self.block();
            }
            self.emit(Insn::new(0x79, 0, 10, slot, 0));
            self.emit(Insn::new(0x07, 0, 0, 0, 1));
            self.emit(Insn::new(0x7b, 10, 0, slot, 0));
            let back = start as i64 - self.insns.len() as i64 - 1;
            let code = self.rng.pick(&[0xa5, 0xa6, 0x55]);
            self.emit(Insn::new(code, 0, 0, back as i16, n));
            self.kinds[0] = Kind::Scalar;
        } else {
            // l: may_goto +len+1; body; goto l
            let at = self.insns.len();
            self.emit(Insn::new(0xe5, 0, 0, 0, 0));
            for _ in 0..1 + self.rng.below(2) {
                self.block();
            }
            let len = self.insns.len() - at;
            self.emit(Insn::new(0x05, 0, 0, -(len as i16) - 1, 0));
            self.insns[at].off = len as i16;
        }
        self.depth -= 1;
        for (now, was) in self.kinds.iter_mut().zip(before) {
            if *now != was {
                *now = Kind::Uninit;
            }
        }
        self.stack.truncate(stack_before);
    }

    /// Atomics of every width and kind, load-acquire and store-release,
    /// on the stack, a map value, or (as a mistake) any pointer.
    fn atomic_any(&mut self) {
        let (code, bytes) = self.rng.pick(&[(0xdb, 8), (0xc3, 4), (0xcb, 2), (0xd3, 1)]);
        let op = self.rng.pick(&[
            0x100, 0x110, 0x100, 0x110, 0x00, 0x01, 0x40, 0x51, 0xa1, 0xe1, 0xf1,
        ]);
        let (base, off) = match self.rng.below(3) {
            0 => match self.reg_of(&|k| matches!(k, Kind::MapVal(..))) {
                Some(p) => (p, bytes * self.rng.below(4) as i32),
                None => (10, -8),
            },
            1 => match self.reg_of(&|k| k != Kind::Uninit && k != Kind::Scalar) {
                Some(p) => (p, 0),
                None => (10, -16),
            },
            _ => (10, -(8 * (1 + self.rng.below(4) as i32))),
        };
        if base == 10 && self.rng.chance(80) {
            self.emit(Insn::new(0x7a, 10, 0, off as i16, 0));
            self.stack.push((off, 8, Kind::Scalar));
        }
        if op == 0x100 {
            let d = self.dst();
            self.emit(Insn::new(code, d, base, off as i16, op));
            self.set(d, Kind::Scalar);
            return;
        }
        let s = self.scalar();
        if op == 0xf1 && self.kinds[0] != Kind::Scalar {
            self.emit(Insn::new(0xb7, 0, 0, 0, 0));
            self.kinds[0] = Kind::Scalar;
        }
        self.emit(Insn::new(code, base, s, off as i16, op));
        if op & 0x01 != 0 {
            self.set(if op == 0xf1 { 0 } else { s }, Kind::Scalar);
        }
    }

    /// Spills of any register (pointers, r10) at any width and offset,
    /// then fills of any width, maybe shifted into the slot.
    fn spill_any(&mut self) {
        let (sz, bytes) = if self.rng.chance(50) {
            (0x18, 8)
        } else {
            self.rng.pick(&SIZES)
        };
        let off = if self.rng.chance(80) {
            -(8 * (1 + self.rng.below(8) as i32))
        } else {
            self.rng.pick(&[-4, -2, -1, -7, -12])
        };
        let s = self.reg_of(&|k| k != Kind::Uninit).unwrap_or(10);
        self.emit(Insn::new(0x63 | sz, 10, s, off as i16, 0));
        let k = if bytes == 8 && s < 10 {
            self.kinds[s as usize]
        } else if bytes == 8 {
            Kind::Fp
        } else {
            Kind::Scalar
        };
        self.stack.push((off, bytes, k));
        if self.rng.chance(70) {
            let (fsz, fbytes) = self.rng.pick(&SIZES);
            let shift = if fbytes < bytes && self.rng.chance(50) {
                bytes - fbytes
            } else {
                0
            };
            let d = self.dst();
            self.emit(Insn::new(0x61 | fsz, d, 10, (off + shift) as i16, 0));
            self.set(
                d,
                if fbytes == 8 && shift == 0 {
                    k
                } else {
                    Kind::Scalar
                },
            );
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

/// Program `index` of the run with `seed`, all features on.
#[allow(dead_code)]
pub fn program(seed: u64, index: u64) -> GenProgram {
    program_with(seed, index, Features::ALL)
}

/// Program `index` of the run with `seed`, using only `features`' blocks.
pub fn program_with(seed: u64, index: u64, features: Features) -> GenProgram {
    let mut rng = Rng::new(seed ^ index.wrapping_mul(0x0010_0000_01b3));
    let level = super::diff::fuzz_privileges();
    let reduced = level != bpfvet_verifier::Privileges::Root;
    let prog_type = if level == bpfvet_verifier::Privileges::NetAdmin {
        // Networking types without CAP_PERFMON (packet writes, flow keys).
        rng.pick(&[
            ProgType::SOCKET_FILTER,
            ProgType::XDP,
            ProgType::SCHED_CLS,
            ProgType::CGROUP_SKB,
        ])
    } else if reduced {
        // The types a loader without CAP_NET_ADMIN or CAP_PERFMON may load
        // (others fail with EPERM before verification).
        rng.pick(&[ProgType::SOCKET_FILTER, ProgType::CGROUP_SKB])
    } else if features.has(Features::MORE_PROG_TYPES) && rng.chance(40) {
        rng.pick(&[ProgType::CGROUP_SKB, ProgType::KPROBE, ProgType::TRACEPOINT])
    } else {
        rng.pick(&[ProgType::SOCKET_FILTER, ProgType::XDP, ProgType::SCHED_CLS])
    };
    let sleepable_start =
        !reduced && features.has(Features::REGIONS) && region_blocks::sleepable_start(&mut rng);
    let prog_type = if sleepable_start {
        ProgType::SYSCALL
    } else {
        prog_type
    };
    let struct_ops = if features.has(Features::STRUCT_OPS) && !reduced && rng.chance(40) {
        structops_blocks::pick(&mut rng)
    } else {
        None
    };
    let prog_type = if struct_ops.is_some() {
        ProgType::STRUCT_OPS
    } else {
        prog_type
    };
    let sleepable_start = match &struct_ops {
        Some(t) => t.sleepable,
        None => sleepable_start,
    };
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
        features,
        subs: Vec::new(),
        calls: Vec::new(),
        level: 0,
        in_callback: false,
        prog_btf: false,
        struct_ops,
    };
    if g.rng.chance(90) {
        g.emit(Insn::new(0xbf, 6, 1, 0, 0));
        g.kinds[6] = Kind::Ctx;
    }
    for _ in 0..blocks {
        g.block();
    }
    g.epilogue();
    let mut funcs = vec![(std::mem::take(&mut g.insns), std::mem::take(&mut g.calls))];
    let mut i = 0;
    while i < g.subs.len() {
        g.sub_body(i);
        funcs.push((
            std::mem::take(&mut g.subs[i].insns),
            std::mem::take(&mut g.subs[i].calls),
        ));
        i += 1;
    }
    // Lay the functions out one after the other and point the calls.
    let mut starts = Vec::new();
    let mut insns = Vec::new();
    for (body, _) in &funcs {
        starts.push(insns.len());
        insns.extend_from_slice(body);
    }
    for (f, (_, calls)) in funcs.iter().enumerate() {
        for &(at, callee) in calls {
            let at = starts[f] + at;
            insns[at].imm = (starts[callee + 1] as i64 - at as i64 - 1) as i32;
        }
    }
    let mut prog_type = prog_type;
    let mut sleepable = sleepable_start;
    if features.has(Features::LOADER) {
        loader_blocks::reshape(&mut g.rng, &mut prog_type, &mut insns, &mut sleepable);
    }
    let mut attach = None;
    if features.has(Features::LEAKS) && !reduced && g.rng.chance(4) {
        let (t, a, body) = leak_blocks::tracing_program(&mut g.rng);
        (prog_type, attach, insns, sleepable) = (t, Some(a), body, false);
    }
    if features.has(Features::GUEST_TRACING) && !reduced && g.rng.chance(70) {
        let (t, a, body, s) = guest_blocks::tracing_program(&mut g.rng);
        (prog_type, attach, insns, sleepable) = (t, Some(a), body, s);
    }
    let mut funcs = Vec::new();
    if features.has(Features::PROGRAM) {
        funcs = prog_blocks::reshape(&mut g.rng, prog_type, &mut insns);
    }
    if features.has(Features::GRAPH_SHAPES) && !reduced {
        if let Some(shape) = graph_shape_blocks::reshape(&mut g.rng) {
            (prog_type, insns, sleepable) = (shape.prog_type, shape.insns, shape.sleepable);
            (attach, funcs, g.prog_btf) = (None, Vec::new(), true);
        }
    }
    if features.has(Features::CALLS)
        && features.has(Features::TAIL_CALLS)
        && funcs.is_empty()
        && super::diff::func_starts(&insns).len() <= 64
        && g.rng.chance(2)
    {
        tailmap_blocks::tail_call_below_big_frame(&mut g.rng, &mut insns);
    }
    if features.has(Features::ENCODING) && g.rng.chance(50) {
        super::corrupt::corrupt(&mut g.rng, &mut insns, 3);
    }
    // A reshape may have changed the program type.
    let mut struct_ops = g
        .struct_ops
        .take()
        .filter(|_| prog_type == ProgType::STRUCT_OPS)
        .map(|t| t.member);
    if features.has(Features::QDISC) && !reduced && g.rng.chance(85) {
        if let Some((member, body, s)) = qdisc_blocks::program(&mut g.rng) {
            (prog_type, insns, sleepable) = (ProgType::STRUCT_OPS, body, s);
            (attach, funcs, struct_ops) = (None, Vec::new(), Some(member));
        }
    }
    let mut p = GenProgram {
        prog_type,
        insns,
        sleepable,
        prog_btf: g.prog_btf,
        attach,
        funcs,
        struct_ops,
        load: Default::default(),
        license: "GPL",
        prog_flags: 0,
    };
    if features.has(Features::LOAD_ATTRS) && !reduced {
        load_blocks::choose(&mut g.rng, &mut p);
        // Its shapes may make the program another type.
        if p.prog_type != ProgType::STRUCT_OPS {
            p.struct_ops = None;
        }
    }
    if features.has(Features::ALIGNMENT) {
        p.prog_flags = align_blocks::prog_flags(&mut g.rng);
    }
    p
}

impl Gen {
    /// Generates subprogram `i`'s body into `insns`/`calls`.
    fn sub_body(&mut self, i: usize) {
        let sub = self.subs[i].clone();
        self.kinds = [Kind::Uninit; 11];
        self.kinds[10] = Kind::Fp;
        self.stack.clear();
        self.depth = 0;
        self.level = sub.level;
        self.in_callback = !matches!(sub.kind, SubKind::Call(_));
        match sub.kind {
            SubKind::Call(k) => {
                self.kinds[1] = k;
                self.kinds[2] = Kind::Uninit;
            }
            SubKind::LoopCb => self.kinds[1] = Kind::Scalar,
            SubKind::RbLess => self.rb_less_prologue(),
            SubKind::ForEachCb(map, vsize) => {
                self.kinds[1] = Kind::MapPtr(map);
                self.kinds[2] = Kind::MapKey(if map == HASH_MAP { HASH_KEY_SIZE } else { 4 });
                self.kinds[3] = Kind::MapVal(map, vsize);
            }
        }
        if self.rng.chance(70) {
            self.emit(Insn::new(0xbf, 6, 1, 0, 0));
            self.kinds[6] = self.kinds[1];
        }
        if self.features.has(Features::MEMORY)
            && matches!(sub.kind, SubKind::ForEachCb(..))
            && self.rng.chance(50)
        {
            self.key_access();
        }
        if self.features.has(Features::CALLS) && self.rng.chance(40) {
            // A large frame: with the callers' frames it may pass 512
            // bytes, or 256 with a tail call below.
            let off = self.rng.pick(&[64, 128, 192, 256, 320, 384, 448, 512]);
            self.emit(Insn::new(0x7a, 10, 0, -off, 0));
        }
        for _ in 0..1 + self.rng.below(6) {
            if self.features.has(Features::CALLS) && self.rng.chance(35) {
                self.call_sub();
            } else if self.features.has(Features::TAIL_CALLS) && self.rng.chance(10) {
                self.tail_call();
            } else {
                self.block();
            }
        }
        if self.in_callback && self.features.has(Features::PATHS) && self.rng.chance(30) {
            self.callback_return_any();
        } else if self.in_callback {
            let imm = if self.rng.chance(self.mistakes * 3) {
                self.rng.pick(&[2, -1, 0x100])
            } else {
                self.rng.pick(&[0, 1])
            };
            self.emit(Insn::new(0xb7, 0, 0, 0, imm));
            self.emit(Insn::new(0x95, 0, 0, 0, 0));
        } else if self.rng.chance(self.mistakes * 3) {
            // Returns without setting r0 (unless a call did).
            self.emit(Insn::new(0x95, 0, 0, 0, 0));
        } else {
            self.epilogue();
        }
        self.subs[i].insns = std::mem::take(&mut self.insns);
        self.subs[i].calls = std::mem::take(&mut self.calls);
    }
}
