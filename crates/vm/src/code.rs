//! Pre-decoding: a program's slots become a flat `Vec<Op>` whose LD_IMM64
//! constants (maps, map values, functions) are resolved once, so the
//! dispatch loop never looks anything up.

use bpfvet_isa::opcode::*;
use bpfvet_isa::Insn;

use crate::error::{Result, VmError};

/// One pre-decoded slot. LD_IMM64 keeps its 64-bit value in `imm64`; its
/// second slot is never executed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Op {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
    pub imm64: u64,
    /// Instructions a run entering here executes up to and including the
    /// next one that may leave the straight line (a jump, call, exit,
    /// LD_ABS/LD_IND or an unknown opcode): the interpreter charges them
    /// to its budget at once (in the padding: `Op` stays 24 bytes).
    pub straight: u32,
    /// What the verifier proved about this load, store or atomic
    /// ([`PROVEN_PLAIN`], [`PROVEN_ATOMIC`]); 0 without a proof.
    pub proven: u8,
    /// What the interpreter's charging mode dispatches on: `code`, or one
    /// of the `FUSED_*` codes when this instruction and the next one run
    /// as one step (see [`fuse_pairs`]), or 0xff for an unknown `code`
    /// that is one of those values.
    pub xcode: u8,
}

// Two instructions run as one dispatch of the interpreter's charging mode.
// The values are not BPF opcodes (LD/LDX/ST/STX classes with the undefined
// mode 0xe0). The second instruction keeps its slot: a jump to it runs it
// alone.
/// `rD = rS; rD += K`
pub const FUSED_MOV64_ADD_K: u8 = 0xe0;
/// `wD = wS; wD += K`
pub const FUSED_MOV32_ADD_K: u8 = 0xe1;
/// `wD = wS; wD &= K`
pub const FUSED_MOV32_AND_K: u8 = 0xe2;
/// `rD = rS; rD &= K`
pub const FUSED_MOV64_AND_K: u8 = 0xe3;
/// `wD *= K; wD += K2`
pub const FUSED_MUL32_ADD_K: u8 = 0xe8;
/// `wD = wS; goto +off`
pub const FUSED_MOV32_JA: u8 = 0xe9;
/// `rD = rS; goto +off`
pub const FUSED_MOV64_JA: u8 = 0xea;
// Three instructions as one step: the bit test of C's `if (x & K)`.
/// `wD = wS; wD &= K; if wD == K2 goto +off`
pub const FUSED_MOV32_AND_K_JEQ_K: u8 = 0xf0;
/// `wD = wS; wD &= K; if wD != K2 goto +off`
pub const FUSED_MOV32_AND_K_JNE_K: u8 = 0xf1;

fn is_fused_code(code: u8) -> bool {
    matches!(code, 0xe0..=0xe3 | 0xe8..=0xea | 0xf0 | 0xf1)
}

/// The fused code for `wD = wS; wD &= K` (fused already, `pair`) and the
/// conditional jump `c` after it, if there is one.
fn fused_with_jump(pair: u8, a: &Op, c: &Op) -> Option<u8> {
    if pair != FUSED_MOV32_AND_K || c.dst != a.dst {
        return None;
    }
    match c.code {
        0x16 => Some(FUSED_MOV32_AND_K_JEQ_K),
        0x56 => Some(FUSED_MOV32_AND_K_JNE_K),
        _ => None,
    }
}

/// The fused code for the instruction pair `a`, `b` (consecutive slots),
/// if there is one.
fn fused(a: &Op, b: &Op) -> Option<u8> {
    let plain_mov = a.off == 0 && b.dst == a.dst;
    match (a.code, b.code) {
        (0xbf, 0x07) if plain_mov => Some(FUSED_MOV64_ADD_K),
        (0xbc, 0x04) if plain_mov => Some(FUSED_MOV32_ADD_K),
        (0xbc, 0x54) if plain_mov => Some(FUSED_MOV32_AND_K),
        (0xbf, 0x57) if plain_mov => Some(FUSED_MOV64_AND_K),
        (0x24, 0x04) if b.dst == a.dst => Some(FUSED_MUL32_ADD_K),
        (0xbc, 0x05) if a.off == 0 => Some(FUSED_MOV32_JA),
        (0xbf, 0x05) if a.off == 0 => Some(FUSED_MOV64_JA),
        _ => None,
    }
}

