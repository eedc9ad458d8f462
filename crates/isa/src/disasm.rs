//! Instructions printed in the syntax of the Linux verifier log.
//!
//! The output is what the kernel prints at log level 2 for the same
//! instruction (`kernel/bpf/disasm.c` is the reference for behaviour), with
//! two things the kernel can only know at load time supplied by a
//! [`Symbols`] implementation:
//!
//! - kfunc names (the kernel reads them from BTF; without a name it prints
//!   `kernel-function`);
//! - the value of a pseudo LD_IMM64. Before the walk the kernel rewrites
//!   map fd/idx loads into the `struct bpf_map` address, map value loads into
//!   the value's address plus the offset, and BTF-id loads into the kernel
//!   variable's address, and prints that number as `0x...` (or `0x0` when
//!   pointer leaks are not allowed). `func` loads keep their relative offset
//!   until after the walk, so the log shows that offset as `0x...`.
//!   Without a value from [`Symbols::ld_imm64_value`] bpfvet prints the
//!   unresolved reference in its own syntax, which the assembler reads back:
//!   `map_fd[3]`, `map_value[3]+16`, `map_idx[0]`, `map_idx_value[0]+8`,
//!   `btf_id[1234]` (`+N`: BTF object fd), `func[5]` (relative offset).
//!
//! One more bpfvet extension: where the kernel accepts an `off` it does not
//! print, a non-zero value is shown as a `@N` suffix so that the text keeps
//! every field: a kfunc's module BTF fd index (`call name#id@N`) and the
//! unchecked `off` of `exit` (`exit@N`).

use crate::instruction::*;
use crate::uapi::HelperId;
use std::fmt::{self, Write};

/// Load-time knowledge the printer cannot derive from the instruction.
pub trait Symbols {
    /// The name of kernel function `btf_id` in BTF `btf_fd_idx` (0: vmlinux).
    fn kfunc_name(&self, _btf_id: i32, _btf_fd_idx: i16) -> Option<&str> {
        None
    }

    /// The 64-bit value the kernel has stored into a pseudo LD_IMM64 by the
    /// time it prints it (see the module docs); printed as `0x...`.
    fn ld_imm64_value(&self, _kind: Ld64Kind, _imm: i32, _next_imm: i32) -> Option<u64> {
        None
    }
}

/// No load-time knowledge: unresolved references print in bpfvet syntax.
pub struct NoSymbols;

impl Symbols for NoSymbols {}

/// The name the kernel log gives a pseudo LD_IMM64 kind in bpfvet syntax.
pub const fn ld64_kind_name(kind: Ld64Kind) -> &'static str {
    match kind {
        Ld64Kind::Imm => "imm",
        Ld64Kind::MapFd => "map_fd",
        Ld64Kind::MapValue => "map_value",
        Ld64Kind::BtfId => "btf_id",
        Ld64Kind::Func => "func",
        Ld64Kind::MapIdx => "map_idx",
        Ld64Kind::MapIdxValue => "map_idx_value",
    }
}

const fn size_name(size: Size) -> &'static str {
    match size {
        Size::B => "u8",
        Size::H => "u16",
        Size::W => "u32",
        Size::DW => "u64",
    }
}

const fn sx_size_name(size: Size) -> &'static str {
    match size {
        Size::B => "s8",
        Size::H => "s16",
        _ => "s32",
    }
}

const fn reg_prefix(width: Width) -> char {
    match width {
        Width::W32 => 'w',
        Width::W64 => 'r',
    }
}

/// The 64-bit constant an LD_IMM64 carries in its two slots.
pub const fn ld_imm64_value(imm: i32, next_imm: i32) -> u64 {
    ((next_imm as u32 as u64) << 32) | imm as u32 as u64
}

