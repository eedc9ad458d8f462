//! The BPF instruction set as Linux 6.18 accepts it.
//!
//! `Insn` is the raw 8-byte slot every other crate works on; `opcode` names
//! the bit fields; `uapi` holds the kernel's numbering of program, attach and
//! map types and helper functions.

pub mod insn;
pub mod opcode;
pub mod uapi;

pub use insn::{insns_from_bytes, insns_to_bytes, Insn, InsnBytesError};
