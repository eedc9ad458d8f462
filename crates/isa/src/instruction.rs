//! The typed view of one BPF instruction and its encoding back into slots.
//!
//! Every variant keeps every field the kernel accepts as meaningful, so
//! `decode` followed by [`Instruction::encode`] gives back the same slots.

use crate::insn::Insn;
use crate::opcode::*;

/// Operand width: ALU vs ALU64, JMP32 vs JMP.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Width {
    W32,
    W64,
}

/// Memory access size.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Size {
    B,
    H,
    W,
    DW,
}

impl Size {
    pub const fn bytes(self) -> u32 {
        match self {
            Size::B => 1,
            Size::H => 2,
            Size::W => 4,
            Size::DW => 8,
        }
    }

    pub const fn code(self) -> u8 {
        match self {
            Size::B => BPF_B,
            Size::H => BPF_H,
            Size::W => BPF_W,
            Size::DW => BPF_DW,
        }
    }

    pub const fn from_code(code: u8) -> Size {
        match size(code) {
            BPF_B => Size::B,
            BPF_H => Size::H,
            BPF_W => Size::W,
            _ => Size::DW,
        }
    }
}

/// Second operand of ALU, JMP and store instructions.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Src {
    Reg(u8),
    Imm(i32),
}

/// Two-operand ALU operations (MOV, NEG and END have their own variants).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AluOp {
    Add,
    Sub,
    Mul,
    Div,
    /// Signed division: BPF_DIV with off = 1.
    SDiv,
    Or,
    And,
    Lsh,
    Rsh,
    Mod,
    /// Signed modulo: BPF_MOD with off = 1.
    SMod,
    Xor,
    Arsh,
}

impl AluOp {
    pub const ALL: [AluOp; 13] = [
        AluOp::Add,
        AluOp::Sub,
        AluOp::Mul,
        AluOp::Div,
        AluOp::SDiv,
        AluOp::Or,
        AluOp::And,
        AluOp::Lsh,
        AluOp::Rsh,
        AluOp::Mod,
        AluOp::SMod,
        AluOp::Xor,
        AluOp::Arsh,
    ];

    /// The opcode bits and the `off` value that select this operation.
    pub const fn code_and_off(self) -> (u8, i16) {
        match self {
            AluOp::Add => (BPF_ADD, 0),
            AluOp::Sub => (BPF_SUB, 0),
            AluOp::Mul => (BPF_MUL, 0),
            AluOp::Div => (BPF_DIV, 0),
            AluOp::SDiv => (BPF_DIV, 1),
            AluOp::Or => (BPF_OR, 0),
            AluOp::And => (BPF_AND, 0),
            AluOp::Lsh => (BPF_LSH, 0),
            AluOp::Rsh => (BPF_RSH, 0),
            AluOp::Mod => (BPF_MOD, 0),
            AluOp::SMod => (BPF_MOD, 1),
            AluOp::Xor => (BPF_XOR, 0),
            AluOp::Arsh => (BPF_ARSH, 0),
        }
    }

    /// The compound assignment the kernel log prints (`+=`, `s/=`, ...).
    pub const fn symbol(self) -> &'static str {
        match self {
            AluOp::Add => "+=",
            AluOp::Sub => "-=",
            AluOp::Mul => "*=",
            AluOp::Div => "/=",
            AluOp::SDiv => "s/=",
            AluOp::Or => "|=",
            AluOp::And => "&=",
            AluOp::Lsh => "<<=",
            AluOp::Rsh => ">>=",
            AluOp::Mod => "%=",
            AluOp::SMod => "s%=",
            AluOp::Xor => "^=",
            AluOp::Arsh => "s>>=",
        }
    }
}

/// Conditional jump comparisons.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum JmpOp {
    Eq,
    Gt,
    Ge,
    Set,
    Ne,
    Sgt,
    Sge,
    Lt,
    Le,
    Slt,
    Sle,
}

