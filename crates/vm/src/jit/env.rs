//! The state compiled code shares with the runtime: a `#[repr(C)]` block
//! whose fields the generated code reads at fixed offsets, and the
//! `extern "C"` shims through which it reaches the interpreter's own
//! memory checks, helpers and kfuncs (so their semantics cannot drift).

use std::mem::{offset_of, MaybeUninit};

use super::{Jit, Outcome};
use crate::ctx::CtxError;
use crate::error::VmError;
use crate::interp::{callx_target, CallxTarget, Engine, Interpreter};
use crate::run::{Run, MAX_FRAMES, STACK_PER_FRAME};

/// How a compiled function ended, in [`Env::status`].
pub(super) const RUNNING: u64 = 0;
/// A shim failed; the error is in [`Env::fault`].
pub(super) const FAULTED: u64 = 1;
/// LD_ABS/LD_IND left the packet: the program returns 0.
pub(super) const ENDED_ZERO: u64 = 2;
/// bpf_tail_call found a target, in [`Env::tail_target`]; r0..r9 are in
/// [`Env::regs`].
pub(super) const TAIL_CALLED: u64 = 3;

/// Words per saved frame: r6..r9 and the return site's number.
pub(super) const FRAME_WORDS: usize = 5;

#[repr(C)]
pub(super) struct Env {
    /// Registers handed across a shim call (helper arguments, atomics, tail
    /// calls) and the entry registers.
    pub regs: [u64; 16],
    pub stack_lo: u64,
    /// The packet's [meta, data_end), refreshed after every helper call.
    pub pkt_lo: u64,
    pub pkt_len: u64,
    /// Per access size 1, 2, 4, 8: one past the last packet offset such an
    /// access may start at (0 when none fits).
    pub pkt_cap: [u64; 4],
    pub may_goto_left: u64,
    /// Backward jumps left before the run is stopped (the interpreter
    /// counts every instruction; compiled code counts loop iterations).
    pub budget: u64,
    pub status: u64,
    pub base_depth: u64,
    /// Written by compiled code before it reads a slot: left uninitialised
    /// so that no run pays for clearing it.
    pub frames: MaybeUninit<[[u64; FRAME_WORDS]; MAX_FRAMES]>,
    pub run: *mut Run<'static>,
    pub prog: usize,
    pub fault: Option<VmError>,
    pub tail_target: usize,
    /// The engine, for tail calls run nested (`Jit<'_>` behind the pointer).
    pub jit: *const (),
    /// The structured context's address (0 for plain-memory contexts).
    pub ctx_lo: u64,
    /// Which 4-byte context fields `ctx_vals` holds (bit i: offset 4*i).
    /// A context load's value changes only through a context store or a
    /// helper, so the shims that may do either clear it.
    pub ctx_valid: u64,
    /// Only slots `ctx_valid` names are initialised.
    pub ctx_vals: [MaybeUninit<u64>; CTX_SLOTS],
    /// `Run::read_only_regions`, copied after every shim that can add
    /// regions.
    pub read_only_regions: u64,
    /// The run's newest region (the first its check tries: typically the
    /// map value just looked up), and its length for writes (0 when it is
    /// read-only); refreshed after every shim that can add or remove
    /// regions.
    pub last_lo: u64,
    pub last_len: u64,
    pub last_len_writable: u64,
    /// Map values compiled array lookups handed out and the run has not
    /// registered yet: (address, length) pairs, all writable. Every shim
    /// registers them first ([`parts`]), so whatever consults the run's
    /// regions sees them, in order.
    pub pending: [[u64; 2]; PENDING],
    pub pending_len: u64,
    /// Per 4-byte context slot: the u32 field a store there sets, when
    /// that is all the store does (null otherwise). The context stays in
    /// place for the whole run.
    pub ctx_fields: [*mut u32; CTX_SLOTS],
    /// Set by every shim (they alone reach the run from compiled code):
    /// a run that returns with it clear changed nothing outside this
    /// `Env` but the may_goto count (see [`Env::restart_untouched`]).
    pub shim_called: bool,
}

/// Array lookups compiled code may leave unregistered before it calls a
/// shim (the next one takes the shim path, which registers them).
pub(super) const PENDING: usize = 8;

/// 4-byte context fields the cache covers: the first 256 bytes, the size
/// of the context region.
pub(super) const CTX_SLOTS: usize = 64;