/// Fills [`Op::xcode`] of every slot: pairs of instructions that run as
/// one step of the interpreter get their fused code at the first one's
/// slot. An LD_IMM64's second slot (code 0) never fuses, and neither does
/// the sentinel.
fn fuse_pairs(ops: &mut [Op]) {
    let mut pc = 0;
    while pc < ops.len() {
        let code = ops[pc].code;
        let next = pc + if code == 0x18 { 2 } else { 1 };
        ops[pc].xcode = if is_fused_code(code) { 0xff } else { code };
        if next == pc + 1 {
            if let Some(f) = ops.get(next).and_then(|b| fused(&ops[pc], b)) {
                ops[pc].xcode = f;
                if let Some(t) = ops
                    .get(pc + 2)
                    .and_then(|c| fused_with_jump(f, &ops[pc], c))
                {
                    ops[pc].xcode = t;
                }
            }
        }
        pc = next;
    }
}

/// The access touches only the stack, the packet or a map value (on every
/// path the verifier explored): the interpreter reads or writes it without
/// looking for its region.
pub const PROVEN_PLAIN: u8 = 1;
/// The atomic touches only the stack or a map value, aligned (the verifier
/// holds atomics to their size's alignment).
pub const PROVEN_ATOMIC: u8 = 2;

/// The load reads only the context (a field the program type may read, at
/// a fixed offset): the interpreter asks the context for it without first
/// looking for the address in the stack and the packet.
pub const PROVEN_CTX: u8 = 4;

/// [`Op::proven`] for an instruction whose accesses the verifier recorded
/// as `kinds`.
pub fn proven_flags(kinds: bpfvet_verifier::AccessKinds) -> u8 {
    use bpfvet_verifier::AccessKinds as K;
    let mut f = 0;
    if kinds.only(K::STACK.union(K::PACKET).union(K::MAP_VALUE)) {
        f |= PROVEN_PLAIN;
    }
    if kinds.only(K::STACK.union(K::MAP_VALUE)) {
        f |= PROVEN_ATOMIC;
    }
    if kinds.only(K::CTX) {
        f |= PROVEN_CTX;
    }
    f
}

/// Whether the interpreter goes on to the next slot after `code` without
/// a decision of its own: ALU, loads, stores, atomics and LD_IMM64. Any
/// other instruction ends a straight run (see [`Op::straight`]).
pub fn is_straight(code: u8) -> bool {
    matches!(code & 7, 1 | 2 | 3 | 4 | 7) || code == 0x18
}

/// Fills [`Op::straight`] of every slot of pre-decoded `ops`.
fn count_straight_runs(ops: &mut [Op]) {
    for pc in (0..ops.len()).rev() {
        let next = pc + if ops[pc].code == 0x18 { 2 } else { 1 };
        ops[pc].straight = match ops.get(next) {
            Some(n) if is_straight(ops[pc].code) => n.straight.saturating_add(1),
            _ => 1,
        };
    }
}

/// Map handles are addresses no host allocation can have (the kernel's
/// `struct bpf_map *`): helpers turn them back into map indices, memory
/// accesses through them fail the bounds check.
pub const MAP_HANDLE_BASE: u64 = 0xffff_ff00_0000_0000;
/// A `BPF_PSEUDO_FUNC` constant: the callback's instruction index.
pub const FUNC_HANDLE_BASE: u64 = 0xffff_fe00_0000_0000;

pub fn map_handle(index: usize) -> u64 {
    MAP_HANDLE_BASE + ((index as u64) << 4)
}

