//! Slots -> typed instructions, with the field checks Linux 6.18 makes.
//!
//! The kernel checks an instruction stream in two places: an up-front scan
//! of every slot before verification (LDX reserved fields, LD_IMM64 pairing
//! and pseudo sources, the table of known opcodes), and per-instruction
//! field checks while it walks the program. [`decode_program`] does both, in
//! that order, so the first error it reports is the one the kernel reports
//! for a program whose only fault is its encoding. Error texts are the
//! kernel's verifier log messages.
//!
//! What the decoder cannot know, and where the kernel puts it (the
//! verifier must keep this order to report the kernel's first message):
//! - pseudo LD_IMM64 references (map fd, fd_array index, BTF id) are
//!   resolved in the up-front scan, so a bad reference is reported before
//!   the LD_IMM64's own `off`/`dst` checks;
//! - addr_space_cast needs an arena map: that check comes after the `imm`
//!   check and before the register checks;
//! - the control-flow checks (jump out of range, unreachable insn, last
//!   insn not an exit or jump) run between the two passes, and the walk
//!   only checks the fields of reachable instructions.

use crate::insn::Insn;
use crate::instruction::*;
use crate::opcode::*;

/// Why an instruction is not valid; `Display` is the kernel's log message.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum DecodeErrorKind {
    #[error("unknown opcode {0:02x}")]
    UnknownOpcode(u8),
    /// Names the check as the kernel does: "BPF_ALU", "BPF_MOV", "BPF_LDX", ...
    #[error("{0} uses reserved fields")]
    ReservedFields(&'static str),
    /// LD_IMM64 in the last slot, or a second slot with code/dst/src/off set.
    #[error("invalid bpf_ld_imm64 insn")]
    BadLdImm64,
    /// Unknown pseudo source, or a map fd/idx load with a second imm.
    #[error("unrecognized bpf_ld_imm64 insn")]
    UnrecognizedLdImm64,
    #[error("R{0} is invalid")]
    InvalidRegister(u8),
    #[error("frame pointer is read only")]
    FramePointerWrite,
    #[error("div by zero")]
    DivByZero,
    #[error("invalid shift {0}")]
    InvalidShift(i32),
    #[error("BPF_ATOMIC uses invalid atomic opcode {0:02x}")]
    InvalidAtomicOp(i32),
    #[error("invalid atomic operand size")]
    InvalidAtomicSize,
    #[error("invalid may_goto imm {0}")]
    InvalidMayGoto(i32),
    #[error("addr_space_cast insn can only convert between address space 1 and 0")]
    InvalidAddrSpaceCast,
    /// [`decode_at`] was asked for a slot past the end (not a kernel message).
    #[error("no instruction at index {0}")]
    NoInstruction(usize),
}

impl DecodeErrorKind {
    /// True for errors the kernel finds in its up-front scan of all slots,
    /// before it walks the program (so they win over any other error).
    pub fn found_before_walk(&self) -> bool {
        matches!(
            self,
            DecodeErrorKind::UnknownOpcode(_)
                | DecodeErrorKind::ReservedFields("BPF_LDX")
                | DecodeErrorKind::BadLdImm64
                | DecodeErrorKind::UnrecognizedLdImm64
        )
    }
}

/// An invalid instruction and its slot index.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error("insn {index}: {kind}")]
pub struct DecodeError {
    pub index: usize,
    pub kind: DecodeErrorKind,
}

/// An instruction and the slot index it starts at.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Located {
    pub pc: usize,
    pub insn: Instruction,
}

/// Decodes and checks a whole program. See the module docs for the order
/// in which errors are found.
pub fn decode_program(insns: &[Insn]) -> Result<Vec<Located>, DecodeError> {
    scan(insns)?;
    let mut out = Vec::with_capacity(insns.len());
    let mut pc = 0;
    while pc < insns.len() {
        let insn = decode_at(insns, pc).map_err(|kind| DecodeError { index: pc, kind })?;
        out.push(Located { pc, insn });
        pc += insn.slots();
    }
    Ok(out)
}