pub(super) const OFF_REGS: i32 = offset_of!(Env, regs) as i32;
pub(super) const OFF_STACK_LO: i32 = offset_of!(Env, stack_lo) as i32;
pub(super) const OFF_PKT_LO: i32 = offset_of!(Env, pkt_lo) as i32;
pub(super) const OFF_PKT_CAP: i32 = offset_of!(Env, pkt_cap) as i32;
pub(super) const OFF_MAY_GOTO: i32 = offset_of!(Env, may_goto_left) as i32;
pub(super) const OFF_BUDGET: i32 = offset_of!(Env, budget) as i32;
pub(super) const OFF_STATUS: i32 = offset_of!(Env, status) as i32;
pub(super) const OFF_BASE_DEPTH: i32 = offset_of!(Env, base_depth) as i32;
pub(super) const OFF_FRAMES: i32 = offset_of!(Env, frames) as i32;
pub(super) const OFF_CTX_LO: i32 = offset_of!(Env, ctx_lo) as i32;
pub(super) const OFF_CTX_VALID: i32 = offset_of!(Env, ctx_valid) as i32;
pub(super) const OFF_CTX_VALS: i32 = offset_of!(Env, ctx_vals) as i32;
pub(super) const OFF_READ_ONLY_REGIONS: i32 = offset_of!(Env, read_only_regions) as i32;
pub(super) const OFF_LAST_LO: i32 = offset_of!(Env, last_lo) as i32;
pub(super) const OFF_LAST_LEN: i32 = offset_of!(Env, last_len) as i32;
pub(super) const OFF_LAST_LEN_WRITABLE: i32 = offset_of!(Env, last_len_writable) as i32;
pub(super) const OFF_PENDING: i32 = offset_of!(Env, pending) as i32;
pub(super) const OFF_PENDING_LEN: i32 = offset_of!(Env, pending_len) as i32;
pub(super) const OFF_CTX_FIELDS: i32 = offset_of!(Env, ctx_fields) as i32;
pub(super) const STACK_FRAME: i64 = STACK_PER_FRAME as i64;

impl Env {
    pub fn new(run: &mut Run<'_>, prog: usize, depth: usize, jit: &Jit<'_>) -> Env {
        let mut env = Env {
            regs: [0; 16],
            stack_lo: run.frame_pointer(0) - STACK_PER_FRAME as u64,
            pkt_lo: 0,
            pkt_len: 0,
            pkt_cap: [0; 4],
            may_goto_left: run.may_goto_left,
            budget: run.insn_budget,
            status: RUNNING,
            base_depth: depth as u64,
            frames: MaybeUninit::uninit(),
            run: std::ptr::from_mut(run).cast(),
            prog,
            fault: None,
            tail_target: 0,
            jit: std::ptr::from_ref(jit).cast(),
            ctx_lo: run.ctx_range().map_or(0, |(lo, _)| lo),
            ctx_valid: 0,
            ctx_vals: [MaybeUninit::uninit(); CTX_SLOTS],
            read_only_regions: 0,
            last_lo: 0,
            last_len: 0,
            last_len_writable: 0,
            pending: [[0; 2]; PENDING],
            pending_len: 0,
            ctx_fields: [std::ptr::null_mut(); CTX_SLOTS],
            shim_called: false,
        };
        if run.ctx_range().is_some() {
            for (slot, f) in env.ctx_fields.iter_mut().enumerate() {
                *f = run
                    .ctx
                    .u32_field(4 * slot as u32)
                    .unwrap_or(std::ptr::null_mut());
            }
        }
        env.refresh_regions(run);
        env.refresh_packet(run);
        env
    }

    /// Back to the state of a fresh call of `prog` at depth 0 on `run`
    /// (just reset by `Run::reset_dynamic`), keeping what is still true:
    /// the packet bounds were refreshed after everything that ran outside
    /// compiled code, and the reset leaves the packet alone.
    #[inline]
    /// `clear_regs`: the code reads more than r1 from `regs` at its entry
    /// (verified code does not: the registers shims left there stay).
    pub fn restart(&mut self, run: &Run<'_>, prog: usize, clear_regs: bool) {
        if clear_regs {
            self.regs = [0; 16];
        }
        self.may_goto_left = run.may_goto_left;
        self.budget = run.insn_budget;
        self.status = RUNNING;
        self.prog = prog;
        if self.fault.is_some() {
            self.fault = None;
        }
        self.tail_target = 0;
        // The reset dropped the last run's regions: its pending ones go too.
        self.pending_len = 0;
        self.refresh_regions(run);
    }

