//! Encodings from the ISA's definition (RFC 9669 and the Linux extensions),
//! written as bytes, against both the assembler and the disassembler.

use bpfvet_isa::asm::{assemble, assemble_insns, AsmError};
use bpfvet_isa::*;

/// (text, the slots' bytes in little-endian order).
const CASES: &[(&str, &[u8])] = &[
    ("r0 = *(u32 *)(r1 +76)", &[0x61, 0x10, 0x4c, 0, 0, 0, 0, 0]),
    // Negative offsets are two's complement in the 16-bit off field.
    (
        "*(u64 *)(r10 -8) = r1",
        &[0x7b, 0x1a, 0xf8, 0xff, 0, 0, 0, 0],
    ),
    (
        "*(u32 *)(r10 -4) = -2",
        &[0x62, 0x0a, 0xfc, 0xff, 0xfe, 0xff, 0xff, 0xff],
    ),
    // Immediates are signed 32-bit.
    ("r1 = -1", &[0xb7, 0x01, 0, 0, 0xff, 0xff, 0xff, 0xff]),
    ("w1 = -1", &[0xb4, 0x01, 0, 0, 0xff, 0xff, 0xff, 0xff]),
    ("w1 = w2", &[0xbc, 0x21, 0, 0, 0, 0, 0, 0]),
    ("r1 = (s8)r2", &[0xbf, 0x21, 8, 0, 0, 0, 0, 0]),
    ("w1 = (s16)w2", &[0xbc, 0x21, 16, 0, 0, 0, 0, 0]),
    ("r1 s/= r2", &[0x3f, 0x21, 1, 0, 0, 0, 0, 0]),
    ("w1 s%= 7", &[0x94, 0x01, 1, 0, 7, 0, 0, 0]),
    ("r1 = be16 r1", &[0xdc, 0x01, 0, 0, 16, 0, 0, 0]),
    ("r1 = le32 r1", &[0xd4, 0x01, 0, 0, 32, 0, 0, 0]),
    ("r1 = bswap64 r1", &[0xd7, 0x01, 0, 0, 64, 0, 0, 0]),
    ("r1 = -r1", &[0x87, 0x01, 0, 0, 0, 0, 0, 0]),
    // LD_IMM64: low half in the first slot, high half in the second.
    (
        "r1 = 0x123456789abcdef0",
        &[
            0x18, 0x01, 0, 0, 0xf0, 0xde, 0xbc, 0x9a, 0, 0, 0, 0, 0x78, 0x56, 0x34, 0x12,
        ],
    ),
    (
        "r2 = map_value[5]+16",
        &[0x18, 0x22, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0],
    ),
    // JMP32 and JMP differ only in the class bits.
    (
        "if w1 s< w2 goto pc-5",
        &[0xce, 0x21, 0xfb, 0xff, 0, 0, 0, 0],
    ),
    (
        "if r1 s< r2 goto pc-5",
        &[0xcd, 0x21, 0xfb, 0xff, 0, 0, 0, 0],
    ),
    ("if r1 > 0x10 goto pc+3", &[0x25, 0x01, 3, 0, 0x10, 0, 0, 0]),
    (
        "if w1 != 0xffffffff goto pc+1",
        &[0x56, 0x01, 1, 0, 0xff, 0xff, 0xff, 0xff],
    ),
    ("goto pc+3", &[0x05, 0, 3, 0, 0, 0, 0, 0]),
    ("gotol pc+100000", &[0x06, 0, 0, 0, 0xa0, 0x86, 0x01, 0]),
    ("may_goto pc+2", &[0xe5, 0, 2, 0, 0, 0, 0, 0]),
    ("call bpf_map_lookup_elem#1", &[0x85, 0, 0, 0, 1, 0, 0, 0]),
    ("call pc+5", &[0x85, 0x10, 0, 0, 5, 0, 0, 0]),
    ("call pc-2", &[0x85, 0x10, 0, 0, 0xfe, 0xff, 0xff, 0xff]),
    (
        "call kernel-function#300",
        &[0x85, 0x20, 0, 0, 0x2c, 1, 0, 0],
    ),
    (
        "call kernel-function#300@2",
        &[0x85, 0x20, 2, 0, 0x2c, 1, 0, 0],
    ),
    ("call unknown#999", &[0x85, 0, 0, 0, 0xe7, 0x03, 0, 0]),
    ("exit", &[0x95, 0, 0, 0, 0, 0, 0, 0]),
    // The kernel accepts (and does not print) an exit's off; we keep it.
    ("exit@60", &[0x95, 0, 60, 0, 0, 0, 0, 0]),
    ("r0 = *(s16 *)(r1 +2)", &[0x89, 0x10, 2, 0, 0, 0, 0, 0]),
    ("r0 = *(u16 *)skb[12]", &[0x28, 0, 0, 0, 12, 0, 0, 0]),
    (
        "r0 = *(u8 *)skb[r3 + -1]",
        &[0x50, 0x30, 0, 0, 0xff, 0xff, 0xff, 0xff],
    ),
    (
        "lock *(u64 *)(r10 -8) += r1",
        &[0xdb, 0x1a, 0xf8, 0xff, 0, 0, 0, 0],
    ),
    (
        "r0 = atomic64_fetch_add((u64 *)(r1 +0), r0)",
        &[0xdb, 0x01, 0, 0, 1, 0, 0, 0],
    ),
    (
        "r0 = atomic_cmpxchg((u32 *)(r1 +4), r0, r2)",
        &[0xc3, 0x21, 4, 0, 0xf1, 0, 0, 0],
    ),
    (
        "r3 = atomic64_xchg((u64 *)(r1 +0), r3)",
        &[0xdb, 0x31, 0, 0, 0xe1, 0, 0, 0],
    ),
    (
        "r0 = load_acquire((u64 *)(r1 +0))",
        &[0xdb, 0x10, 0, 0, 0, 1, 0, 0],
    ),
    (
        "store_release((u8 *)(r1 +3), r2)",
        &[0xd3, 0x21, 3, 0, 0x10, 1, 0, 0],
    ),
    (
        "r1 = addr_space_cast(r2, 0, 1)",
        &[0xbf, 0x21, 1, 0, 1, 0, 0, 0],
    ),
    (
        "r1 = addr_space_cast(r2, 1, 0)",
        &[0xbf, 0x21, 1, 0, 0, 0, 1, 0],
    ),
];