/// Writes the instruction text without the `(code)` prefix, e.g.
/// `r0 = *(u32 *)(r1 +76)`.
pub fn write_insn<W: Write>(out: &mut W, insn: &Instruction, syms: &dyn Symbols) -> fmt::Result {
    match *insn {
        Instruction::Alu {
            width,
            op,
            dst,
            src,
        } => {
            let p = reg_prefix(width);
            write!(out, "{p}{dst} {} ", op.symbol())?;
            match src {
                Src::Reg(s) => write!(out, "{p}{s}"),
                Src::Imm(i) => write!(out, "{i}"),
            }
        }
        Instruction::Mov { width, dst, src } => {
            let p = reg_prefix(width);
            match src {
                Src::Reg(s) => write!(out, "{p}{dst} = {p}{s}"),
                Src::Imm(i) => write!(out, "{p}{dst} = {i}"),
            }
        }
        Instruction::MovSx {
            width,
            dst,
            src,
            bits,
        } => {
            let p = reg_prefix(width);
            write!(out, "{p}{dst} = (s{bits}){p}{src}")
        }
        Instruction::Neg { width, dst } => {
            let p = reg_prefix(width);
            write!(out, "{p}{dst} = -{p}{dst}")
        }
        Instruction::Endian { dst, big, bits } => {
            let e = if big { "be" } else { "le" };
            write!(out, "r{dst} = {e}{bits} r{dst}")
        }
        Instruction::Bswap { dst, bits } => write!(out, "r{dst} = bswap{bits} r{dst}"),
        Instruction::AddrSpaceCast {
            dst,
            src,
            dst_as,
            src_as,
        } => write!(out, "r{dst} = addr_space_cast(r{src}, {dst_as}, {src_as})"),
        Instruction::Load {
            size,
            dst,
            src,
            off,
        } => write!(out, "r{dst} = *({} *)(r{src} {off:+})", size_name(size)),
        Instruction::LoadSx {
            size,
            dst,
            src,
            off,
        } => write!(out, "r{dst} = *({} *)(r{src} {off:+})", sx_size_name(size)),
        Instruction::Store {
            size,
            dst,
            off,
            src,
        } => {
            write!(out, "*({} *)(r{dst} {off:+}) = ", size_name(size))?;
            match src {
                Src::Reg(s) => write!(out, "r{s}"),
                Src::Imm(i) => write!(out, "{i}"),
            }
        }
        Instruction::Atomic {
            size,
            op,
            dst,
            src,
            off,
        } => write_atomic(out, size, op, dst, src, off),
        Instruction::LdAbs { size, imm } => write!(out, "r0 = *({} *)skb[{imm}]", size_name(size)),
        Instruction::LdInd { size, src, imm } => {
            write!(out, "r0 = *({} *)skb[r{src} + {imm}]", size_name(size))
        }
        Instruction::LdImm64 {
            dst,
            kind,
            imm,
            next_imm,
        } => {
            let resolved = match kind {
                Ld64Kind::Imm => Some(ld_imm64_value(imm, next_imm)),
                _ => syms.ld_imm64_value(kind, imm, next_imm),
            };
            match resolved {
                Some(v) => write!(out, "r{dst} = {v:#x}"),
                None => {
                    write!(out, "r{dst} = {}[{imm}]", ld64_kind_name(kind))?;
                    if next_imm != 0 {
                        write!(out, "+{}", next_imm as u32)?;
                    }
                    Ok(())
                }
            }
        }
        Instruction::Ja { off } => write!(out, "goto pc{off:+}"),
        Instruction::Gotol { imm } => write!(out, "gotol pc{imm:+}"),
        Instruction::MayGoto { off } => write!(out, "may_goto pc{off:+}"),
        Instruction::Jump {
            width,
            op,
            dst,
            src,
            off,
        } => {
            let p = reg_prefix(width);
            write!(out, "if {p}{dst} {} ", op.symbol())?;
            match src {
                Src::Reg(s) => write!(out, "{p}{s}")?,
                Src::Imm(i) => write!(out, "{:#x}", i as u32)?,
            }
            write!(out, " goto pc{off:+}")
        }
        Instruction::Call(Call::Helper(id)) => {
            let name = u32::try_from(id)
                .ok()
                .and_then(|id| HelperId(id).name())
                .unwrap_or("unknown");
            write!(out, "call {name}#{id}")
        }
        Instruction::Call(Call::Local(imm)) => write!(out, "call pc{imm:+}"),
        Instruction::Call(Call::Kfunc { btf_id, btf_fd_idx }) => {
            let name = syms
                .kfunc_name(btf_id, btf_fd_idx)
                .unwrap_or("kernel-function");
            write!(out, "call {name}#{btf_id}")?;
            if btf_fd_idx != 0 {
                write!(out, "@{btf_fd_idx}")?;
            }
            Ok(())
        }
        Instruction::Exit { off } => {
            out.write_str("exit")?;
            if off != 0 {
                write!(out, "@{off}")?;
            }
            Ok(())
        }
    }
}