    /// [`Env::restart`] after a run whose compiled code returned without
    /// calling a shim: the run is still as [`Run::reset_dynamic`] left it
    /// before (no region, inner map, lock, timer value or tail call was
    /// added: only shims add them), so neither needs a reset; what the
    /// code itself changes goes back: the may_goto count (the run's copy
    /// too), the budget, the lookups it left pending and the newest-region
    /// cache, to `start`, what [`Env::restart`] set it to after the reset.
    #[inline]
    pub fn restart_untouched(&mut self, run: &mut Run<'_>, start: [u64; 3], clear_regs: bool) {
        if clear_regs {
            self.regs = [0; 16];
        }
        run.may_goto_left = crate::run::MAY_GOTO_BUDGET;
        self.may_goto_left = crate::run::MAY_GOTO_BUDGET;
        self.budget = run.insn_budget;
        self.pending_len = 0;
        [self.last_lo, self.last_len, self.last_len_writable] = start;
    }

    /// The newest-region cache, for [`Env::restart_untouched`].
    pub fn region_cache(&self) -> [u64; 3] {
        [self.last_lo, self.last_len, self.last_len_writable]
    }

    /// Registers the map values compiled lookups handed out, as the
    /// lookup helper would have, in the order of the lookups.
    pub fn register_pending(&mut self, run: &mut Run<'_>) {
        if self.pending_len == 0 {
            return;
        }
        let n = (self.pending_len as usize).min(PENDING);
        for &[start, len] in &self.pending[..n] {
            run.add_region(start, len as usize, true);
        }
        self.pending_len = 0;
        self.refresh_regions(run);
    }

    #[inline]
    pub fn refresh_regions(&mut self, run: &Run<'_>) {
        self.read_only_regions = run.read_only_regions as u64;
        let last = run.regions.last();
        self.last_lo = last.map_or(0, |r| r.start);
        self.last_len = last.map_or(0, |r| r.end - r.start);
        self.last_len_writable = last.filter(|r| r.writable).map_or(0, |r| r.end - r.start);
    }

    pub fn refresh_packet(&mut self, run: &Run<'_>) {
        (self.pkt_lo, self.pkt_len) = match run.ctx.packet() {
            Some(p) => (p.addr(p.meta), (p.data_end - p.meta) as u64),
            None => (0, 0),
        };
        for (log, cap) in self.pkt_cap.iter_mut().enumerate() {
            // An access of 2^log bytes at offset off fits iff off < cap.
            *cap = (self.pkt_len + 1).saturating_sub(1 << log);
        }
    }

    fn fail(&mut self, e: VmError) {
        self.fault = Some(e);
        self.status = FAULTED;
    }
}

/// # Safety
/// `env` is the live `Env` the compiled function was called with; its
/// `run` points at the run that called the function and nothing else
/// borrows that run during the call.
unsafe fn parts<'e>(env: *mut Env) -> (&'e mut Env, &'e mut Run<'static>) {
    // SAFETY: per this function's contract.
    let (env, run) = unsafe {
        let env = &mut *env;
        let run = &mut *env.run;
        (env, run)
    };
    env.shim_called = true;
    env.register_pending(run);
    (env, run)
}

/// Loads outside the inline stack / packet fast path (context, map values,
/// helper memory), with the interpreter's checks.
pub(super) extern "C" fn load(env: *mut Env, addr: u64, size: u64, pc: u64) -> u64 {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    match run.load(addr, size as u32, pc as usize) {
        Ok(v) => {
            let rel = addr.wrapping_sub(env.ctx_lo);
            if size == 4 && rel % 4 == 0 && rel < 4 * CTX_SLOTS as u64 && run.ctx_range().is_some()
            {
                env.ctx_vals[(rel / 4) as usize] = MaybeUninit::new(v);
                env.ctx_valid |= 1 << (rel / 4);
            }
            v
        }
        Err(e) => {
            env.fail(e);
            0
        }
    }
}

/// A 4-byte load at an aligned offset of the first 256 bytes from
/// `Env::ctx_lo`, not in the stack or packet and not cached: `Run::load`'s
/// context branch, filling the cache.
pub(super) extern "C" fn ctx_load(env: *mut Env, addr: u64, pc: u64) -> u64 {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (e, run) = unsafe { parts(env) };
    if run.ctx_range().is_none() {
        // Plain memory: no context fields at all.
        return load(env, addr, 4, pc);
    }
    let rel = addr.wrapping_sub(e.ctx_lo);
    if rel % 4 != 0 || rel >= 4 * CTX_SLOTS as u64 {
        // Not a cached field after all: the general path decides.
        return load(env, addr, 4, pc);
    }
    let off = rel as u32;
    match run.ctx.load(off, 4) {
        Ok(v) => {
            e.ctx_vals[off as usize / 4] = MaybeUninit::new(v);
            e.ctx_valid |= 1 << (off / 4);
            v
        }
        Err(CtxError::Denied) => {
            e.fail(VmError::CtxAccess {
                pc: pc as usize,
                off,
                size: 4,
            });
            0
        }
    }
}