impl JmpOp {
    pub const ALL: [JmpOp; 11] = [
        JmpOp::Eq,
        JmpOp::Gt,
        JmpOp::Ge,
        JmpOp::Set,
        JmpOp::Ne,
        JmpOp::Sgt,
        JmpOp::Sge,
        JmpOp::Lt,
        JmpOp::Le,
        JmpOp::Slt,
        JmpOp::Sle,
    ];

    pub const fn code(self) -> u8 {
        match self {
            JmpOp::Eq => BPF_JEQ,
            JmpOp::Gt => BPF_JGT,
            JmpOp::Ge => BPF_JGE,
            JmpOp::Set => BPF_JSET,
            JmpOp::Ne => BPF_JNE,
            JmpOp::Sgt => BPF_JSGT,
            JmpOp::Sge => BPF_JSGE,
            JmpOp::Lt => BPF_JLT,
            JmpOp::Le => BPF_JLE,
            JmpOp::Slt => BPF_JSLT,
            JmpOp::Sle => BPF_JSLE,
        }
    }

    pub const fn symbol(self) -> &'static str {
        match self {
            JmpOp::Eq => "==",
            JmpOp::Gt => ">",
            JmpOp::Ge => ">=",
            JmpOp::Set => "&",
            JmpOp::Ne => "!=",
            JmpOp::Sgt => "s>",
            JmpOp::Sge => "s>=",
            JmpOp::Lt => "<",
            JmpOp::Le => "<=",
            JmpOp::Slt => "s<",
            JmpOp::Sle => "s<=",
        }
    }
}

/// Read-modify-write operations of BPF_ATOMIC.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AtomicAluOp {
    Add,
    Or,
    And,
    Xor,
}

impl AtomicAluOp {
    pub const ALL: [AtomicAluOp; 4] = [
        AtomicAluOp::Add,
        AtomicAluOp::Or,
        AtomicAluOp::And,
        AtomicAluOp::Xor,
    ];

    const fn imm(self) -> i32 {
        (match self {
            AtomicAluOp::Add => BPF_ADD,
            AtomicAluOp::Or => BPF_OR,
            AtomicAluOp::And => BPF_AND,
            AtomicAluOp::Xor => BPF_XOR,
        }) as i32
    }

    pub const fn name(self) -> &'static str {
        match self {
            AtomicAluOp::Add => "add",
            AtomicAluOp::Or => "or",
            AtomicAluOp::And => "and",
            AtomicAluOp::Xor => "xor",
        }
    }
}

/// The operation a BPF_STX|BPF_ATOMIC instruction carries in `imm`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AtomicOp {
    /// `lock *(size *)(dst +off) op= src`, or with `fetch` the old value
    /// is returned in `src`.
    Alu { op: AtomicAluOp, fetch: bool },
    /// `src = xchg(dst +off, src)`.
    Xchg,
    /// `r0 = cmpxchg(dst +off, r0, src)`.
    Cmpxchg,
    /// `dst = load_acquire(src +off)` (Linux 6.15+).
    LoadAcquire,
    /// `store_release(dst +off, src)` (Linux 6.15+).
    StoreRelease,
}

impl AtomicOp {
    pub const fn imm(self) -> i32 {
        match self {
            AtomicOp::Alu { op, fetch } => op.imm() | if fetch { BPF_FETCH } else { 0 },
            AtomicOp::Xchg => BPF_XCHG,
            AtomicOp::Cmpxchg => BPF_CMPXCHG,
            AtomicOp::LoadAcquire => BPF_LOAD_ACQ,
            AtomicOp::StoreRelease => BPF_STORE_REL,
        }
    }

    pub fn from_imm(imm: i32) -> Option<AtomicOp> {
        Some(match imm {
            BPF_XCHG => AtomicOp::Xchg,
            BPF_CMPXCHG => AtomicOp::Cmpxchg,
            BPF_LOAD_ACQ => AtomicOp::LoadAcquire,
            BPF_STORE_REL => AtomicOp::StoreRelease,
            _ => {
                let fetch = imm & BPF_FETCH != 0;
                let op = AtomicAluOp::ALL
                    .into_iter()
                    .find(|op| op.imm() == imm & !BPF_FETCH)?;
                AtomicOp::Alu { op, fetch }
            }
        })
    }
}

