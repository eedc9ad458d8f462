//! bpfvet told that the target kernel runs programs in the interpreter
//! (`BPFVET_BPF_JIT_ENABLE=0`, as `net.core.bpf_jit_enable=0` on a kernel
//! without CONFIG_BPF_JIT_ALWAYS_ON): the verifier's checks on
//! `prog->jit_requested`. The host's JIT is always on, so these lines come
//! from the lockdown-free guest run with its JIT off (batch.sh `KERNEL=6.18
//! JIT=0`), not from `.case` files.

use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;
use bpfvet_object::Object;
use bpfvet_verifier::{verify, Options, Verdict};

/// Every test of this binary sets it before the first verify reads it.
fn interpreter_only() {
    std::env::set_var("BPFVET_BPF_JIT_ENABLE", "0");
}

fn error_of(prog_type: ProgType, insns: Vec<Insn>) -> String {
    interpreter_only();
    let obj = Object::single_program("jit_off", prog_type, insns);
    match verify(&obj, 0, &Options::default()).verdict {
        Verdict::Rejected { error, .. } => error,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn a_kfunc_call_needs_the_jit() {
    // Any kfunc: the kernel sets up its kfunc table before it looks at ids.
    let call = Insn::new(0x85, 0, bpfvet_isa::opcode::BPF_PSEUDO_KFUNC_CALL, 0, 1);
    assert_eq!(
        error_of(ProgType::XDP, vec![call, Insn::mov64_imm(0, 0), Insn::EXIT]),
        "JIT is required for calling kernel function"
    );
}

#[allow(dead_code)]
mod random_diff;

/// The fuzzer's object (its BTF gives subprograms func_info, which
/// callbacks and tail calls in subprograms need).
fn fuzz_error(prog_type: ProgType, insns: Vec<Insn>) -> String {
    interpreter_only();
    let p = random_diff::gen::GenProgram::plain(prog_type, insns);
    let obj = random_diff::diff::object(std::slice::from_ref(&p));
    match verify(&obj, 0, &Options::default()).verdict {
        Verdict::Rejected { error, .. } => error,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn a_callback_address_is_refused_after_verification() {
    // bpf_loop(1, cb, NULL, 0) with cb returning 0: verified, then
    // fixup_call_args finds the callback address.
    let insns = vec![
        Insn::mov64_imm(1, 1),
        Insn::new(0x18, 2, bpfvet_isa::opcode::BPF_PSEUDO_FUNC, 0, 6),
        Insn::new(0, 0, 0, 0, 0),
        Insn::mov64_imm(3, 0),
        Insn::mov64_imm(4, 0),
        Insn::new(0x85, 0, 0, 0, 181),
        Insn::mov64_imm(0, 0),
        Insn::EXIT,
        Insn::mov64_imm(0, 0),
        Insn::EXIT,
    ];
    assert_eq!(
        fuzz_error(ProgType::XDP, insns),
        "callbacks are not allowed in non-JITed programs"
    );
}

#[test]
fn a_tail_call_beside_a_subprogram_is_refused() {
    // main calls f; f tail-calls through the prog array (map 2).
    let insns = vec![
        Insn::new(0x85, 0, bpfvet_isa::opcode::BPF_PSEUDO_CALL, 0, 2),
        Insn::mov64_imm(0, 0),
        Insn::EXIT,
        Insn::new(0x18, 2, bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX, 0, 2),
        Insn::new(0, 0, 0, 0, 0),
        Insn::mov64_imm(3, 0),
        Insn::new(0x85, 0, 0, 0, 12),
        Insn::mov64_imm(0, 0),
        Insn::EXIT,
    ];
    assert_eq!(
        fuzz_error(ProgType::SCHED_CLS, insns),
        "mixing of tail_calls and bpf-to-bpf calls is not supported"
    );
}

#[test]
fn interpreter_frames_round_to_32_bytes() {
    // main uses 72 bytes and calls a chain of seven functions of 40 bytes:
    // JITed frames round to 16 (80 + 7 x 48 = 416, within 512), the
    // interpreter's to 32 (96 + 7 x 64 = 544).
    let mut insns = Vec::new();
    for k in 0..8 {
        let depth = if k == 0 { -72 } else { -40 };
        insns.push(Insn::new(0x7a, 10, 0, depth, 0));
        if k < 7 {
            insns.push(Insn::new(
                0x85,
                0,
                bpfvet_isa::opcode::BPF_PSEUDO_CALL,
                0,
                2,
            ));
        }
        insns.push(Insn::mov64_imm(0, 0));
        insns.push(Insn::EXIT);
    }
    assert_eq!(
        error_of(ProgType::XDP, insns),
        "combined stack size of 8 calls is 544. Too large"
    );
}

#[test]
fn a_dead_tail_call_in_main_still_counts() {
    // main's tail call sits behind a branch never taken; main calls f.
    // The kernel marks main tail-call-reachable from the instruction alone
    // (the guest: "tail_calls are not allowed in non-JITed programs with
    // bpf-to-bpf calls").
    let insns = vec![
        Insn::mov64_imm(9, 1),
        Insn::new(0x15, 9, 0, 1, 1),
        Insn::new(0x85, 0, 0, 0, 12),
        Insn::new(0x85, 0, bpfvet_isa::opcode::BPF_PSEUDO_CALL, 0, 1),
        Insn::EXIT,
        Insn::new(0xbf, 0, 1, 0, 0),
        Insn::EXIT,
    ];
    assert_eq!(
        fuzz_error(ProgType::KPROBE, insns),
        "tail_calls are not allowed in non-JITed programs with bpf-to-bpf calls"
    );
}

#[test]
fn a_subprogram_only_called_from_dead_code_is_removed_first() {
    // f holds the tail call but only a dead call reaches it: dead-code
    // removal leaves main alone, which the interpreter runs (the guest
    // accepts).
    interpreter_only();
    let p = random_diff::gen::GenProgram::plain(
        ProgType::SCHED_CLS,
        vec![
            Insn::mov64_imm(4, 2),
            Insn::new(0x15, 4, 0, 1, 2),
            Insn::new(0x85, 0, bpfvet_isa::opcode::BPF_PSEUDO_CALL, 0, 2),
            Insn::mov64_imm(0, 0),
            Insn::EXIT,
            Insn::new(0x85, 0, 0, 0, 12),
            Insn::mov64_imm(0, 3),
            Insn::EXIT,
        ],
    );
    let obj = random_diff::diff::object(std::slice::from_ref(&p));
    let out = verify(&obj, 0, &Options::default());
    assert!(
        matches!(out.verdict, Verdict::Accepted),
        "{:?}",
        out.verdict
    );
}

#[test]
fn may_goto_slots_push_a_deep_stack_past_the_interpreter_limit() {
    // 504 bytes of stack and a may_goto: do_misc_fixups adds its 16-byte
    // counter and timestamp slots (the x86 timed may_goto), and the
    // interpreter runs no function over 512 bytes.
    let insns = vec![
        Insn::new(0x7a, 10, 0, -504, 0),
        Insn::new(0xe5, 0, 0, 1, 0),
        Insn::mov64_imm(0, 1),
        Insn::mov64_imm(0, 0),
        Insn::EXIT,
    ];
    assert_eq!(
        error_of(ProgType::SOCKET_FILTER, insns),
        "stack size 520(extra 16) is too large"
    );
}
