//! The interpreter's instruction budget: a run stops with InsnLimit right
//! before its (budget + 1)-th instruction, whatever the shape of the code
//! (the interpreter charges straight stretches at once and must still stop
//! at the same instruction), and a run that ends leaves the budget less
//! exactly the instructions it ran.

use bpfvet_isa::asm::assemble_insns;
use bpfvet_isa::uapi::ProgType;
use bpfvet_vm::{Ctx, Engine, Interpreter, Run, Vm, VmError};

/// Every budget from 0 to `ran` + 2 on `src`, which runs `ran`
/// instructions (counted by hand; LD_IMM64 is one) and returns `end`.
fn stops_exactly(src: &str, ran: u64, end: u64) {
    let insns = assemble_insns(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    let vm = Vm::from_insns(&insns, ProgType::SOCKET_FILTER).expect("decodes");
    for budget in 0..ran + 3 {
        let mut run = Run::new(&vm, Ctx::Bytes);
        run.insn_budget = budget;
        match Interpreter.execute(&mut run, 0, 0, [0; 5], 0) {
            Ok(r0) => {
                assert!(budget >= ran, "budget {budget} ran to the end of\n{src}");
                assert_eq!(r0, end);
                assert_eq!(run.insn_budget, budget - ran, "budget left on\n{src}");
            }
            Err(VmError::InsnLimit(_)) => {
                assert!(budget < ran, "budget {budget} stopped\n{src}")
            }
            Err(e) => panic!("{e} on\n{src}"),
        }
    }
}

#[test]
fn straight_code_with_a_two_slot_constant() {
    stops_exactly(
        "r0 = 1\nr1 = 0x100000000 ll\nr0 += r1\nexit",
        4,
        0x1_0000_0001,
    );
}

#[test]
fn a_loop() {
    // 2 before the loop, 3 per pass, 10 passes, the exit.
    stops_exactly(
        "r0 = 0\nr1 = 10\nr0 += 1\nr1 -= 1\nif r1 != 0 goto pc-3\nexit",
        33,
        10,
    );
}

#[test]
fn a_bpf_to_bpf_call() {
    // r1 = 2, call, the callee's three, r0 += 1, exit.
    stops_exactly(
        "r1 = 2\ncall pc+2\nr0 += 1\nexit\nr0 = r1\nr0 *= 5\nexit",
        7,
        11,
    );
}

#[test]
fn a_helper_call() {
    stops_exactly("call bpf_get_smp_processor_id#8\nr0 += 3\nexit", 3, 3);
}

#[test]
fn a_fault_inside_a_straight_stretch() {
    // The load faults as the third instruction: a budget of three or
    // more reaches it.
    let insns = assemble_insns("r0 = 0\nr1 = 0\nr0 = *(u64 *)(r1 +0)\nexit").unwrap();
    let vm = Vm::from_insns(&insns, ProgType::SOCKET_FILTER).unwrap();
    for budget in 0..6 {
        let mut run = Run::new(&vm, Ctx::Bytes);
        run.insn_budget = budget;
        let got = Interpreter.execute(&mut run, 0, 0, [0; 5], 0);
        match budget {
            0..=2 => assert!(
                matches!(got, Err(VmError::InsnLimit(b)) if b == budget),
                "{got:?}"
            ),
            _ => assert!(
                matches!(got, Err(VmError::OutOfBounds { pc: 2, .. })),
                "{got:?}"
            ),
        }
    }
}

#[test]
fn a_bit_test_and_branch_in_a_loop() {
    // `w2 = w1; w2 &= 1; if w2 ==/!= 0 goto` runs as one step of the
    // charging mode. Five passes over i = 0..4: 2 before the loop, 5 per
    // pass plus 1 in each pass that counts, the exit.
    let body = |cond: &str| {
        format!(
            "r0 = 0\nr1 = 0\nw2 = w1\nw2 &= 1\nif w2 {cond} 0 goto pc+1\nr0 += 1\n\
             r1 += 1\nif r1 < 5 goto pc-6\nexit"
        )
    };
    // Counting the odd i (1, 3).
    stops_exactly(&body("=="), 2 + 5 * 5 + 2 + 1, 2);
    // Counting the even i (0, 2, 4).
    stops_exactly(&body("!="), 2 + 5 * 5 + 3 + 1, 3);
    // A jump to the triple's second instruction runs the rest alone:
    // w2 = 7 then w2 &= 1 on each pass after the first.
    stops_exactly(
        "r0 = 0\nr1 = 0\nw2 = w1\nw2 &= 1\nif w2 == 0 goto pc+1\nr0 += 1\n\
         r1 += 1\nw2 = 7\nif r1 < 3 goto pc-6\nexit",
        // First pass (i = 0, even) 6; later passes from `w2 &= 1`
        // (w2 = 7, odd) 6 each, two of them; 2 before, the exit.
        2 + 6 + 6 * 2 + 1,
        2,
    );
}
