//! `call %reg` (opcode 0x8d, the ISA's callx): the kernel's verifier
//! rejects it, and so does bpfvet's; unverified runs (the bpf_conformance
//! suite's) execute it on both engines. The register holds a helper's
//! static ID or a function's address (LD_IMM64 of a function).

use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;
use bpfvet_kernel::{oracle, Errno};
use bpfvet_vm::{run_on_memory, run_on_memory_jit, Vm};

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        dst,
        src,
        off,
        imm,
    }
}

const EXIT: (u8, u8, u8, i16, i32) = (0x95, 0, 0, 0, 0);

fn prog(slots: &[(u8, u8, u8, i16, i32)]) -> Vec<Insn> {
    slots
        .iter()
        .map(|&(c, d, s, o, i)| insn(c, d, s, o, i))
        .collect()
}

/// r0 on the interpreter and on the JIT, which must agree and must not
/// decline the program.
fn both(insns: &[Insn]) -> u64 {
    let i = run_on_memory(insns, &mut []).expect("interpreter");
    let (j, declined) = run_on_memory_jit(insns, &mut []).expect("jit");
    assert_eq!(declined, None);
    assert_eq!(i, j, "interpreter and JIT differ");
    i
}

/// r1 = -1; r2 = ID; call %r2; exit
fn call_helper(id: i32) -> Vec<Insn> {
    prog(&[
        (0xb7, 0, 0, 0, 77),
        (0xb7, 1, 0, 0, -1),
        (0xb7, 2, 0, 0, id),
        (0x8d, 2, 0, 0, 0),
        EXIT,
    ])
}

#[test]
fn the_verifier_rejects_callx_as_the_kernel_does() {
    let insns = call_helper(8);
    let obj =
        bpfvet_object::Object::single_program("callx", ProgType::SOCKET_FILTER, insns.clone());
    let e = Vm::verify(&obj, 0).expect_err("callx must be rejected");
    assert!(e.to_string().contains("unknown opcode 8d"), "{e}");
    let k = oracle::load(&oracle::RawProgram::new(ProgType::SOCKET_FILTER.0, &insns));
    if matches!(k.errno(), Some(Errno::EPERM | Errno::ENOSYS)) {
        eprintln!("no kernel to ask: skipping the oracle half");
        return;
    }
    assert!(!k.accepted());
    assert_eq!(k.error_line(), "unknown opcode 8d");
}

#[test]
fn a_helper_id_calls_the_helper() {
    // bpf_get_smp_processor_id (8) sets r0 = 0 over the 77.
    assert_eq!(both(&call_helper(8)), 0);
    // bpf_ktime_get_ns (5), the suite's ID, reads a clock: each engine
    // gets its own reading.
    let insns = call_helper(5);
    let i = run_on_memory(&insns, &mut []).expect("interpreter");
    let (j, declined) = run_on_memory_jit(&insns, &mut []).expect("jit");
    assert_eq!(declined, None);
    assert!(i != 77 && j != 77 && i != 0 && j != 0, "{i} {j}");
}

#[test]
fn a_function_address_calls_the_function_in_its_own_frame() {
    let insns = prog(&[
        // 0: r3 = &fn (slot 10) ll
        (0x18, 3, 4, 0, 9),
        (0, 0, 0, 0, 0),
        // 2: r1 = 40; r6 = 7; *(u64 *)(r10 -8) = r6
        (0xb7, 1, 0, 0, 40),
        (0xb7, 6, 0, 0, 7),
        (0x7b, 10, 6, -8, 0),
        // 5: call %r3; r0 += r6; r1 = *(u64 *)(r10 -8); r0 += r1; exit
        (0x8d, 3, 0, 0, 0),
        (0x0f, 0, 6, 0, 0),
        (0x79, 1, 10, -8, 0),
        (0x0f, 0, 1, 0, 0),
        EXIT,
        // 10: fn: r6 = 1000; *(u64 *)(r10 -8) = r6; r0 = r1; r0 += 2; exit
        (0xb7, 6, 0, 0, 1000),
        (0x7b, 10, 6, -8, 0),
        (0xbf, 0, 1, 0, 0),
        (0x07, 0, 0, 0, 2),
        EXIT,
    ]);
    // 42 from the callee, the caller's r6 and stack slot untouched.
    assert_eq!(both(&insns), 42 + 7 + 7);
}

#[test]
fn anything_else_fails_by_name() {
    for (value, what) in [(-1, "neither a function"), (12, "bpf_tail_call")] {
        let insns = call_helper(value);
        let e = run_on_memory(&insns, &mut []).expect_err("interpreter");
        assert!(e.to_string().contains(what), "{e}");
        let e = run_on_memory_jit(&insns, &mut []).expect_err("jit");
        assert!(e.to_string().contains(what), "{e}");
    }
}