/// A 4-byte store at an aligned offset of the first 256 bytes from
/// `Env::ctx_lo`, not in the stack or packet: `Run::store`'s context
/// branch. The stored field is read again afterwards; the others stay
/// cached (`Ctx::store` changes only the field it writes).
pub(super) extern "C" fn ctx_store(env: *mut Env, addr: u64, v: u64, pc: u64) {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (e, run) = unsafe { parts(env) };
    if run.ctx_range().is_none() {
        return store(env, addr, 4, v, pc);
    }
    let off = addr.wrapping_sub(e.ctx_lo) as u32;
    e.ctx_valid &= !(1 << (off / 4));
    if run.ctx.store(off, 4, v).is_err() {
        e.fail(VmError::CtxAccess {
            pc: pc as usize,
            off,
            size: 4,
        });
    }
}

pub(super) extern "C" fn store(env: *mut Env, addr: u64, size: u64, v: u64, pc: u64) {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    env.ctx_valid = 0;
    if let Err(e) = run.store(addr, size as u32, v, pc as usize) {
        env.fail(e);
    }
}

/// Helper `id` with r1..r5 in `env.regs`; returns r0.
pub(super) extern "C" fn helper(env: *mut Env, id: u64, pc: u64, depth: u64) -> u64 {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    // Callbacks (bpf_loop, for_each_map_elem) run in the interpreter and
    // share the run's may_goto budget.
    run.may_goto_left = env.may_goto_left;
    let r = run.helper(
        id as i32,
        &mut env.regs,
        env.prog,
        pc as usize,
        depth as usize,
    );
    let cached = env.ctx_valid;
    let r0 = after_call(env, run, r);
    if crate::helpers::keeps_context(id as i32) {
        env.ctx_valid = cached;
    }
    r0
}

/// bpf_skb_load_bytes(r2 = `off`, r3 = `to`, r4 = `len`): copies between
/// memory the run already has, so nothing compiled code keeps (context
/// fields, packet bounds, regions) changes.
pub(super) extern "C" fn skb_load_bytes(
    env: *mut Env,
    off: u64,
    to: u64,
    len: u64,
    pc: u64,
) -> u64 {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    match run.skb_load_bytes(off, to, len, pc as usize) {
        Ok(v) => v,
        Err(e) => {
            env.fail(e);
            0
        }
    }
}

/// bpf_map_lookup_elem(r1 = `map`, r2 = `key`): runs no callback, moves
/// no packet and changes no context field, so only the regions (the value
/// it hands out) come back to the compiled code.
pub(super) extern "C" fn map_lookup(env: *mut Env, map: u64, key: u64, pc: u64) -> u64 {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    let r = run.map_lookup(map, key, pc as usize, "bpf_map_lookup_elem");
    env.refresh_regions(run);
    match r {
        Ok(v) => v,
        Err(e) => {
            env.fail(e);
            0
        }
    }
}

/// Back from a helper or an interpreted function: the shared may_goto
/// budget and packet bounds come back to the compiled code, and an error
/// stops the run (r0 reads 0 until the caller sees the failure).
fn after_call(env: &mut Env, run: &mut Run, r: crate::error::Result<u64>) -> u64 {
    env.ctx_valid = 0;
    env.refresh_regions(run);
    env.may_goto_left = run.may_goto_left;
    run.refresh_packet_bounds();
    env.refresh_packet(run);
    match r {
        Ok(v) => v,
        Err(e) => {
            env.fail(e);
            0
        }
    }
}

/// `call %reg`: a helper by ID, or a function of the program, which runs
/// on the interpreter one frame deeper (as callbacks do).
pub(super) extern "C" fn callx(env: *mut Env, value: u64, pc: u64, depth: u64) -> u64 {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    let slots = run.vm.programs[env.prog].ops.len();
    run.may_goto_left = env.may_goto_left;
    let r = callx_target(value, slots, pc as usize).and_then(|target| match target {
        CallxTarget::Helper(id) => {
            run.helper(id, &mut env.regs, env.prog, pc as usize, depth as usize)
        }
        CallxTarget::Function(start) => {
            let args: [u64; 5] = env.regs[1..6].try_into().expect("5 registers");
            Interpreter.execute(run, env.prog, start, args, depth as usize + 1)
        }
    });
    after_call(env, run, r)
}