/// The kernel's up-front scan: LDX fields, LD_IMM64 pairs, known opcodes.
fn scan(insns: &[Insn]) -> Result<(), DecodeError> {
    let mut i = 0;
    while i < insns.len() {
        let err = |kind| DecodeError { index: i, kind };
        let insn = insns[i];
        if insn.class() == BPF_LDX && !ldx_fields_ok(insn) {
            return Err(err(DecodeErrorKind::ReservedFields("BPF_LDX")));
        }
        if insn.is_ld_imm64() {
            ld_imm64_pair_ok(insns, i).map_err(err)?;
            i += 2;
            continue;
        }
        if !opcode_known(insn.code) {
            return Err(err(DecodeErrorKind::UnknownOpcode(insn.code)));
        }
        i += 1;
    }
    Ok(())
}

fn ldx_fields_ok(insn: Insn) -> bool {
    (mode(insn.code) == BPF_MEM || mode(insn.code) == BPF_MEMSX) && insn.imm == 0
}

fn ld_imm64_pair_ok(insns: &[Insn], i: usize) -> Result<(), DecodeErrorKind> {
    let Some(&next) = insns.get(i + 1) else {
        return Err(DecodeErrorKind::BadLdImm64);
    };
    if next.code != 0 || next.dst != 0 || next.src != 0 || next.off != 0 {
        return Err(DecodeErrorKind::BadLdImm64);
    }
    match Ld64Kind::from_src_reg(insns[i].src) {
        Some(Ld64Kind::MapFd | Ld64Kind::MapIdx) if next.imm != 0 => {
            Err(DecodeErrorKind::UnrecognizedLdImm64)
        }
        Some(_) => Ok(()),
        None => Err(DecodeErrorKind::UnrecognizedLdImm64),
    }
}

/// The opcodes the kernel accepts from user space (`bpf_opcode_in_insntable`
/// in Linux 6.18, where 8- and 16-bit BPF_ATOMIC exist for load-acquire and
/// store-release).
pub fn opcode_known(code: u8) -> bool {
    let op = op(code);
    match class(code) {
        BPF_ALU | BPF_ALU64 => match op {
            BPF_NEG => source(code) == BPF_K,
            BPF_END => class(code) == BPF_ALU || source(code) == BPF_TO_LE,
            _ => op <= BPF_ARSH,
        },
        BPF_JMP => match op {
            BPF_CALL | BPF_EXIT | BPF_JA | BPF_JCOND => source(code) == BPF_K,
            _ => op <= BPF_JSLE,
        },
        BPF_JMP32 => match op {
            BPF_JA => source(code) == BPF_K,
            BPF_CALL | BPF_EXIT | BPF_JCOND => false,
            _ => op <= BPF_JSLE,
        },
        BPF_STX => mode(code) == BPF_MEM || mode(code) == BPF_ATOMIC,
        BPF_ST => mode(code) == BPF_MEM,
        BPF_LDX => mode(code) == BPF_MEM || (mode(code) == BPF_MEMSX && size(code) != BPF_DW),
        // BPF_LD: ABS/IND of B/H/W and LD_IMM64.
        _ => match mode(code) {
            BPF_ABS | BPF_IND => size(code) != BPF_DW,
            BPF_IMM => size(code) == BPF_DW,
            _ => false,
        },
    }
}

fn reg_ok(r: u8) -> Result<(), DecodeErrorKind> {
    if r < MAX_BPF_REG {
        Ok(())
    } else {
        Err(DecodeErrorKind::InvalidRegister(r))
    }
}

/// A register the instruction writes: valid and not the frame pointer.
fn dst_ok(r: u8) -> Result<(), DecodeErrorKind> {
    reg_ok(r)?;
    if r == 10 {
        return Err(DecodeErrorKind::FramePointerWrite);
    }
    Ok(())
}

const fn width_of(code: u8) -> Width {
    match class(code) {
        BPF_ALU | BPF_JMP32 => Width::W32,
        _ => Width::W64,
    }
}

