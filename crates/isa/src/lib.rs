//! The BPF instruction set as Linux 6.18 accepts it.
//!
//! Public API, by job:
//! - Raw slots: [`Insn`] (`struct bpf_insn`), [`insns_from_bytes`],
//!   [`insns_to_bytes`]; [`opcode`] names the bit fields; [`uapi`] numbers
//!   program, attach and map types and the helpers ([`uapi::HelperId`],
//!   ids 0..=211 with the names the log prints, e.g. `bpf_map_lookup_elem`).
//! - Typed instructions: [`Instruction`] (LD_IMM64 is one instruction of
//!   two slots) with [`Width`], [`Size`], [`Src`], [`AluOp`], [`JmpOp`],
//!   [`AtomicOp`], [`Ld64Kind`], [`Call`]; [`Instruction::encode`] and
//!   [`encode_program`] go back to slots, [`Instruction::branch_target`]
//!   gives jump destinations.
//! - Decoding: [`decode_program`] -> `Vec<`[`Located`]`>` (instruction +
//!   slot index), checking every field in the kernel's order; a
//!   [`DecodeError`] names the slot index and carries a [`DecodeErrorKind`]
//!   whose `Display` is the kernel's own log message (`BPF_ALU uses reserved
//!   fields`, `unknown opcode 8d`, `invalid bpf_ld_imm64 insn`, `R12 is
//!   invalid`, ...), checked against the host kernel. [`decode_at`] decodes
//!   one instruction; [`decode::opcode_known`] is the kernel's opcode table.
//! - Printing: [`disasm`] writes the verifier log syntax exactly
//!   (`12: (61) r0 = *(u32 *)(r1 +76)`) into any `fmt::Write` without
//!   allocating; kfunc names and load-time LD_IMM64 values come from a
//!   caller's [`disasm::Symbols`]. `Instruction: Display` prints the text
//!   alone with no symbols.
//! - Assembling: [`asm::assemble`] reads the same syntax back (labels
//!   optional, log prefixes and `;` comments allowed) and reports
//!   [`asm::AsmError`] with line, column and what was expected.
//!
//! ```
//! use bpfvet_isa::{asm::assemble, disasm::disasm_program, encode_program};
//! let prog = assemble("r0 = *(u32 *)(r1 +76)\nif w0 s< 0x10 goto pc+1\nr0 = 0\nexit\n").unwrap();
//! let text = disasm_program(&encode_program(&prog), &bpfvet_isa::disasm::NoSymbols).unwrap();
//! assert_eq!(text.lines().nth(1), Some("1: (c6) if w0 s< 0x10 goto pc+1"));
//! ```

pub mod asm;
pub mod decode;
pub mod digest;
pub mod disasm;
pub mod insn;
pub mod instruction;
pub mod opcode;
pub mod privileges;
pub mod uapi;

pub use decode::{decode_at, decode_program, DecodeError, DecodeErrorKind, Located};
pub use insn::{insns_from_bytes, insns_to_bytes, Insn, InsnBytesError};
pub use instruction::{
    encode_program, AluOp, AtomicAluOp, AtomicOp, Call, Encoded, Instruction, JmpOp, Ld64Kind,
    Size, Src, Width,
};
pub use privileges::Privileges;
