//! The JIT against the interpreter and against values the ISA definition
//! gives (Documentation/bpf/standardization/instruction-set.rst): every
//! ALU and JMP opcode on random operands, weighted towards the edges
//! (zero divisors, INT_MIN / -1, shifts at and past the width, values that
//! sign-extend), memory of every width, bpf-to-bpf calls, and the typed
//! decline for what the JIT does not compile.

use bpfvet_isa::asm::assemble_insns;
use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;
use bpfvet_vm::{Ctx, Decline, Engine, Interpreter, Jit, Run, Vm, VmError};
use proptest::prelude::*;

/// Runs `insns` with `engine` on `mem` (r1 = its address, r2 = its length).
fn run_with(engine: &dyn Engine, vm: &Vm, mem: &mut [u8]) -> Result<u64, VmError> {
    let mut run = Run::new(vm, Ctx::Bytes);
    let addr = mem.as_mut_ptr() as u64;
    if !mem.is_empty() {
        run.set_bytes_ctx(addr, mem.len(), true);
    }
    engine.execute(&mut run, 0, 0, [addr, mem.len() as u64, 0, 0, 0], 0)
}

/// r0 from the JIT, asserting the program was compiled (not declined).
fn jit_r0(insns: &[Insn], mem: &mut [u8]) -> Result<u64, VmError> {
    let vm = Vm::from_insns(insns, ProgType::SOCKET_FILTER).expect("decodes");
    let jit = Jit::compile(&vm);
    assert_eq!(jit.declined(0), None, "compiled");
    run_with(&jit, &vm, mem)
}

fn interp_r0(insns: &[Insn], mem: &mut [u8]) -> Result<u64, VmError> {
    let vm = Vm::from_insns(insns, ProgType::SOCKET_FILTER).expect("decodes");
    run_with(&Interpreter, &vm, mem)
}

fn asm_r0(src: &str) -> u64 {
    let insns = assemble_insns(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    jit_r0(&insns, &mut [0u8; 16]).unwrap_or_else(|e| panic!("{src}: {e}"))
}

#[test]
fn edge_values_follow_the_isa() {
    // DIV by zero is 0, MOD by zero keeps the dividend (32-bit: zero-extended).
    assert_eq!(asm_r0("r0 = 7\nr1 = 0\nr0 /= r1\nexit"), 0);
    assert_eq!(asm_r0("r0 = 7\nr1 = 0\nr0 %= r1\nexit"), 7);
    assert_eq!(asm_r0("r0 = -7\nr1 = 0\nr0 s%= r1\nexit"), -7i64 as u64);
    assert_eq!(asm_r0("r0 = -1\nw1 = 0\nw0 %= w1\nexit"), 0xffff_ffff);
    // INT_MIN / -1 wraps to INT_MIN, INT_MIN % -1 is 0.
    assert_eq!(
        asm_r0("r0 = 1\nr0 <<= 63\nr1 = -1\nr0 s/= r1\nexit"),
        1 << 63
    );
    assert_eq!(asm_r0("r0 = 1\nr0 <<= 63\nr1 = -1\nr0 s%= r1\nexit"), 0);
    assert_eq!(asm_r0("w0 = 1\nw0 <<= 31\nw0 s/= -1\nexit"), 0x8000_0000);
    // Shift amounts are masked to the operand's width.
    assert_eq!(asm_r0("r0 = 1\nr1 = 65\nr0 <<= r1\nexit"), 2);
    assert_eq!(asm_r0("w0 = 1\nw1 = 33\nw0 <<= w1\nexit"), 2);
    assert_eq!(asm_r0("r0 = -16\nr1 = 66\nr0 s>>= r1\nexit"), -4i64 as u64);
    // MOVSX, 32-bit results zero-extended, byte swaps.
    assert_eq!(asm_r0("r1 = 0x80\nr0 = (s8)r1\nexit"), -128i64 as u64);
    assert_eq!(asm_r0("r1 = 0xff\nw0 = (s8)w1\nexit"), 0xffff_ffff);
    assert_eq!(asm_r0("r0 = -1\nw0 += 1\nexit"), 0);
    assert_eq!(asm_r0("r0 = 0x1234\nr0 = be16 r0\nexit"), 0x3412);
    assert_eq!(
        asm_r0("r0 = 0x12345678\nr0 = bswap32 r0\nexit"),
        0x7856_3412
    );
    assert_eq!(asm_r0("r0 = -1\nr0 = le16 r0\nexit"), 0xffff);
}

#[test]
fn memory_of_every_width_and_sign_extending_loads() {
    let mut mem = [0x80, 0xff, 0x00, 0x80, 0x01, 0x02, 0x03, 0x04];
    let p = |s: &str| assemble_insns(s).unwrap();
    assert_eq!(
        jit_r0(&p("r0 = *(s8 *)(r1 +0)\nexit"), &mut mem).unwrap(),
        -128i64 as u64
    );
    assert_eq!(
        jit_r0(&p("r0 = *(s16 *)(r1 +0)\nexit"), &mut mem).unwrap(),
        -128i64 as u64
    );
    assert_eq!(
        jit_r0(&p("r0 = *(s32 *)(r1 +0)\nexit"), &mut mem).unwrap(),
        0xffff_ffff_8000_ff80
    );
    assert_eq!(
        jit_r0(&p("r0 = *(u64 *)(r1 +0)\nexit"), &mut mem).unwrap(),
        0x0403_0201_8000_ff80
    );
    // Stores through the context pointer and the stack, read back.
    let src = "r2 = 0x11223344\n*(u32 *)(r1 +4) = r2\n*(u16 *)(r10 -8) = 0x5566\nr0 = *(u16 *)(r10 -8)\nr3 = *(u8 *)(r1 +4)\nr0 += r3\nexit";
    assert_eq!(jit_r0(&p(src), &mut mem).unwrap(), 0x5566 + 0x44);
    assert_eq!(mem[4..8], [0x44, 0x33, 0x22, 0x11]);
    // Out of bounds: the interpreter's typed error, not a crash.
    let e = jit_r0(&p("r0 = *(u64 *)(r1 +8)\nexit"), &mut mem).unwrap_err();
    assert!(matches!(e, VmError::OutOfBounds { pc: 0, .. }), "{e}");
}

#[test]
fn bpf_to_bpf_calls_save_callee_registers_and_frames() {
    // main: r6 = 5, stores 1 on its frame, calls f(10); f stores 2 on its
    // own frame and returns r1 * 3 with r6 clobbered; main sees r6 and its
    // frame intact: 30 + 5 + 1.
    let src = "r6 = 5\n*(u64 *)(r10 -8) = 1\nr1 = 10\ncall pc+5\nr0 += r6\nr2 = *(u64 *)(r10 -8)\nr0 += r2\nexit\nexit\nr6 = 99\n*(u64 *)(r10 -8) = 2\nr0 = r1\nr0 *= 3\nexit";
    let insns = assemble_insns(src).unwrap();
    assert_eq!(jit_r0(&insns, &mut [0u8; 8]).unwrap(), 36);
    assert_eq!(interp_r0(&insns, &mut [0u8; 8]).unwrap(), 36);
}

#[test]
fn loops_run_and_endless_ones_stop() {
    let sum = "r0 = 0\nr1 = 100\nr0 += r1\nr1 -= 1\nif r1 != 0 goto pc-3\nexit";
    assert_eq!(asm_r0(sum), 5050);
    let insns = assemble_insns("r0 = 0\ngoto pc-1\nexit").unwrap();
    let vm = Vm::from_insns(&insns, ProgType::SOCKET_FILTER).unwrap();
    let jit = Jit::compile(&vm);
    let mut run = Run::new(&vm, Ctx::Bytes);
    run.insn_budget = 1000;
    let e = jit.execute(&mut run, 0, 0, [0; 5], 0).unwrap_err();
    assert!(matches!(e, VmError::InsnLimit(_)), "{e}");
}

#[test]
fn what_is_not_compiled_is_declined_and_still_runs() {
    // Writing r10 is left to the interpreter (compiled code keeps r10 fixed).
    let insns = assemble_insns("r10 = 0\nr0 = 3\nexit").unwrap();
    let vm = Vm::from_insns(&insns, ProgType::SOCKET_FILTER).unwrap();
    let jit = Jit::compile(&vm);
    assert_eq!(
        jit.declined(0),
        Some(&Decline::WritesFramePointer { pc: 0 })
    );
    assert_eq!(run_with(&jit, &vm, &mut []).unwrap(), 3);
    // An opcode the runtime does not know: declined, and the fallback
    // reports the interpreter's error.
    let bad = [
        Insn {
            code: 0x8f,
            dst: 0,
            src: 0,
            off: 0,
            imm: 0,
        },
        Insn {
            code: 0x95,
            dst: 0,
            src: 0,
            off: 0,
            imm: 0,
        },
    ];
    let vm = Vm::from_insns(&bad, ProgType::SOCKET_FILTER).unwrap();
    let jit = Jit::compile(&vm);
    assert_eq!(
        jit.declined(0),
        Some(&Decline::Opcode { pc: 0, code: 0x8f })
    );
    assert!(matches!(
        run_with(&jit, &vm, &mut []),
        Err(VmError::BadInsn { pc: 0, .. })
    ));
}

/// Values that hit the edge cases more often than uniform ones would.
fn operand() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::MAX),
        Just(i64::MIN as u64),
        Just(0x8000_0000),
        Just(0xffff_ffff),
        Just(0x7fff_ffff),
        0u64..130,
        any::<u64>(),
    ]
}

