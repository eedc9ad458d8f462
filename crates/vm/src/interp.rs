//! The dispatch loop: one `match` on the opcode byte of a pre-decoded
//! [`Op`], registers in a local array, bpf-to-bpf calls on an explicit
//! frame stack, every memory access checked by [`Run`].

use bpfvet_isa::opcode::BPF_PSEUDO_CALL;

use bpfvet_isa::opcode::{BPF_LOAD_ACQ, BPF_STORE_REL};

use crate::code::{
    func_pc, Op, FUSED_MOV32_ADD_K, FUSED_MOV32_AND_K, FUSED_MOV32_AND_K_JEQ_K,
    FUSED_MOV32_AND_K_JNE_K, FUSED_MOV32_JA, FUSED_MOV64_ADD_K, FUSED_MOV64_AND_K, FUSED_MOV64_JA,
    FUSED_MUL32_ADD_K, PROVEN_ATOMIC, PROVEN_CTX, PROVEN_PLAIN,
};
use crate::error::{Result, VmError};
use crate::run::{atomic_at, read_shared, write_shared, Run, MAX_FRAMES};

/// Helper id of bpf_tail_call: it changes control flow, so the loop runs it.
const TAIL_CALL: i32 = 12;
/// MAX_TAIL_CALL_CNT.
pub const MAX_TAIL_CALLS: u32 = 33;

#[derive(Clone, Copy, Default)]
struct Frame {
    prog: usize,
    ret_pc: usize,
    saved: [u64; 4],
}

/// The frames of the bpf-to-bpf calls a run is inside, in place: a run
/// never goes deeper than [`MAX_FRAMES`] (checked before each push), and
/// a run of a program with calls allocates nothing. The slots start
/// uninitialised: every run sets up a `Frames`, most never call, and
/// zeroing the slots cost each run a memset.
struct Frames {
    frames: [std::mem::MaybeUninit<Frame>; MAX_FRAMES],
    len: usize,
}

impl Frames {
    fn new() -> Frames {
        Frames {
            frames: [const { std::mem::MaybeUninit::uninit() }; MAX_FRAMES],
            len: 0,
        }
    }

    /// False when the array is full (the depth check comes first, so
    /// only a run started below its base depth could get here).
    #[inline]
    fn push(&mut self, f: Frame) -> bool {
        let Some(slot) = self.frames.get_mut(self.len) else {
            return false;
        };
        slot.write(f);
        self.len += 1;
        true
    }

    #[inline]
    fn pop(&mut self) -> Option<Frame> {
        self.len = self.len.checked_sub(1)?;
        // SAFETY: every slot below the length was written by `push`.
        Some(unsafe { self.frames[self.len].assume_init() })
    }
}

/// A bpf-to-bpf call from the instruction before `ret_pc`: the callee-saved
/// registers are kept for the return and r10 moves to the new frame.
#[inline]
fn enter_frame(
    frames: &mut Frames,
    depth: &mut usize,
    regs: &mut [u64; 16],
    run: &Run,
    prog: usize,
    ret_pc: usize,
) -> Result<()> {
    if *depth + 1 >= MAX_FRAMES
        || !frames.push(Frame {
            prog,
            ret_pc,
            saved: [regs[6], regs[7], regs[8], regs[9]],
        })
    {
        return Err(VmError::CallDepth {
            pc: ret_pc - 1,
            max: MAX_FRAMES,
        });
    }
    *depth += 1;
    regs[10] = run.frame_pointer(*depth);
    Ok(())
}

/// An execution engine: the interpreter today, a JIT later. Runs program
/// `prog` of the run's VM from instruction `pc` at call depth `depth` with
/// r1..r5 = `args`, and returns r0.
pub trait Engine {
    fn execute(
        &self,
        run: &mut Run<'_>,
        prog: usize,
        pc: usize,
        args: [u64; 5],
        depth: usize,
    ) -> Result<u64>;

    /// Runs `prog` from its start `times` times on the same context (r1 =
    /// `ctx`), each run from what [`Run::reset_dynamic`] leaves, as
    /// BPF_PROG_TEST_RUN's repeat does; returns the last run's r0.
    fn execute_repeated(
        &self,
        run: &mut Run<'_>,
        prog: usize,
        ctx: u64,
        times: u32,
    ) -> Result<u64> {
        let mut ret = 0;
        for _ in 0..times {
            run.reset_dynamic();
            ret = self.execute(run, prog, 0, [ctx, 0, 0, 0, 0], 0)?;
        }
        Ok(ret)
    }
}

