//! decode -> print -> assemble -> encode is the identity on valid encodings.

use bpfvet_isa::asm::assemble;
use bpfvet_isa::opcode::*;
use bpfvet_isa::*;
use proptest::prelude::*;

fn reg() -> impl Strategy<Value = u8> {
    0u8..=10
}

/// A register an instruction may write (not the frame pointer).
fn wreg() -> impl Strategy<Value = u8> {
    0u8..=9
}

fn width() -> impl Strategy<Value = Width> {
    prop_oneof![Just(Width::W32), Just(Width::W64)]
}

fn size() -> impl Strategy<Value = Size> {
    prop_oneof![Just(Size::B), Just(Size::H), Just(Size::W), Just(Size::DW)]
}

fn src() -> impl Strategy<Value = Src> {
    prop_oneof![reg().prop_map(Src::Reg), any::<i32>().prop_map(Src::Imm)]
}

fn alu() -> impl Strategy<Value = Instruction> {
    (
        width(),
        prop::sample::select(AluOp::ALL.to_vec()),
        wreg(),
        src(),
    )
        .prop_map(|(width, op, dst, src)| {
            // Keep immediates the kernel accepts: no division by zero, shifts in range.
            let src = match (op, src) {
                (AluOp::Div | AluOp::SDiv | AluOp::Mod | AluOp::SMod, Src::Imm(0)) => Src::Imm(1),
                (AluOp::Lsh | AluOp::Rsh | AluOp::Arsh, Src::Imm(i)) => {
                    let bits = if width == Width::W64 { 64 } else { 32 };
                    Src::Imm(i.rem_euclid(bits))
                }
                (_, s) => s,
            };
            Instruction::Alu {
                width,
                op,
                dst,
                src,
            }
        })
}

fn atomic() -> impl Strategy<Value = Instruction> {
    let rmw = prop_oneof![
        (
            prop::sample::select(AtomicAluOp::ALL.to_vec()),
            any::<bool>()
        )
            .prop_map(|(op, fetch)| AtomicOp::Alu { op, fetch }),
        Just(AtomicOp::Xchg),
        Just(AtomicOp::Cmpxchg),
    ];
    prop_oneof![
        (
            rmw,
            prop_oneof![Just(Size::W), Just(Size::DW)],
            reg(),
            wreg(),
            any::<i16>()
        )
            .prop_map(|(op, size, dst, src, off)| Instruction::Atomic {
                size,
                op,
                dst,
                src,
                off
            }),
        (size(), wreg(), reg(), any::<i16>()).prop_map(|(size, dst, src, off)| {
            Instruction::Atomic {
                size,
                op: AtomicOp::LoadAcquire,
                dst,
                src,
                off,
            }
        }),
        (size(), reg(), reg(), any::<i16>()).prop_map(|(size, dst, src, off)| {
            Instruction::Atomic {
                size,
                op: AtomicOp::StoreRelease,
                dst,
                src,
                off,
            }
        }),
    ]
}

fn ld_imm64() -> impl Strategy<Value = Instruction> {
    (
        wreg(),
        prop::sample::select(Ld64Kind::ALL.to_vec()),
        any::<i32>(),
        any::<i32>(),
    )
        .prop_map(|(dst, kind, imm, next_imm)| {
            let next_imm = match kind {
                Ld64Kind::MapFd | Ld64Kind::MapIdx => 0,
                _ => next_imm,
            };
            Instruction::LdImm64 {
                dst,
                kind,
                imm,
                next_imm,
            }
        })
}

fn jumps() -> impl Strategy<Value = Instruction> {
    prop_oneof![
        any::<i16>().prop_map(|off| Instruction::Ja { off }),
        any::<i32>().prop_map(|imm| Instruction::Gotol { imm }),
        any::<i16>().prop_map(|off| Instruction::MayGoto { off }),
        (
            width(),
            prop::sample::select(JmpOp::ALL.to_vec()),
            reg(),
            src(),
            any::<i16>()
        )
            .prop_map(|(width, op, dst, src, off)| Instruction::Jump {
                width,
                op,
                dst,
                src,
                off
            }),
        any::<i32>().prop_map(|id| Instruction::Call(Call::Helper(id))),
        any::<i32>().prop_map(|imm| Instruction::Call(Call::Local(imm))),
        (any::<i32>(), any::<i16>())
            .prop_map(|(btf_id, btf_fd_idx)| Instruction::Call(Call::Kfunc { btf_id, btf_fd_idx })),
        any::<i16>().prop_map(|off| Instruction::Exit { off }),
    ]
}

fn memory() -> impl Strategy<Value = Instruction> {
    let sx = prop_oneof![Just(Size::B), Just(Size::H), Just(Size::W)];
    prop_oneof![
        (size(), wreg(), reg(), any::<i16>()).prop_map(|(size, dst, src, off)| Instruction::Load {
            size,
            dst,
            src,
            off
        }),
        (sx.clone(), wreg(), reg(), any::<i16>()).prop_map(|(size, dst, src, off)| {
            Instruction::LoadSx {
                size,
                dst,
                src,
                off,
            }
        }),
        (size(), reg(), any::<i16>(), src()).prop_map(|(size, dst, off, src)| Instruction::Store {
            size,
            dst,
            off,
            src
        }),
        (sx.clone(), any::<i32>()).prop_map(|(size, imm)| Instruction::LdAbs { size, imm }),
        (sx, reg(), any::<i32>()).prop_map(|(size, src, imm)| Instruction::LdInd {
            size,
            src,
            imm
        }),
    ]
}

