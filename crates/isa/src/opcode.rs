//! Opcode bit fields (include/uapi/linux/bpf_common.h and bpf.h).

// Instruction classes (low 3 bits).
pub const BPF_LD: u8 = 0x00;
pub const BPF_LDX: u8 = 0x01;
pub const BPF_ST: u8 = 0x02;
pub const BPF_STX: u8 = 0x03;
pub const BPF_ALU: u8 = 0x04;
pub const BPF_JMP: u8 = 0x05;
pub const BPF_JMP32: u8 = 0x06;
pub const BPF_ALU64: u8 = 0x07;

// Load/store size (bits 3-4).
pub const BPF_W: u8 = 0x00;
pub const BPF_H: u8 = 0x08;
pub const BPF_B: u8 = 0x10;
pub const BPF_DW: u8 = 0x18;

// Load/store mode (bits 5-7).
pub const BPF_IMM: u8 = 0x00;
pub const BPF_ABS: u8 = 0x20;
pub const BPF_IND: u8 = 0x40;
pub const BPF_MEM: u8 = 0x60;
pub const BPF_MEMSX: u8 = 0x80;
pub const BPF_ATOMIC: u8 = 0xc0;

// Source operand (bit 3) for ALU and JMP.
pub const BPF_K: u8 = 0x00;
pub const BPF_X: u8 = 0x08;

// ALU operations (bits 4-7).
pub const BPF_ADD: u8 = 0x00;
pub const BPF_SUB: u8 = 0x10;
pub const BPF_MUL: u8 = 0x20;
pub const BPF_DIV: u8 = 0x30;
pub const BPF_OR: u8 = 0x40;
pub const BPF_AND: u8 = 0x50;
pub const BPF_LSH: u8 = 0x60;
pub const BPF_RSH: u8 = 0x70;
pub const BPF_NEG: u8 = 0x80;
pub const BPF_MOD: u8 = 0x90;
pub const BPF_XOR: u8 = 0xa0;
pub const BPF_MOV: u8 = 0xb0;
pub const BPF_ARSH: u8 = 0xc0;
pub const BPF_END: u8 = 0xd0;
/// BPF_END source bit: convert to little (0) or big (0x08) endian.
pub const BPF_TO_LE: u8 = 0x00;
pub const BPF_TO_BE: u8 = 0x08;

// Jump operations (bits 4-7).
pub const BPF_JA: u8 = 0x00;
pub const BPF_JEQ: u8 = 0x10;
pub const BPF_JGT: u8 = 0x20;
pub const BPF_JGE: u8 = 0x30;
pub const BPF_JSET: u8 = 0x40;
pub const BPF_JNE: u8 = 0x50;
pub const BPF_JSGT: u8 = 0x60;
pub const BPF_JSGE: u8 = 0x70;
pub const BPF_CALL: u8 = 0x80;
pub const BPF_EXIT: u8 = 0x90;
pub const BPF_JLT: u8 = 0xa0;
pub const BPF_JLE: u8 = 0xb0;
pub const BPF_JSLT: u8 = 0xc0;
pub const BPF_JSLE: u8 = 0xd0;
/// JMP|JCOND, used by may_goto.
pub const BPF_JCOND: u8 = 0xe0;
pub const BPF_MAY_GOTO: u8 = 0;

// Atomic operations carried in imm.
pub const BPF_FETCH: i32 = 0x01;
pub const BPF_XCHG: i32 = 0xe0 | BPF_FETCH;
pub const BPF_CMPXCHG: i32 = 0xf0 | BPF_FETCH;
pub const BPF_LOAD_ACQ: i32 = 0x100;
pub const BPF_STORE_REL: i32 = 0x110;

// src_reg values of LD_IMM64.
pub const BPF_PSEUDO_MAP_FD: u8 = 1;
pub const BPF_PSEUDO_MAP_VALUE: u8 = 2;
pub const BPF_PSEUDO_BTF_ID: u8 = 3;
pub const BPF_PSEUDO_FUNC: u8 = 4;
pub const BPF_PSEUDO_MAP_IDX: u8 = 5;
pub const BPF_PSEUDO_MAP_IDX_VALUE: u8 = 6;

// src_reg values of CALL.
pub const BPF_PSEUDO_CALL: u8 = 1;
pub const BPF_PSEUDO_KFUNC_CALL: u8 = 2;

/// `off` of an ALU64 MOV X that casts between address spaces (arena);
/// imm = dst_as << 16 | src_as.
pub const BPF_ADDR_SPACE_CAST: i32 = 1;

pub const fn class(code: u8) -> u8 {
    code & 0x07
}
pub const fn size(code: u8) -> u8 {
    code & 0x18
}
pub const fn mode(code: u8) -> u8 {
    code & 0xe0
}
pub const fn op(code: u8) -> u8 {
    code & 0xf0
}
pub const fn source(code: u8) -> u8 {
    code & 0x08
}

/// Byte width of a load/store size field.
pub const fn size_bytes(code: u8) -> u32 {
    match size(code) {
        BPF_W => 4,
        BPF_H => 2,
        BPF_B => 1,
        _ => 8,
    }
}

/// Number of general registers r0..r10 (r10 is the read-only frame pointer).
pub const MAX_BPF_REG: u8 = 11;