/// What the 64-bit immediate of an LD_IMM64 means (its `src_reg`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Ld64Kind {
    /// A plain 64-bit constant.
    Imm,
    /// imm = map fd.
    MapFd,
    /// imm = map fd, next_imm = offset into the map's value.
    MapValue,
    /// imm = BTF id of a kernel variable, next_imm = BTF object fd (0: vmlinux).
    BtfId,
    /// imm = relative instruction offset of a subprogram (callback).
    Func,
    /// imm = index into the fd_array of BPF_PROG_LOAD.
    MapIdx,
    /// imm = fd_array index, next_imm = offset into the map's value.
    MapIdxValue,
}

impl Ld64Kind {
    pub const ALL: [Ld64Kind; 7] = [
        Ld64Kind::Imm,
        Ld64Kind::MapFd,
        Ld64Kind::MapValue,
        Ld64Kind::BtfId,
        Ld64Kind::Func,
        Ld64Kind::MapIdx,
        Ld64Kind::MapIdxValue,
    ];

    pub const fn src_reg(self) -> u8 {
        match self {
            Ld64Kind::Imm => 0,
            Ld64Kind::MapFd => BPF_PSEUDO_MAP_FD,
            Ld64Kind::MapValue => BPF_PSEUDO_MAP_VALUE,
            Ld64Kind::BtfId => BPF_PSEUDO_BTF_ID,
            Ld64Kind::Func => BPF_PSEUDO_FUNC,
            Ld64Kind::MapIdx => BPF_PSEUDO_MAP_IDX,
            Ld64Kind::MapIdxValue => BPF_PSEUDO_MAP_IDX_VALUE,
        }
    }

    pub fn from_src_reg(src: u8) -> Option<Ld64Kind> {
        Ld64Kind::ALL.into_iter().find(|k| k.src_reg() == src)
    }
}

/// The three kinds of BPF_CALL.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Call {
    /// A helper by `enum bpf_func_id` (src_reg = 0).
    Helper(i32),
    /// A bpf-to-bpf call; the callee starts at pc + imm + 1.
    Local(i32),
    /// A kernel function by BTF id; `btf_fd_idx` (the `off` field) selects
    /// a module BTF from fd_array, 0 is vmlinux.
    Kfunc { btf_id: i32, btf_fd_idx: i16 },
}

/// One BPF instruction (one slot, or two for LD_IMM64). Register numbers
/// are 0..=10.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Instruction {
    /// `dst op= src` for every two-operand ALU operation.
    Alu {
        width: Width,
        op: AluOp,
        dst: u8,
        src: Src,
    },
    /// `dst = src`.
    Mov {
        width: Width,
        dst: u8,
        src: Src,
    },
    /// `dst = (s8|s16|s32)src`: MOV with off = 8, 16 or 32 (32 only in ALU64).
    MovSx {
        width: Width,
        dst: u8,
        src: u8,
        bits: u8,
    },
    /// `dst = -dst`.
    Neg {
        width: Width,
        dst: u8,
    },
    /// BPF_ALU|BPF_END: `dst = be16/le32/... dst`.
    Endian {
        dst: u8,
        big: bool,
        bits: u8,
    },
    /// BPF_ALU64|BPF_END|BPF_TO_LE: unconditional `dst = bswapN dst`.
    Bswap {
        dst: u8,
        bits: u8,
    },
    /// ALU64 MOV X with off = BPF_ADDR_SPACE_CAST; imm = dst_as << 16 | src_as.
    AddrSpaceCast {
        dst: u8,
        src: u8,
        dst_as: u16,
        src_as: u16,
    },
    /// `dst = *(size *)(src +off)`.
    Load {
        size: Size,
        dst: u8,
        src: u8,
        off: i16,
    },
    /// Sign-extending load (BPF_MEMSX), size B, H or W.
    LoadSx {
        size: Size,
        dst: u8,
        src: u8,
        off: i16,
    },
    /// `*(size *)(dst +off) = src`: BPF_STX for a register, BPF_ST for an
    /// immediate.
    Store {
        size: Size,
        dst: u8,
        off: i16,
        src: Src,
    },
    /// BPF_STX|BPF_ATOMIC.
    Atomic {
        size: Size,
        op: AtomicOp,
        dst: u8,
        src: u8,
        off: i16,
    },
    /// Legacy packet load `r0 = *(size *)skb[imm]`.
    LdAbs {
        size: Size,
        imm: i32,
    },
    /// Legacy packet load `r0 = *(size *)skb[src + imm]`.
    LdInd {
        size: Size,
        src: u8,
        imm: i32,
    },
    /// Two-slot 64-bit immediate load; `imm` from the first slot,
    /// `next_imm` from the second.
    LdImm64 {
        dst: u8,
        kind: Ld64Kind,
        imm: i32,
        next_imm: i32,
    },
    /// `goto pc+off`.
    Ja {
        off: i16,
    },
    /// `gotol pc+imm` (JMP32|JA, 32-bit offset).
    Gotol {
        imm: i32,
    },
    /// `may_goto pc+off` (JMP|JCOND, src_reg = BPF_MAY_GOTO).
    MayGoto {
        off: i16,
    },
    /// `if dst op src goto pc+off`.
    Jump {
        width: Width,
        op: JmpOp,
        dst: u8,
        src: Src,
        off: i16,
    },
    Call(Call),
    /// `exit`. The kernel does not check `off` here, so it is kept.
    Exit {
        off: i16,
    },
}