#[test]
fn text_and_bytes_agree_both_ways() {
    for (text, bytes) in CASES {
        let insns = insns_from_bytes(bytes).unwrap();
        assert_eq!(assemble_insns(text).unwrap(), insns, "assembling `{text}`");
        let program = decode_program(&insns).unwrap();
        assert_eq!(program.len(), 1);
        assert_eq!(program[0].insn.to_string(), *text, "printing {bytes:02x?}");
    }
}

#[test]
fn log_line_has_pc_and_opcode() {
    let insns = assemble_insns("r1 = 0x1 ll\nr0 = *(u32 *)(r1 +76)\n").unwrap();
    let text = disasm::disasm_program(&insns, &disasm::NoSymbols).unwrap();
    // The LD_IMM64 takes slots 0 and 1, so the load is pc 2.
    assert_eq!(text, "0: (18) r1 = 0x1\n2: (61) r0 = *(u32 *)(r1 +76)\n");
}

#[test]
fn errors_name_the_slot_and_the_kernel_reason() {
    let i = Insn::new;
    let err = |insns: &[Insn]| decode_program(insns).unwrap_err().to_string();
    // Slot counting steps over the LD_IMM64 second half.
    let ld = [i(0x18, 1, 0, 0, 1), i(0, 0, 0, 0, 0)];
    assert_eq!(
        err(&[ld[0], ld[1], i(0x8d, 0, 0, 0, 0)]),
        "insn 2: unknown opcode 8d"
    );
    assert_eq!(
        err(&[i(0x07, 1, 1, 0, 1)]),
        "insn 0: BPF_ALU uses reserved fields"
    );
    assert_eq!(err(&[i(0xb7, 11, 0, 0, 0)]), "insn 0: R11 is invalid");
    assert_eq!(
        err(&[i(0x07, 10, 0, 0, 1)]),
        "insn 0: frame pointer is read only"
    );
    assert_eq!(
        err(&[i(0x18, 1, 0, 0, 1)]),
        "insn 0: invalid bpf_ld_imm64 insn"
    );
    assert_eq!(
        err(&[i(0x18, 1, 1, 0, 3), i(0, 0, 0, 0, 9)]),
        "insn 0: unrecognized bpf_ld_imm64 insn"
    );
    assert_eq!(
        err(&[i(0xdb, 1, 2, 0, -1)]),
        "insn 0: BPF_ATOMIC uses invalid atomic opcode ffffffff"
    );
    // The up-front scan wins over a per-instruction error earlier in the program.
    let e = decode_program(&[i(0x07, 1, 1, 0, 1), i(0xff, 0, 0, 0, 0)]).unwrap_err();
    assert_eq!((e.index, e.kind), (1, DecodeErrorKind::UnknownOpcode(0xff)));
    assert!(e.kind.found_before_walk());
}