fn other_alu() -> impl Strategy<Value = Instruction> {
    let bits = prop_oneof![Just(16u8), Just(32), Just(64)];
    prop_oneof![
        (width(), wreg(), src()).prop_map(|(width, dst, src)| Instruction::Mov { width, dst, src }),
        (
            width(),
            wreg(),
            reg(),
            prop_oneof![Just(8u8), Just(16), Just(32)]
        )
            .prop_map(|(width, dst, src, bits)| {
                let bits = if width == Width::W32 && bits == 32 {
                    16
                } else {
                    bits
                };
                Instruction::MovSx {
                    width,
                    dst,
                    src,
                    bits,
                }
            }),
        (width(), wreg()).prop_map(|(width, dst)| Instruction::Neg { width, dst }),
        (wreg(), any::<bool>(), bits.clone()).prop_map(|(dst, big, bits)| Instruction::Endian {
            dst,
            big,
            bits
        }),
        (wreg(), bits).prop_map(|(dst, bits)| Instruction::Bswap { dst, bits }),
        (wreg(), reg(), any::<bool>()).prop_map(|(dst, src, to_user)| {
            let (dst_as, src_as) = if to_user { (0, 1) } else { (1, 0) };
            Instruction::AddrSpaceCast {
                dst,
                src,
                dst_as,
                src_as,
            }
        }),
    ]
}

fn instruction() -> impl Strategy<Value = Instruction> {
    prop_oneof![alu(), other_alu(), memory(), atomic(), ld_imm64(), jumps()]
}

/// Slots biased towards valid encodings: a known opcode and small fields.
fn slot_pair() -> impl Strategy<Value = [Insn; 2]> {
    let codes: Vec<u8> = (0..=255u8).filter(|c| decode::opcode_known(*c)).collect();
    let field_imm = prop_oneof![
        Just(0i32),
        Just(1),
        Just(8),
        Just(16),
        Just(32),
        Just(64),
        Just(0x100),
        Just(0x110),
        Just(0xe1),
        Just(0xf1),
        Just(1 << 16),
        any::<i32>()
    ];
    let field_off = prop_oneof![
        Just(0i16),
        Just(1),
        Just(8),
        Just(16),
        Just(32),
        any::<i16>()
    ];
    (
        prop::sample::select(codes),
        0u8..16,
        0u8..16,
        field_off,
        field_imm,
        prop_oneof![Just(0i32), any::<i32>()],
    )
        .prop_map(|(code, dst, src, off, imm, next)| {
            [
                Insn::new(code, dst, src, off, imm),
                Insn::new(0, 0, 0, 0, next),
            ]
        })
}

fn text_roundtrip(insn: &Instruction) -> Result<Vec<Insn>, TestCaseError> {
    let text = insn.to_string();
    let back = assemble(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
    Ok(encode_program(&back))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn typed_form_roundtrips(insn in instruction()) {
        let slots = insn.encode();
        prop_assert_eq!(decode_at(&slots, 0), Ok(insn));
        prop_assert_eq!(text_roundtrip(&insn)?, slots.to_vec());
    }

    #[test]
    fn every_accepted_encoding_roundtrips(pair in slot_pair()) {
        let n = if pair[0].is_ld_imm64() { 2 } else { 1 };
        if let Ok(insn) = decode_at(&pair[..n], 0) {
            prop_assert_eq!(insn.encode().to_vec(), pair[..n].to_vec());
            prop_assert_eq!(text_roundtrip(&insn)?, pair[..n].to_vec());
            // The log-line form (pc and opcode prefix) reads back too.
            let mut line = String::new();
            disasm::write_log_line(&mut line, 0, &insn, &disasm::NoSymbols).unwrap();
            prop_assert_eq!(asm::assemble(&line).map(|p| encode_program(&p)), Ok(pair[..n].to_vec()));
        }
    }

    #[test]
    fn random_slots_never_panic(raw in prop::collection::vec(any::<[u8; 8]>(), 0..8)) {
        let insns: Vec<Insn> = raw.into_iter().map(Insn::from_bytes).collect();
        if let Ok(prog) = decode_program(&insns) {
            let flat: Vec<Instruction> = prog.iter().map(|l| l.insn).collect();
            prop_assert_eq!(encode_program(&flat), insns);
        }
    }

    #[test]
    fn assembler_rejects_without_panicking(text in "(?s).{0,40}") {
        let _ = assemble(&text);
    }
}

#[test]
fn ld_imm64_needs_its_second_slot() {
    let first = Insn::new(BPF_LD | BPF_IMM | BPF_DW, 1, 0, 0, 7);
    let err = decode_program(&[first]).unwrap_err();
    assert_eq!(err.index, 0);
    assert_eq!(err.to_string(), "insn 0: invalid bpf_ld_imm64 insn");
}