/// The one or two slots of an encoded instruction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Encoded {
    slots: [Insn; 2],
    len: usize,
}

impl Encoded {
    pub fn as_slice(&self) -> &[Insn] {
        &self.slots[..self.len]
    }
}

impl std::ops::Deref for Encoded {
    type Target = [Insn];
    fn deref(&self) -> &[Insn] {
        self.as_slice()
    }
}

const fn alu_class(width: Width) -> u8 {
    match width {
        Width::W32 => BPF_ALU,
        Width::W64 => BPF_ALU64,
    }
}

const fn jmp_class(width: Width) -> u8 {
    match width {
        Width::W32 => BPF_JMP32,
        Width::W64 => BPF_JMP,
    }
}

/// Splits an operand into (source bit, src_reg, imm).
const fn operand(src: Src) -> (u8, u8, i32) {
    match src {
        Src::Reg(r) => (BPF_X, r, 0),
        Src::Imm(i) => (BPF_K, 0, i),
    }
}

impl Instruction {
    /// Number of 8-byte slots: 2 for LD_IMM64, else 1.
    pub const fn slots(&self) -> usize {
        match self {
            Instruction::LdImm64 { .. } => 2,
            _ => 1,
        }
    }

    /// The opcode byte of the (first) slot.
    pub fn code(&self) -> u8 {
        self.encode().as_slice()[0].code
    }

    /// Where control goes when a jump at `pc` is taken (as an instruction
    /// index, possibly out of range), for jumps, may_goto and local calls.
    pub fn branch_target(&self, pc: usize) -> Option<i64> {
        let rel = match *self {
            Instruction::Ja { off }
            | Instruction::MayGoto { off }
            | Instruction::Jump { off, .. } => off as i64,
            Instruction::Gotol { imm } | Instruction::Call(Call::Local(imm)) => imm as i64,
            _ => return None,
        };
        Some(pc as i64 + rel + 1)
    }