/// Decodes the instruction starting at slot `pc`, applying the same checks
/// as [`decode_program`] to that instruction alone (including opcode and
/// LD_IMM64 pairing).
pub fn decode_at(insns: &[Insn], pc: usize) -> Result<Instruction, DecodeErrorKind> {
    let Some(&insn) = insns.get(pc) else {
        return Err(DecodeErrorKind::NoInstruction(pc));
    };
    if insn.class() == BPF_LDX && !ldx_fields_ok(insn) {
        return Err(DecodeErrorKind::ReservedFields("BPF_LDX"));
    }
    if insn.is_ld_imm64() {
        ld_imm64_pair_ok(insns, pc)?;
    } else if !opcode_known(insn.code) {
        return Err(DecodeErrorKind::UnknownOpcode(insn.code));
    }
    match insn.class() {
        BPF_ALU | BPF_ALU64 => decode_alu(insn),
        BPF_LDX => decode_ldx(insn),
        BPF_STX => decode_stx(insn),
        BPF_ST => decode_st(insn),
        BPF_JMP | BPF_JMP32 => decode_jmp(insn),
        _ => decode_ld(insn, insns[pc + 1..].first().map_or(0, |n| n.imm)),
    }
}

fn decode_alu(insn: Insn) -> Result<Instruction, DecodeErrorKind> {
    use DecodeErrorKind::ReservedFields;
    let width = width_of(insn.code);
    let is_x = source(insn.code) == BPF_X;
    let dst = insn.dst;
    match op(insn.code) {
        BPF_NEG => {
            if insn.src != 0 || insn.off != 0 || insn.imm != 0 {
                return Err(ReservedFields("BPF_NEG"));
            }
            dst_ok(dst)?;
            Ok(Instruction::Neg { width, dst })
        }
        BPF_END => {
            let bits = insn.imm;
            if insn.src != 0 || insn.off != 0 || !matches!(bits, 16 | 32 | 64) {
                return Err(ReservedFields("BPF_END"));
            }
            dst_ok(dst)?;
            Ok(if width == Width::W64 {
                Instruction::Bswap {
                    dst,
                    bits: bits as u8,
                }
            } else {
                Instruction::Endian {
                    dst,
                    big: is_x,
                    bits: bits as u8,
                }
            })
        }
        BPF_MOV if is_x => {
            let src = insn.src;
            if width == Width::W64 && insn.off == BPF_ADDR_SPACE_CAST as i16 {
                if insn.imm != 1 && insn.imm != 1 << 16 {
                    return Err(DecodeErrorKind::InvalidAddrSpaceCast);
                }
                reg_ok(src)?;
                dst_ok(dst)?;
                return Ok(Instruction::AddrSpaceCast {
                    dst,
                    src,
                    dst_as: (insn.imm as u32 >> 16) as u16,
                    src_as: insn.imm as u16,
                });
            }
            let sx_ok = match insn.off {
                0 | 8 | 16 => true,
                32 => width == Width::W64,
                _ => false,
            };
            if !sx_ok || insn.imm != 0 {
                return Err(ReservedFields("BPF_MOV"));
            }
            reg_ok(src)?;
            dst_ok(dst)?;
            Ok(if insn.off == 0 {
                Instruction::Mov {
                    width,
                    dst,
                    src: Src::Reg(src),
                }
            } else {
                Instruction::MovSx {
                    width,
                    dst,
                    src,
                    bits: insn.off as u8,
                }
            })
        }
        BPF_MOV => {
            if insn.src != 0 || insn.off != 0 {
                return Err(ReservedFields("BPF_MOV"));
            }
            dst_ok(dst)?;
            Ok(Instruction::Mov {
                width,
                dst,
                src: Src::Imm(insn.imm),
            })
        }
        opbits => {
            let signed = insn.off == 1;
            let off_ok = insn.off == 0 || (signed && matches!(opbits, BPF_DIV | BPF_MOD));
            let src = if is_x {
                if insn.imm != 0 || !off_ok {
                    return Err(ReservedFields("BPF_ALU"));
                }
                reg_ok(insn.src)?;
                Src::Reg(insn.src)
            } else {
                if insn.src != 0 || !off_ok {
                    return Err(ReservedFields("BPF_ALU"));
                }
                Src::Imm(insn.imm)
            };
            reg_ok(dst)?;
            if let Src::Imm(imm) = src {
                if matches!(opbits, BPF_DIV | BPF_MOD) && imm == 0 {
                    return Err(DecodeErrorKind::DivByZero);
                }
                let bits = if width == Width::W64 { 64 } else { 32 };
                if matches!(opbits, BPF_LSH | BPF_RSH | BPF_ARSH) && !(0..bits).contains(&imm) {
                    return Err(DecodeErrorKind::InvalidShift(imm));
                }
            }
            dst_ok(dst)?;
            let op = match (opbits, signed) {
                (BPF_ADD, _) => AluOp::Add,
                (BPF_SUB, _) => AluOp::Sub,
                (BPF_MUL, _) => AluOp::Mul,
                (BPF_DIV, false) => AluOp::Div,
                (BPF_DIV, true) => AluOp::SDiv,
                (BPF_OR, _) => AluOp::Or,
                (BPF_AND, _) => AluOp::And,
                (BPF_LSH, _) => AluOp::Lsh,
                (BPF_RSH, _) => AluOp::Rsh,
                (BPF_MOD, false) => AluOp::Mod,
                (BPF_MOD, true) => AluOp::SMod,
                (BPF_XOR, _) => AluOp::Xor,
                _ => AluOp::Arsh,
            };
            Ok(Instruction::Alu {
                width,
                op,
                dst,
                src,
            })
        }
    }
}