pub fn map_index(handle: u64) -> Option<usize> {
    let rel = handle.checked_sub(MAP_HANDLE_BASE)?;
    (rel & 0xf == 0 && rel < 1 << 32).then_some((rel >> 4) as usize)
}

pub fn func_handle(pc: usize) -> u64 {
    FUNC_HANDLE_BASE + pc as u64
}

pub fn func_pc(handle: u64) -> Option<usize> {
    let rel = handle.checked_sub(FUNC_HANDLE_BASE)?;
    (rel < 1 << 32).then_some(rel as usize)
}

/// Resolves `&map_value + off` for LD_IMM64 of a map value: the address of
/// the single value of array map `map`, or None.
pub trait ValueAddr {
    fn value_addr(&self, map: usize) -> Option<u64>;
}

/// Decodes `insns`, checking registers and jump targets so the dispatch
/// loop can index without re-checking.
pub fn predecode(insns: &[Insn], maps: &dyn ValueAddr) -> Result<Vec<Op>> {
    if insns.is_empty() {
        return Err(VmError::Empty);
    }
    let n = insns.len();
    let mut ops = Vec::with_capacity(n);
    let mut pc = 0;
    while pc < n {
        let i = insns[pc];
        let bad = |what: &str| VmError::BadInsn {
            pc,
            what: what.to_string(),
        };
        if i.dst > 10 || i.src > 10 && i.class() != BPF_LD {
            return Err(bad("register number above r10"));
        }
        let mut op = Op {
            code: i.code,
            dst: i.dst,
            src: i.src,
            off: i.off,
            imm: i.imm,
            imm64: 0,
            straight: 0,
            proven: 0,
            xcode: 0,
        };
        match i.class() {
            BPF_LD if i.is_ld_imm64() => {
                let next = insns
                    .get(pc + 1)
                    .ok_or_else(|| bad("LD_IMM64 without its second slot"))?;
                let lo = i.imm as u32 as u64;
                let hi = next.imm as u32 as u64;
                op.imm64 = match i.src {
                    0 => hi << 32 | lo,
                    BPF_PSEUDO_MAP_IDX | BPF_PSEUDO_MAP_FD => map_handle(lo as usize),
                    BPF_PSEUDO_MAP_IDX_VALUE | BPF_PSEUDO_MAP_VALUE => {
                        let base = maps.value_addr(lo as usize).ok_or_else(|| {
                            bad("LD_IMM64 of a value of a map that is not a one-value array")
                        })?;
                        base.wrapping_add(hi)
                    }
                    BPF_PSEUDO_FUNC => {
                        let target = pc as i64 + i.imm as i64 + 1;
                        if target < 0 || target as usize >= n {
                            return Err(bad("LD_IMM64 of a function outside the program"));
                        }
                        func_handle(target as usize)
                    }
                    // ksyms resolve to kernel addresses; user space has none.
                    _ => 0,
                };
                ops.push(op);
                ops.push(Op::default());
                pc += 2;
                continue;
            }
            BPF_JMP | BPF_JMP32 => {
                let o = op_of(i.code);
                let is_call = o == BPF_CALL;
                let is_exit = o == BPF_EXIT;
                if is_call && i.src == BPF_PSEUDO_CALL || !is_call && !is_exit {
                    let delta = if i.class() == BPF_JMP32 && o == BPF_JA || is_call {
                        i.imm as i64
                    } else {
                        i.off as i64
                    };
                    let target = pc as i64 + 1 + delta;
                    if target < 0 || target as usize >= n {
                        return Err(VmError::JumpOutOfRange { pc, target });
                    }
                }
            }
            _ => {}
        }
        ops.push(op);
        pc += 1;
    }
    // Sentinel: running past the last slot is an error, not a read beyond
    // the vector (code 0x00 alone is not an instruction).
    ops.push(Op::default());
    count_straight_runs(&mut ops);
    fuse_pairs(&mut ops);
    Ok(ops)
}

fn op_of(code: u8) -> u8 {
    code & 0xf0
}