    pub fn encode(&self) -> Encoded {
        let one = |code: u8, dst: u8, src: u8, off: i16, imm: i32| Encoded {
            slots: [Insn::new(code, dst, src, off, imm), Insn::default()],
            len: 1,
        };
        match *self {
            Instruction::Alu {
                width,
                op,
                dst,
                src,
            } => {
                let (opbits, off) = op.code_and_off();
                let (sbit, sreg, imm) = operand(src);
                one(alu_class(width) | opbits | sbit, dst, sreg, off, imm)
            }
            Instruction::Mov { width, dst, src } => {
                let (sbit, sreg, imm) = operand(src);
                one(alu_class(width) | BPF_MOV | sbit, dst, sreg, 0, imm)
            }
            Instruction::MovSx {
                width,
                dst,
                src,
                bits,
            } => one(alu_class(width) | BPF_MOV | BPF_X, dst, src, bits as i16, 0),
            Instruction::Neg { width, dst } => one(alu_class(width) | BPF_NEG, dst, 0, 0, 0),
            Instruction::Endian { dst, big, bits } => {
                let sbit = if big { BPF_TO_BE } else { BPF_TO_LE };
                one(BPF_ALU | BPF_END | sbit, dst, 0, 0, bits as i32)
            }
            Instruction::Bswap { dst, bits } => {
                one(BPF_ALU64 | BPF_END | BPF_TO_LE, dst, 0, 0, bits as i32)
            }
            Instruction::AddrSpaceCast {
                dst,
                src,
                dst_as,
                src_as,
            } => one(
                BPF_ALU64 | BPF_MOV | BPF_X,
                dst,
                src,
                BPF_ADDR_SPACE_CAST as i16,
                ((dst_as as u32) << 16 | src_as as u32) as i32,
            ),
            Instruction::Load {
                size,
                dst,
                src,
                off,
            } => one(BPF_LDX | BPF_MEM | size.code(), dst, src, off, 0),
            Instruction::LoadSx {
                size,
                dst,
                src,
                off,
            } => one(BPF_LDX | BPF_MEMSX | size.code(), dst, src, off, 0),
            Instruction::Store {
                size,
                dst,
                off,
                src: Src::Reg(src),
            } => one(BPF_STX | BPF_MEM | size.code(), dst, src, off, 0),
            Instruction::Store {
                size,
                dst,
                off,
                src: Src::Imm(imm),
            } => one(BPF_ST | BPF_MEM | size.code(), dst, 0, off, imm),
            Instruction::Atomic {
                size,
                op,
                dst,
                src,
                off,
            } => one(BPF_STX | BPF_ATOMIC | size.code(), dst, src, off, op.imm()),
            Instruction::LdAbs { size, imm } => one(BPF_LD | BPF_ABS | size.code(), 0, 0, 0, imm),
            Instruction::LdInd { size, src, imm } => {
                one(BPF_LD | BPF_IND | size.code(), 0, src, 0, imm)
            }
            Instruction::LdImm64 {
                dst,
                kind,
                imm,
                next_imm,
            } => Encoded {
                slots: [
                    Insn::new(BPF_LD | BPF_IMM | BPF_DW, dst, kind.src_reg(), 0, imm),
                    Insn::new(0, 0, 0, 0, next_imm),
                ],
                len: 2,
            },
            Instruction::Ja { off } => one(BPF_JMP | BPF_JA, 0, 0, off, 0),
            Instruction::Gotol { imm } => one(BPF_JMP32 | BPF_JA, 0, 0, 0, imm),
            Instruction::MayGoto { off } => one(BPF_JMP | BPF_JCOND, 0, BPF_MAY_GOTO, off, 0),
            Instruction::Jump {
                width,
                op,
                dst,
                src,
                off,
            } => {
                let (sbit, sreg, imm) = operand(src);
                one(jmp_class(width) | op.code() | sbit, dst, sreg, off, imm)
            }
            Instruction::Call(Call::Helper(id)) => one(BPF_JMP | BPF_CALL, 0, 0, 0, id),
            Instruction::Call(Call::Local(imm)) => {
                one(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, imm)
            }
            Instruction::Call(Call::Kfunc { btf_id, btf_fd_idx }) => one(
                BPF_JMP | BPF_CALL,
                0,
                BPF_PSEUDO_KFUNC_CALL,
                btf_fd_idx,
                btf_id,
            ),
            Instruction::Exit { off } => one(BPF_JMP | BPF_EXIT, 0, 0, off, 0),
        }
    }

    /// Appends the encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<Insn>) {
        out.extend_from_slice(self.encode().as_slice());
    }
}

/// Encodes a sequence of instructions into slots.
pub fn encode_program(program: &[Instruction]) -> Vec<Insn> {
    let mut out = Vec::with_capacity(program.len());
    for i in program {
        i.encode_into(&mut out);
    }
    out
}
