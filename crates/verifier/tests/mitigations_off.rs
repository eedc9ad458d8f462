//! bpfvet told that the target kernel was booted with `mitigations=off`
//! (`BPFVET_CPU_MITIGATIONS=off`): bpf_bypass_spec_v1/v4 then hold for
//! every loader, allow_ptr_leaks and allow_uninit_stack still need
//! CAP_PERFMON. The host runs with mitigations on, so these lines come
//! from the lockdown-free guest booted with them off (batch.sh
//! `KERNEL=6.18 MITIGATIONS=off PRIVILEGES=bpf`), not from `.case` files.

use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;
use bpfvet_object::Object;
use bpfvet_verifier::{verify, Options, Privileges, Verdict};

/// Every test of this binary sets it before the first verify reads it.
fn mitigations_off() {
    std::env::set_var("BPFVET_CPU_MITIGATIONS", "off");
}

fn verdict_at(privileges: Privileges, insns: Vec<Insn>) -> Verdict {
    mitigations_off();
    let obj = Object::single_program("mitigations_off", ProgType::SOCKET_FILTER, insns);
    let opts = Options {
        privileges,
        ..Options::default()
    };
    verify(&obj, 0, &opts).verdict
}

fn error_at(privileges: Privileges, insns: Vec<Insn>) -> String {
    match verdict_at(privileges, insns) {
        Verdict::Rejected { error, .. } => error,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// `r1 = fp - 16 + (random & 8)`, then a byte stored through r1: the
/// store may hit fp-16 or fp-8, after `prepare` shaped those words.
fn var_off_byte_store(prepare: Vec<Insn>) -> Vec<Insn> {
    let mut insns = prepare;
    insns.extend([
        Insn::new(0x85, 0, 0, 0, 7),
        Insn::new(0x57, 0, 0, 0, 8),
        Insn::new(0xbf, 1, 10, 0, 0),
        Insn::new(0x07, 1, 0, 0, -16),
        Insn::new(0x0f, 1, 0, 0, 0),
        Insn::new(0x72, 1, 0, 0, 1),
        Insn::mov64_imm(0, 0),
        Insn::EXIT,
    ]);
    insns
}

#[test]
fn a_variable_stack_pointer_needs_no_perfmon() {
    // Both words written as data (4-byte stores: an 8-byte constant
    // store is a spill): CAP_BPF alone may form and write through
    // `fp + variable`, which mitigations on refuse at the add.
    let data = vec![
        Insn::new(0x62, 10, 0, -16, 0),
        Insn::new(0x62, 10, 0, -12, 7),
        Insn::new(0x62, 10, 0, -8, 0),
        Insn::new(0x62, 10, 0, -4, 0),
    ];
    let v = verdict_at(Privileges::Bpf, var_off_byte_store(data));
    assert!(matches!(v, Verdict::Accepted), "{v:?}");
}

#[test]
fn a_variable_write_over_a_spilled_pointer_is_refused_below_perfmon() {
    // fp-16 holds a spilled stack pointer: the first byte of the range
    // (offset -16) is a spill.
    let spill = vec![
        Insn::new(0x7b, 10, 10, -16, 0),
        Insn::new(0x62, 10, 0, -8, 0),
        Insn::new(0x62, 10, 0, -4, 0),
    ];
    assert_eq!(
        error_at(Privileges::Bpf, var_off_byte_store(spill.clone())),
        "spilled ptr in range of var-offset stack write; insn 8, ptr off: -16"
    );
    // CAP_PERFMON may erase it.
    let v = verdict_at(Privileges::Root, var_off_byte_store(spill));
    assert!(matches!(v, Verdict::Accepted), "{v:?}");
}

#[test]
fn never_written_bytes_in_the_range_count_as_spills_below_perfmon() {
    // fp-8 written, fp-16 never: the first check of each byte is the
    // spilled-pointer one, which takes uninitialised bytes too.
    let half = vec![Insn::new(0x62, 10, 0, -8, 0), Insn::new(0x62, 10, 0, -4, 0)];
    assert_eq!(
        error_at(Privileges::Bpf, var_off_byte_store(half)),
        "spilled ptr in range of var-offset stack write; insn 7, ptr off: -16"
    );
}

#[test]
fn mitigations_off_bypasses_spectre_sanitation_only() {
    let on = bpfvet_verifier::Caps::on_kernel(Privileges::Bpf, false);
    let off = bpfvet_verifier::Caps::on_kernel(Privileges::Bpf, true);
    assert!(!on.bypass_spec_v1 && !on.bypass_spec_v4);
    assert!(off.bypass_spec_v1 && off.bypass_spec_v4);
    assert!(!off.allow_ptr_leaks && !off.allow_uninit_stack);
    assert!(off.bpf_capable);
}