fn write_atomic<W: Write>(
    out: &mut W,
    size: Size,
    op: AtomicOp,
    dst: u8,
    src: u8,
    off: i16,
) -> fmt::Result {
    let ty = size_name(size);
    let bits = if size == Size::DW { "64" } else { "" };
    match op {
        AtomicOp::Alu { op, fetch: false } => {
            let sym = match op {
                AtomicAluOp::Add => "+=",
                AtomicAluOp::Or => "|=",
                AtomicAluOp::And => "&=",
                AtomicAluOp::Xor => "^=",
            };
            write!(out, "lock *({ty} *)(r{dst} {off:+}) {sym} r{src}")
        }
        AtomicOp::Alu { op, fetch: true } => write!(
            out,
            "r{src} = atomic{bits}_fetch_{}(({ty} *)(r{dst} {off:+}), r{src})",
            op.name()
        ),
        AtomicOp::Xchg => write!(
            out,
            "r{src} = atomic{bits}_xchg(({ty} *)(r{dst} {off:+}), r{src})"
        ),
        AtomicOp::Cmpxchg => write!(
            out,
            "r0 = atomic{bits}_cmpxchg(({ty} *)(r{dst} {off:+}), r0, r{src})"
        ),
        AtomicOp::LoadAcquire => write!(out, "r{dst} = load_acquire(({ty} *)(r{src} {off:+}))"),
        AtomicOp::StoreRelease => {
            write!(out, "store_release(({ty} *)(r{dst} {off:+}), r{src})")
        }
    }
}

/// Writes one verifier-log line without a newline: `12: (61) r0 = *(u32 *)(r1 +76)`.
pub fn write_log_line<W: Write>(
    out: &mut W,
    pc: usize,
    insn: &Instruction,
    syms: &dyn Symbols,
) -> fmt::Result {
    write!(out, "{pc}: ({:02x}) ", insn.code())?;
    write_insn(out, insn, syms)
}

/// One instruction line of a kernel verifier log, split into its parts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LogLine<'a> {
    pub pc: usize,
    pub code: u8,
    /// The instruction text, without the register state after `;`.
    pub text: &'a str,
}

/// Recognises the instruction lines of a verifier log: `12: (61) text`
/// from the walk (possibly followed by `; R0=...`) and `  12: ..2.......
/// (61) text` from the live-registers listing that 6.18 prints first.
pub fn parse_log_line(line: &str) -> Option<LogLine<'_>> {
    let (pc, rest) = line.trim_start().split_once(": ")?;
    let pc = pc.parse().ok()?;
    let rest = match rest.split_once(' ') {
        Some((live, after)) if live.bytes().all(|c| c == b'.' || c.is_ascii_digit()) => after,
        _ => rest,
    };
    let (code, text) = rest.strip_prefix('(')?.split_once(") ")?;
    if code.len() != 2 {
        return None;
    }
    let code = u8::from_str_radix(code, 16).ok()?;
    let text = text.split(';').next().unwrap_or("").trim_end();
    Some(LogLine { pc, code, text })
}

impl fmt::Display for Instruction {
    /// The log text with no load-time knowledge ([`NoSymbols`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_insn(f, self, &NoSymbols)
    }
}

/// Decodes and prints a whole program, one log line per instruction.
pub fn disasm_program(
    insns: &[crate::Insn],
    syms: &dyn Symbols,
) -> Result<String, crate::DecodeError> {
    let program = crate::decode_program(insns)?;
    let mut out = String::with_capacity(program.len() * 32);
    for l in &program {
        // Writing into a String cannot fail.
        let _ = write_log_line(&mut out, l.pc, &l.insn, syms);
        out.push('\n');
    }
    Ok(out)
}
