//! Arbitrary instruction streams and memory never panic, never touch
//! memory outside the run, and end within the instruction budget: the
//! result is r0 or a typed error. The JIT gives the interpreter's result
//! on the same streams (compiled or declined).

use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;
use bpfvet_vm::{Ctx, Engine, Interpreter, Jit, Run, Vm, VmError};
use proptest::prelude::*;

/// Opcodes of every class, so the streams reach each arm often.
fn insn() -> impl Strategy<Value = Insn> {
    let codes = prop::sample::select(vec![
        0x07u8, 0x0f, 0x17, 0x37, 0x3f, 0x97, 0x9f, 0x67, 0x6f, 0xc7, 0xb7, 0xbf, 0xd7, 0x04, 0x0c,
        0x34, 0x3c, 0x94, 0x9c, 0xb4, 0xbc, 0xc4, 0xd4, 0xdc, 0x05, 0x06, 0x15, 0x1d, 0x25, 0x65,
        0x16, 0xa6, 0xe5, 0x85, 0x95, 0x61, 0x69, 0x71, 0x79, 0x81, 0x89, 0x91, 0x62, 0x7a, 0x63,
        0x7b, 0xc3, 0xdb, 0x18, 0x20, 0x28, 0x30, 0x40, 0x00, 0xff,
    ]);
    (
        codes,
        0u8..11,
        0u8..16,
        -4i16..8,
        prop_oneof![-3i32..300, any::<i32>()],
    )
        .prop_map(|(code, dst, src, off, imm)| Insn::new(code, dst, src, off, imm))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn random_programs_end_with_a_value_or_an_error(
        insns in prop::collection::vec(insn(), 1..14),
        mut memory in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let Ok(vm) = Vm::from_insns(&insns, ProgType::SOCKET_FILTER) else { return Ok(()) };
        let initial = memory.clone();
        let r = run_on(&Interpreter, &vm, &mut memory);
        // Errors are typed and name an instruction inside the program or
        // the budget.
        if let Err(e) = &r {
            let text = e.to_string();
            prop_assert!(text.starts_with("insn ") || text.contains("budget"), "{text}");
        }
        // The same buffer again, so r1 is the same address.
        let after_interpreter = memory.clone();
        memory.copy_from_slice(&initial);
        let j = run_on(&Jit::compile(&vm), &vm, &mut memory);
        // The budgets count differently (every instruction / backward
        // jumps), so a run the interpreter stops may go further compiled.
        // Each run has its own stack, so r10's value may differ.
        if !matches!(r, Err(VmError::InsnLimit(_))) && !uses_frame_pointer_value(&insns) {
            prop_assert_eq!(outcome(&r), outcome(&j));
            prop_assert_eq!(after_interpreter, memory);
        }
    }
}

fn run_on(engine: &dyn Engine, vm: &Vm, memory: &mut [u8]) -> Result<u64, VmError> {
    let mut run = Run::new(vm, Ctx::Bytes);
    run.insn_budget = 20_000;
    let addr = memory.as_mut_ptr() as u64;
    if !memory.is_empty() {
        run.set_bytes_ctx(addr, memory.len(), true);
    }
    engine.execute(&mut run, 0, 0, [addr, memory.len() as u64, 0, 0, 0], 0)
}

/// r0, or the error's kind and instruction (addresses differ between the
/// two runs' memory).
fn outcome(r: &Result<u64, VmError>) -> String {
    match r {
        Ok(v) => v.to_string(),
        Err(e) => {
            let pc = match e {
                VmError::OutOfBounds { pc, .. }
                | VmError::ReadOnly { pc, .. }
                | VmError::Misaligned { pc, .. }
                | VmError::CtxAccess { pc, .. }
                | VmError::BadInsn { pc, .. }
                | VmError::UnsupportedHelper { pc, .. }
                | VmError::HelperFault { pc, .. }
                | VmError::UnsupportedKfunc { pc, .. }
                | VmError::CallDepth { pc, .. } => Some(*pc),
                _ => None,
            };
            let kind = format!("{e:?}");
            let kind = kind
                .split([' ', '('])
                .next()
                .unwrap_or_default()
                .to_string();
            format!("{kind} at {pc:?}")
        }
    }
}

/// Whether r10 appears other than as the base address of a load or store.
fn uses_frame_pointer_value(insns: &[Insn]) -> bool {
    insns.iter().any(|i| {
        let class = i.code & 7;
        let base_src = class == 1; // LDX: src is the base
        let base_dst = class == 2 || class == 3; // ST/STX: dst is the base
        (i.src == 10 && !base_src) || (i.dst == 10 && !base_dst)
    })
}
