//! BPF instructions to Cranelift IR, one function per program. Registers
//! are SSA variables; bpf-to-bpf calls are inlined (each subprogram
//! translated again at each call site), or, for code whose subprograms
//! are not cleanly delimited, kept on an explicit frame stack (as the
//! interpreter keeps them) with the return sites reached through a jump
//! table. Memory accesses through r10 at a
//! constant in-frame offset go straight to the stack; every other access
//! tries the stack and the packet inline and otherwise calls the
//! interpreter's checked load/store.

use std::collections::{BTreeSet, HashMap};

use bpfvet_isa::opcode::{
    BPF_CMPXCHG, BPF_FETCH, BPF_LOAD_ACQ, BPF_PSEUDO_CALL, BPF_PSEUDO_KFUNC_CALL, BPF_STORE_REL,
    BPF_XCHG,
};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, AliasRegion, AtomicRmwOp, Block, BlockArg, InstBuilder, InstructionData,
    JumpTableData, MemFlags, Opcode, SigRef, Signature, Type, Value, ValueDef,
};
use cranelift_frontend::{FunctionBuilder, Variable};

use bpfvet_verifier::AccessKinds;

use super::env;
use super::Decline;
use crate::code::Op;
use crate::run::{Region, MAX_FRAMES, STACK_PER_FRAME};

const TAIL_CALL: i32 = 12;
const MAP_LOOKUP_ELEM: i32 = 1;
const SKB_LOAD_BYTES: i32 = 26;
/// Accesses to the `Env` block. Program memory (stack, packet, map values)
/// is another alias region: the program's stores cannot reach the `Env`,
/// so Cranelift keeps `Env` fields it loaded across them (calls still
/// clobber everything).
const ENV_MEM: MemFlags = MemFlags::trusted().with_alias_region(Some(AliasRegion::Vmctx));
const STACK_TOTAL: i64 = (STACK_PER_FRAME * MAX_FRAMES) as i64;

/// A writable ARRAY map whose lookups compiled code computes itself: the
/// value of index i (below `entries`) is at `base + i * elem_bytes`.
#[derive(Clone, Copy, Debug)]
pub(super) struct InlineArray {
    pub base: u64,
    pub elem_bytes: u64,
    pub entries: u32,
    pub value_size: u32,
    /// Every value is memory of the run from its start (one entry, whose
    /// value is a writable static region): a lookup has nothing to
    /// register.
    pub static_values: bool,
}

/// A writable hash map, not per-CPU, whose lookups compiled code makes by
/// calling `shim` (`HashMap::shared_lookup`) with the map and the key.
#[derive(Clone, Copy, Debug)]
pub(super) struct InlineHash {
    pub map: u64,
    pub shim: usize,
    pub key_size: u32,
    pub value_size: u32,
}

/// How compiled code looks up a map without the helper's general path.
#[derive(Clone, Copy, Debug)]
pub(super) enum InlineLookup {
    Array(InlineArray),
    Hash(InlineHash),
}

/// Whether `code` is one the interpreter runs (its dispatch `match`).
fn known(code: u8) -> bool {
    matches!(
        code,
        0x07 | 0x0f
            | 0x17
            | 0x1f
            | 0x27
            | 0x2f
            | 0x37
            | 0x3f
            | 0x47
            | 0x4f
            | 0x57
            | 0x5f
            | 0x67
            | 0x6f
            | 0x77
            | 0x7f
            | 0x87
            | 0x97
            | 0x9f
            | 0xa7
            | 0xaf
            | 0xb7
            | 0xbf
            | 0xc7
            | 0xcf
            | 0xd7
            | 0x04
            | 0x0c
            | 0x14
            | 0x1c
            | 0x24
            | 0x2c
            | 0x34
            | 0x3c
            | 0x44
            | 0x4c
            | 0x54
            | 0x5c
            | 0x64
            | 0x6c
            | 0x74
            | 0x7c
            | 0x84
            | 0x94
            | 0x9c
            | 0xa4
            | 0xac
            | 0xb4
            | 0xbc
            | 0xc4
            | 0xcc
            | 0xd4
            | 0xdc
            | 0x05
            | 0x06
            | 0x15
            | 0x1d
            | 0x25
            | 0x2d
            | 0x35
            | 0x3d
            | 0x45
            | 0x4d
            | 0x55
            | 0x5d
            | 0x65
            | 0x6d
            | 0x75
            | 0x7d
            | 0xa5
            | 0xad
            | 0xb5
            | 0xbd
            | 0xc5
            | 0xcd
            | 0xd5
            | 0xdd
            | 0x16
            | 0x1e
            | 0x26
            | 0x2e
            | 0x36
            | 0x3e
            | 0x46
            | 0x4e
            | 0x56
            | 0x5e
            | 0x66
            | 0x6e
            | 0x76
            | 0x7e
            | 0xa6
            | 0xae
            | 0xb6
            | 0xbe
            | 0xc6
            | 0xce
            | 0xd6
            | 0xde
            | 0xe5
            | 0x85
            | 0x8d
            | 0x95
            | 0x61
            | 0x69
            | 0x71
            | 0x79
            | 0x81
            | 0x89
            | 0x91
            | 0x62
            | 0x6a
            | 0x72
            | 0x7a
            | 0x63
            | 0x6b
            | 0x73
            | 0x7b
            | 0xc3
            | 0xdb
            | 0xd3
            | 0xcb
            | 0x18
            | 0x20
            | 0x28
            | 0x30
            | 0x40
            | 0x48
            | 0x50
    )
}

fn is_cond_jump(code: u8) -> bool {
    let class = code & 7;
    (class == 5 || class == 6) && !matches!(code & 0xf0, 0x00 | 0x80 | 0x90 | 0xe0)
}

/// Where control can go from `pc` besides the next slot.
fn targets(ops: &[Op], pc: usize) -> Option<usize> {
    let op = ops[pc];
    let rel = |d: i64| (pc as i64 + 1 + d) as usize;
    match op.code {
        0x05 | 0xe5 => Some(rel(op.off as i64)),
        0x06 => Some(rel(op.imm as i64)),
        0x85 if op.src == BPF_PSEUDO_CALL => Some(rel(op.imm as i64)),
        c if is_cond_jump(c) => Some(rel(op.off as i64)),
        _ => None,
    }
}

/// Checks what the translation relies on, before any IR is built.
pub(super) fn check(ops: &[Op]) -> Result<(), Decline> {
    let Some(n) = ops.len().checked_sub(1).filter(|&n| n > 0) else {
        return Err(Decline::NoCode);
    };
    let mut second_slots = BTreeSet::new();
    let mut pc = 0;
    while pc < n {
        let op = ops[pc];
        if !known(op.code) {
            return Err(Decline::Opcode { pc, code: op.code });
        }
        let class = op.code & 7;
        // r10 stays the frame pointer, so r10-relative accesses need no check.
        let writes_dst = matches!(class, 4 | 7 | 1) || op.code == 0x18;
        let atomic = matches!(op.code, 0xc3 | 0xdb | 0xd3 | 0xcb);
        let fetch_src = atomic && op.imm & 1 != 0;
        let load_acquire = atomic && op.imm == bpfvet_isa::opcode::BPF_LOAD_ACQ;
        if (writes_dst || load_acquire) && op.dst == 10 || fetch_src && op.src == 10 {
            return Err(Decline::WritesFramePointer { pc });
        }
        if op.code == 0x18 {
            second_slots.insert(pc + 1);
            pc += 2;
        } else {
            pc += 1;
        }
    }
    for pc in 0..n {
        if let Some(t) = targets(ops, pc) {
            if second_slots.contains(&t) {
                return Err(Decline::JumpIntoImm64 { pc });
            }
        }
    }
    Ok(())
}

/// Shim signatures by shape: `env` plus N i64 arguments, with or without
/// an i64 result.
struct Shims {
    call3: SigRef,
    call2: SigRef,
    void4: SigRef,
    /// `env` and four arguments, a result.
    call4: SigRef,
    /// Two arguments without `env`, a result (hash lookups).
    plain2: SigRef,
    /// `env` and three arguments, no result (ctx_store).
    void_three: SigRef,
    void2: SigRef,
    void3: SigRef,
}

fn sig(call_conv: cranelift_codegen::isa::CallConv, params: usize, ret: bool) -> Signature {
    let mut s = Signature::new(call_conv);
    for _ in 0..params {
        s.params.push(AbiParam::new(types::I64));
    }
    if ret {
        s.returns.push(AbiParam::new(types::I64));
    }
    s
}