pub struct Interpreter;

impl Engine for Interpreter {
    fn execute(
        &self,
        run: &mut Run<'_>,
        prog: usize,
        pc: usize,
        args: [u64; 5],
        depth: usize,
    ) -> Result<u64> {
        execute(run, prog, pc, args, depth)
    }
}

fn sdiv64(d: u64, s: u64) -> u64 {
    let (d, s) = (d as i64, s as i64);
    if s == 0 {
        0
    } else {
        d.wrapping_div(s) as u64
    }
}

fn smod64(d: u64, s: u64) -> u64 {
    let (di, si) = (d as i64, s as i64);
    if si == 0 {
        d
    } else {
        di.wrapping_rem(si) as u64
    }
}

fn sdiv32(d: u32, s: u32) -> u32 {
    let (d, s) = (d as i32, s as i32);
    if s == 0 {
        0
    } else {
        d.wrapping_div(s) as u32
    }
}

fn smod32(d: u32, s: u32) -> u32 {
    let (di, si) = (d as i32, s as i32);
    if si == 0 {
        d
    } else {
        di.wrapping_rem(si) as u32
    }
}

/// Where `call %reg` (opcode 0x8d, the ISA's callx) goes. The kernel's
/// verifier rejects the opcode, so only unverified runs reach it: the
/// register holds either a function's address as LD_IMM64 of a function
/// gives it (what clang emits for calls through a function pointer) or a
/// helper's static ID (what the ISA's callx conformance group tests).
pub(crate) enum CallxTarget {
    Function(usize),
    Helper(i32),
}

/// Resolves the register value of a callx at `pc` in a program of
/// `slots` pre-decoded slots (the last one the end sentinel).
pub(crate) fn callx_target(value: u64, slots: usize, pc: usize) -> Result<CallxTarget> {
    if let Some(target) = func_pc(value) {
        if target + 1 < slots {
            return Ok(CallxTarget::Function(target));
        }
    }
    match i32::try_from(value) {
        // A tail call changes the running program: only `call 12` does it.
        Ok(TAIL_CALL) => Err(VmError::BadInsn {
            pc,
            what: "callx of bpf_tail_call is not supported".into(),
        }),
        Ok(id) => Ok(CallxTarget::Helper(id)),
        Err(_) => Err(VmError::BadInsn {
            pc,
            what: format!("callx to {value:#x}: neither a function of the program nor a helper ID"),
        }),
    }
}

/// Whether a callback driver goes on after one call: on 0; it stops on any
/// other return value, and on an error, which it keeps in `failure`.
pub(crate) fn callback_continues(r: Result<u64>, failure: &mut Option<VmError>) -> bool {
    match r {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => {
            *failure = Some(e);
            false
        }
    }
}

/// The interpreter proper. Recursion happens only for callbacks (bpf_loop,
/// for_each_map_elem), each at a deeper frame.
///
/// The budget: a run stops with InsnLimit before its (budget + 1)-th
/// instruction. Counting each instruction costs a test per slot, so the
/// run charges a whole straight stretch ([`Op::straight`]) when it enters
/// one: nothing inside a stretch can leave it but an error, and each
/// decision point (jump, call, exit, LD_ABS) is where the next stretch is
/// entered and charged. A stretch longer than the budget left goes on in
/// the exact mode, which counts instruction by instruction and stops at
/// the same instruction with the same error.
pub fn execute(
    run: &mut Run<'_>,
    prog: usize,
    pc: usize,
    args: [u64; 5],
    depth: usize,
) -> Result<u64> {
    if depth >= MAX_FRAMES {
        return Err(VmError::CallDepth {
            pc,
            max: MAX_FRAMES,
        });
    }
    // 16 slots so a 4-bit register field indexes without a bounds check.
    let mut regs = [0u64; 16];
    regs[1..6].copy_from_slice(&args);
    regs[10] = run.frame_pointer(depth);
    let mut st = State {
        prog,
        pc,
        depth,
        base_depth: depth,
        regs,
        frames: Frames::new(),
        budget: run.insn_budget,
    };
    match run_ops::<false>(run, &mut st)? {
        Some(r0) => Ok(r0),
        None => run_ops::<true>(run, &mut st)
            .map(|r0| r0.expect("the exact mode runs to the end of the run")),
    }
}

