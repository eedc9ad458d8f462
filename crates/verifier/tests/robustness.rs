//! Malformed and random programs get a verdict, never a panic or a hang.

use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;
use bpfvet_object::Object;
use bpfvet_verifier::{verify, Limit, Options, Verdict};
use proptest::prelude::*;
use std::time::Duration;

fn object(insns: Vec<Insn>, prog_type: ProgType) -> Object {
    Object::single_program("random", prog_type, insns)
}

/// Opcodes that exist, so random programs get past the decoder often.
const CODES: [u8; 24] = [
    0x07, 0x0f, 0x17, 0x1f, 0xb7, 0xbf, 0xb4, 0xbc, 0x57, 0x5f, 0x61, 0x69, 0x71, 0x79, 0x63, 0x7b,
    0x72, 0x15, 0x1d, 0x25, 0x2d, 0x05, 0x85, 0x95,
];

fn insn() -> impl Strategy<Value = Insn> {
    (
        0usize..CODES.len(),
        0u8..11,
        0u8..11,
        -8i16..8,
        prop_oneof![-16i32..16, 0i32..200],
    )
        .prop_map(|(c, d, s, off, imm)| Insn::new(CODES[c], d, s, off, imm))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn random_programs_get_a_verdict(mut insns in proptest::collection::vec(insn(), 1..40)) {
        insns.push(Insn::new(0x95, 0, 0, 0, 0));
        let obj = object(insns, ProgType::XDP);
        let opts = Options { max_processed_insns: 20_000, ..Options::default() };
        let out = verify(&obj, 0, &opts);
        if let Verdict::Rejected { error, .. } = &out.verdict {
            prop_assert!(!error.is_empty());
        }
    }

    #[test]
    fn raw_bytes_get_a_verdict(raw in proptest::collection::vec(any::<[u8; 8]>(), 1..30)) {
        let insns = raw.into_iter().map(Insn::from_bytes).collect();
        let obj = object(insns, ProgType::SOCKET_FILTER);
        let _ = verify(&obj, 0, &Options::default());
    }
}

#[test]
fn limits_are_reported_as_such() {
    // r0 = 0; loop: r0 += 1; if r0 != -1 goto loop  — never converges.
    let insns = vec![
        Insn::new(0xb7, 0, 0, 0, 0),
        Insn::new(0x07, 0, 0, 0, 1),
        Insn::new(0x55, 0, 0, -2, -1),
        Insn::new(0x95, 0, 0, 0, 0),
    ];
    let obj = object(insns, ProgType::XDP);
    let out = verify(&obj, 0, &Options::default());
    match out.verdict {
        Verdict::LimitExceeded {
            limit: Limit::ProcessedInsns,
            ref error,
            ..
        } => {
            assert_eq!(error, "BPF program is too large. Processed 1000001 insn");
        }
        v => panic!("unexpected {v:?}"),
    }
    let opts = Options {
        timeout: Some(Duration::from_millis(1)),
        ..Options::default()
    };
    let out = verify(&obj, 0, &opts);
    assert!(matches!(
        out.verdict,
        Verdict::LimitExceeded {
            limit: Limit::Timeout,
            ..
        }
    ));
    let opts = Options {
        max_memory: Some(10_000),
        ..Options::default()
    };
    let out = verify(&obj, 0, &opts);
    assert!(matches!(
        out.verdict,
        Verdict::LimitExceeded {
            limit: Limit::Memory,
            ..
        }
    ));
}

#[test]
fn missing_program_index_is_an_error() {
    let obj = object(vec![Insn::new(0x95, 0, 0, 0, 0)], ProgType::XDP);
    assert!(matches!(
        verify(&obj, 5, &Options::default()).verdict,
        Verdict::Rejected { .. }
    ));
}

/// The kernel checks the subprogram layout (check_subprogs) before the
/// opcodes (resolve_pseudo_ldimm64): an exit with the X bit set, an
/// opcode that does not exist, is first a last instruction that is not an
/// exit. Checked against the host kernel where it can load programs.
#[test]
fn layout_is_checked_before_opcodes() {
    let insns = vec![Insn::new(0xb7, 0, 0, 0, 0), Insn::new(0x9d, 0, 0, 0, 0)];
    let obj = object(insns.clone(), ProgType::SOCKET_FILTER);
    let out = verify(&obj, 0, &Options::default());
    let Verdict::Rejected { error, .. } = &out.verdict else {
        panic!("{:?}", out.verdict);
    };
    assert_eq!(error, "last insn is not an exit or jmp");
    let v = bpfvet_kernel::oracle::load(&bpfvet_kernel::oracle::RawProgram::new(
        ProgType::SOCKET_FILTER.0,
        &insns,
    ));
    if matches!(
        v.errno(),
        Some(bpfvet_kernel::Errno::EPERM | bpfvet_kernel::Errno::ENOSYS)
    ) {
        println!("SKIP: host kernel replay");
        return;
    }
    assert_eq!(v.error_line(), "last insn is not an exit or jmp");
}

/// may_goto takes no immediate; 6.18 names the one it got.
#[test]
fn may_goto_with_an_immediate_names_it() {
    let insns = vec![
        Insn::new(0xb7, 0, 0, 0, 0),
        Insn::new(0xe5, 0, 0, 1, 5),
        Insn::new(0xb7, 0, 0, 0, 1),
        Insn::new(0x95, 0, 0, 0, 0),
    ];
    let obj = object(insns.clone(), ProgType::SOCKET_FILTER);
    let out = verify(&obj, 0, &Options::default());
    let Verdict::Rejected { error, .. } = &out.verdict else {
        panic!("{:?}", out.verdict);
    };
    assert_eq!(error, "invalid may_goto imm 5");
    let v = bpfvet_kernel::oracle::load(&bpfvet_kernel::oracle::RawProgram::new(
        ProgType::SOCKET_FILTER.0,
        &insns,
    ));
    if matches!(
        v.errno(),
        Some(bpfvet_kernel::Errno::EPERM | bpfvet_kernel::Errno::ENOSYS)
    ) {
        println!("SKIP: host kernel replay");
        return;
    }
    assert_eq!(v.error_line(), "invalid may_goto imm 5");
}
