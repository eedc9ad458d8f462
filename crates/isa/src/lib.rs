//! The BPF instruction set as Linux 6.18 accepts it.
//!
//! - [`Insn`] is the raw 8-byte slot every other crate works on; [`opcode`]
//!   names the bit fields; [`uapi`] holds the kernel's numbering of program,
//!   attach and map types and helper functions ([`uapi::HelperId`]).
//! - [`Instruction`] is the typed view of one instruction (LD_IMM64 is one
//!   instruction of two slots). [`decode_program`] turns slots into
//!   [`Located`] instructions, checking every field the way the kernel does
//!   and failing with a [`DecodeError`] that names the slot index and the
//!   kernel's own message (`BPF_ALU uses reserved fields`, `unknown opcode
//!   8d`, `invalid bpf_ld_imm64 insn`, `R12 is invalid`, ...).
//!   [`decode_at`] decodes a single instruction; [`Instruction::encode`] and
//!   [`encode_program`] go back to slots.
//! - [`disasm`] prints instructions exactly as the verifier log does
//!   (`12: (61) r0 = *(u32 *)(r1 +76)`); kfunc names and resolved LD_IMM64
//!   values come from a caller's [`disasm::Symbols`].
//! - [`asm`] reads the same syntax back (with optional labels), so programs
//!   in tests can be written as text.
//!
//! ```
//! use bpfvet_isa::{asm::assemble, disasm::disasm_program, encode_program};
//! let prog = assemble("r0 = *(u32 *)(r1 +76)\nif w0 s< 0x10 goto pc+1\nr0 = 0\nexit\n").unwrap();
//! let text = disasm_program(&encode_program(&prog), &bpfvet_isa::disasm::NoSymbols).unwrap();
//! assert_eq!(text.lines().nth(1), Some("1: (c6) if w0 s< 0x10 goto pc+1"));
//! ```

pub mod asm;
pub mod decode;
pub mod disasm;
pub mod insn;
pub mod instruction;
pub mod opcode;
pub mod uapi;

pub use decode::{decode_at, decode_program, DecodeError, DecodeErrorKind, Located};
pub use insn::{insns_from_bytes, insns_to_bytes, Insn, InsnBytesError};
pub use instruction::{
    encode_program, AluOp, AtomicAluOp, AtomicOp, Call, Encoded, Instruction, JmpOp, Ld64Kind,
    Size, Src, Width,
};