/// Where a run is, handed from the charging mode to the exact one.
struct State {
    prog: usize,
    pc: usize,
    depth: usize,
    base_depth: usize,
    regs: [u64; 16],
    frames: Frames,
    budget: u64,
}

/// Runs from `st` to the end of the run (Some(r0)), or, charging whole
/// stretches (`EXACT` false), until a stretch exceeds the budget left
/// (None, `st` then holds where to go on).
// Each mode its own function: inlined into `execute`, the two loops were
// merged into one that tested the mode at every instruction.
#[inline(never)]
fn run_ops<const EXACT: bool>(run: &mut Run<'_>, st: &mut State) -> Result<Option<u64>> {
    let vm = run.vm;
    let mut prog = st.prog;
    let mut code: &[Op] = &vm.programs[prog].ops;
    // The next op, as a pointer: no index arithmetic per instruction.
    let mut ip: *const Op = code[st.pc..].as_ptr();
    let mut depth = st.depth;
    let base_depth = st.base_depth;
    let mut budget = st.budget;
    let regs = &mut st.regs;
    let frames = &mut st.frames;

    // The index of the next op (one past the running one).
    macro_rules! pc {
        () => {
            // SAFETY: `ip` points into `code` or one past its sentinel.
            unsafe { ip.offset_from(code.as_ptr()) as usize }
        };
    }
    // Goes on `delta` ops after the next one.
    macro_rules! jump {
        ($delta:expr) => {
            // SAFETY: `predecode` checked every jump target to lie inside
            // the program.
            ip = unsafe { ip.offset($delta as isize) }
        };
    }
    // Goes on at op `pc` of `code`.
    macro_rules! goto {
        ($pc:expr) => {
            // SAFETY: call and tail-call targets, return sites and callx
            // targets are slots of the program (`predecode`, callx_target).
            ip = unsafe { code.as_ptr().add($pc) }
        };
    }

    // A run goes on at `pc`: charge its straight stretch, or hand over to
    // the exact mode when the budget cannot cover it.
    macro_rules! enter {
        () => {
            if !EXACT {
                // SAFETY: as for the dispatch below, `ip` is at a slot of
                // the program or its sentinel.
                let len = unsafe { (*ip).straight } as u64;
                if budget < len {
                    st.prog = prog;
                    st.pc = pc!();
                    st.depth = depth;
                    st.budget = budget;
                    return Ok(None);
                }
                budget -= len;
            }
        };
    }

    macro_rules! cond {
        ($op:expr, $c:expr) => {{
            if $c {
                jump!($op.off);
            }
            enter!();
        }};
    }

    // A load or store of `size` bytes at `a`: straight to memory when the
    // verifier proved the access plain (stack, packet, map value), else
    // through the run's checks.
    macro_rules! load {
        ($op:expr, $a:expr, $size:expr) => {{
            let a = $a;
            if $op.proven & PROVEN_PLAIN != 0 {
                // SAFETY: the verifier proved `size` bytes at `a` inside
                // the stack, the packet or a map value on every path; map
                // values may be shared with other threads, hence the
                // atomic-per-access read.
                unsafe { read_shared(a as *const u8, $size) }
            } else if $op.proven & PROVEN_CTX != 0 {
                run.load_ctx(a, $size, pc!() - 1)?
            } else {
                run.load(a, $size, pc!() - 1)?
            }
        }};
    }
    macro_rules! store {
        ($op:expr, $a:expr, $size:expr, $v:expr) => {{
            let (a, v) = ($a, $v);
            if $op.proven & PROVEN_PLAIN != 0 {
                // SAFETY: as for `load!`, and the proof covers writes.
                unsafe { write_shared(a as *mut u8, $size, v) }
            } else {
                run.store(a, $size, v, pc!() - 1)?
            }
        }};
    }

    // The second instruction of a fused pair (skipped over) and the first
    // one's source register value.
    macro_rules! second {
        ($op:expr) => {{
            // SAFETY: `fuse_pairs` gives a fused code only to a slot
            // followed by the pair's second instruction.
            let next: &Op = unsafe { &*ip };
            ip = unsafe { ip.add(1) };
            (next, regs[($op.src & 15) as usize])
        }};
    }

    // The third instruction of a fused triple (skipped over).
    macro_rules! third {
        () => {{
            // SAFETY: `fuse_pairs` gives a triple's code only to a slot
            // followed by the triple's second and third instructions.
            let next: &Op = unsafe { &*ip };
            ip = unsafe { ip.add(1) };
            next
        }};
    }

    enter!();
    loop {
        // Every instruction costs one unit: a budget, not a timer, so runs
        // are deterministic and a non-terminating program cannot hang the
        // host. The charging mode paid for this one on entering its stretch.
        if EXACT {
            if budget == 0 {
                return Err(VmError::InsnLimit(run.insn_budget));
            }
            budget -= 1;
        }
        // SAFETY: `predecode` checked every jump, call and callback target
        // to lie inside the program and appended a sentinel slot that ends
        // the run, so `pc` never passes the sentinel.
        // Read fields in place: copying the 24-byte op to the stack and
        // reading a byte of it back stalls store forwarding.
        let op: &Op = unsafe { &*ip };
        ip = unsafe { ip.add(1) };
        let d = (op.dst & 15) as usize;
        // The charging mode runs fused pairs as one step; the exact mode
        // counts each instruction, so it runs them one by one.
        match if EXACT { op.code } else { op.xcode } {
            // ---- ALU64 ----
            0x07 => regs[d] = regs[d].wrapping_add(op.imm as i64 as u64),
            0x0f => regs[d] = regs[d].wrapping_add(regs[(op.src & 15) as usize]),
            0x17 => regs[d] = regs[d].wrapping_sub(op.imm as i64 as u64),
            0x1f => regs[d] = regs[d].wrapping_sub(regs[(op.src & 15) as usize]),
            0x27 => regs[d] = regs[d].wrapping_mul(op.imm as i64 as u64),
            0x2f => regs[d] = regs[d].wrapping_mul(regs[(op.src & 15) as usize]),
            0x37 => {
                let s = op.imm as i64 as u64;
                regs[d] = if op.off == 1 {
                    sdiv64(regs[d], s)
                } else {
                    regs[d].checked_div(s).unwrap_or(0)
                };
            }
            0x3f => {
                let s = regs[(op.src & 15) as usize];
                regs[d] = if op.off == 1 {
                    sdiv64(regs[d], s)
                } else {
                    regs[d].checked_div(s).unwrap_or(0)
                };
            }
            0x47 => regs[d] |= op.imm as i64 as u64,
            0x4f => regs[d] |= regs[(op.src & 15) as usize],
            0x57 => regs[d] &= op.imm as i64 as u64,
            0x5f => regs[d] &= regs[(op.src & 15) as usize],
            0x67 => regs[d] <<= (op.imm as i64 as u64) & 63,
            0x6f => regs[d] <<= regs[(op.src & 15) as usize] & 63,
            0x77 => regs[d] >>= (op.imm as i64 as u64) & 63,
            0x7f => regs[d] >>= regs[(op.src & 15) as usize] & 63,
            0x87 => regs[d] = regs[d].wrapping_neg(),
            0x97 => {
                let s = op.imm as i64 as u64;
                regs[d] = if op.off == 1 {
                    smod64(regs[d], s)
                } else if s == 0 {
                    regs[d]
                } else {
                    regs[d] % s
                };
            }
            0x9f => {
                let s = regs[(op.src & 15) as usize];
                regs[d] = if op.off == 1 {
                    smod64(regs[d], s)
                } else if s == 0 {
                    regs[d]
                } else {
                    regs[d] % s
                };
            }
            0xa7 => regs[d] ^= op.imm as i64 as u64,
            0xaf => regs[d] ^= regs[(op.src & 15) as usize],
            0xb7 => regs[d] = op.imm as i64 as u64,
            // The plain move first: the sign-extending forms are rare.
            0xbf if op.off == 0 => regs[d] = regs[(op.src & 15) as usize],
            0xbf => {
                let s = regs[(op.src & 15) as usize];
                regs[d] = match op.off {
                    8 => s as i8 as i64 as u64,
                    16 => s as i16 as i64 as u64,
                    32 => s as i32 as i64 as u64,
                    _ => s,
                };
            }
            0xc7 => regs[d] = ((regs[d] as i64) >> ((op.imm as i64 as u64) & 63)) as u64,
            0xcf => regs[d] = ((regs[d] as i64) >> (regs[(op.src & 15) as usize] & 63)) as u64,
            0xd7 => {
                regs[d] = match op.imm {
                    16 => (regs[d] as u16).swap_bytes() as u64,
                    32 => (regs[d] as u32).swap_bytes() as u64,
                    _ => regs[d].swap_bytes(),
                }
            }
            // ---- ALU (32-bit, zero-extended) ----
            0x04 => regs[d] = (regs[d] as u32).wrapping_add(op.imm as u32) as u64,
            0x0c => {
                regs[d] = (regs[d] as u32).wrapping_add(regs[(op.src & 15) as usize] as u32) as u64
            }
            0x14 => regs[d] = (regs[d] as u32).wrapping_sub(op.imm as u32) as u64,
            0x1c => {
                regs[d] = (regs[d] as u32).wrapping_sub(regs[(op.src & 15) as usize] as u32) as u64
            }
            0x24 => regs[d] = (regs[d] as u32).wrapping_mul(op.imm as u32) as u64,
            0x2c => {
                regs[d] = (regs[d] as u32).wrapping_mul(regs[(op.src & 15) as usize] as u32) as u64
            }
            0x34 => {
                let (a, s) = (regs[d] as u32, (op.imm as u32));
                regs[d] = if op.off == 1 {
                    sdiv32(a, s)
                } else {
                    a.checked_div(s).unwrap_or(0)
                } as u64;
            }
            0x3c => {
                let (a, s) = (regs[d] as u32, (regs[(op.src & 15) as usize] as u32));
                regs[d] = if op.off == 1 {
                    sdiv32(a, s)
                } else {
                    a.checked_div(s).unwrap_or(0)
                } as u64;
            }
            0x44 => regs[d] = (regs[d] as u32 | (op.imm as u32)) as u64,
            0x4c => regs[d] = (regs[d] as u32 | (regs[(op.src & 15) as usize] as u32)) as u64,
            0x54 => regs[d] = (regs[d] as u32 & (op.imm as u32)) as u64,
            0x5c => regs[d] = (regs[d] as u32 & (regs[(op.src & 15) as usize] as u32)) as u64,
            0x64 => regs[d] = ((regs[d] as u32) << ((op.imm as u32) & 31)) as u64,
            0x6c => {
                regs[d] = ((regs[d] as u32) << ((regs[(op.src & 15) as usize] as u32) & 31)) as u64
            }
            0x74 => regs[d] = ((regs[d] as u32) >> ((op.imm as u32) & 31)) as u64,
            0x7c => {
                regs[d] = ((regs[d] as u32) >> ((regs[(op.src & 15) as usize] as u32) & 31)) as u64
            }
            0x84 => regs[d] = (regs[d] as u32).wrapping_neg() as u64,
            0x94 => {
                let (a, s) = (regs[d] as u32, (op.imm as u32));
                regs[d] = if op.off == 1 {
                    smod32(a, s)
                } else if s == 0 {
                    a
                } else {
                    a % s
                } as u64;
            }
            0x9c => {
                let (a, s) = (regs[d] as u32, (regs[(op.src & 15) as usize] as u32));
                regs[d] = if op.off == 1 {
                    smod32(a, s)
                } else if s == 0 {
                    a
                } else {
                    a % s
                } as u64;
            }
            0xa4 => regs[d] = (regs[d] as u32 ^ (op.imm as u32)) as u64,
            0xac => regs[d] = (regs[d] as u32 ^ (regs[(op.src & 15) as usize] as u32)) as u64,
            0xb4 => regs[d] = op.imm as u32 as u64,
            0xbc if op.off == 0 => regs[d] = regs[(op.src & 15) as usize] as u32 as u64,
            0xbc => {
                let s = regs[(op.src & 15) as usize];
                regs[d] = match op.off {
                    8 => s as i8 as i32 as u32,
                    16 => s as i16 as i32 as u32,
                    _ => s as u32,
                } as u64;
            }
            0xc4 => regs[d] = ((regs[d] as i32) >> ((op.imm as u32) & 31)) as u32 as u64,
            0xcc => {
                regs[d] =
                    ((regs[d] as i32) >> ((regs[(op.src & 15) as usize] as u32) & 31)) as u32 as u64
            }
            // to little endian: truncation only on a little-endian host
            0xd4 => {
                regs[d] = match op.imm {
                    16 => regs[d] as u16 as u64,
                    32 => regs[d] as u32 as u64,
                    _ => regs[d],
                }
            }
            0xdc => {
                regs[d] = match op.imm {
                    16 => (regs[d] as u16).swap_bytes() as u64,
                    32 => (regs[d] as u32).swap_bytes() as u64,
                    _ => regs[d].swap_bytes(),
                }
            }
            // ---- JMP ----
            0x05 => {
                jump!(op.off);
                enter!();
            }
            0x06 => {
                jump!(op.imm);
                enter!();
            }
            0x15 => cond!(op, regs[d] == (op.imm as i64 as u64)),
            0x1d => cond!(op, regs[d] == regs[(op.src & 15) as usize]),
            0x25 => cond!(op, regs[d] > (op.imm as i64 as u64)),
            0x2d => cond!(op, regs[d] > regs[(op.src & 15) as usize]),
            0x35 => cond!(op, regs[d] >= (op.imm as i64 as u64)),
            0x3d => cond!(op, regs[d] >= regs[(op.src & 15) as usize]),
            0x45 => cond!(op, regs[d] & (op.imm as i64 as u64) != 0),
            0x4d => cond!(op, regs[d] & regs[(op.src & 15) as usize] != 0),
            0x55 => cond!(op, regs[d] != (op.imm as i64 as u64)),
            0x5d => cond!(op, regs[d] != regs[(op.src & 15) as usize]),
            0x65 => cond!(op, (regs[d] as i64) > (op.imm as i64 as u64) as i64),
            0x6d => cond!(op, (regs[d] as i64) > regs[(op.src & 15) as usize] as i64),
            0x75 => cond!(op, (regs[d] as i64) >= (op.imm as i64 as u64) as i64),
            0x7d => cond!(op, (regs[d] as i64) >= regs[(op.src & 15) as usize] as i64),
            0xa5 => cond!(op, regs[d] < (op.imm as i64 as u64)),
            0xad => cond!(op, regs[d] < regs[(op.src & 15) as usize]),
            0xb5 => cond!(op, regs[d] <= (op.imm as i64 as u64)),
            0xbd => cond!(op, regs[d] <= regs[(op.src & 15) as usize]),
            0xc5 => cond!(op, (regs[d] as i64) < (op.imm as i64 as u64) as i64),
            0xcd => cond!(op, (regs[d] as i64) < regs[(op.src & 15) as usize] as i64),
            0xd5 => cond!(op, (regs[d] as i64) <= (op.imm as i64 as u64) as i64),
            0xdd => cond!(op, (regs[d] as i64) <= regs[(op.src & 15) as usize] as i64),
            0x16 => cond!(op, regs[d] as u32 == (op.imm as u32)),
            0x1e => cond!(op, regs[d] as u32 == (regs[(op.src & 15) as usize] as u32)),
            0x26 => cond!(op, regs[d] as u32 > (op.imm as u32)),
            0x2e => cond!(op, regs[d] as u32 > (regs[(op.src & 15) as usize] as u32)),
            0x36 => cond!(op, regs[d] as u32 >= (op.imm as u32)),
            0x3e => cond!(op, regs[d] as u32 >= (regs[(op.src & 15) as usize] as u32)),
            0x46 => cond!(op, regs[d] as u32 & (op.imm as u32) != 0),
            0x4e => cond!(
                op,
                regs[d] as u32 & (regs[(op.src & 15) as usize] as u32) != 0
            ),
            0x56 => cond!(op, regs[d] as u32 != (op.imm as u32)),
            0x5e => cond!(op, regs[d] as u32 != (regs[(op.src & 15) as usize] as u32)),
            0x66 => cond!(op, (regs[d] as i32) > (op.imm as u32) as i32),
            0x6e => cond!(
                op,
                (regs[d] as i32) > (regs[(op.src & 15) as usize] as u32) as i32
            ),
            0x76 => cond!(op, (regs[d] as i32) >= (op.imm as u32) as i32),
            0x7e => cond!(
                op,
                (regs[d] as i32) >= (regs[(op.src & 15) as usize] as u32) as i32
            ),
            0xa6 => cond!(op, (regs[d] as u32) < (op.imm as u32)),
            0xae => cond!(op, (regs[d] as u32) < (regs[(op.src & 15) as usize] as u32)),
            0xb6 => cond!(op, regs[d] as u32 <= (op.imm as u32)),
            0xbe => cond!(op, regs[d] as u32 <= (regs[(op.src & 15) as usize] as u32)),
            0xc6 => cond!(op, (regs[d] as i32) < (op.imm as u32) as i32),
            0xce => cond!(
                op,
                (regs[d] as i32) < (regs[(op.src & 15) as usize] as u32) as i32
            ),
            0xd6 => cond!(op, (regs[d] as i32) <= (op.imm as u32) as i32),
            0xde => cond!(
                op,
                (regs[d] as i32) <= (regs[(op.src & 15) as usize] as u32) as i32
            ),
            // may_goto: a count-based budget shared by the whole run.
            0xe5 => {
                if run.may_goto_left == 0 {
                    jump!(op.off);
                } else {
                    run.may_goto_left -= 1;
                }
                enter!();
            }
            0x85 => {
                if op.src == BPF_PSEUDO_CALL {
                    enter_frame(frames, &mut depth, regs, run, prog, pc!())?;
                    jump!(op.imm);
                } else if op.src != 0 {
                    regs[0] = run.kfunc(op.imm, regs, prog, pc!() - 1)?;
                } else if op.imm == TAIL_CALL {
                    if let Some(target) = run.tail_call_target(regs[2], regs[3], pc!() - 1)? {
                        prog = target;
                        code = &vm.programs[prog].ops;
                        goto!(0);
                    }
                } else {
                    run.insn_budget = budget;
                    regs[0] = run.helper(op.imm, regs, prog, pc!() - 1, depth)?;
                    run.refresh_packet_bounds();
                    budget = run.insn_budget;
                }
                enter!();
            }
            // call %reg: a function of this program or a helper by ID.
            0x8d => {
                match callx_target(regs[d], code.len(), pc!() - 1)? {
                    CallxTarget::Function(target) => {
                        enter_frame(frames, &mut depth, regs, run, prog, pc!())?;
                        goto!(target);
                    }
                    CallxTarget::Helper(id) => {
                        run.insn_budget = budget;
                        regs[0] = run.helper(id, regs, prog, pc!() - 1, depth)?;
                        run.refresh_packet_bounds();
                        budget = run.insn_budget;
                    }
                }
                enter!();
            }
            0x95 => match frames.pop() {
                None => {
                    debug_assert_eq!(depth, base_depth);
                    run.insn_budget = budget;
                    return Ok(Some(regs[0]));
                }
                Some(f) => {
                    depth -= 1;
                    regs[6..10].copy_from_slice(&f.saved);
                    regs[10] = run.frame_pointer(depth);
                    if f.prog != prog {
                        prog = f.prog;
                        code = &vm.programs[prog].ops;
                    }
                    goto!(f.ret_pc);
                    enter!();
                }
            },
            // ---- loads ----
            0x61 => regs[d] = load!(op, addr(regs, op.src, op.off), 4),
            0x69 => regs[d] = load!(op, addr(regs, op.src, op.off), 2),
            0x71 => regs[d] = load!(op, addr(regs, op.src, op.off), 1),
            0x79 => regs[d] = load!(op, addr(regs, op.src, op.off), 8),
            0x81 => regs[d] = load!(op, addr(regs, op.src, op.off), 4) as i32 as i64 as u64,
            0x89 => regs[d] = load!(op, addr(regs, op.src, op.off), 2) as i16 as i64 as u64,
            0x91 => regs[d] = load!(op, addr(regs, op.src, op.off), 1) as i8 as i64 as u64,
            // ---- stores ----
            0x62 => store!(op, addr(regs, op.dst, op.off), 4, op.imm as u64),
            0x6a => store!(op, addr(regs, op.dst, op.off), 2, op.imm as u64),
            0x72 => store!(op, addr(regs, op.dst, op.off), 1, op.imm as u64),
            0x7a => store!(op, addr(regs, op.dst, op.off), 8, op.imm as i64 as u64),
            0x63 => store!(
                op,
                addr(regs, op.dst, op.off),
                4,
                regs[(op.src & 15) as usize]
            ),
            0x6b => store!(
                op,
                addr(regs, op.dst, op.off),
                2,
                regs[(op.src & 15) as usize]
            ),
            0x73 => store!(
                op,
                addr(regs, op.dst, op.off),
                1,
                regs[(op.src & 15) as usize]
            ),
            0x7b => store!(
                op,
                addr(regs, op.dst, op.off),
                8,
                regs[(op.src & 15) as usize]
            ),
            // ---- atomics (B/H only for load-acquire / store-release) ----
            0xc3 | 0xdb | 0xd3 | 0xcb => {
                let size = bpfvet_isa::opcode::size_bytes(op.code);
                if op.proven & PROVEN_ATOMIC != 0
                    && (size == 4 || size == 8)
                    && op.imm != BPF_LOAD_ACQ
                    && op.imm != BPF_STORE_REL
                {
                    let (a, at) = (addr(regs, op.dst, op.off), pc!() - 1);
                    // SAFETY: the verifier proved the bytes writable stack
                    // or map value, aligned to their size.
                    unsafe { atomic_at(a as *mut u8, regs, op, size, at)? }
                } else {
                    run.atomic(regs, *op, size, pc!() - 1)?
                }
            }
            0x18 => {
                regs[d] = op.imm64;
                jump!(1);
            }
            // ---- legacy packet loads ----
            0x20 | 0x28 | 0x30 | 0x40 | 0x48 | 0x50 => {
                let size = bpfvet_isa::opcode::size_bytes(op.code);
                let mut off = op.imm as i64;
                if op.code & 0x40 != 0 {
                    off = off.wrapping_add(regs[(op.src & 15) as usize] as u32 as i32 as i64);
                }
                match run.ld_abs(off, size) {
                    Some(v) => regs[0] = v,
                    // Out of the packet: the program ends returning 0.
                    None => {
                        run.insn_budget = budget;
                        return Ok(Some(0));
                    }
                }
                enter!();
            }
            // The sentinel or an LD_IMM64's second slot. (With 0x00 and
            // 0xff as arms of their own the dispatch table spans every
            // byte and needs no range test.)
            0x00 => {
                let what = if pc!() == code.len() {
                    "execution fell off the end of the program".to_string()
                } else {
                    "unknown opcode 00".to_string()
                };
                return Err(VmError::BadInsn {
                    pc: pc!() - 1,
                    what,
                });
            }
            // ---- fused pairs (charging mode only) ----
            FUSED_MOV64_ADD_K if !EXACT => {
                let (next, s) = second!(op);
                regs[d] = s.wrapping_add(next.imm as i64 as u64);
            }
            FUSED_MOV32_ADD_K if !EXACT => {
                let (next, s) = second!(op);
                regs[d] = (s as u32).wrapping_add(next.imm as u32) as u64;
            }
            FUSED_MOV32_AND_K if !EXACT => {
                let (next, s) = second!(op);
                regs[d] = (s as u32 & next.imm as u32) as u64;
            }
            FUSED_MOV64_AND_K if !EXACT => {
                let (next, s) = second!(op);
                regs[d] = s & next.imm as i64 as u64;
            }
            FUSED_MUL32_ADD_K if !EXACT => {
                let (next, _) = second!(op);
                regs[d] = (regs[d] as u32)
                    .wrapping_mul(op.imm as u32)
                    .wrapping_add(next.imm as u32) as u64;
            }
            FUSED_MOV32_AND_K_JEQ_K if !EXACT => {
                let (next, s) = second!(op);
                let jump = third!();
                let v = s as u32 & next.imm as u32;
                regs[d] = v as u64;
                cond!(jump, v == jump.imm as u32);
            }
            FUSED_MOV32_AND_K_JNE_K if !EXACT => {
                let (next, s) = second!(op);
                let jump = third!();
                let v = s as u32 & next.imm as u32;
                regs[d] = v as u64;
                cond!(jump, v != jump.imm as u32);
            }
            FUSED_MOV32_JA if !EXACT => {
                let (next, s) = second!(op);
                regs[d] = s as u32 as u64;
                jump!(next.off);
                enter!();
            }
            FUSED_MOV64_JA if !EXACT => {
                let (next, s) = second!(op);
                regs[d] = s;
                jump!(next.off);
                enter!();
            }
            // Also an unknown code that is one of the fused values (see
            // `Op::xcode`): the error names the instruction's own code.
            0xff => return Err(unknown_opcode(pc!() - 1, op.code)),
            _ => return Err(unknown_opcode(pc!() - 1, op.code)),
        }
    }
}

#[cold]
#[inline(never)]
fn unknown_opcode(pc: usize, code: u8) -> VmError {
    VmError::BadInsn {
        pc,
        what: format!("unknown opcode {code:02x}"),
    }
}

#[inline(always)]
fn addr(regs: &[u64; 16], reg: u8, off: i16) -> u64 {
    regs[(reg & 15) as usize].wrapping_add(off as i64 as u64)
}