pub(super) extern "C" fn kfunc(env: *mut Env, id: u64, pc: u64) -> u64 {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    env.ctx_valid = 0;
    let r = run.kfunc(id as i32, &mut env.regs, env.prog, pc as usize);
    env.refresh_regions(run);
    match r {
        Ok(v) => v,
        Err(e) => {
            env.fail(e);
            0
        }
    }
}

/// The atomic at `pc`, with every register in `env.regs`.
pub(super) extern "C" fn atomic(env: *mut Env, pc: u64) {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    let vm = run.vm;
    let op = vm.programs[env.prog].ops[pc as usize];
    let size = bpfvet_isa::opcode::size_bytes(op.code);
    if let Err(e) = run.atomic(&mut env.regs, op, size, pc as usize) {
        env.fail(e);
    }
}

/// The host address for an atomic read-modify-write of `size` bytes at
/// `addr`, with `Run::atomic`'s checks (alignment, then a writable region);
/// compiled code then does the operation itself.
pub(super) extern "C" fn atomic_addr(env: *mut Env, addr: u64, size: u64, pc: u64) -> u64 {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    let pc = pc as usize;
    if !addr.is_multiple_of(size) {
        env.fail(VmError::Misaligned { pc, addr });
        return 0;
    }
    match run.check(addr, size, true) {
        Some(p) => p as u64,
        None => {
            env.fail(VmError::OutOfBounds {
                pc,
                kind: "atomic",
                addr,
                size: size as u32,
            });
            0
        }
    }
}

pub(super) extern "C" fn ld_abs(env: *mut Env, off: i64, size: u64) -> u64 {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    match run.ld_abs(off, size as u32) {
        Some(v) => v,
        None => {
            env.status = ENDED_ZERO;
            0
        }
    }
}

/// bpf_tail_call with r0..r9 in `env.regs`: on a target, sets
/// TAIL_CALLED and the compiled function returns to the driver.
pub(super) extern "C" fn tail_call(env: *mut Env, pc: u64) {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    match run.tail_call_target(env.regs[2], env.regs[3], pc as usize) {
        Ok(Some(t)) => {
            env.tail_target = t;
            env.status = TAIL_CALLED;
        }
        Ok(None) => {}
        Err(e) => env.fail(e),
    }
}

/// bpf_tail_call in a program with bpf-to-bpf calls, r0..r9 in
/// `env.regs`: the target runs nested at `depth` (frames above it are its
/// own). Returns 1 with its r0 in `env.regs[0]` when a target ran, 0 when
/// the call falls through.
pub(super) extern "C" fn tail_call_nested(env: *mut Env, pc: u64, depth: u64) -> u64 {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    let target = match run.tail_call_target(env.regs[2], env.regs[3], pc as usize) {
        Ok(Some(t)) => t,
        Ok(None) => return 0,
        Err(e) => {
            env.fail(e);
            return 0;
        }
    };
    run.may_goto_left = env.may_goto_left;
    // SAFETY: `jit` is the engine whose `drive` called this code; it
    // outlives the call.
    let jit = unsafe { &*env.jit.cast::<Jit<'_>>() };
    let r = jit.drive(run, target, &env.regs, depth as usize);
    env.ctx_valid = 0;
    env.refresh_regions(run);
    env.may_goto_left = run.may_goto_left;
    env.refresh_packet(run);
    match r {
        Ok(Outcome::Returned(r0)) => {
            env.regs[0] = r0;
            1
        }
        Ok(Outcome::EndedZero) => {
            env.status = ENDED_ZERO;
            0
        }
        Err(e) => {
            env.fail(e);
            0
        }
    }
}

/// Faults the generated code detects itself.
pub(super) const FAULT_CALL_DEPTH: u64 = 0;
pub(super) const FAULT_BUDGET: u64 = 1;
pub(super) const FAULT_FELL_OFF: u64 = 2;

pub(super) extern "C" fn fault(env: *mut Env, kind: u64, pc: u64) {
    // SAFETY: called only by compiled code, with its own `Env`.
    let (env, run) = unsafe { parts(env) };
    let pc = pc as usize;
    env.fail(match kind {
        FAULT_CALL_DEPTH => VmError::CallDepth {
            pc,
            max: MAX_FRAMES,
        },
        FAULT_BUDGET => VmError::InsnLimit(run.insn_budget),
        _ => VmError::BadInsn {
            pc,
            what: "execution fell off the end of the program".into(),
        },
    });
}