#[test]
fn labels_resolve_forwards_and_backwards() {
    let prog = assemble(
        "start:
            r1 = 0x1 ll
            if r1 == 0x0 goto out
            call sub
            goto start
         out: exit
         sub: r0 = 0
            exit",
    )
    .unwrap();
    assert_eq!(
        prog[1],
        Instruction::Jump {
            width: Width::W64,
            op: JmpOp::Eq,
            dst: 1,
            src: Src::Imm(0),
            off: 2,
        }
    );
    assert_eq!(prog[2], Instruction::Call(Call::Local(2)));
    assert_eq!(prog[3], Instruction::Ja { off: -5 });
}

fn asm_err(text: &str) -> AsmError {
    assemble(text).unwrap_err()
}

#[test]
fn assembler_errors_point_at_line_and_column() {
    let e = asm_err("r0 = 0\nr1 += r11\n");
    assert_eq!((e.line, e.column), (2, 7));
    assert!(e.message.starts_with("expected a number"), "{e}");

    let e = asm_err("goto nowhere");
    assert_eq!(
        (e.line, e.column, e.message.as_str()),
        (1, 6, "undefined label `nowhere`")
    );

    let e = asm_err("r0 = *(u32 *)(r1 76)");
    assert_eq!(e.column, 18);
    assert!(e.message.starts_with("expected a signed offset"), "{e}");

    let e = asm_err("3: (b7) r0 = 0");
    assert_eq!(e.message, "pc 3 does not match slot 0");

    let e = asm_err("0: (b4) r0 = 0");
    assert_eq!(
        e.message,
        "opcode (b4) does not match the instruction's (b7)"
    );

    let e = asm_err("if r1 > 0x1 goto pc+40000");
    assert!(e.message.contains("out of range"), "{e}");

    let e = asm_err("r1 = be24 r1");
    assert_eq!(e.message, "expected a width of 16, 32 or 64");

    let e = asm_err("w1 += r2");
    assert!(
        e.message
            .starts_with("expected a register of the same width"),
        "{e}"
    );

    let e = asm_err("call bpf_map_lookup_elem#2");
    assert_eq!(e.message, "helper `bpf_map_lookup_elem` does not have id 2");
}

#[test]
fn log_lines_split_into_pc_code_and_text() {
    use disasm::{parse_log_line, LogLine};
    let walk = parse_log_line("12: (61) r0 = *(u32 *)(r1 +76)      ; R0=scalar()");
    assert_eq!(
        walk,
        Some(LogLine {
            pc: 12,
            code: 0x61,
            text: "r0 = *(u32 *)(r1 +76)"
        })
    );
    let live = parse_log_line("      3: .12....... (bf) r1 = r10");
    assert_eq!(
        live,
        Some(LogLine {
            pc: 3,
            code: 0xbf,
            text: "r1 = r10"
        })
    );
    assert_eq!(parse_log_line("0: R1=ctx() R10=fp0"), None);
    assert_eq!(parse_log_line("processed 2 insns (limit 1000000)"), None);
}

#[test]
fn kernel_log_lines_read_back() {
    // Register state after `;` is a comment, as is a source line.
    let prog = assemble(
        "; int x = ctx->len;
         0: (61) r0 = *(u32 *)(r1 +0)          ; R0=scalar()
         1: (95) exit",
    )
    .unwrap();
    assert_eq!(prog.len(), 2);
}

#[test]
fn unicode_whitespace_is_not_split() {
    // U+0085 is whitespace to Rust; stepping back over it must not cut it.
    let e = assemble("r1=-\u{85}").unwrap_err();
    assert_eq!(e.line, 1);
}
