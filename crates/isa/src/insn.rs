//! The raw instruction slot (`struct bpf_insn`), little-endian as clang emits
//! for `-target bpf` on x86.

use crate::opcode;

/// One 8-byte instruction slot. An LD_IMM64 occupies two consecutive slots.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Insn {
    pub code: u8,
    /// Destination register, 4 bits.
    pub dst: u8,
    /// Source register, 4 bits.
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    pub const SIZE: usize = 8;
    /// `exit`.
    pub const EXIT: Insn = Insn::new(0x95, 0, 0, 0, 0);

    /// `rDST = IMM`, a 64-bit move of the sign-extended immediate.
    pub const fn mov64_imm(dst: u8, imm: i32) -> Self {
        Insn::new(0xb7, dst, 0, 0, imm)
    }

    pub const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Self {
        Insn {
            code,
            dst,
            src,
            off,
            imm,
        }
    }

    pub fn from_bytes(b: [u8; 8]) -> Self {
        Insn {
            code: b[0],
            dst: b[1] & 0x0f,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    pub fn to_bytes(self) -> [u8; 8] {
        let off = self.off.to_le_bytes();
        let imm = self.imm.to_le_bytes();
        [
            self.code,
            (self.dst & 0x0f) | (self.src << 4),
            off[0],
            off[1],
            imm[0],
            imm[1],
            imm[2],
            imm[3],
        ]
    }

    pub const fn class(self) -> u8 {
        self.code & 0x07
    }

    /// True for the first slot of a two-slot LD_IMM64.
    pub const fn is_ld_imm64(self) -> bool {
        self.code == opcode::BPF_LD | opcode::BPF_IMM | opcode::BPF_DW
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("instruction bytes length {len} is not a multiple of 8")]
pub struct InsnBytesError {
    pub len: usize,
}

/// Splits a section's bytes into instruction slots.
pub fn insns_from_bytes(bytes: &[u8]) -> Result<Vec<Insn>, InsnBytesError> {
    if bytes.len() % Insn::SIZE != 0 {
        return Err(InsnBytesError { len: bytes.len() });
    }
    Ok(bytes
        .chunks_exact(Insn::SIZE)
        .map(|c| Insn::from_bytes(c.try_into().expect("chunk of 8")))
        .collect())
}

pub fn insns_to_bytes(insns: &[Insn]) -> Vec<u8> {
    insns.iter().flat_map(|i| i.to_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_layout_matches_struct_bpf_insn() {
        // r0 = *(u32 *)(r1 +76): code 0x61, dst 0, src 1, off 76.
        let i = Insn::from_bytes([0x61, 0x10, 76, 0, 0, 0, 0, 0]);
        assert_eq!(i, Insn::new(0x61, 0, 1, 76, 0));
        assert_eq!(i.to_bytes(), [0x61, 0x10, 76, 0, 0, 0, 0, 0]);
        let neg = Insn::new(0xb7, 2, 0, -8, -1);
        assert_eq!(Insn::from_bytes(neg.to_bytes()), neg);
    }

    #[test]
    fn ragged_section_is_an_error() {
        assert_eq!(insns_from_bytes(&[0; 12]), Err(InsnBytesError { len: 12 }));
        assert_eq!(insns_from_bytes(&[0; 16]).unwrap().len(), 2);
    }
}