struct Tx<'a, 'b> {
    b: &'a mut FunctionBuilder<'b>,
    env: Value,
    regs: [Variable; 11],
    shims: Shims,
    /// Returns 0 to the driver, which reads `Env::status`.
    bail: Block,
    flags: MemFlags,
    /// Memory every run of the VM may touch (global data): an access at a
    /// constant address inside one needs no run-time check.
    statics: &'a [Region],
    /// What the verifier proved about each instruction's access (empty
    /// for a program it did not verify).
    proof: &'a [AccessKinds],
    /// Per map of the VM: its lookups, if compiled code makes them.
    lookups: &'a [Option<InlineLookup>],
    /// Backward jumps left (`Env::budget`), kept in a register.
    budget: Variable,
    /// The program ends by itself (see [`terminates`]): no budget to count.
    bounded: bool,
    /// The call depth (`Env::base_depth` at the entry).
    depth: Variable,
    ops: &'a [Op],
    /// The subprograms, when calls are inlined ([`subprograms`]).
    subs: Vec<(usize, usize)>,
    /// `Env::stack_lo` and `Env::ctx_lo`, fixed for the call.
    stack_lo: Value,
    ctx_lo: Value,
    /// `Env::pkt_lo` and `Env::pkt_cap`, reloaded after the shims that can
    /// move the packet.
    pkt_lo: Variable,
    pkt_cap: [Variable; 4],
}

impl Tx<'_, '_> {
    fn reg(&mut self, r: u8) -> Value {
        match self.regs.get(r as usize) {
            Some(&v) => self.b.use_var(v),
            // LD-class source fields may name r11..r15, which the
            // interpreter keeps at zero.
            None => self.b.ins().iconst(types::I64, 0),
        }
    }
    fn set(&mut self, r: u8, v: Value) {
        self.b.def_var(self.regs[(r & 15) as usize], v);
    }
    fn k64(&mut self, v: i64) -> Value {
        self.b.ins().iconst(types::I64, v)
    }
    fn env_load(&mut self, off: i32) -> Value {
        self.b.ins().load(types::I64, ENV_MEM, self.env, off)
    }
    fn env_store(&mut self, v: Value, off: i32) {
        self.b.ins().store(ENV_MEM, v, self.env, off);
    }
    fn src64(&mut self, op: &Op) -> Value {
        if op.code & 8 != 0 {
            self.reg(op.src)
        } else {
            self.k64(op.imm as i64)
        }
    }
    fn src32(&mut self, op: &Op) -> Value {
        if op.code & 8 != 0 {
            let r = self.reg(op.src);
            self.b.ins().ireduce(types::I32, r)
        } else {
            self.b.ins().iconst(types::I32, op.imm as u32 as i64)
        }
    }
    fn dst32(&mut self, r: u8) -> Value {
        let v = self.reg(r);
        self.b.ins().ireduce(types::I32, v)
    }

    fn call(&mut self, sig: SigRef, f: usize, args: &[Value]) -> Option<Value> {
        let callee = self.b.ins().iconst(types::I64, f as i64);
        let mut all = vec![self.env];
        all.extend_from_slice(args);
        let inst = self.b.ins().call_indirect(sig, callee, &all);
        self.b.inst_results(inst).first().copied()
    }

    /// Calls a shim that returns a value and sets the run's status on an
    /// error: on to the bail-out block if it did, else to `join` with the
    /// value.
    fn call_or_bail(&mut self, sig: SigRef, f: usize, args: &[Value], join: Block) {
        let v = self
            .call(sig, f, args)
            .expect("the shim's signature has a result");
        let st = self.env_load(env::OFF_STATUS);
        self.b
            .ins()
            .brif(st, self.bail, &[], join, &[BlockArg::Value(v)]);
    }

    /// After a shim that may have moved the packet (helpers, kfuncs,
    /// functions run elsewhere).
    fn reload_packet(&mut self) {
        let lo = self.env_load(env::OFF_PKT_LO);
        self.b.def_var(self.pkt_lo, lo);
        for (i, var) in self.pkt_cap.into_iter().enumerate() {
            let cap = self.env_load(env::OFF_PKT_CAP + 8 * i as i32);
            self.b.def_var(var, cap);
        }
    }

    /// After a shim that may fail: leave unless the status is still RUNNING.
    fn check_status(&mut self) {
        let st = self.env_load(env::OFF_STATUS);
        let go = self.b.create_block();
        self.b.ins().brif(st, self.bail, &[], go, &[]);
        self.b.switch_to_block(go);
    }

    fn spill(&mut self, regs: std::ops::RangeInclusive<u8>) {
        for r in regs {
            let v = self.reg(r);
            self.env_store(v, env::OFF_REGS + 8 * r as i32);
        }
    }

    fn fault(&mut self, kind: u64, pc: usize) {
        let (k, p) = (self.k64(kind as i64), self.k64(pc as i64));
        self.call(self.shims.void3, env::fault as *const () as usize, &[k, p]);
        self.b.ins().jump(self.bail, &[]);
    }

    fn ty(size: u32) -> Type {
        match size {
            1 => types::I8,
            2 => types::I16,
            4 => types::I32,
            _ => types::I64,
        }
    }

    /// Whether `[base + off, +size)` is inside the current frame when base
    /// is r10.
    fn in_frame(base: u8, off: i16, size: u32) -> bool {
        base == 10 && (off as i64) >= -(STACK_PER_FRAME as i64) && off as i64 + size as i64 <= 0
    }

    /// Whether the verifier proved the access at `pc` in bounds through
    /// pointers of the `allowed` kinds only.
    fn proven(&self, pc: usize, allowed: AccessKinds) -> bool {
        self.proof.get(pc).is_some_and(|k| k.only(allowed))
    }

    /// Accesses compiled without a run-time check once proven: the
    /// stack, the packet and map values are plain memory of the run for
    /// as long as the verifier lets the program hold such a pointer.
    const PLAIN: AccessKinds = AccessKinds::STACK
        .union(AccessKinds::PACKET)
        .union(AccessKinds::MAP_VALUE);