/// Immediates with the multipliers compiled code turns into shifts and
/// adds (x * 3, 5, 9) among arbitrary ones.
fn imm_operand() -> impl Strategy<Value = i32> {
    prop_oneof![Just(3), Just(5), Just(9), Just(-3), any::<i32>()]
}

const ALU_OPS: &[u8] = &[
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0,
];
const JMP_OPS: &[u8] = &[
    0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0xa0, 0xb0, 0xc0, 0xd0,
];

fn ld64(dst: u8, v: u64) -> [Insn; 2] {
    [
        Insn {
            code: 0x18,
            dst,
            src: 0,
            off: 0,
            imm: v as u32 as i32,
        },
        Insn {
            code: 0,
            dst: 0,
            src: 0,
            off: 0,
            imm: (v >> 32) as u32 as i32,
        },
    ]
}

fn exit() -> Insn {
    Insn {
        code: 0x95,
        dst: 0,
        src: 0,
        off: 0,
        imm: 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// r0 = a; r1 = b; r0 OP= (r1 or imm); exit, in both widths, with the
    /// signed (off=1) and sign-extending (MOVSX off=8/16/32) variants.
    #[test]
    fn alu_matches_interpreter(a in operand(), b in operand(), imm in imm_operand(),
                               op in prop::sample::select(ALU_OPS), wide in any::<bool>(),
                               use_reg in any::<bool>(), variant in 0usize..4) {
        let class = if wide { 0x07 } else { 0x04 };
        let code = op | class | if use_reg { 0x08 } else { 0 };
        let off = match op {
            0x30 | 0x90 => (variant % 2) as i16,
            0xb0 if use_reg => [0i16, 8, 16, 32][variant],
            _ => 0,
        };
        let imm = if op == 0x80 || use_reg { 0 } else { imm };
        let code = if op == 0x80 { 0x80 | class } else { code };
        let mut insns = Vec::new();
        insns.extend(ld64(0, a));
        insns.extend(ld64(1, b));
        insns.push(Insn { code, dst: 0, src: 1, off, imm });
        insns.push(exit());
        let want = interp_r0(&insns, &mut []);
        let got = jit_r0(&insns, &mut []);
        prop_assert_eq!(format!("{want:?}"), format!("{got:?}"), "code {:#x} off {}", code, off);
    }

    /// if r0 OP (r1 or imm) goto +1; r0 = 1; exit — both outcomes, both widths.
    #[test]
    fn jumps_match_interpreter(a in operand(), b in operand(), imm in any::<i32>(),
                               op in prop::sample::select(JMP_OPS), wide in any::<bool>(),
                               use_reg in any::<bool>()) {
        let code = op | if wide { 0x05 } else { 0x06 } | if use_reg { 0x08 } else { 0 };
        let mut insns = Vec::new();
        insns.extend(ld64(0, a));
        insns.extend(ld64(1, b));
        insns.push(Insn { code, dst: 0, src: 1, off: 1, imm: if use_reg { 0 } else { imm } });
        insns.push(Insn { code: 0xb7, dst: 0, src: 0, off: 0, imm: 1 });
        insns.push(exit());
        let want = interp_r0(&insns, &mut []).unwrap();
        let got = jit_r0(&insns, &mut []).unwrap();
        prop_assert_eq!(want, got, "code {:#x}", code);
    }

    /// Byte swaps and endianness conversions of every width.
    #[test]
    fn byte_swaps_match_interpreter(a in any::<u64>(), width in prop::sample::select(&[16i32, 32, 64][..]),
                                    code in prop::sample::select(&[0xd4u8, 0xdc, 0xd7][..])) {
        let mut insns = Vec::new();
        insns.extend(ld64(0, a));
        insns.push(Insn { code, dst: 0, src: 0, off: 0, imm: width });
        insns.push(exit());
        prop_assert_eq!(interp_r0(&insns, &mut []).unwrap(), jit_r0(&insns, &mut []).unwrap());
    }
}

/// Every program of tests/progs: compiled, or declined for a reason listed
/// here (crates/vm/src/jit/README.md lists the same).
#[test]
fn test_progs_compile_or_decline_as_documented() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/progs")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".bpf.o"))
        .collect();
    files.sort();
    let (mut compiled, mut declined) = (0, Vec::new());
    for f in &files {
        let obj = bpfvet_object::Object::from_file(f, &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let vm = match Vm::load(&obj) {
            Ok(vm) => vm,
            Err(e) => {
                println!("{}: the runtime does not load it: {e}", f.display());
                continue;
            }
        };
        let jit = Jit::compile(&vm);
        for (i, p) in vm.programs.iter().enumerate() {
            match (jit.declined(i), &obj.programs[i].refused) {
                (None, None) => compiled += 1,
                // A program the loader refused has no code to compile.
                (Some(_), Some(_)) => {}
                (None, Some(why)) => {
                    declined.push(format!("{}: compiled though refused: {why}", p.name))
                }
                (Some(why), None) => declined.push(format!("{}: {why}", p.name)),
            }
        }
    }
    println!("compiled {compiled}; declined: {declined:#?}");
    assert!(compiled > 50, "most programs compile ({compiled})");
    assert_eq!(declined, Vec::<String>::new());
}

/// One random ALU instruction on r0..r4 (any opcode, either width, register
/// or immediate source), as (code, dst, src, off, imm).
fn alu_insn() -> impl Strategy<Value = Insn> {
    (
        prop::sample::select(ALU_OPS),
        any::<bool>(),
        any::<bool>(),
        0u8..5,
        0u8..5,
        imm_operand(),
        0usize..4,
    )
        .prop_map(|(op, wide, use_reg, dst, src, imm, variant)| {
            let class = if wide { 0x07 } else { 0x04 };
            let (code, imm) = match op {
                0x80 => (0x80 | class, 0),
                _ if use_reg => (op | class | 0x08, 0),
                _ => (op | class, imm),
            };
            let off = match op {
                0x30 | 0x90 => (variant % 2) as i16,
                0xb0 if use_reg && wide => [0i16, 8, 16, 32][variant],
                0xb0 if use_reg => [0i16, 8, 16, 0][variant],
                _ => 0,
            };
            Insn {
                code,
                dst,
                src,
                off,
                imm,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Straight-line programs of up to 24 ALU instructions over five live
    /// registers, then r0 ^= r1..r4: the values flowing between
    /// instructions (not only one operation) agree with the interpreter.
    #[test]
    fn alu_sequences_match_interpreter(init in prop::collection::vec(operand(), 5),
                                       body in prop::collection::vec(alu_insn(), 1..24)) {
        let mut insns = Vec::new();
        for (r, v) in init.iter().enumerate() {
            insns.extend(ld64(r as u8, *v));
        }
        insns.extend(body);
        for r in 1..5 {
            insns.push(Insn { code: 0xaf, dst: 0, src: r, off: 0, imm: 0 });
        }
        insns.push(exit());
        prop_assert_eq!(interp_r0(&insns, &mut []).unwrap(), jit_r0(&insns, &mut []).unwrap());
    }
}

#[repr(align(8))]
struct Aligned([u8; 16]);

const ATOMIC_IMMS: &[i32] = &[
    0x00, 0x01, 0x40, 0x41, 0x50, 0x51, 0xa0, 0xa1, 0xe1, 0xf1, 0x100, 0x110, 0xe0, 0x30,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Every atomic operation, 32- and 64-bit, on context memory at an
    /// aligned or misaligned offset: r0, r2 (the fetched value) and the
    /// memory agree with the interpreter, errors included (misaligned,
    /// unknown operation).
    #[test]
    fn atomics_match_interpreter(mem0 in any::<u64>(), b in operand(), c in operand(),
                                 imm in prop::sample::select(ATOMIC_IMMS), wide in any::<bool>(),
                                 off in prop::sample::select(&[0i16, 4, 2][..])) {
        let code = if wide { 0xdb } else { 0xc3 };
        let mut insns = Vec::new();
        insns.extend(ld64(2, b));
        insns.extend(ld64(0, c));
        insns.push(Insn { code, dst: 1, src: 2, off, imm });
        insns.push(Insn { code: 0xaf, dst: 0, src: 2, off: 0, imm: 0 });
        insns.push(exit());
        let mut m1 = Aligned([0u8; 16]);
        m1.0[..8].copy_from_slice(&mem0.to_le_bytes());
        let mut m2 = Aligned(m1.0);
        // The two buffers' addresses differ: compare errors by kind.
        let kind = |r: Result<u64, VmError>| match r {
            Ok(v) => format!("{v}"),
            Err(e) => format!("{e:?}").split([' ', '(']).next().unwrap_or("").to_string(),
        };
        let want = kind(interp_r0(&insns, &mut m1.0));
        let got = kind(jit_r0(&insns, &mut m2.0));
        prop_assert_eq!(want, got);
        prop_assert_eq!(m1.0, m2.0);
    }
}

/// A random instruction of a program the JIT compiles: every class, r10
/// only as a load/store base, r1 (the context) as the other base, jumps of
/// a few slots either way, calls to deterministic helpers.
fn compiled_insn() -> impl Strategy<Value = Insn> {
    let codes = prop::sample::select(vec![
        0x07u8, 0x0f, 0x17, 0x1f, 0x27, 0x37, 0x3f, 0x47, 0x57, 0x67, 0x6f, 0x77, 0x7f, 0x87, 0x97,
        0x9f, 0xa7, 0xb7, 0xbf, 0xc7, 0xcf, 0xd7, 0x04, 0x0c, 0x14, 0x24, 0x34, 0x3c, 0x64, 0x74,
        0x84, 0x94, 0x9c, 0xb4, 0xbc, 0xc4, 0xd4, 0xdc, 0x05, 0x15, 0x1d, 0x25, 0x2d, 0x45, 0x55,
        0x65, 0x6d, 0xa5, 0xb5, 0xc5, 0xd5, 0x16, 0x2e, 0x66, 0xa6, 0xde, 0xe5, 0x85, 0x95, 0x61,
        0x69, 0x71, 0x79, 0x81, 0x89, 0x91, 0x62, 0x6a, 0x72, 0x7a, 0x63, 0x6b, 0x73, 0x7b, 0xc3,
        0xdb,
    ]);
    (
        codes,
        0u8..10,
        0u8..10,
        -3i16..6,
        prop_oneof![-3i32..70, any::<i32>()],
        any::<bool>(),
    )
        .prop_map(|(code, dst, src, off, imm, stack)| {
            let base = if stack { 10 } else { 1 };
            let (dst, src, off, imm) = match code & 7 {
                1 => (
                    dst,
                    base,
                    if stack { -8 * (off.abs() + 1) } else { off * 2 },
                    0,
                ),
                2 | 3 => (
                    base,
                    src,
                    if stack { -8 * (off.abs() + 1) } else { off * 2 },
                    imm,
                ),
                // map_lookup/update/delete, trace_printk,
                // get_smp_processor_id: helpers with deterministic results.
                _ if code == 0x85 => (0, 0, 0, [1, 2, 3, 6, 8][imm.rem_euclid(5) as usize]),
                _ => (dst, src, off, imm),
            };
            let imm = match code {
                0xc3 | 0xdb => {
                    [0x00, 0x01, 0x40, 0x51, 0xa1, 0xe1, 0xf1][imm.rem_euclid(7) as usize]
                }
                0xd7 | 0xd4 | 0xdc => [16, 32, 64][imm.rem_euclid(3) as usize],
                _ => imm,
            };
            Insn {
                code,
                dst,
                src,
                off,
                imm,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Random programs the JIT compiles, on random context memory: r0 (or
    /// the error's kind and instruction) and the memory after the run are
    /// the interpreter's.
    #[test]
    fn random_programs_match_interpreter(body in prop::collection::vec(compiled_insn(), 1..16),
                                         mut memory in prop::collection::vec(any::<u8>(), 16..48)) {
        let mut insns = body;
        insns.push(exit());
        let Ok(vm) = Vm::from_insns(&insns, ProgType::SOCKET_FILTER) else { return Ok(()) };
        let jit = Jit::compile(&vm);
        prop_assert_eq!(jit.declined(0), None);
        let initial = memory.clone();
        let run = |engine: &dyn Engine, memory: &mut Vec<u8>| {
            let mut run = Run::new(&vm, Ctx::Bytes);
            run.insn_budget = 20_000;
            let addr = memory.as_mut_ptr() as u64;
            run.set_bytes_ctx(addr, memory.len(), true);
            let r = engine.execute(&mut run, 0, 0, [addr, memory.len() as u64, 0, 0, 0], 0);
            match r {
                Ok(v) => format!("{v}"),
                Err(e) => format!("{e:?}").split([' ', '(']).next().unwrap_or("").to_string(),
            }
        };
        let want = run(&Interpreter, &mut memory);
        let after_interpreter = memory.clone();
        memory.copy_from_slice(&initial);
        let got = run(&jit, &mut memory);
        if want != "InsnLimit" {
            prop_assert_eq!(want, got);
            prop_assert_eq!(after_interpreter, memory);
        }
    }
}

/// main calls a subprogram that tail-calls slot 0 of a PROG_ARRAY and
/// would return 7 on fall-through; main adds 100 to what the call returns.
/// The target returns 5.
fn tail_call_from_subprogram(slot_filled: bool) -> Vm {
    let i = |code, dst, src, off, imm| Insn {
        code,
        dst,
        src,
        off,
        imm,
    };
    let main = [
        i(0xbf, 6, 1, 0, 0),   // r6 = r1
        i(0x85, 0, 1, 0, 2),   // call pc+2 (the subprogram at 4)
        i(0x07, 0, 0, 0, 100), // r0 += 100
        exit(),
        i(0xbf, 1, 6, 0, 0),                                      // r1 = r6
        i(0x18, 2, bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX, 0, 0), // r2 = map 0
        i(0, 0, 0, 0, 0),
        i(0xb7, 3, 0, 0, 0),  // r3 = 0
        i(0x85, 0, 0, 0, 12), // bpf_tail_call
        i(0xb7, 0, 0, 0, 7),
        exit(),
    ];
    with_tail_call_target(&main, slot_filled)
}

/// A socket filter of `main` with a PROG_ARRAY as map 0 whose slot 0,
/// when `slot_filled`, holds a second program that returns 5.
fn with_tail_call_target(main: &[Insn], slot_filled: bool) -> Vm {
    let mut vm = Vm::from_insns(main, ProgType::SOCKET_FILTER).unwrap();
    let target = [
        Insn {
            code: 0xb7,
            dst: 0,
            src: 0,
            off: 0,
            imm: 5,
        },
        exit(),
    ];
    let mut target = Vm::from_insns(&target, ProgType::SOCKET_FILTER).unwrap();
    vm.programs.push(target.programs.remove(0));
    let attr = bpfvet_maps::MapAttr::new(bpfvet_isa::uapi::MapType::PROG_ARRAY, 4, 4, 4);
    let m = bpfvet_maps::create(attr).unwrap();
    if slot_filled {
        let pa = m.as_any().downcast_ref::<bpfvet_maps::ProgArray>().unwrap();
        pa.set(0, 1, 0).unwrap();
    }
    vm.maps.push(m);
    vm
}

#[test]
fn tail_call_in_a_subprogram_returns_to_the_caller() {
    // The target replaces the subprogram's frame: its r0 (5) comes back to
    // main's call site, 105; an empty slot falls through to 7, 107.
    for (filled, want) in [(true, 105), (false, 107)] {
        let vm = tail_call_from_subprogram(filled);
        let jit = Jit::compile(&vm);
        assert_eq!(jit.declined(0), None);
        assert_eq!(run_with(&Interpreter, &vm, &mut []).unwrap(), want);
        assert_eq!(run_with(&jit, &vm, &mut []).unwrap(), want);
    }
}

/// r0 of `src` as a `prog_type` program run by test_run on a 64-byte
/// frame, with the interpreter and with the JIT (which must compile it).
fn test_run_both(src: &str, prog_type: ProgType) -> (u32, u32) {
    let insns = assemble_insns(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    let vm = Vm::from_insns(&insns, prog_type).expect("decodes");
    let jit = Jit::compile(&vm);
    assert_eq!(jit.declined(0), None, "compiled");
    let frame = [0u8; 64];
    let input = bpfvet_vm::TestRunInput {
        data: &frame,
        ctx: None,
        repeat: 3,
        cpu: 0,
    };
    let interp = bpfvet_vm::test_run(&vm, 0, &input).expect("interpreter runs");
    let native = bpfvet_vm::test_run_with(&jit, &vm, 0, &input).expect("jit runs");
    (interp.retval, native.retval)
}

#[test]
fn context_fields_are_read_again_after_a_helper_moves_the_packet() {
    // ctx->data read twice (the second time from compiled code's cache),
    // then bpf_xdp_adjust_head moves it by 4: the third read sees that.
    let src = "r6 = r1\nr7 = *(u32 *)(r6 +0)\nr8 = *(u32 *)(r6 +0)\n\
               r1 = r6\nr2 = 4\ncall bpf_xdp_adjust_head#44\n\
               r0 = *(u32 *)(r6 +0)\nr0 -= r7\nr8 -= r7\nr0 += r8\nexit";
    // Each of the 3 repeats moves data by 4 more; the difference stays 4.
    assert_eq!(test_run_both(src, ProgType::XDP), (4, 4));
}

#[test]
fn context_fields_are_read_again_after_a_context_store() {
    // skb->mark read, written one higher, read again.
    let src = "r2 = *(u32 *)(r1 +8)\nr3 = r2\nr3 += 1\n*(u32 *)(r1 +8) = r3\n\
               r0 = *(u32 *)(r1 +8)\nr0 += r2\nexit";
    // The mark persists across the 3 repeats: the last reads 2, writes 3.
    assert_eq!(test_run_both(src, ProgType::SCHED_CLS), (5, 5));
}

#[test]
fn a_context_field_the_type_lacks_fails_alike() {
    // xdp_md has no field at offset 28: both engines fail the load there,
    // naming the instruction, after a cached read of a valid field.
    let src = "r2 = *(u32 *)(r1 +4)\nr2 = *(u32 *)(r1 +4)\nr0 = *(u32 *)(r1 +28)\nexit";
    let insns = assemble_insns(src).expect("assembles");
    let vm = Vm::from_insns(&insns, ProgType::XDP).expect("decodes");
    let jit = Jit::compile(&vm);
    assert_eq!(jit.declined(0), None, "compiled");
    let frame = [0u8; 64];
    let input = bpfvet_vm::TestRunInput {
        data: &frame,
        ..Default::default()
    };
    let interp = bpfvet_vm::test_run(&vm, 0, &input).map(|o| o.retval);
    let native = bpfvet_vm::test_run_with(&jit, &vm, 0, &input).map(|o| o.retval);
    assert!(
        matches!(
            interp,
            Err(VmError::CtxAccess {
                pc: 2,
                off: 28,
                size: 4
            })
        ),
        "{interp:?}"
    );
    assert_eq!(format!("{interp:?}"), format!("{native:?}"));
}

/// An XDP object of `insns` with one ARRAY map (4-byte key, 8-byte value,
/// one entry) with `map_flags`; (interpreter, JIT) results of one run.
fn one_array_map_run(
    insns: Vec<Insn>,
    map_flags: u32,
) -> (Result<u32, VmError>, Result<u32, VmError>) {
    let mut obj = bpfvet_object::Object::single_program("prog", ProgType::XDP, insns);
    obj.maps = vec![bpfvet_object::MapDef {
        map_flags,
        ..bpfvet_object::MapDef::new("values", bpfvet_isa::uapi::MapType::ARRAY, 4, 8, 1)
    }];
    let vm = Vm::load(&obj).expect("loads");
    let jit = Jit::compile(&vm);
    assert_eq!(jit.declined(0), None, "compiled");
    let frame = [0u8; 64];
    let input = bpfvet_vm::TestRunInput {
        data: &frame,
        ..Default::default()
    };
    (
        bpfvet_vm::test_run(&vm, 0, &input).map(|o| o.retval),
        bpfvet_vm::test_run_with(&jit, &vm, 0, &input).map(|o| o.retval),
    )
}

#[test]
fn writes_to_global_data_follow_the_regions_the_run_was_handed() {
    use bpfvet_isa::opcode::{BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE};
    // Writes through the value's constant address (a store and an atomic
    // add), before and after a lookup of the same map.
    let prog = |lookup_first: bool| {
        let mut v = vec![
            Insn::new(0x62, 10, 0, -4, 0), // *(u32 *)(r10 -4) = 0
        ];
        if lookup_first {
            v.extend([
                Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, 0), // r1 = &values
                Insn::new(0, 0, 0, 0, 0),
                Insn::new(0xbf, 2, 10, 0, 0), // r2 = r10
                Insn::new(0x07, 2, 0, 0, -4), // r2 += -4
                Insn::new(0x85, 0, 0, 0, 1),  // call bpf_map_lookup_elem
            ]);
        }
        v.extend([
            Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX_VALUE, 0, 0), // r1 = &values[0]
            Insn::new(0, 0, 0, 0, 0),
            Insn::new(0xb7, 2, 0, 0, 5), // r2 = 5
            Insn::new(0xdb, 1, 2, 0, 0), // lock *(u64 *)(r1 +0) += r2
            Insn::new(0x7b, 1, 2, 0, 0), // *(u64 *)(r1 +0) = r2
            Insn::new(0x79, 0, 1, 0, 0), // r0 = *(u64 *)(r1 +0)
            Insn::new(0x95, 0, 0, 0, 0), // exit
        ]);
        v
    };
    let rdonly = bpfvet_isa::uapi::BPF_F_RDONLY_PROG;
    // A writable map: both writes land.
    let (i, j) = one_array_map_run(prog(true), 0);
    assert_eq!((i.as_ref().ok(), j.as_ref().ok()), (Some(&5), Some(&5)));
    // Read-only to programs, not frozen: the run's check lets the writes
    // through until a lookup hands the program the value read-only.
    let (i, j) = one_array_map_run(prog(false), rdonly);
    assert_eq!((i.as_ref().ok(), j.as_ref().ok()), (Some(&5), Some(&5)));
    let (i, j) = one_array_map_run(prog(true), rdonly);
    assert!(i.is_err(), "{i:?}");
    assert_eq!(format!("{i:?}"), format!("{j:?}"));
}

#[test]
fn writes_through_a_looked_up_value_follow_its_region() {
    use bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX;
    // r0 = lookup(values, 0); a load, a store and an atomic through r0.
    let prog = vec![
        Insn::new(0x62, 10, 0, -4, 0),                // *(u32 *)(r10 -4) = 0
        Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, 0), // r1 = &values
        Insn::new(0, 0, 0, 0, 0),
        Insn::new(0xbf, 2, 10, 0, 0), // r2 = r10
        Insn::new(0x07, 2, 0, 0, -4), // r2 += -4
        Insn::new(0x85, 0, 0, 0, 1),  // call bpf_map_lookup_elem
        Insn::new(0x79, 3, 0, 0, 0),  // r3 = *(u64 *)(r0 +0)
        Insn::new(0xb7, 2, 0, 0, 3),  // r2 = 3
        Insn::new(0xdb, 0, 2, 0, 0),  // lock *(u64 *)(r0 +0) += r2
        Insn::new(0x7b, 0, 2, 4, 0),  // *(u64 *)(r0 +4) = r2: past the value
        Insn::new(0x95, 0, 0, 0, 0),  // exit
    ];
    // Writable: the store 4 bytes in runs past the 8-byte value.
    let (i, j) = one_array_map_run(prog.clone(), 0);
    assert!(
        matches!(i, Err(VmError::OutOfBounds { pc: 9, .. })),
        "{i:?}"
    );
    assert_eq!(format!("{i:?}"), format!("{j:?}"));
    // Read-only to programs: the atomic fails first.
    let (i, j) = one_array_map_run(prog, bpfvet_isa::uapi::BPF_F_RDONLY_PROG);
    assert!(i.is_err(), "{i:?}");
    assert_eq!(format!("{i:?}"), format!("{j:?}"));
}

#[test]
fn a_context_store_the_type_refuses_fails_alike() {
    // __sk_buff's len (offset 0) is read-only: the store fails in both
    // engines after the mark, read and cached, was written.
    let src = "r2 = *(u32 *)(r1 +8)\n*(u32 *)(r1 +8) = 3\nr3 = *(u32 *)(r1 +32)\n\
               *(u32 *)(r1 +0) = 1\nr0 = 0\nexit";
    let insns = assemble_insns(src).expect("assembles");
    let vm = Vm::from_insns(&insns, ProgType::SCHED_CLS).expect("decodes");
    let jit = Jit::compile(&vm);
    assert_eq!(jit.declined(0), None, "compiled");
    let frame = [0u8; 64];
    let input = bpfvet_vm::TestRunInput {
        data: &frame,
        ..Default::default()
    };
    let interp = bpfvet_vm::test_run(&vm, 0, &input).map(|o| o.retval);
    let native = bpfvet_vm::test_run_with(&jit, &vm, 0, &input).map(|o| o.retval);
    assert!(
        matches!(
            interp,
            Err(VmError::CtxAccess {
                pc: 3,
                off: 0,
                size: 4
            })
        ),
        "{interp:?}"
    );
    assert_eq!(format!("{interp:?}"), format!("{native:?}"));
}

#[test]
fn a_tail_call_into_the_interpreter_leaves_the_next_run_fresh_bounds() {
    use bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX;
    // main (compiled) reads the packet length through ctx, keeps it on
    // the stack and tail-calls `target`, which the JIT declines (it
    // writes r10), so it runs on the interpreter: it moves the packet
    // start by 4 and returns 1000 * its length + main's. Each of the 3
    // repeats must see the packet the previous one left.
    let main = vec![
        Insn::new(0xbf, 6, 1, 0, 0),                  // r6 = r1
        Insn::new(0x61, 2, 6, 0, 0),                  // r2 = ctx->data
        Insn::new(0x61, 3, 6, 4, 0),                  // r3 = ctx->data_end
        Insn::new(0x1f, 3, 2, 0, 0),                  // r3 -= r2
        Insn::new(0x7b, 10, 3, -8, 0),                // *(u64 *)(r10 -8) = r3
        Insn::new(0xbf, 1, 6, 0, 0),                  // r1 = r6
        Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, 0), // r2 = &jmp_table
        Insn::new(0, 0, 0, 0, 0),
        Insn::new(0xb7, 3, 0, 0, 0),  // r3 = 0
        Insn::new(0x85, 0, 0, 0, 12), // call bpf_tail_call
        Insn::new(0xb7, 0, 0, 0, 0),  // r0 = 0
        Insn::new(0x95, 0, 0, 0, 0),  // exit
    ];
    let target = vec![
        Insn::new(0xbf, 10, 10, 0, 0),  // r10 = r10: not compiled
        Insn::new(0xbf, 6, 1, 0, 0),    // r6 = r1
        Insn::new(0xb7, 2, 0, 0, 4),    // r2 = 4
        Insn::new(0x85, 0, 0, 0, 44),   // call bpf_xdp_adjust_head
        Insn::new(0x61, 2, 6, 0, 0),    // r2 = ctx->data
        Insn::new(0x61, 0, 6, 4, 0),    // r0 = ctx->data_end
        Insn::new(0x1f, 0, 2, 0, 0),    // r0 -= r2
        Insn::new(0x27, 0, 0, 0, 1000), // r0 *= 1000
        Insn::new(0x79, 3, 10, -8, 0),  // r3 = *(u64 *)(r10 -8)
        Insn::new(0x0f, 0, 3, 0, 0),    // r0 += r3
        Insn::new(0x95, 0, 0, 0, 0),    // exit
    ];
    let mut obj = bpfvet_object::Object::single_program("main", ProgType::XDP, main);
    let mut second = obj.programs[0].clone();
    second.name = "target".into();
    second.insns = target;
    obj.programs.push(second);
    obj.maps = vec![bpfvet_object::MapDef {
        init: bpfvet_object::MapInit::Programs(vec![(0, 1)]),
        ..bpfvet_object::MapDef::new("jmp_table", bpfvet_isa::uapi::MapType::PROG_ARRAY, 4, 4, 1)
    }];
    let vm = Vm::load(&obj).expect("loads");
    let jit = Jit::compile(&vm);
    assert_eq!(jit.declined(0), None, "main compiled");
    assert!(jit.declined(1).is_some(), "target declined");
    let frame = [0u8; 64];
    let input = bpfvet_vm::TestRunInput {
        data: &frame,
        repeat: 3,
        ..Default::default()
    };
    let interp = bpfvet_vm::test_run(&vm, 0, &input).map(|o| o.retval);
    let native = bpfvet_vm::test_run_with(&jit, &vm, 0, &input).map(|o| o.retval);
    // The third run: main sees 64 - 8 bytes, target 64 - 12.
    assert_eq!(interp.as_ref().ok(), Some(&52_056), "{interp:?}");
    assert_eq!(format!("{interp:?}"), format!("{native:?}"));
}

/// An object of `src` with one ARRAY map `values` (4-byte key,
/// 16-byte value, 2 entries); per engine (interpreter, JIT with every
/// check, JIT and interpreter using the verifier's proof), each run's retval and output
/// frame over `frames` and the map's values afterwards.
fn engines_agree_on_a_verified_program(src: &str, prog_type: ProgType, frames: &[Vec<u8>]) {
    engines_agree_with_entries(src, prog_type, frames, 2);
}

/// [`engines_agree_on_a_verified_program`] with a map of `entries` values.
fn engines_agree_with_entries(src: &str, prog_type: ProgType, frames: &[Vec<u8>], entries: u32) {
    let insns = assemble_insns(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    let mut obj = bpfvet_object::Object::single_program("prog", prog_type, insns);
    obj.maps = vec![bpfvet_object::MapDef::new(
        "values",
        bpfvet_isa::uapi::MapType::ARRAY,
        4,
        16,
        entries,
    )];
    let mut results = Vec::new();
    for engine in ["interpreter", "checked", "proven", "proven interpreter"] {
        let mut vm = Vm::load(&obj).expect("loads");
        if engine.starts_with("proven") {
            vm.verify_program(&obj, 0).expect("the verifier accepts it");
            assert!(!vm.programs[0].proof.is_empty(), "the proof was kept");
        }
        let vm = vm;
        let jit = match engine {
            "checked" => Some(Jit::compile_checked(&vm)),
            "proven" => Some(Jit::compile(&vm)),
            _ => None,
        };
        let mut out = Vec::new();
        for data in frames {
            let input = bpfvet_vm::TestRunInput {
                data,
                repeat: 3,
                ..Default::default()
            };
            let r = match &jit {
                Some(j) => {
                    assert_eq!(j.declined(0), None, "compiled");
                    bpfvet_vm::test_run_with(j, &vm, 0, &input)
                }
                None => bpfvet_vm::test_run(&vm, 0, &input),
            };
            out.push(format!(
                "{:?}",
                r.map(|o| (o.retval, o.data_out, o.ctx_out))
            ));
        }
        for k in 0..entries {
            let mut v = [0u8; 16];
            vm.maps[0]
                .lookup(&k.to_le_bytes(), &mut v, 0)
                .expect("value");
            out.push(format!("{v:02x?}"));
        }
        results.push((engine, out));
    }
    for (engine, out) in &results[1..] {
        assert_eq!(&results[0].1, out, "interpreter vs {engine} JIT on\n{src}");
    }
}

fn frames() -> Vec<Vec<u8>> {
    let mut long = vec![0u8; 64];
    long[12] = 0x08;
    long[13] = 0x06;
    let mut short = vec![0xabu8; 14];
    short[13] = 1;
    vec![long, short]
}

#[test]
fn proven_accesses_compile_to_plain_memory_and_agree() {
    // Context fields, packet loads and a store, the stack through a
    // pointer, a looked-up map value (load, store, atomic add), all
    // proven by the verifier.
    engines_agree_on_a_verified_program(
        "r6 = r1
         r2 = *(u32 *)(r6 +0)
         r3 = *(u32 *)(r6 +4)
         r4 = r2
         r4 += 14
         r0 = 1
         if r4 > r3 goto pc+26
         r7 = *(u8 *)(r2 +12)
         r8 = *(u8 *)(r2 +13)
         *(u8 *)(r2 +0) = r8
         *(u16 *)(r2 +2) = 0x1234
         r1 = r10
         r1 += -16
         *(u64 *)(r1 +0) = r7
         *(u32 *)(r10 -4) = 0
         if r8 == 0x6 goto pc+1
         *(u32 *)(r10 -4) = 1
         r1 = map_idx[0]
         r2 = r10
         r2 += -4
         call bpf_map_lookup_elem#1
         r1 = r0
         r0 = 2
         if r1 == 0x0 goto pc+8
         r5 = *(u64 *)(r1 +0)
         r5 += r7
         *(u64 *)(r1 +0) = r5
         r4 = 3
         lock *(u64 *)(r1 +8) += r4
         r9 = *(u64 *)(r10 -16)
         r0 = *(u32 *)(r1 +8)
         r0 += r9
         exit",
        ProgType::XDP,
        &frames(),
    );
}

#[test]
fn a_proof_is_kept_only_for_the_code_it_was_made_for() {
    let src = "r0 = *(u32 *)(r1 +0)
               r0 = 2
               exit";
    let obj =
        bpfvet_object::Object::single_program("prog", ProgType::XDP, assemble_insns(src).unwrap());
    let other = bpfvet_object::Object::single_program(
        "prog",
        ProgType::XDP,
        assemble_insns("r0 = *(u32 *)(r1 +4)\nr0 = 2\nexit").unwrap(),
    );
    let proof = Vm::verify(&other, 0).expect("verifies");
    let mut vm = Vm::load(&obj).expect("loads");
    assert!(!vm.set_proof(0, proof), "another program's proof");
    assert!(vm.programs[0].proof.is_empty());
    let mut vm_other = Vm::load(&other).expect("loads");
    assert!(
        vm_other.verify_program(&obj, 0).is_err(),
        "not this VM's code"
    );
    assert!(vm_other.programs[0].proof.is_empty());
    vm.verify_program(&obj, 0).expect("verifies");
    assert!(!vm.programs[0].proof.is_empty());
}

#[test]
fn compiled_array_lookups_hand_helpers_a_registered_value() {
    // Key 1 looked up (computed by compiled code), written, and handed to
    // bpf_map_update_elem as the value for key 0 (the helper checks it
    // against the run's regions); then a key past the array (NULL).
    engines_agree_on_a_verified_program(
        "*(u32 *)(r10 -4) = 1
         r1 = map_idx[0]
         r2 = r10
         r2 += -4
         call bpf_map_lookup_elem#1
         r6 = r0
         r0 = 7
         if r6 == 0x0 goto pc+22
         *(u64 *)(r6 +0) = 42
         *(u64 *)(r6 +8) = 43
         *(u32 *)(r10 -8) = 0
         r1 = map_idx[0]
         r2 = r10
         r2 += -8
         r3 = r6
         r4 = 0
         call bpf_map_update_elem#2
         r7 = r0
         *(u32 *)(r10 -4) = 9
         r1 = map_idx[0]
         r2 = r10
         r2 += -4
         call bpf_map_lookup_elem#1
         r1 = 5
         if r0 == 0x0 goto pc+1
         r1 = 6
         r0 = r1
         r0 += r7
         exit",
        ProgType::XDP,
        &frames(),
    );
}

#[test]
fn lookups_in_a_one_entry_array_find_its_static_value() {
    // The only value (key 0, memory of every run) looked up, written
    // and handed to bpf_map_update_elem; keys 1 and 0x80000000 find
    // nothing. Compiled code computes these lookups without the helper.
    engines_agree_with_entries(
        "*(u32 *)(r10 -4) = 0
         r1 = map_idx[0]
         r2 = r10
         r2 += -4
         call bpf_map_lookup_elem#1
         r6 = r0
         r0 = 7
         if r6 == 0x0 goto pc+35
         r1 = *(u64 *)(r6 +0)
         r1 += 40
         *(u64 *)(r6 +0) = r1
         *(u64 *)(r6 +8) = 43
         *(u32 *)(r10 -8) = 0
         r1 = map_idx[0]
         r2 = r10
         r2 += -8
         r3 = r6
         r4 = 0
         call bpf_map_update_elem#2
         r7 = r0
         *(u32 *)(r10 -4) = 1
         r1 = map_idx[0]
         r2 = r10
         r2 += -4
         call bpf_map_lookup_elem#1
         r1 = 5
         if r0 == 0x0 goto pc+1
         r1 = 6
         r7 += r1
         *(u32 *)(r10 -4) = -2147483648
         r1 = map_idx[0]
         r2 = r10
         r2 += -4
         call bpf_map_lookup_elem#1
         r1 = 50
         if r0 == 0x0 goto pc+1
         r1 = 60
         r7 += r1
         r0 = *(u32 *)(r6 +0)
         r0 += r7
         exit",
        ProgType::XDP,
        &frames(),
        1,
    );
}

#[test]
fn proven_context_stores_set_the_field_and_drop_its_cached_value() {
    // tc: mark read (cached), written, read again; cb[1], priority and
    // tc_classid written directly; a load of mark after each.
    engines_agree_on_a_verified_program(
        "r6 = r1
         r2 = *(u32 *)(r6 +8)
         r2 += 5
         *(u32 *)(r6 +8) = r2
         r3 = *(u32 *)(r6 +8)
         *(u32 *)(r6 +52) = r3
         r4 = *(u32 *)(r6 +0)
         *(u32 *)(r6 +32) = r4
         *(u32 *)(r6 +72) = r4
         r0 = *(u32 *)(r6 +52)
         r5 = *(u32 *)(r6 +72)
         r0 += r5
         r5 = *(u32 *)(r6 +8)
         r0 += r5
         exit",
        ProgType::SCHED_CLS,
        &frames(),
    );
}

/// r0, or the error, of `src` (r1 = 16 zeroed bytes) on the interpreter and
/// on the JIT, which must compile it.
fn both_engines(src: &str) -> (String, String) {
    let insns = assemble_insns(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    let show = |r: Result<u64, VmError>| format!("{r:?}");
    (
        show(interp_r0(&insns, &mut [0u8; 16])),
        show(jit_r0(&insns, &mut [0u8; 16])),
    )
}

#[test]
fn inlined_calls_give_back_the_callers_registers_on_every_path() {
    // A loop calls f three times; the instruction after the call is also
    // reached by a jump that skips the call (r6 == 2). f clobbers r6 and
    // r8, leaves by either of two exits, and calls g with a pointer into
    // its own frame, which g writes: 1040 + 1040 (r0 kept when the call is
    // skipped) + 1, then + r8 = 100.
    let src = "r6 = 3
               r7 = 0
               r8 = 100
               if r6 == 0 goto pc+6
               if r6 == 2 goto pc+2
               r1 = r6
               call pc+6
               r7 += r0
               r6 -= 1
               goto pc-7
               r0 = r7
               r0 += r8
               exit
               r6 = 1000
               r8 = 7
               if r1 > 1 goto pc+2
               r0 = r1
               exit
               *(u64 *)(r10 -8) = 0
               r1 = r10
               r1 += -8
               call pc+3
               r0 = *(u64 *)(r10 -8)
               r0 += r6
               exit
               *(u64 *)(r1 +0) = 40
               r0 = 0
               exit";
    let (interp, jit) = both_engines(src);
    assert_eq!(interp, "Ok(2181)");
    assert_eq!(jit, interp);
}

#[test]
fn calls_stop_at_the_frame_limit_alike() {
    // f(n) calls f(n - 1) down to 0: six nested calls reach frame 7, the
    // last there is; seven would need an eighth.
    for (n, want) in [(6, "Ok(6)"), (7, "Err(CallDepth { pc: 6, max: 8 })")] {
        let src = format!(
            "r1 = {n}
             call pc+1
             exit
             r0 = r1
             if r1 == 0 goto pc+3
             r1 -= 1
             call pc-4
             r0 += 1
             exit"
        );
        let (interp, jit) = both_engines(&src);
        assert_eq!(interp, want);
        assert_eq!(jit, interp);
    }
    // Endless recursion.
    let (interp, jit) = both_engines("r0 = 0\ncall pc+1\nexit\nr0 += 1\ncall pc-2\nexit");
    assert_eq!(interp, "Err(CallDepth { pc: 4, max: 8 })");
    assert_eq!(jit, interp);
}

#[test]
fn a_subprogram_jumping_out_of_itself_runs_on_the_frame_stack() {
    // f jumps back into main's code while its frame is still the current
    // one (the kernel's verifier refuses this; an unverified run does it):
    // the exit there returns from f, main's own exit then ends the run.
    let (interp, jit) = both_engines("r0 = 1\ncall pc+2\nr0 += 10\nexit\nr0 += 100\ngoto pc-4");
    assert_eq!(interp, "Ok(121)");
    assert_eq!(jit, interp);
}

#[test]
fn a_tail_call_from_the_entry_of_a_program_with_calls_replaces_it() {
    // main calls f (1), then tail-calls slot 0 (the target returns 5);
    // on an empty slot it goes on: 1 + 7.
    let i = |code, dst, src, off, imm| Insn {
        code,
        dst,
        src,
        off,
        imm,
    };
    let main = [
        i(0xbf, 6, 1, 0, 0), // r6 = r1
        i(0x85, 0, 1, 0, 9), // call pc+9 (f at 11)
        i(0xbf, 7, 0, 0, 0), // r7 = r0
        i(0xbf, 1, 6, 0, 0), // r1 = r6
        i(0x18, 2, bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX, 0, 0),
        i(0, 0, 0, 0, 0),
        i(0xb7, 3, 0, 0, 0),  // r3 = 0
        i(0x85, 0, 0, 0, 12), // bpf_tail_call
        i(0x07, 7, 0, 0, 7),  // r7 += 7
        i(0xbf, 0, 7, 0, 0),  // r0 = r7
        exit(),
        i(0xb7, 0, 0, 0, 1), // f: r0 = 1
        exit(),
    ];
    for (filled, want) in [(true, 5), (false, 8)] {
        let vm = with_tail_call_target(&main, filled);
        let jit = Jit::compile(&vm);
        assert_eq!(jit.declined(0), None);
        assert_eq!(run_with(&Interpreter, &vm, &mut []).unwrap(), want);
        assert_eq!(run_with(&jit, &vm, &mut []).unwrap(), want);
    }
}

#[test]
fn verified_loops_and_calls_agree() {
    // Four calls of a subprogram from a bounded loop, each adding its
    // argument to a counter on main's stack through a pointer: the JIT
    // inlines it, and, the program being verified, counts no budget.
    engines_agree_on_a_verified_program(
        "r6 = r1
         r7 = 0
         r8 = 0
         *(u64 *)(r10 -8) = 0
         r1 = r10
         r1 += -8
         r2 = r7
         call pc+6
         r8 += r0
         r7 += 1
         if r7 < 4 goto pc-7
         r0 = *(u64 *)(r10 -8)
         r0 += r8
         exit
         r3 = *(u64 *)(r1 +0)
         r3 += r2
         *(u64 *)(r1 +0) = r3
         r0 = r2
         r0 *= 3
         exit",
        ProgType::XDP,
        &frames(),
    );
}

#[test]
fn running_past_the_last_instruction_fails_alike() {
    let (interp, jit) = both_engines("r0 = 1\nr0 += 1");
    assert!(interp.contains("fell off the end"), "{interp}");
    assert_eq!(jit, interp);
}

#[test]
fn verified_code_runs_without_the_budget_and_unverified_code_keeps_it() {
    // A bounded loop of 100 passes, the budget set to 10: compiled from the
    // verifier's proof it needs no budget (its loop was explored to the
    // end); compiled with every check it still counts its backward jumps.
    let src = "r7 = 0
               r8 = 0
               r8 += r7
               r7 += 1
               if r7 < 100 goto pc-3
               r0 = r8
               exit";
    let insns = assemble_insns(src).unwrap();
    let obj = bpfvet_object::Object::single_program("prog", ProgType::SOCKET_FILTER, insns);
    let mut vm = Vm::load(&obj).expect("loads");
    vm.verify_program(&obj, 0).expect("the verifier accepts it");
    let run_with_budget = |jit: &Jit| {
        let mut run = Run::new(&vm, Ctx::Bytes);
        run.insn_budget = 10;
        jit.execute(&mut run, 0, 0, [0; 5], 0)
    };
    assert_eq!(run_with_budget(&Jit::compile(&vm)).unwrap(), 4950);
    let e = run_with_budget(&Jit::compile_checked(&vm)).unwrap_err();
    assert!(matches!(e, VmError::InsnLimit(_)), "{e}");
}

/// One item of a program of instruction pairs the interpreter runs as one
/// step (`Op::xcode`): (first, second) with random registers r0..r4 and
/// immediates, or a conditional jump over the next slot, which lands on
/// the second instruction of a pair (run alone).
fn pair_item() -> impl Strategy<Value = Vec<Insn>> {
    (
        0usize..9,
        0u8..5,
        0u8..5,
        imm_operand(),
        imm_operand(),
        0i16..3,
    )
        .prop_map(|(kind, dst, src, k1, k2, ja)| {
            let i = Insn::new;
            match kind {
                0 => vec![i(0xbf, dst, src, 0, 0), i(0x07, dst, 0, 0, k2)],
                1 => vec![i(0xbc, dst, src, 0, 0), i(0x04, dst, 0, 0, k2)],
                2 => vec![i(0xbc, dst, src, 0, 0), i(0x54, dst, 0, 0, k2)],
                3 => vec![i(0xbf, dst, src, 0, 0), i(0x57, dst, 0, 0, k2)],
                4 => vec![i(0x24, dst, 0, 0, k1), i(0x04, dst, 0, 0, k2)],
                // A jump of `ja` slots over what follows it (at most the
                // pair after it): forward only, so the program ends.
                5 => vec![i(0xbc, dst, src, 0, 0), i(0x05, 0, 0, ja, 0)],
                6 => vec![i(0xbf, dst, src, 0, 0), i(0x05, 0, 0, ja, 0)],
                // A movsx is not a plain move: never fused.
                7 => vec![i(0xbf, dst, src, 8, 0), i(0x07, dst, 0, 0, k2)],
                _ => vec![i(0x25, src, 0, 1, k1)],
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Programs of fusable pairs: the interpreter (fused pairs as one
    /// step) gives the JIT's r0 (which compiles each instruction), and
    /// runs out of budget at the same instruction either way.
    #[test]
    fn fused_pairs_match_the_jit(init in prop::collection::vec(operand(), 5),
                                 items in prop::collection::vec(pair_item(), 1..12)) {
        let mut insns = Vec::new();
        for (r, v) in init.iter().enumerate() {
            insns.extend(ld64(r as u8, *v));
        }
        for item in items {
            insns.extend(item);
        }
        // Landing slots of the last jumps.
        insns.extend([Insn::new(0xb7, 5, 0, 0, 0), Insn::new(0xb7, 5, 0, 0, 0)]);
        for r in 1..5 {
            insns.push(Insn { code: 0xaf, dst: 0, src: r, off: 0, imm: 0 });
        }
        insns.push(exit());
        prop_assert_eq!(interp_r0(&insns, &mut []).unwrap(), jit_r0(&insns, &mut []).unwrap());
    }
}

#[test]
fn a_budget_ending_inside_a_fused_pair_counts_both_of_its_instructions() {
    // r3 = 5; r4 = r3; r4 += 7 (a fused pair); *(u64 *)(r1 +0) = r4;
    // r0 = 0; exit. The store is the 4th instruction: a budget of 3 stops
    // before it, one of 4 after it.
    let insns = [
        Insn::new(0xb7, 3, 0, 0, 5),
        Insn::new(0xbf, 4, 3, 0, 0),
        Insn::new(0x07, 4, 0, 0, 7),
        Insn::new(0x7b, 1, 4, 0, 0),
        Insn::new(0xb7, 0, 0, 0, 0),
        exit(),
    ];
    let vm = Vm::from_insns(&insns, ProgType::SOCKET_FILTER).expect("decodes");
    for (budget, stored, limited) in [(3u64, 0u64, true), (4, 12, true), (6, 12, false)] {
        let mut mem = [0u8; 8];
        let mut run = Run::new(&vm, Ctx::Bytes);
        run.insn_budget = budget;
        let addr = mem.as_mut_ptr() as u64;
        run.set_bytes_ctx(addr, mem.len(), true);
        let r = Interpreter.execute(&mut run, 0, 0, [addr, 8, 0, 0, 0], 0);
        assert_eq!(
            matches!(r, Err(VmError::InsnLimit(_))),
            limited,
            "budget {budget}: {r:?}"
        );
        assert_eq!(u64::from_le_bytes(mem), stored, "budget {budget}");
    }
}

#[test]
fn an_unknown_opcode_with_a_fused_value_is_reported_as_itself() {
    // 0xe1 and 0xe9 are the interpreter's own codes for fused pairs; as
    // instructions of a program they are unknown opcodes, in the charging
    // mode and in the exact one (a budget of 2 is below the straight
    // stretch r0 = 0; CODE; exit, so the exact mode runs CODE).
    for code in [0xe1u8, 0xe9] {
        let insns = [
            Insn::new(0xb7, 0, 0, 0, 0),
            Insn::new(code, 0, 0, 0, 0),
            exit(),
        ];
        let vm = Vm::from_insns(&insns, ProgType::SOCKET_FILTER).expect("decodes");
        for budget in [1u64 << 20, 2] {
            let mut run = Run::new(&vm, Ctx::Bytes);
            run.insn_budget = budget;
            let r = Interpreter.execute(&mut run, 0, 0, [0; 5], 0);
            let want = format!("unknown opcode {code:02x}");
            assert!(
                matches!(&r, Err(VmError::BadInsn { pc: 1, what }) if *what == want),
                "budget {budget}: {r:?}"
            );
        }
    }
}

/// A Collatz loop shaped as clang emits it: the body's two paths end in a
/// jump (one conditional, one `goto`) to a test that falls into a second
/// test, which the JIT runs as a private copy at each jump. `{limit}` is
/// the step bound; r0 is the steps taken (1000 more if the bound ended it).
fn collatz_steps_src(load_x: &str, limit: u32) -> String {
    format!(
        "{load_x}
         w1 = w2
         if w2 > 1 goto pc+1
         w1 = 1
         w4 = 0
         goto pc+6
         if w1 == 1 goto pc+3
         w4 += 1
         if w4 < {limit} goto pc+3
         w4 += 1000
         w0 = w4
         exit
         w3 = w1
         w3 &= 1
         w5 = w1
         w1 >>= 1
         if w3 == 0 goto pc-11
         w1 = w5
         w1 *= 3
         w1 += 1
         goto pc-15"
    )
}

#[test]
fn jumps_to_short_tests_run_a_copy_and_agree() {
    // Unverified (the budget counts backward jumps, in the copies too).
    let insns = assemble_insns(&collatz_steps_src("r2 = *(u8 *)(r1 +0)", 200)).unwrap();
    // The program's count, computed here: the body runs before the first
    // test, so the steps counted are the iterations after the first.
    let steps = |x: u8, limit: u64| {
        let mut x = u32::from(x).max(1);
        let mut steps = 0;
        loop {
            x = if x & 1 == 1 {
                x.wrapping_mul(3) + 1
            } else {
                x >> 1
            };
            if x == 1 {
                return steps;
            }
            steps += 1;
            if steps >= limit {
                return steps + 1000;
            }
        }
    };
    assert_eq!(steps(27, 200), 110);
    for x in 0..=255u8 {
        assert_eq!(
            jit_r0(&insns, &mut [x]).unwrap(),
            steps(x, 200),
            "start {x}"
        );
        assert_eq!(
            interp_r0(&insns, &mut [x]).unwrap(),
            steps(x, 200),
            "start {x}"
        );
    }
    // Verified (no budget): on a packet's first byte, bounded at 64 steps
    // (27 runs into the bound).
    let src = collatz_steps_src(
        "r2 = *(u32 *)(r1 +0)
         r3 = *(u32 *)(r1 +4)
         r4 = r2
         r4 += 1
         r0 = 0
         if r4 > r3 goto pc+11
         r2 = *(u8 *)(r2 +0)",
        64,
    );
    let frames: Vec<Vec<u8>> = [0u8, 1, 2, 3, 7, 27, 97, 255]
        .iter()
        .map(|&x| vec![x; 16])
        .collect();
    engines_agree_on_a_verified_program(&src, ProgType::XDP, &frames);
}

#[test]
fn a_value_looked_up_in_an_earlier_repeat_is_not_the_next_runs() {
    use bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX;
    // The stack outlives the repeats of one test_run: a count at r10-8
    // picks what each run does. The first stores key 0 (a helper call),
    // the second looks it up (compiled inline: no shim runs) and leaves
    // the value's address at r10-16, the third loads through it without
    // a lookup of its own. After the shim-free second run the third starts
    // on the cheap restart: the value must be gone from its regions, as
    // it is from the interpreter's.
    let map = |dst| {
        [
            Insn::new(0x18, dst, BPF_PSEUDO_MAP_IDX, 0, 0),
            Insn::new(0, 0, 0, 0, 0),
        ]
    };
    let mut prog = vec![
        Insn::new(0x79, 6, 10, -8, 0),  // r6 = *(u64 *)(r10 -8)
        Insn::new(0x62, 10, 0, -4, 0),  // *(u32 *)(r10 -4) = 0
        Insn::new(0x7a, 10, 0, -24, 7), // *(u64 *)(r10 -24) = 7
        Insn::new(0xbf, 2, 10, 0, 0),   // r2 = r10
        Insn::new(0x07, 2, 0, 0, -4),   // r2 += -4
        Insn::new(0x55, 6, 0, 8, 0),    // if r6 != 0 goto +8 (the lookup)
    ];
    prog.extend(map(1)); // r1 = &values
    prog.extend([
        Insn::new(0xbf, 3, 10, 0, 0),  // r3 = r10
        Insn::new(0x07, 3, 0, 0, -24), // r3 += -24
        Insn::new(0xb7, 4, 0, 0, 0),   // r4 = 0
        Insn::new(0x85, 0, 0, 0, 2),   // call bpf_map_update_elem
        Insn::new(0x7a, 10, 0, -8, 1), // *(u64 *)(r10 -8) = 1
        Insn::new(0x95, 0, 0, 0, 0),   // exit
        Insn::new(0x55, 6, 0, 7, 1),   // if r6 != 1 goto +7 (the load)
    ]);
    prog.extend(map(1)); // r1 = &values
    prog.extend([
        Insn::new(0x85, 0, 0, 0, 1),    // call bpf_map_lookup_elem
        Insn::new(0x7b, 10, 0, -16, 0), // *(u64 *)(r10 -16) = r0
        Insn::new(0x7a, 10, 0, -8, 2),  // *(u64 *)(r10 -8) = 2
        Insn::new(0xb7, 0, 0, 0, 0),    // r0 = 0
        Insn::new(0x95, 0, 0, 0, 0),    // exit
        Insn::new(0x79, 1, 10, -16, 0), // r1 = *(u64 *)(r10 -16)
        Insn::new(0x79, 0, 1, 0, 0),    // r0 = *(u64 *)(r1 +0)
        Insn::new(0x95, 0, 0, 0, 0),    // exit
    ]);
    let load_pc = prog.len() - 2;
    let mut obj = bpfvet_object::Object::single_program("prog", ProgType::XDP, prog);
    obj.maps = vec![bpfvet_object::MapDef::new(
        "values",
        bpfvet_isa::uapi::MapType::HASH,
        4,
        8,
        2,
    )];
    for repeat in [2, 3] {
        // A fresh VM each time: the first run must find the map empty.
        let vm = Vm::load(&obj).expect("loads");
        let jit_vm = Vm::load(&obj).expect("loads");
        let jit = Jit::compile(&jit_vm);
        assert_eq!(jit.declined(0), None, "compiled");
        let frame = [0u8; 64];
        let input = bpfvet_vm::TestRunInput {
            data: &frame,
            repeat,
            ..Default::default()
        };
        let interp = bpfvet_vm::test_run(&vm, 0, &input).map(|o| o.retval);
        let native = bpfvet_vm::test_run_with(&jit, &jit_vm, 0, &input).map(|o| o.retval);
        if repeat == 2 {
            assert!(interp.is_ok(), "{interp:?}");
        } else {
            assert!(
                matches!(interp, Err(VmError::OutOfBounds { pc, .. }) if pc == load_pc),
                "{interp:?}"
            );
        }
        // The engines' VMs have their values at different addresses.
        let outcome = |r: &Result<u32, VmError>| match r {
            Err(VmError::OutOfBounds { pc, kind, size, .. }) => format!("{kind} {size} at {pc}"),
            r => format!("{r:?}"),
        };
        assert_eq!(outcome(&interp), outcome(&native), "repeat {repeat}");
    }
}
