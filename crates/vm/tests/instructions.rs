//! Each instruction class against the ISA's definition (Linux 6.18,
//! Documentation/bpf/standardization/instruction-set.rst): programs in the
//! verifier-log syntax, run on plain memory, r0 compared with the value the
//! definition gives.

use bpfvet_isa::{asm::assemble, encode_program};
use bpfvet_vm::{run_on_memory, VmError};

fn run_mem(src: &str, mem: &mut [u8]) -> Result<u64, VmError> {
    let prog = assemble(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    run_on_memory(&encode_program(&prog), mem)
}

fn r0(src: &str) -> u64 {
    run_mem(src, &mut []).unwrap_or_else(|e| panic!("{src}: {e}"))
}

#[test]
fn division_and_modulo_by_zero() {
    // DIV by zero gives 0; MOD by zero leaves the dividend.
    assert_eq!(r0("r0 = 7\nr1 = 0\nr0 /= r1\nexit"), 0);
    assert_eq!(r0("r0 = 7\nr1 = 0\nr0 %= r1\nexit"), 7);
    assert_eq!(r0("r0 = -7\nr1 = 0\nr0 s/= r1\nexit"), 0);
    assert_eq!(r0("r0 = -7\nr1 = 0\nr0 s%= r1\nexit"), -7i64 as u64);
    // 32-bit: the dividend is zero-extended even when kept.
    assert_eq!(r0("r0 = -1\nw1 = 0\nw0 %= w1\nexit"), 0xffff_ffff);
    assert_eq!(r0("r0 = -1\nw1 = 0\nw0 /= w1\nexit"), 0);
}

#[test]
fn signed_division_overflow() {
    // INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0, in both widths.
    assert_eq!(r0("r0 = 1\nr0 <<= 63\nr1 = -1\nr0 s/= r1\nexit"), 1 << 63);
    assert_eq!(r0("r0 = 1\nr0 <<= 63\nr1 = -1\nr0 s%= r1\nexit"), 0);
    assert_eq!(
        r0("w0 = 1\nw0 <<= 31\nw1 = -1\nw0 s/= w1\nexit"),
        0x8000_0000
    );
    assert_eq!(r0("w0 = 1\nw0 <<= 31\nw0 s%= -1\nexit"), 0);
    // Truncation toward zero; the remainder takes the dividend's sign.
    assert_eq!(r0("r0 = -7\nr0 s/= 2\nexit"), -3i64 as u64);
    assert_eq!(r0("r0 = -7\nr0 s%= 2\nexit"), -1i64 as u64);
    assert_eq!(r0("r0 = -7\nr0 /= 2\nexit"), (-7i64 as u64) / 2);
}

#[test]
fn shifts_are_masked_to_the_width() {
    assert_eq!(r0("r0 = 1\nr1 = 65\nr0 <<= r1\nexit"), 2);
    assert_eq!(r0("w0 = 1\nw1 = 33\nw0 <<= w1\nexit"), 2);
    assert_eq!(r0("r0 = -16\nr1 = 66\nr0 s>>= r1\nexit"), -4i64 as u64);
    assert_eq!(r0("w0 = -16\nw0 s>>= 2\nexit"), 0xffff_fffc);
    assert_eq!(r0("r0 = -1\nw0 >>= 28\nexit"), 0xf);
}

#[test]
fn alu32_zero_extends() {
    assert_eq!(r0("r0 = -1\nw0 += 1\nexit"), 0);
    assert_eq!(r0("r0 = -1\nw0 = w0\nexit"), 0xffff_ffff);
    assert_eq!(r0("w0 = 5\nw0 = -w0\nexit"), 0xffff_fffb);
    assert_eq!(r0("r0 = 5\nr0 = -r0\nexit"), -5i64 as u64);
}

#[test]
fn movsx_sign_extends() {
    assert_eq!(r0("r1 = 0x80\nr0 = (s8)r1\nexit"), -128i64 as u64);
    assert_eq!(r0("r1 = 0x8000\nr0 = (s16)r1\nexit"), -32768i64 as u64);
    assert_eq!(
        r0("r1 = 0x80000000 ll\nr0 = (s32)r1\nexit"),
        0xffff_ffff_8000_0000
    );
    // 32-bit MOVSX: sign-extended into 32 bits, then zero-extended.
    assert_eq!(r0("r1 = 0xff\nw0 = (s8)w1\nexit"), 0xffff_ffff);
}

#[test]
fn sign_extending_loads() {
    let mut mem = [0x80, 0xff, 0x00, 0x80, 0x01, 0x02, 0x03, 0x04];
    assert_eq!(
        run_mem("r0 = *(s8 *)(r1 +0)\nexit", &mut mem).unwrap(),
        -128i64 as u64
    );
    assert_eq!(
        run_mem("r0 = *(s16 *)(r1 +2)\nexit", &mut mem).unwrap(),
        -32768i64 as u64
    );
    assert_eq!(
        run_mem("r0 = *(s32 *)(r1 +0)\nexit", &mut mem).unwrap(),
        0xffff_ffff_8000_ff80
    );
    assert_eq!(
        run_mem("r0 = *(u8 *)(r1 +0)\nexit", &mut mem).unwrap(),
        0x80
    );
}

#[test]
fn byte_swaps() {
    assert_eq!(r0("r0 = 0x1234\nr0 = be16 r0\nexit"), 0x3412);
    // Only the low 32 bits take part: 0x345678ab swapped.
    assert_eq!(r0("r0 = 0x12345678ab ll\nr0 = be32 r0\nexit"), 0xab78_5634);
    assert_eq!(
        r0("r0 = 0x0102030405060708 ll\nr0 = be64 r0\nexit"),
        0x0807_0605_0403_0201
    );
    // to-LE on a little-endian host only truncates.
    assert_eq!(r0("r0 = 0x12345678ab ll\nr0 = le16 r0\nexit"), 0x78ab);
    assert_eq!(r0("r0 = 0x12345678ab ll\nr0 = bswap16 r0\nexit"), 0xab78);
    assert_eq!(
        r0("r0 = 0x0102030405060708 ll\nr0 = bswap64 r0\nexit"),
        0x0807_0605_0403_0201
    );
}

#[test]
fn atomics_with_and_without_fetch() {
    let prog = "r1 = 10\n*(u64 *)(r10 -8) = r1\nr2 = 5\nlock *(u64 *)(r10 -8) += r2\n\
                r3 = 1\nr3 = atomic64_fetch_or((u64 *)(r10 -8), r3)\n\
                r0 = *(u64 *)(r10 -8)\nr0 <<= 8\nr0 |= r3\nexit";
    // 10 + 5 = 15; fetch_or returns 15 and stores 15 | 1.
    assert_eq!(r0(prog), 15 << 8 | 15);
    let xchg = "r1 = 7\n*(u64 *)(r10 -8) = r1\nr2 = 9\nr2 = atomic64_xchg((u64 *)(r10 -8), r2)\n\
                r0 = *(u64 *)(r10 -8)\nr0 *= 100\nr0 += r2\nexit";
    assert_eq!(r0(xchg), 907);
    // cmpxchg: r0 gets the old value; the store happens only on a match.
    let cmpxchg = "r1 = 3\n*(u64 *)(r10 -8) = r1\nr0 = 4\nr2 = 8\n\
                   r0 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r2)\nr3 = *(u64 *)(r10 -8)\n\
                   r0 = 3\nr0 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r2)\nr4 = *(u64 *)(r10 -8)\n\
                   r0 *= 100\nr3 *= 10\nr0 += r3\nr0 += r4\nexit";
    assert_eq!(r0(cmpxchg), 3 * 100 + 3 * 10 + 8);
    // 32-bit fetch zero-extends the old value into the source register.
    let w = "r1 = -1\n*(u64 *)(r10 -8) = r1\nr2 = 1\nr2 = atomic_fetch_add((u32 *)(r10 -8), r2)\nr0 = r2\nexit";
    assert_eq!(r0(w), 0xffff_ffff);
}

#[test]
fn jumps_and_gotol() {
    assert_eq!(r0("r0 = 1\ngoto pc+1\nr0 = 2\nexit"), 1);
    assert_eq!(r0("r0 = 1\ngotol pc+1\nr0 = 2\nexit"), 1);
    // signed vs unsigned and 32-bit compare
    assert_eq!(
        r0("r0 = 0\nr1 = -1\nif r1 s< 0 goto pc+1\nexit\nr0 = 1\nexit"),
        1
    );
    assert_eq!(
        r0("r0 = 0\nr1 = -1\nif r1 < 0 goto pc+1\nexit\nr0 = 1\nexit"),
        0
    );
    assert_eq!(
        r0("r0 = 0\nr1 = 0x100000000 ll\nif w1 == 0 goto pc+1\nexit\nr0 = 1\nexit"),
        1
    );
    assert_eq!(
        r0("r0 = 0\nr1 = 6\nif r1 & 2 goto pc+1\nexit\nr0 = 1\nexit"),
        1
    );
}

#[test]
fn may_goto_budget_ends_a_loop() {
    // An endless loop guarded by may_goto leaves after the budget.
    let prog = "r0 = 0\nmay_goto pc+2\nr0 += 1\ngoto pc-3\nexit";
    assert_eq!(r0(prog), bpfvet_vm::MAY_GOTO_BUDGET);
}

#[test]
fn calls_have_own_frames_and_keep_callee_saved_registers() {
    // main: r6 = 5, stack slot = 11; sub writes its own slot and r6.
    let prog = "r6 = 5\nr1 = 11\n*(u64 *)(r10 -8) = r1\nr1 = 2\ncall pc+4\n\
                r1 = *(u64 *)(r10 -8)\nr0 += r1\nr0 += r6\nexit\n\
                r6 = 100\nr2 = 77\n*(u64 *)(r10 -8) = r2\nr0 = r1\nr0 *= 10\nexit";
    assert_eq!(r0(prog), 20 + 11 + 5);
}

#[test]
fn ld_imm64_constant() {
    assert_eq!(
        r0("r0 = 0x123456789abcdef0 ll\nexit"),
        0x1234_5678_9abc_def0
    );
}

#[test]
fn out_of_bounds_access_stops_the_run_naming_the_insn() {
    let e = run_mem("r0 = *(u64 *)(r1 +4)\nexit", &mut [0u8; 8]).unwrap_err();
    assert!(matches!(e, VmError::OutOfBounds { pc: 0, .. }), "{e}");
    let e = run_mem("r0 = 0\nr2 = 4096\n*(u8 *)(r2 +0) = 1\nexit", &mut []).unwrap_err();
    assert!(
        matches!(
            e,
            VmError::OutOfBounds {
                kind: "store",
                addr: 4096,
                ..
            }
        ),
        "{e}"
    );
    // Below the deepest frame of the stack.
    let e = run_mem("r0 = *(u64 *)(r10 -520)\nexit", &mut []).unwrap_err();
    assert!(matches!(e, VmError::OutOfBounds { pc: 0, .. }), "{e}");
    assert!(e.to_string().starts_with("insn 0: load of 8 bytes"), "{e}");
}

#[test]
fn non_terminating_program_hits_the_budget_not_the_host() {
    let prog = assemble("r0 = 0\ngoto pc-1\nexit").unwrap();
    let vm = bpfvet_vm::Vm::from_insns(
        &encode_program(&prog),
        bpfvet_isa::uapi::ProgType::SOCKET_FILTER,
    )
    .unwrap();
    let mut run = bpfvet_vm::Run::new(&vm, bpfvet_vm::Ctx::Bytes);
    run.insn_budget = 1000;
    let e =
        bpfvet_vm::Engine::execute(&bpfvet_vm::Interpreter, &mut run, 0, 0, [0; 5], 0).unwrap_err();
    assert!(matches!(e, VmError::InsnLimit(1000)), "{e}");
}

#[test]
fn unsupported_helper_is_named() {
    use bpfvet_isa::Insn;
    // call #35 (bpf_get_current_task: a kernel pointer), exit
    let insns = [Insn::new(0x85, 0, 0, 0, 35), Insn::new(0x95, 0, 0, 0, 0)];
    let e = run_on_memory(&insns, &mut []).unwrap_err();
    assert!(e.to_string().contains("bpf_get_current_task"), "{e}");
}

#[test]
fn byte_and_half_word_read_modify_write_atomics_are_refused() {
    use bpfvet_isa::Insn;
    // Only load-acquire/store-release exist at 1 and 2 bytes; an atomic add
    // there must not run (a 4-byte operation would pass the checked byte).
    for code in [0xd3u8, 0xcb] {
        let insns = [
            Insn::new(0xb7, 2, 0, 0, 1),   // r2 = 1
            Insn::new(0x7b, 10, 2, -8, 0), // *(u64 *)(r10 -8) = r2
            Insn::new(code, 10, 2, -8, 0), // atomic add, 1 or 2 bytes
            Insn::new(0xb7, 0, 0, 0, 0),   // r0 = 0
            Insn::new(0x95, 0, 0, 0, 0),   // exit
        ];
        let e = run_on_memory(&insns, &mut []).unwrap_err();
        assert!(
            matches!(e, VmError::BadInsn { pc: 2, .. }),
            "{code:#x}: {e}"
        );
    }
}