    /// The constant `v` was defined as, if any (LD_IMM64 of a map value
    /// in the same block, for one).
    fn constant(&self, v: Value) -> Option<u64> {
        let dfg = &self.b.func.dfg;
        let ValueDef::Result(inst, 0) = dfg.value_def(v) else {
            return None;
        };
        match dfg.insts[inst] {
            InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm,
            } => Some(imm.bits() as u64),
            _ => None,
        }
    }

    /// Whether `[base + off, +size)` is, at compile time, inside global
    /// data the access may use: the interpreter's check finds that region
    /// on every run (a store also needs it writable; a read-only one takes
    /// the checked path, which reports the error).
    fn in_static(&self, base: Value, off: i16, size: u32, write: bool) -> bool {
        let Some(b) = self.constant(base) else {
            return false;
        };
        let Some(end) = b
            .checked_add_signed(off as i64)
            .and_then(|a| a.checked_add(size as u64))
        else {
            return false;
        };
        let start = end - size as u64;
        self.statics
            .iter()
            .any(|r| start >= r.start && end <= r.end && (r.writable || !write))
    }

    /// A write to writable global data is found writable by the run's
    /// check unless a read-only region the run was handed since (a map
    /// value of a BPF_F_RDONLY_PROG map, a dynptr slot...) covers the same
    /// bytes: then the checked path decides.
    fn unless_read_only_regions(&mut self, fast: Block, slow: Block) {
        let ro = self.env_load(env::OFF_READ_ONLY_REGIONS);
        self.b.ins().brif(ro, slow, &[], fast, &[]);
    }

    /// Whether the run's newest region holds `[addr, +size)` (writable
    /// for a write): the first region the run's check tries, so its answer.
    fn last_region(&mut self, addr: Value, size: u32, write: bool, fast: Block, slow: Block) {
        let lo = self.env_load(env::OFF_LAST_LO);
        let len = self.env_load(if write {
            env::OFF_LAST_LEN_WRITABLE
        } else {
            env::OFF_LAST_LEN
        });
        let off = self.b.ins().isub(addr, lo);
        let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, off, len);
        let left = self.b.ins().isub(len, off);
        let fits = self
            .b
            .ins()
            .icmp_imm(IntCC::UnsignedGreaterThanOrEqual, left, size as i64);
        let ok = self.b.ins().band(inside, fits);
        self.b.ins().brif(ok, fast, &[], slow, &[]);
    }

    /// The fast-path test: stack or packet. Branches to `fast` or `slow`.
    fn route(&mut self, addr: Value, size: u32, fast: Block, slow: Block) {
        let rel = self.b.ins().isub(addr, self.stack_lo);
        let in_stack = self.b.ins().icmp_imm(
            IntCC::UnsignedLessThanOrEqual,
            rel,
            STACK_TOTAL - size as i64,
        );
        let pkt = self.b.create_block();
        self.b.ins().brif(in_stack, fast, &[], pkt, &[]);
        self.b.switch_to_block(pkt);
        let plo = self.b.use_var(self.pkt_lo);
        let cap = self
            .b
            .use_var(self.pkt_cap[size.trailing_zeros() as usize & 3]);
        let off = self.b.ins().isub(addr, plo);
        let ok = self.b.ins().icmp(IntCC::UnsignedLessThan, off, cap);
        self.b.ins().brif(ok, fast, &[], slow, &[]);
    }

    /// A 4-byte context load the verifier proved, through the unmodified
    /// context pointer (the kernel allows no other), so of field `slot`:
    /// from the cache, or through the ctx_load shim, which fills it (and
    /// handles a plain-memory context, whose fields are never cached).
    fn ctx_field(&mut self, addr: Value, slot: usize, pc: usize) -> Value {
        let (cached, miss, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.append_block_param(join, types::I64);
        let valid = self.env_load(env::OFF_CTX_VALID);
        let bit = self.b.ins().band_imm(valid, 1 << slot);
        self.b.ins().brif(bit, cached, &[], miss, &[]);
        self.ctx_load_miss(miss, addr, pc, join);
        self.b.switch_to_block(cached);
        let v = self.b.ins().load(
            types::I64,
            ENV_MEM,
            self.env,
            env::OFF_CTX_VALS + 8 * slot as i32,
        );
        self.b.ins().jump(join, &[BlockArg::Value(v)]);
        self.b.switch_to_block(join);
        self.b.block_params(join)[0]
    }

    /// Block `miss`: a context field not read yet in this run, from the
    /// runtime (which fills its cache slot), on to `join` with the value.
    fn ctx_load_miss(&mut self, miss: Block, addr: Value, pc: usize, join: Block) {
        self.b.switch_to_block(miss);
        let p = self.k64(pc as i64);
        let sig = self.shims.call2;
        self.call_or_bail(sig, env::ctx_load as *const () as usize, &[addr, p], join);
    }

    /// A 4-byte access that may be a context field: the stack and packet
    /// go to `fast` (unless the proof says context only); then an address
    /// among the cached context fields goes on to `field`, any other to
    /// `region`. Returns the offset from the context's start.
    fn to_context_field(
        &mut self,
        addr: Value,
        size: u32,
        ctx_only: bool,
        fast: Block,
        region: Block,
        field: Block,
    ) -> Value {
        let ctx = self.b.create_block();
        if ctx_only {
            self.b.ins().jump(ctx, &[]);
        } else {
            self.route(addr, size, fast, ctx);
        }
        self.b.switch_to_block(ctx);
        let rel = self.b.ins().isub(addr, self.ctx_lo);
        let outside = self
            .b
            .ins()
            .band_imm(rel, !(4 * (env::CTX_SLOTS as i64 - 1)));
        self.b.ins().brif(outside, region, &[], field, &[]);
        rel
    }

    fn load(&mut self, base: u8, off: i16, size: u32, pc: usize) -> Value {
        let b0 = self.reg(base);
        let addr = self.b.ins().iadd_imm(b0, off as i64);
        let ty = Self::ty(size);
        let widen = |b: &mut FunctionBuilder<'_>, v: Value| {
            if ty == types::I64 {
                v
            } else {
                b.ins().uextend(types::I64, v)
            }
        };
        if Self::in_frame(base, off, size)
            || self.in_static(b0, off, size, false)
            || self.proven(pc, Self::PLAIN)
        {
            let v = self.b.ins().load(ty, self.flags, addr, 0);
            return widen(self.b, v);
        }
        // A proven context access is neither stack nor packet.
        let ctx_only = self.proven(pc, AccessKinds::CTX);
        if ctx_only && size == 4 && (0..4 * env::CTX_SLOTS as i16).contains(&off) && off % 4 == 0 {
            return self.ctx_field(addr, off as usize / 4, pc);
        }
        let (fast, slow, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.append_block_param(join, types::I64);
        if size == 4 {
            // A context field the run already read: from the cache.
            let (hit, region) = (self.b.create_block(), self.b.create_block());
            let rel = self.to_context_field(addr, size, ctx_only, fast, region, hit);
            self.b.switch_to_block(region);
            self.last_region(addr, size, false, fast, slow);
            self.b.switch_to_block(hit);
            let valid = self.env_load(env::OFF_CTX_VALID);
            let slot = self.b.ins().ushr_imm(rel, 2);
            let bit = self.b.ins().ushr(valid, slot);
            let bit = self.b.ins().band_imm(bit, 1);
            let (cached, miss) = (self.b.create_block(), self.b.create_block());
            self.b.ins().brif(bit, cached, &[], miss, &[]);
            // Not read yet: straight to the context (the stack and packet
            // are ruled out), which fills the slot.
            self.ctx_load_miss(miss, addr, pc, join);
            self.b.switch_to_block(cached);
            let at = self.b.ins().ishl_imm(rel, 1);
            let at = self.b.ins().iadd(self.env, at);
            let v = self
                .b
                .ins()
                .load(types::I64, ENV_MEM, at, env::OFF_CTX_VALS);
            self.b.ins().jump(join, &[BlockArg::Value(v)]);
        } else {
            let region = self.b.create_block();
            self.route(addr, size, fast, region);
            self.b.switch_to_block(region);
            self.last_region(addr, size, false, fast, slow);
        }
        self.b.switch_to_block(fast);
        let v = self.b.ins().load(ty, self.flags, addr, 0);
        let v = widen(self.b, v);
        self.b.ins().jump(join, &[BlockArg::Value(v)]);
        self.b.switch_to_block(slow);
        let (s, p) = (self.k64(size as i64), self.k64(pc as i64));
        let sig = self.shims.call3;
        self.call_or_bail(sig, env::load as *const () as usize, &[addr, s, p], join);
        self.b.switch_to_block(join);
        self.b.block_params(join)[0]
    }

    fn store(&mut self, base: u8, off: i16, size: u32, v: Value, pc: usize) {
        let field = size == 4 && (0..4 * env::CTX_SLOTS as i16).contains(&off) && off % 4 == 0;
        if !(field && self.proven(pc, AccessKinds::CTX)) {
            return self.store_checked(base, off, size, v, pc);
        }
        // A proven 4-byte context store through the unmodified context
        // pointer: to field `slot`, directly when that is all it does;
        // the cached value of the field is dropped, as ctx_store does.
        let slot = off as i32 / 4;
        let (direct, general, done) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        let at = self.env_load(env::OFF_CTX_FIELDS + 8 * slot);
        self.b.ins().brif(at, direct, &[], general, &[]);
        self.b.switch_to_block(direct);
        let v32 = self.b.ins().ireduce(types::I32, v);
        self.b.ins().store(ENV_MEM, v32, at, 0);
        let valid = self.env_load(env::OFF_CTX_VALID);
        let valid = self.b.ins().band_imm(valid, !(1i64 << slot));
        self.env_store(valid, env::OFF_CTX_VALID);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(general);
        self.store_checked(base, off, size, v, pc);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }

    fn store_checked(&mut self, base: u8, off: i16, size: u32, v: Value, pc: usize) {
        let b0 = self.reg(base);
        let addr = self.b.ins().iadd_imm(b0, off as i64);
        let ty = Self::ty(size);
        let narrow = if ty == types::I64 {
            v
        } else {
            self.b.ins().ireduce(ty, v)
        };
        if Self::in_frame(base, off, size) || self.proven(pc, Self::PLAIN) {
            self.b.ins().store(self.flags, narrow, addr, 0);
            return;
        }
        let ctx_only = self.proven(pc, AccessKinds::CTX);
        let (fast, slow, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        if self.in_static(b0, off, size, true) {
            self.unless_read_only_regions(fast, slow);
        } else if size == 4 {
            // A context field: straight to the context.
            let (to_ctx, region) = (self.b.create_block(), self.b.create_block());
            self.to_context_field(addr, size, ctx_only, fast, region, to_ctx);
            self.b.switch_to_block(to_ctx);
            let p = self.k64(pc as i64);
            self.call(
                self.shims.void_three,
                env::ctx_store as *const () as usize,
                &[addr, v, p],
            );
            let st = self.env_load(env::OFF_STATUS);
            self.b.ins().brif(st, self.bail, &[], join, &[]);
            self.b.switch_to_block(region);
            self.last_region(addr, size, true, fast, slow);
        } else {
            let region = self.b.create_block();
            self.route(addr, size, fast, region);
            self.b.switch_to_block(region);
            self.last_region(addr, size, true, fast, slow);
        }
        self.b.switch_to_block(fast);
        self.b.ins().store(self.flags, narrow, addr, 0);
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(slow);
        let (s, p) = (self.k64(size as i64), self.k64(pc as i64));
        self.call(
            self.shims.void4,
            env::store as *const () as usize,
            &[addr, s, v, p],
        );
        let st = self.env_load(env::OFF_STATUS);
        self.b.ins().brif(st, self.bail, &[], join, &[]);
        self.b.switch_to_block(join);
    }

    /// BPF division and modulo: x/0 = 0, x%0 = x, INT_MIN/-1 wraps.
    fn divmod(&mut self, ty: Type, d: Value, s: Value, signed: bool, modulo: bool) -> Value {
        let zero = self.b.ins().icmp_imm(IntCC::Equal, s, 0);
        let one = self.b.ins().iconst(ty, 1);
        let zero_v = self.b.ins().iconst(ty, 0);
        let on_zero = if modulo { d } else { zero_v };
        if !signed {
            let safe = self.b.ins().select(zero, one, s);
            let q = if modulo {
                self.b.ins().urem(d, safe)
            } else {
                self.b.ins().udiv(d, safe)
            };
            return self.b.ins().select(zero, on_zero, q);
        }
        let minus1 = self.b.ins().icmp_imm(IntCC::Equal, s, -1);
        let bad = self.b.ins().bor(zero, minus1);
        let safe = self.b.ins().select(bad, one, s);
        let q = if modulo {
            self.b.ins().srem(d, safe)
        } else {
            self.b.ins().sdiv(d, safe)
        };
        let on_minus1 = if modulo { zero_v } else { self.b.ins().ineg(d) };
        let r = self.b.ins().select(minus1, on_minus1, q);
        self.b.ins().select(zero, on_zero, r)
    }

    /// The value ALU op `code & 0xf0` computes on `d` and `s` of type `ty`.
    fn alu(&mut self, ty: Type, op: &Op, d: Value, s: Value) -> Value {
        match op.code & 0xf0 {
            0x30 => return self.divmod(ty, d, s, op.off == 1, false),
            0x90 => return self.divmod(ty, d, s, op.off == 1, true),
            _ => {}
        }
        if op.code & 0xf8 == 0x20 {
            // x * 3, 5 or 9 is x + (x << 1, 2 or 3): one lea on x86-64
            // (and an add folded into it) instead of a 3-cycle imul, the
            // same value modulo 2^width.
            if let Some(shift) = match op.imm {
                3 => Some(1),
                5 => Some(2),
                9 => Some(3),
                _ => None,
            } {
                let scaled = self.b.ins().ishl_imm(d, shift);
                return self.b.ins().iadd(d, scaled);
            }
        }
        let i = self.b.ins();
        match op.code & 0xf0 {
            0x00 => i.iadd(d, s),
            0x10 => i.isub(d, s),
            0x20 => i.imul(d, s),
            0x40 => i.bor(d, s),
            0x50 => i.band(d, s),
            // Cranelift masks shift amounts to the type's width, as BPF does.
            0x60 => i.ishl(d, s),
            0x70 => i.ushr(d, s),
            0x80 => i.ineg(d),
            0xa0 => i.bxor(d, s),
            _ => i.sshr(d, s),
        }
    }

    fn cond(&mut self, op: &Op) -> Value {
        let wide = op.code & 7 == 5;
        let (d, s) = if wide {
            (self.reg(op.dst), self.src64(op))
        } else {
            (self.dst32(op.dst), self.src32(op))
        };
        let cc = match op.code & 0xf0 {
            0x10 => IntCC::Equal,
            0x20 => IntCC::UnsignedGreaterThan,
            0x30 => IntCC::UnsignedGreaterThanOrEqual,
            0x40 => {
                let a = self.b.ins().band(d, s);
                return self.b.ins().icmp_imm(IntCC::NotEqual, a, 0);
            }
            0x50 => IntCC::NotEqual,
            0x60 => IntCC::SignedGreaterThan,
            0x70 => IntCC::SignedGreaterThanOrEqual,
            0xa0 => IntCC::UnsignedLessThan,
            0xb0 => IntCC::UnsignedLessThanOrEqual,
            0xc0 => IntCC::SignedLessThan,
            _ => IntCC::SignedLessThanOrEqual,
        };
        self.b.ins().icmp(cc, d, s)
    }

    /// r10 for call depth `depth`.
    fn frame_pointer(&mut self, depth: Value) -> Value {
        let lo = self.stack_lo;
        let d1 = self.b.ins().iadd_imm(depth, 1);
        let bytes = self.b.ins().imul_imm(d1, env::STACK_FRAME);
        self.b.ins().iadd(lo, bytes)
    }

    /// Address of the saved-frame slot for the call made at `depth`.
    fn frame_slot(&mut self, depth: Value) -> Value {
        let base = self.env_load(env::OFF_BASE_DEPTH);
        let rel = self.b.ins().isub(depth, base);
        let bytes = self.b.ins().imul_imm(rel, (env::FRAME_WORDS * 8) as i64);
        let at = self.b.ins().iadd(self.env, bytes);
        self.b.ins().iadd_imm(at, env::OFF_FRAMES as i64)
    }

    /// The two ways to an atomic's address, joined: `fast` uses `addr` as
    /// it is, `slow` asks the atomic_addr shim (which bails out on a fault).
    fn atomic_addr_paths(
        &mut self,
        fast: Block,
        slow: Block,
        join: Block,
        [addr, sz, p]: [Value; 3],
    ) -> Value {
        self.b.switch_to_block(fast);
        self.b.ins().jump(join, &[BlockArg::Value(addr)]);
        self.b.switch_to_block(slow);
        let ptr = self
            .call(
                self.shims.call3,
                env::atomic_addr as *const () as usize,
                &[addr, sz, p],
            )
            .expect("atomic_addr returns");
        let st = self.env_load(env::OFF_STATUS);
        self.b
            .ins()
            .brif(st, self.bail, &[], join, &[BlockArg::Value(ptr)]);
        self.b.switch_to_block(join);
        self.b.block_params(join)[0]
    }

    /// A 32- or 64-bit atomic: the shim checks the address as
    /// `Run::atomic` does, the operation is a native atomic instruction.
    fn atomic_rmw(&mut self, op: &Op, pc: usize) {
        let size = bpfvet_isa::opcode::size_bytes(op.code);
        let ty = Self::ty(size);
        let base = self.reg(op.dst);
        let addr = self.b.ins().iadd_imm(base, op.off as i64);
        let aligned_static = self
            .constant(base)
            .is_some_and(|b| b.wrapping_add(op.off as i64 as u64) % size as u64 == 0)
            && self.in_static(base, op.off, size, true);
        let (sz, p) = (self.k64(size as i64), self.k64(pc as i64));
        let ptr = if self.proven(pc, AccessKinds::STACK.union(AccessKinds::MAP_VALUE)) {
            // The verifier holds atomics to strict alignment and proved
            // the bytes writable.
            addr
        } else if aligned_static {
            // What atomic_addr returns, unless a read-only region the run
            // was handed covers the address.
            let (fast, slow, join) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            self.b.append_block_param(join, types::I64);
            self.unless_read_only_regions(fast, slow);
            self.atomic_addr_paths(fast, slow, join, [addr, sz, p])
        } else {
            // Aligned and in the newest region, writable: what atomic_addr
            // returns (its alignment test comes first, as here).
            let (region, fast, slow, join) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            self.b.append_block_param(join, types::I64);
            let misaligned = self.b.ins().band_imm(addr, size as i64 - 1);
            self.b.ins().brif(misaligned, slow, &[], region, &[]);
            self.b.switch_to_block(region);
            self.last_region(addr, size, true, fast, slow);
            self.atomic_addr_paths(fast, slow, join, [addr, sz, p])
        };
        let narrow = |t: &mut Self, v: Value| {
            if ty == types::I64 {
                v
            } else {
                t.b.ins().ireduce(ty, v)
            }
        };
        let s = self.reg(op.src);
        let s = narrow(self, s);
        let flags = MemFlags::trusted().with_alias_region(Some(AliasRegion::Heap));
        let old = match op.imm {
            BPF_CMPXCHG => {
                let r0 = self.reg(0);
                let expected = narrow(self, r0);
                self.b.ins().atomic_cas(flags, ptr, expected, s)
            }
            imm => {
                let rmw = rmw_op(imm).expect("checked by the caller");
                self.b.ins().atomic_rmw(ty, flags, rmw, ptr, s)
            }
        };
        let old = if ty == types::I64 {
            old
        } else {
            self.b.ins().uextend(types::I64, old)
        };
        if op.imm == BPF_CMPXCHG {
            self.set(0, old);
        } else if op.imm & BPF_FETCH != 0 {
            self.set(op.src, old);
        }
    }

    /// bpf_map_lookup_elem, r0. The helper without the general dispatch
    /// (its arguments in registers, nothing to reload after), and on a
    /// writable map known here with a key inside the stack, the lookup
    /// itself: an ARRAY's value address computed inline, a hash map's
    /// from the map's own lookup called directly. A value found has its
    /// region left for the next shim to register (`Env::pending`) and is
    /// made the newest region the inline checks try. While the run holds
    /// a read-only region (which could cover the value and then decides
    /// writes to it) the shim runs.
    fn map_lookup(&mut self, pc: usize) -> Value {
        let (m, k) = (self.reg(1), self.reg(2));
        let join = self.b.create_block();
        self.b.append_block_param(join, types::I64);
        let slow = self.b.create_block();
        let inline = self
            .constant(m)
            .and_then(crate::code::map_index)
            .and_then(|i| self.lookups.get(i).copied().flatten());
        if let Some(how) = inline {
            let key_size = match how {
                InlineLookup::Array(_) => 4,
                InlineLookup::Hash(h) => h.key_size as i64,
            };
            let rel = self.b.ins().isub(k, self.stack_lo);
            let in_stack =
                self.b
                    .ins()
                    .icmp_imm(IntCC::UnsignedLessThanOrEqual, rel, STACK_TOTAL - key_size);
            let fast = self.b.create_block();
            if let InlineLookup::Array(
                a @ InlineArray {
                    static_values: true,
                    ..
                },
            ) = how
            {
                // The key on the stack: index 0 finds the value, any other
                // none, and there is nothing to register.
                self.b.ins().brif(in_stack, fast, &[], slow, &[]);
                self.b.switch_to_block(fast);
                let idx = self.b.ins().uload32(self.flags, k, 0);
                let null = self.k64(0);
                let addr = self.k64(a.base as i64);
                let is_zero = self.b.ins().icmp_imm(IntCC::Equal, idx, 0);
                let v = self.b.ins().select(is_zero, addr, null);
                self.b.ins().jump(join, &[BlockArg::Value(v)]);
                self.b.switch_to_block(slow);
                let p = self.k64(pc as i64);
                let sig = self.shims.call3;
                self.call_or_bail(sig, env::map_lookup as *const () as usize, &[m, k, p], join);
                self.b.switch_to_block(join);
                return self.b.block_params(join)[0];
            }
            let hit = self.b.create_block();
            self.b.append_block_param(hit, types::I64);
            let ro = self.env_load(env::OFF_READ_ONLY_REGIONS);
            let no_ro = self.b.ins().icmp_imm(IntCC::Equal, ro, 0);
            let pend = self.env_load(env::OFF_PENDING_LEN);
            let room = self
                .b
                .ins()
                .icmp_imm(IntCC::UnsignedLessThan, pend, env::PENDING as i64);
            let ok = self.b.ins().band(in_stack, no_ro);
            let ok = self.b.ins().band(ok, room);
            self.b.ins().brif(ok, fast, &[], slow, &[]);
            self.b.switch_to_block(fast);
            let null = self.k64(0);
            let value_size = match how {
                InlineLookup::Array(a) => {
                    let idx = self.b.ins().uload32(self.flags, k, 0);
                    let inside =
                        self.b
                            .ins()
                            .icmp_imm(IntCC::UnsignedLessThan, idx, a.entries as i64);
                    let off = self.b.ins().imul_imm(idx, a.elem_bytes as i64);
                    let addr = self.b.ins().iadd_imm(off, a.base as i64);
                    self.b.ins().brif(
                        inside,
                        hit,
                        &[BlockArg::Value(addr)],
                        join,
                        &[BlockArg::Value(null)],
                    );
                    a.value_size
                }
                InlineLookup::Hash(h) => {
                    let callee = self.k64(h.shim as i64);
                    let map = self.k64(h.map as i64);
                    let sig = self.shims.plain2;
                    let call = self.b.ins().call_indirect(sig, callee, &[map, k]);
                    let addr = self.b.inst_results(call)[0];
                    self.b.ins().brif(
                        addr,
                        hit,
                        &[BlockArg::Value(addr)],
                        join,
                        &[BlockArg::Value(null)],
                    );
                    h.value_size
                }
            };
            self.b.switch_to_block(hit);
            let addr = self.b.block_params(hit)[0];
            let len = self.k64(value_size as i64);
            let at = self.b.ins().ishl_imm(pend, 4);
            let at = self.b.ins().iadd(self.env, at);
            self.b.ins().store(ENV_MEM, addr, at, env::OFF_PENDING);
            self.b.ins().store(ENV_MEM, len, at, env::OFF_PENDING + 8);
            let pend1 = self.b.ins().iadd_imm(pend, 1);
            self.env_store(pend1, env::OFF_PENDING_LEN);
            self.env_store(addr, env::OFF_LAST_LO);
            self.env_store(len, env::OFF_LAST_LEN);
            self.env_store(len, env::OFF_LAST_LEN_WRITABLE);
            self.b.ins().jump(join, &[BlockArg::Value(addr)]);
        } else {
            self.b.ins().jump(slow, &[]);
        }
        self.b.switch_to_block(slow);
        let p = self.k64(pc as i64);
        let sig = self.shims.call3;
        self.call_or_bail(sig, env::map_lookup as *const () as usize, &[m, k, p], join);
        self.b.switch_to_block(join);
        self.b.block_params(join)[0]
    }

    /// A backward jump costs one unit of the budget, so no loop runs forever.
    fn tick(&mut self, pc: usize) {
        if self.bounded {
            return;
        }
        let left = self.b.use_var(self.budget);
        let (go, out) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(left, go, &[], out, &[]);
        self.b.switch_to_block(out);
        self.fault(env::FAULT_BUDGET, pc);
        self.b.switch_to_block(go);
        let next = self.b.ins().iadd_imm(left, -1);
        self.b.def_var(self.budget, next);
    }
}

/// Subprograms inlined at each call site, all call chains together, may
/// grow the compiled code to this many instructions (or four times the
/// program, if more); past it calls keep the frame stack.
const INLINE_LIMIT: usize = 8192;

/// One translated stretch of code: the whole program (calls through the
/// frame stack in `Env`), or one subprogram inlined at a call site.
struct Inst {
    start: usize,
    end: usize,
    blocks: HashMap<usize, Block>,
    kind: InstKind,
}

enum InstKind {
    /// Every instruction of the program; calls save r6..r9 and a return
    /// site in `Env::frames`, exits return through a jump table.
    Frames { return_sites: Vec<usize> },
    /// A subprogram `level` calls below the program's entry (0: the entry
    /// itself, which returns r0 to the driver).
    Inlined { level: usize, ret: Option<Return> },
}

/// Where an inlined subprogram's exits go, and the caller's values they
/// restore (r6..r9, r10 and the depth are the caller's again after a call).
struct Return {
    block: Block,
    saved: [Value; 4],
    fp: Value,
    depth: Value,
}

impl Inst {
    /// Blocks start at the code's entry, at jump targets inside it, after
    /// every jump and after every exit.
    fn new(
        b: &mut FunctionBuilder<'_>,
        ops: &[Op],
        start: usize,
        end: usize,
        kind: InstKind,
    ) -> Inst {
        let mut leaders = BTreeSet::from([start]);
        let mut pc = start;
        while pc < end {
            let op = ops[pc];
            let next = if op.code == 0x18 { pc + 2 } else { pc + 1 };
            if let Some(t) = targets(ops, pc) {
                if (start..end).contains(&t) {
                    leaders.insert(t);
                }
                leaders.insert(next);
            }
            if op.code == 0x95 {
                leaders.insert(next);
            }
            pc = next;
        }
        if matches!(kind, InstKind::Inlined { .. }) {
            // A subprogram never runs on past its last instruction.
            leaders.retain(|&l| l < end);
        }
        Inst {
            start,
            end,
            blocks: leaders.iter().map(|&pc| (pc, b.create_block())).collect(),
            kind,
        }
    }

    /// Whether a tail call here may be made below the program's entry
    /// frame: the target then runs nested and this frame exits with its r0.
    fn nested_tail_calls(&self) -> bool {
        match &self.kind {
            InstKind::Frames { return_sites } => !return_sites.is_empty(),
            InstKind::Inlined { level, .. } => *level > 0,
        }
    }
}

/// The program's subprograms as `[start, end)` ranges, the entry's first,
/// when every one can be inlined at its call sites: each is entered only
/// by calls, its jumps stay inside it, it ends in an exit or a jump (the
/// kernel's verifier requires all of this), and inlining every call chain
/// stays within [`INLINE_LIMIT`]. None for a program without calls.
fn subprograms(ops: &[Op], n: usize) -> Option<Vec<(usize, usize)>> {
    let mut starts = BTreeSet::from([0]);
    let mut pc = 0;
    while pc < n {
        let op = ops[pc];
        if op.code == 0x85 && op.src == BPF_PSEUDO_CALL {
            starts.insert(targets(ops, pc)?);
        }
        // A call through a register may enter any instruction.
        if op.code == 0x8d {
            return None;
        }
        pc += if op.code == 0x18 { 2 } else { 1 };
    }
    if starts.len() == 1 {
        return None;
    }
    let bounds: Vec<usize> = starts.iter().copied().chain([n]).collect();
    let subs: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    let index = |entry: usize| subs.iter().position(|s| s.0 == entry);
    let mut calls = vec![Vec::new(); subs.len()];
    for (i, &(start, end)) in subs.iter().enumerate() {
        let mut pc = start;
        let mut last = start;
        while pc < end {
            let op = ops[pc];
            if let Some(t) = targets(ops, pc) {
                if op.code == 0x85 {
                    calls[i].push(index(t)?);
                } else if !(start..end).contains(&t) {
                    return None;
                }
            }
            last = pc;
            pc += if op.code == 0x18 { 2 } else { 1 };
        }
        if pc != end || !matches!(ops[last].code, 0x95 | 0x05 | 0x06) {
            return None;
        }
    }
    // Instructions emitted for subprogram i entered at each level: a call
    // at level MAX_FRAMES - 1 only faults.
    let len = |i: usize| subs[i].1 - subs[i].0;
    let mut below = vec![0usize; subs.len()];
    for _level in (0..MAX_FRAMES).rev() {
        below = (0..subs.len())
            .map(|i| {
                calls[i]
                    .iter()
                    .fold(len(i), |acc, &c| acc.saturating_add(below[c]))
            })
            .collect();
    }
    (below[0] <= INLINE_LIMIT.max(4 * n)).then_some(subs)
}

/// Builds the body of `fn(env: *mut Env) -> u64` for `ops` into `b`.
pub(super) fn build(
    b: &mut FunctionBuilder<'_>,
    call_conv: cranelift_codegen::isa::CallConv,
    ops: &[Op],
    statics: &[Region],
    proof: &[AccessKinds],
    lookups: &[Option<InlineLookup>],
) -> Result<(), Decline> {
    check(ops)?;
    let n = ops.len() - 1;
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let env_v = b.block_params(entry)[0];
    let regs: [Variable; 11] = std::array::from_fn(|i| Variable::from_u32(i as u32));
    for &v in &regs {
        b.declare_var(v, types::I64);
    }
    let depth = Variable::from_u32(11);
    b.declare_var(depth, types::I64);
    let budget = Variable::from_u32(12);
    b.declare_var(budget, types::I64);
    let pkt_lo = Variable::from_u32(13);
    let pkt_cap: [Variable; 4] = std::array::from_fn(|i| Variable::from_u32(14 + i as u32));
    for v in std::iter::once(pkt_lo).chain(pkt_cap) {
        b.declare_var(v, types::I64);
    }
    let load_env = |b: &mut FunctionBuilder<'_>, off| b.ins().load(types::I64, ENV_MEM, env_v, off);
    let stack_lo = load_env(b, env::OFF_STACK_LO);
    let ctx_lo = load_env(b, env::OFF_CTX_LO);
    let shims = Shims {
        void4: b.import_signature(sig(call_conv, 5, false)),
        void_three: b.import_signature(sig(call_conv, 4, false)),
        call3: b.import_signature(sig(call_conv, 4, true)),
        call2: b.import_signature(sig(call_conv, 3, true)),
        call4: b.import_signature(sig(call_conv, 5, true)),
        plain2: b.import_signature(sig(call_conv, 2, true)),
        void2: b.import_signature(sig(call_conv, 2, false)),
        void3: b.import_signature(sig(call_conv, 3, false)),
    };
    let bail = b.create_block();
    let subs = subprograms(ops, n);
    let mut t = Tx {
        b,
        env: env_v,
        regs,
        shims,
        bail,
        flags: MemFlags::new().with_alias_region(Some(AliasRegion::Heap)),
        statics,
        proof,
        lookups,
        budget,
        bounded: terminates(ops, proof),
        depth,
        ops,
        subs: subs.clone().unwrap_or_default(),
        stack_lo,
        ctx_lo,
        pkt_lo,
        pkt_cap,
    };
    t.reload_packet();
    let left = t.env_load(env::OFF_BUDGET);
    t.b.def_var(budget, left);
    // A verified program reads no register but r1 (and r10) before it
    // writes it: the others need not come from the Env.
    for r in 0..10u8 {
        let v = if proof.is_empty() || r == 1 {
            t.env_load(env::OFF_REGS + 8 * r as i32)
        } else {
            t.k64(0)
        };
        t.set(r, v);
    }
    let base = t.env_load(env::OFF_BASE_DEPTH);
    t.b.def_var(depth, base);
    let fp = t.frame_pointer(base);
    t.set(10, fp);

    let root = match &subs {
        Some(s) => Inst::new(
            t.b,
            ops,
            0,
            s[0].1,
            InstKind::Inlined {
                level: 0,
                ret: None,
            },
        ),
        None => {
            let mut return_sites = Vec::new();
            let mut pc = 0;
            while pc < n {
                let op = ops[pc];
                let next = if op.code == 0x18 { pc + 2 } else { pc + 1 };
                if op.code == 0x85 && op.src == BPF_PSEUDO_CALL {
                    return_sites.push(next);
                }
                pc = next;
            }
            Inst::new(t.b, ops, 0, n, InstKind::Frames { return_sites })
        }
    };
    t.b.ins().jump(root.blocks[&0], &[]);
    emit_range(&mut t, &root)?;
    t.b.switch_to_block(bail);
    let z = t.k64(0);
    t.b.ins().return_(&[z]);
    t.b.seal_all_blocks();
    Ok(())
}

/// Whether every run of the program ends without a budget: bpfvet's
/// verifier accepted it (a proof is given), so, as in the kernel, every
/// loop of its own was explored until each path left it; the only loops it
/// did not bound that way end on a count kept elsewhere (may_goto on the
/// run's may_goto budget; bpf_loop and other callbacks run on the
/// interpreter, which counts its own budget) or on a kfunc's answer (an
/// open-coded iterator's next), and programs calling kfuncs keep the budget.
fn terminates(ops: &[Op], proof: &[AccessKinds]) -> bool {
    !proof.is_empty()
        && !ops
            .iter()
            .any(|o| o.code == 0x85 && o.src != 0 && o.src != BPF_PSEUDO_CALL || o.code == 0x8d)
}

/// Translates the instructions of `inst`, whose entry block the caller
/// has already jumped to.
fn emit_range(t: &mut Tx<'_, '_>, inst: &Inst) -> Result<(), Decline> {
    let mut open = false;
    let mut pc = inst.start;
    while pc <= inst.end {
        if let Some(&blk) = inst.blocks.get(&pc) {
            if open {
                t.b.ins().jump(blk, &[]);
            }
            t.b.switch_to_block(blk);
            open = true;
        }
        if !open {
            pc += 1;
            continue;
        }
        if pc == inst.end {
            t.fault(env::FAULT_FELL_OFF, pc);
            open = false;
            break;
        }
        let ops = t.ops;
        let op = ops[pc];
        let code = op.code;
        let mut next = pc + 1;
        match code & 7 {
            4 | 7 => emit_alu(t, &op),
            // LDX (plain and sign-extending)
            1 => {
                let size = bpfvet_isa::opcode::size_bytes(code);
                let v = t.load(op.src, op.off, size, pc);
                let v = if code & 0xe0 == 0x80 {
                    let r = t.b.ins().ireduce(Tx::ty(size), v);
                    t.b.ins().sextend(types::I64, r)
                } else {
                    v
                };
                t.set(op.dst, v);
            }
            // ST
            2 => {
                let size = bpfvet_isa::opcode::size_bytes(code);
                let v = t.k64(op.imm as i64);
                t.store(op.dst, op.off, size, v, pc);
            }
            // Load-acquire and store-release are plain accesses here, as in
            // the interpreter.
            3 if code & 0xe0 == 0xc0 && op.imm == BPF_LOAD_ACQ => {
                let size = bpfvet_isa::opcode::size_bytes(code);
                let v = t.load(op.src, op.off, size, pc);
                t.set(op.dst, v);
            }
            3 if code & 0xe0 == 0xc0 && op.imm == BPF_STORE_REL => {
                let size = bpfvet_isa::opcode::size_bytes(code);
                let v = t.reg(op.src);
                t.store(op.dst, op.off, size, v, pc);
            }
            3 if matches!(code, 0xc3 | 0xdb) && rmw_op(op.imm).is_some() => {
                t.atomic_rmw(&op, pc);
            }
            // Atomics the interpreter refuses: its error, through the shim.
            3 if code & 0xe0 == 0xc0 => {
                t.spill(0..=10);
                let p = t.k64(pc as i64);
                t.call(t.shims.void2, env::atomic as *const () as usize, &[p]);
                t.check_status();
                for r in [0, op.src, op.dst] {
                    let v = t.env_load(env::OFF_REGS + 8 * (r & 15) as i32);
                    t.set(r, v);
                }
            }
            3 => {
                let size = bpfvet_isa::opcode::size_bytes(code);
                let v = t.reg(op.src);
                t.store(op.dst, op.off, size, v, pc);
            }
            // LD: LD_IMM64 and the legacy packet loads
            0 => {
                if code == 0x18 {
                    let v = t.k64(op.imm64 as i64);
                    t.set(op.dst, v);
                    next = pc + 2;
                } else {
                    let size = bpfvet_isa::opcode::size_bytes(code);
                    let mut off = t.k64(op.imm as i64);
                    if code & 0x40 != 0 {
                        let s = t.reg(op.src);
                        let s32 = t.b.ins().ireduce(types::I32, s);
                        let s64 = t.b.ins().sextend(types::I64, s32);
                        off = t.b.ins().iadd(off, s64);
                    }
                    let sz = t.k64(size as i64);
                    let v = t
                        .call(t.shims.call2, env::ld_abs as *const () as usize, &[off, sz])
                        .expect("ld_abs returns");
                    t.check_status();
                    t.set(0, v);
                }
            }
            // JMP / JMP32
            _ => {
                let target = targets(ops, pc);
                match code {
                    0x05 | 0x06 => {
                        let tgt = target.expect("ja has a target");
                        if tgt <= pc {
                            t.tick(pc);
                        }
                        match copied_segments(ops, inst, tgt) {
                            0 => {
                                t.b.ins().jump(inst.blocks[&tgt], &[]);
                            }
                            segments => emit_copy(t, inst, tgt, segments),
                        }
                        open = false;
                    }
                    0xe5 => {
                        let left = t.env_load(env::OFF_MAY_GOTO);
                        let dec = t.b.create_block();
                        let tgt = inst.blocks[&target.expect("may_goto has a target")];
                        t.b.ins().brif(left, dec, &[], tgt, &[]);
                        t.b.switch_to_block(dec);
                        let l1 = t.b.ins().iadd_imm(left, -1);
                        t.env_store(l1, env::OFF_MAY_GOTO);
                        t.b.ins().jump(inst.blocks[&next], &[]);
                        open = false;
                    }
                    0x85 if op.src == BPF_PSEUDO_CALL => {
                        match &inst.kind {
                            InstKind::Frames { return_sites } => {
                                let d = t.b.use_var(t.depth);
                                let too_deep = t.b.ins().icmp_imm(
                                    IntCC::SignedGreaterThanOrEqual,
                                    d,
                                    MAX_FRAMES as i64 - 1,
                                );
                                let (ok, deep) = (t.b.create_block(), t.b.create_block());
                                t.b.ins().brif(too_deep, deep, &[], ok, &[]);
                                t.b.switch_to_block(deep);
                                t.fault(env::FAULT_CALL_DEPTH, pc);
                                t.b.switch_to_block(ok);
                                let slot = t.frame_slot(d);
                                for (i, r) in (6..=9u8).enumerate() {
                                    let v = t.reg(r);
                                    t.b.ins().store(ENV_MEM, v, slot, 8 * i as i32);
                                }
                                let site = return_sites
                                    .iter()
                                    .position(|&s| s == next)
                                    .expect("return site");
                                let sv = t.k64(site as i64);
                                t.b.ins().store(ENV_MEM, sv, slot, 32);
                                let d1 = t.b.ins().iadd_imm(d, 1);
                                t.b.def_var(t.depth, d1);
                                let fp = t.frame_pointer(d1);
                                t.set(10, fp);
                                t.b.ins()
                                    .jump(inst.blocks[&target.expect("call target")], &[]);
                            }
                            InstKind::Inlined { level, .. } => {
                                let entry = target.expect("call target");
                                inline_call(t, inst, *level, pc, entry, next)?;
                            }
                        }
                        open = false;
                    }
                    0x85 if op.src == BPF_PSEUDO_KFUNC_CALL || op.src != 0 => {
                        t.spill(1..=5);
                        let (id, p) = (t.k64(op.imm as i64), t.k64(pc as i64));
                        let v = t
                            .call(t.shims.call2, env::kfunc as *const () as usize, &[id, p])
                            .expect("kfunc returns");
                        t.check_status();
                        t.reload_packet();
                        t.set(0, v);
                    }
                    // With subprograms, a tail call may happen in a callee:
                    // the target then runs nested at this depth and this
                    // frame exits with its r0, as the interpreter's frame
                    // stack does.
                    0x85 if op.imm == TAIL_CALL && inst.nested_tail_calls() => {
                        t.spill(0..=9);
                        let p = t.k64(pc as i64);
                        let d = t.b.use_var(t.depth);
                        let taken = t
                            .call(
                                t.shims.call2,
                                env::tail_call_nested as *const () as usize,
                                &[p, d],
                            )
                            .expect("tail_call_nested returns");
                        t.check_status();
                        t.reload_packet();
                        let (exit, go) = (t.b.create_block(), t.b.create_block());
                        t.b.ins().brif(taken, exit, &[], go, &[]);
                        t.b.switch_to_block(exit);
                        let r0 = t.env_load(env::OFF_REGS);
                        t.set(0, r0);
                        emit_exit(t, inst);
                        t.b.switch_to_block(go);
                    }
                    0x85 if op.imm == TAIL_CALL => {
                        t.spill(0..=9);
                        // The target continues on this budget.
                        let left = t.b.use_var(t.budget);
                        t.env_store(left, env::OFF_BUDGET);
                        let p = t.k64(pc as i64);
                        t.call(t.shims.void2, env::tail_call as *const () as usize, &[p]);
                        t.check_status();
                    }
                    0x85 if op.imm == MAP_LOOKUP_ELEM => {
                        let v = t.map_lookup(pc);
                        t.set(0, v);
                    }
                    0x85 if op.imm == SKB_LOAD_BYTES => {
                        // Without the general helper path's spill and
                        // reloads: this helper changes nothing they cover.
                        let (off, to, len) = (t.reg(2), t.reg(3), t.reg(4));
                        let p = t.k64(pc as i64);
                        let join = t.b.create_block();
                        t.b.append_block_param(join, types::I64);
                        let sig = t.shims.call4;
                        let f = env::skb_load_bytes as *const () as usize;
                        t.call_or_bail(sig, f, &[off, to, len, p], join);
                        t.b.switch_to_block(join);
                        let v = t.b.block_params(join)[0];
                        t.set(0, v);
                    }
                    0x85 => {
                        t.spill(1..=5);
                        let (id, p) = (t.k64(op.imm as i64), t.k64(pc as i64));
                        let d = t.b.use_var(t.depth);
                        let v = t
                            .call(
                                t.shims.call3,
                                env::helper as *const () as usize,
                                &[id, p, d],
                            )
                            .expect("helper returns");
                        t.check_status();
                        t.reload_packet();
                        t.set(0, v);
                    }
                    0x8d => {
                        t.spill(1..=5);
                        let value = t.reg(op.dst);
                        let p = t.k64(pc as i64);
                        let d = t.b.use_var(t.depth);
                        let v = t
                            .call(
                                t.shims.call3,
                                env::callx as *const () as usize,
                                &[value, p, d],
                            )
                            .expect("callx returns");
                        t.check_status();
                        t.reload_packet();
                        t.set(0, v);
                    }
                    0x95 => {
                        emit_exit(t, inst);
                        open = false;
                    }
                    _ => {
                        let c = t.cond(&op);
                        let tgt = target.expect("conditional jump has a target");
                        let segments = copied_segments(ops, inst, tgt);
                        if segments > 0 {
                            let copy = t.b.create_block();
                            t.b.ins().brif(c, copy, &[], inst.blocks[&next], &[]);
                            t.b.switch_to_block(copy);
                            if tgt <= pc {
                                t.tick(pc);
                            }
                            emit_copy(t, inst, tgt, segments);
                        } else if tgt <= pc {
                            let (taken, fall) = (t.b.create_block(), inst.blocks[&next]);
                            t.b.ins().brif(c, taken, &[], fall, &[]);
                            t.b.switch_to_block(taken);
                            t.tick(pc);
                            t.b.ins().jump(inst.blocks[&tgt], &[]);
                        } else {
                            t.b.ins()
                                .brif(c, inst.blocks[&tgt], &[], inst.blocks[&next], &[]);
                        }
                        open = false;
                    }
                }
            }
        }
        pc = next;
    }
    if open {
        t.b.ins().jump(t.bail, &[]);
    }
    Ok(())
}

/// Most instructions a jump's private copy of its target holds.
const COPY_LIMIT: usize = 8;

/// How many segments of the code at `pc` a jump there runs as its own
/// copy instead of jumping: a segment is ALU instructions ending in a
/// conditional jump, and a copy goes on into the next segment on the
/// fall-through side (two at most, [`COPY_LIMIT`] instructions in all).
/// Where a loop's body ends in a jump to a test (or a test that falls
/// into another), each path through the body then leaves with one taken
/// branch, the loop's back edge, instead of two: the kernel's JIT keeps
/// both, and on a tight loop the taken branches are the bound. 0 when the
/// code at `pc` is anything else (memory, calls, exits, plain jumps).
fn copied_segments(ops: &[Op], inst: &Inst, pc: usize) -> usize {
    let (mut pc, mut insns, mut segments) = (pc, 0, 0);
    while segments < 2 {
        while pc < inst.end && insns < COPY_LIMIT && matches!(ops[pc].code & 7, 4 | 7) {
            pc += 1;
            insns += 1;
        }
        insns += 1;
        if pc >= inst.end || !is_cond_jump(ops[pc].code) || insns > COPY_LIMIT {
            break;
        }
        let exits_known = targets(ops, pc)
            .is_some_and(|t| inst.blocks.contains_key(&t) && inst.blocks.contains_key(&(pc + 1)));
        if !exits_known {
            break;
        }
        segments += 1;
        pc += 1;
    }
    segments
}

/// Translates `segments` segments from `pc` (see [`copied_segments`]) into
/// the current block: the same instructions as at their own blocks, each
/// conditional jump going to the original targets but the last copied
/// one's fall-through, which goes on in the copy.
fn emit_copy(t: &mut Tx<'_, '_>, inst: &Inst, mut pc: usize, segments: usize) {
    let ops = t.ops;
    for segment in 0..segments {
        while matches!(ops[pc].code & 7, 4 | 7) {
            emit_alu(t, &ops[pc]);
            pc += 1;
        }
        let op = ops[pc];
        let c = t.cond(&op);
        let tgt = targets(ops, pc).expect("a copied segment ends in a conditional jump");
        let next = pc + 1;
        let fall = if segment + 1 == segments {
            inst.blocks[&next]
        } else {
            t.b.create_block()
        };
        if tgt <= pc && !t.bounded {
            let taken = t.b.create_block();
            t.b.ins().brif(c, taken, &[], fall, &[]);
            t.b.switch_to_block(taken);
            t.tick(pc);
            t.b.ins().jump(inst.blocks[&tgt], &[]);
        } else {
            t.b.ins().brif(c, inst.blocks[&tgt], &[], fall, &[]);
        }
        if segment + 1 < segments {
            t.b.switch_to_block(fall);
        }
        pc = next;
    }
}

/// An ALU or ALU64 instruction (class 4 or 7): no memory, no control flow.
fn emit_alu(t: &mut Tx<'_, '_>, op: &Op) {
    let code = op.code;
    match code & 7 {
        // ALU64
        7 => {
            let v = match code {
                0xb7 => t.k64(op.imm as i64),
                0xbf => {
                    let s = t.reg(op.src);
                    match op.off {
                        8 | 16 | 32 => {
                            let nt = Tx::ty((op.off / 8) as u32);
                            let r = t.b.ins().ireduce(nt, s);
                            t.b.ins().sextend(types::I64, r)
                        }
                        _ => s,
                    }
                }
                0xd7 => {
                    let d = t.reg(op.dst);
                    bswap(t.b, d, op.imm)
                }
                _ => {
                    let d = t.reg(op.dst);
                    let s = t.src64(op);
                    t.alu(types::I64, op, d, s)
                }
            };
            t.set(op.dst, v);
        }
        // ALU (32-bit, zero-extended)
        4 => {
            let v = match code {
                0xb4 => t.k64(op.imm as u32 as i64),
                0xbc => {
                    let s = t.reg(op.src);
                    match op.off {
                        8 | 16 => {
                            let nt = Tx::ty((op.off / 8) as u32);
                            let r = t.b.ins().ireduce(nt, s);
                            let r = t.b.ins().sextend(types::I32, r);
                            t.b.ins().uextend(types::I64, r)
                        }
                        _ => {
                            let r = t.b.ins().ireduce(types::I32, s);
                            t.b.ins().uextend(types::I64, r)
                        }
                    }
                }
                0xd4 => {
                    let d = t.reg(op.dst);
                    match op.imm {
                        16 | 32 => {
                            let r = t.b.ins().ireduce(Tx::ty(op.imm as u32 / 8), d);
                            t.b.ins().uextend(types::I64, r)
                        }
                        _ => d,
                    }
                }
                0xdc => {
                    let d = t.reg(op.dst);
                    bswap(t.b, d, op.imm)
                }
                _ => {
                    let d = t.dst32(op.dst);
                    let s = t.src32(op);
                    let r = t.alu(types::I32, op, d, s);
                    t.b.ins().uextend(types::I64, r)
                }
            };
            t.set(op.dst, v);
        }
        _ => {}
    }
}

/// A bpf-to-bpf call at `pc` at inline level `level` of `caller`: the
/// callee's code translated again here, entered with r10 one frame down,
/// its exits going on at `next` with the caller's r6..r9 and r10.
fn inline_call(
    t: &mut Tx<'_, '_>,
    caller: &Inst,
    level: usize,
    pc: usize,
    entry: usize,
    next: usize,
) -> Result<(), Decline> {
    if level + 1 >= MAX_FRAMES {
        // Too deep whatever depth the run starts at.
        t.fault(env::FAULT_CALL_DEPTH, pc);
        return Ok(());
    }
    // A run entered below depth 0 (a tail call made in a callee) has
    // fewer frames left.
    let d = t.b.use_var(t.depth);
    let too_deep =
        t.b.ins()
            .icmp_imm(IntCC::SignedGreaterThanOrEqual, d, MAX_FRAMES as i64 - 1);
    let (ok, deep) = (t.b.create_block(), t.b.create_block());
    t.b.ins().brif(too_deep, deep, &[], ok, &[]);
    t.b.switch_to_block(deep);
    t.fault(env::FAULT_CALL_DEPTH, pc);
    t.b.switch_to_block(ok);
    let saved = [6u8, 7, 8, 9].map(|r| t.reg(r));
    let fp = t.reg(10);
    let d1 = t.b.ins().iadd_imm(d, 1);
    t.b.def_var(t.depth, d1);
    let fp1 = t.b.ins().iadd_imm(fp, env::STACK_FRAME);
    t.set(10, fp1);
    let &(start, end) = t
        .subs
        .iter()
        .find(|s| s.0 == entry)
        .expect("a subprogram starts at every call target");
    let ret = Return {
        block: caller.blocks[&next],
        saved,
        fp,
        depth: d,
    };
    let callee = Inst::new(
        t.b,
        t.ops,
        start,
        end,
        InstKind::Inlined {
            level: level + 1,
            ret: Some(ret),
        },
    );
    t.b.ins().jump(callee.blocks[&start], &[]);
    emit_range(t, &callee)
}

/// The read-modify-write an atomic's imm asks for (with or without
/// BPF_FETCH), or None for one the interpreter refuses. CMPXCHG maps to
/// Xchg only to say it is valid; it is emitted as a compare-and-swap.
fn rmw_op(imm: i32) -> Option<AtomicRmwOp> {
    Some(match imm {
        BPF_XCHG | BPF_CMPXCHG => AtomicRmwOp::Xchg,
        _ => match imm & !BPF_FETCH {
            0x00 => AtomicRmwOp::Add,
            0x40 => AtomicRmwOp::Or,
            0x50 => AtomicRmwOp::And,
            0xa0 => AtomicRmwOp::Xor,
            _ => return None,
        },
    })
}

/// `exit`: in the program's entry, return r0; in an inlined subprogram,
/// restore the caller's r6..r9, r10 and depth and go on after the call;
/// on the frame stack, return at the base depth, else restore from the
/// frame and jump to its return site.
fn emit_exit(t: &mut Tx<'_, '_>, inst: &Inst) {
    let return_sites = match &inst.kind {
        InstKind::Frames { return_sites } => return_sites,
        InstKind::Inlined { ret: None, .. } => {
            let r0 = t.reg(0);
            t.b.ins().return_(&[r0]);
            return;
        }
        InstKind::Inlined { ret: Some(ret), .. } => {
            for (r, &v) in (6u8..=9).zip(&ret.saved) {
                t.set(r, v);
            }
            t.set(10, ret.fp);
            t.b.def_var(t.depth, ret.depth);
            t.b.ins().jump(ret.block, &[]);
            return;
        }
    };
    if return_sites.is_empty() {
        // No bpf-to-bpf call: every exit is the program's own, at the base
        // depth.
        let r0 = t.reg(0);
        t.b.ins().return_(&[r0]);
        return;
    }
    let blocks = &inst.blocks;
    let depth = t.depth;
    let d = t.b.use_var(depth);
    let base = t.env_load(env::OFF_BASE_DEPTH);
    let at_base = t.b.ins().icmp(IntCC::Equal, d, base);
    let (done, back) = (t.b.create_block(), t.b.create_block());
    t.b.ins().brif(at_base, done, &[], back, &[]);
    t.b.switch_to_block(done);
    let r0 = t.reg(0);
    t.b.ins().return_(&[r0]);
    t.b.switch_to_block(back);
    let d0 = t.b.ins().iadd_imm(d, -1);
    t.b.def_var(depth, d0);
    let slot = t.frame_slot(d0);
    for (i, r) in (6..=9u8).enumerate() {
        let v = t.b.ins().load(types::I64, ENV_MEM, slot, 8 * i as i32);
        t.set(r, v);
    }
    let fp = t.frame_pointer(d0);
    t.set(10, fp);
    let site = t.b.ins().load(types::I64, ENV_MEM, slot, 32);
    let site32 = t.b.ins().ireduce(types::I32, site);
    let no_args: [BlockArg; 0] = [];
    let calls: Vec<_> = return_sites
        .iter()
        .map(|s| t.b.func.dfg.block_call(blocks[s], &no_args))
        .collect();
    // Each BlockCall is its own value list: the SSA builder appends
    // arguments to it in place.
    let default = t.b.func.dfg.block_call(t.bail, &no_args);
    let jt = t.b.create_jump_table(JumpTableData::new(default, &calls));
    t.b.ins().br_table(site32, jt);
}

fn bswap(b: &mut FunctionBuilder<'_>, d: Value, width: i32) -> Value {
    match width {
        16 | 32 => {
            let nt = Tx::ty(width as u32 / 8);
            let r = b.ins().ireduce(nt, d);
            let r = b.ins().bswap(r);
            b.ins().uextend(types::I64, r)
        }
        _ => b.ins().bswap(d),
    }
}