fn decode_ldx(insn: Insn) -> Result<Instruction, DecodeErrorKind> {
    reg_ok(insn.src)?;
    dst_ok(insn.dst)?;
    let (size, dst, src, off) = (Size::from_code(insn.code), insn.dst, insn.src, insn.off);
    Ok(if mode(insn.code) == BPF_MEMSX {
        Instruction::LoadSx {
            size,
            dst,
            src,
            off,
        }
    } else {
        Instruction::Load {
            size,
            dst,
            src,
            off,
        }
    })
}

fn decode_stx(insn: Insn) -> Result<Instruction, DecodeErrorKind> {
    let size = Size::from_code(insn.code);
    let (dst, src, off) = (insn.dst, insn.src, insn.off);
    if mode(insn.code) == BPF_ATOMIC {
        let op = AtomicOp::from_imm(insn.imm).ok_or(DecodeErrorKind::InvalidAtomicOp(insn.imm))?;
        match op {
            AtomicOp::LoadAcquire => {
                reg_ok(src)?;
                dst_ok(dst)?;
            }
            AtomicOp::StoreRelease => {
                reg_ok(src)?;
                reg_ok(dst)?;
            }
            _ => {
                if !matches!(size, Size::W | Size::DW) {
                    return Err(DecodeErrorKind::InvalidAtomicSize);
                }
                reg_ok(src)?;
                reg_ok(dst)?;
                // The fetching forms write their result register.
                match op {
                    AtomicOp::Cmpxchg => {}
                    AtomicOp::Alu { fetch: false, .. } => {}
                    _ => dst_ok(src)?,
                }
            }
        }
        return Ok(Instruction::Atomic {
            size,
            op,
            dst,
            src,
            off,
        });
    }
    if insn.imm != 0 {
        return Err(DecodeErrorKind::ReservedFields("BPF_STX"));
    }
    reg_ok(src)?;
    reg_ok(dst)?;
    Ok(Instruction::Store {
        size,
        dst,
        off,
        src: Src::Reg(src),
    })
}

fn decode_st(insn: Insn) -> Result<Instruction, DecodeErrorKind> {
    if insn.src != 0 {
        return Err(DecodeErrorKind::ReservedFields("BPF_ST"));
    }
    reg_ok(insn.dst)?;
    Ok(Instruction::Store {
        size: Size::from_code(insn.code),
        dst: insn.dst,
        off: insn.off,
        src: Src::Imm(insn.imm),
    })
}

fn decode_jmp(insn: Insn) -> Result<Instruction, DecodeErrorKind> {
    use DecodeErrorKind::ReservedFields;
    let width = width_of(insn.code);
    match op(insn.code) {
        BPF_CALL => {
            let call = match insn.src {
                0 => Call::Helper(insn.imm),
                BPF_PSEUDO_CALL => Call::Local(insn.imm),
                BPF_PSEUDO_KFUNC_CALL => Call::Kfunc {
                    btf_id: insn.imm,
                    btf_fd_idx: insn.off,
                },
                _ => return Err(ReservedFields("BPF_CALL")),
            };
            if insn.dst != 0 || (insn.src != BPF_PSEUDO_KFUNC_CALL && insn.off != 0) {
                return Err(ReservedFields("BPF_CALL"));
            }
            Ok(Instruction::Call(call))
        }
        BPF_JA => {
            let extra = match width {
                Width::W64 => insn.imm != 0,
                Width::W32 => insn.off != 0,
            };
            if insn.src != 0 || insn.dst != 0 || extra {
                return Err(ReservedFields("BPF_JA"));
            }
            Ok(match width {
                Width::W64 => Instruction::Ja { off: insn.off },
                Width::W32 => Instruction::Gotol { imm: insn.imm },
            })
        }
        BPF_EXIT => {
            if insn.imm != 0 || insn.src != 0 || insn.dst != 0 {
                return Err(ReservedFields("BPF_EXIT"));
            }
            Ok(Instruction::Exit { off: insn.off })
        }
        BPF_JCOND => {
            if insn.src != BPF_MAY_GOTO || insn.dst != 0 || insn.imm != 0 {
                return Err(DecodeErrorKind::InvalidMayGoto(insn.imm));
            }
            Ok(Instruction::MayGoto { off: insn.off })
        }
        opbits => {
            reg_ok(insn.dst)?;
            let src = if source(insn.code) == BPF_X {
                if insn.imm != 0 {
                    return Err(ReservedFields("BPF_JMP/JMP32"));
                }
                reg_ok(insn.src)?;
                Src::Reg(insn.src)
            } else {
                if insn.src != 0 {
                    return Err(ReservedFields("BPF_JMP/JMP32"));
                }
                Src::Imm(insn.imm)
            };
            let op = JmpOp::ALL
                .into_iter()
                .find(|op| op.code() == opbits)
                .ok_or(DecodeErrorKind::UnknownOpcode(insn.code))?;
            Ok(Instruction::Jump {
                width,
                op,
                dst: insn.dst,
                src,
                off: insn.off,
            })
        }
    }
}

fn decode_ld(insn: Insn, next_imm: i32) -> Result<Instruction, DecodeErrorKind> {
    let size = Size::from_code(insn.code);
    match mode(insn.code) {
        BPF_IMM => {
            if insn.off != 0 {
                return Err(DecodeErrorKind::ReservedFields("BPF_LD_IMM64"));
            }
            dst_ok(insn.dst)?;
            let kind =
                Ld64Kind::from_src_reg(insn.src).ok_or(DecodeErrorKind::UnrecognizedLdImm64)?;
            Ok(Instruction::LdImm64 {
                dst: insn.dst,
                kind,
                imm: insn.imm,
                next_imm,
            })
        }
        m => {
            let abs = m == BPF_ABS;
            if insn.dst != 0 || insn.off != 0 || (abs && insn.src != 0) {
                return Err(DecodeErrorKind::ReservedFields("BPF_LD_[ABS|IND]"));
            }
            if abs {
                Ok(Instruction::LdAbs {
                    size,
                    imm: insn.imm,
                })
            } else {
                reg_ok(insn.src)?;
                Ok(Instruction::LdInd {
                    size,
                    src: insn.src,
                    imm: insn.imm,
                })
            }
        }
    }
}
