//! The "stack depth" figure includes stack that the kernel's rewrites
//! after verification add: an inlined bpf_loop call keeps its loop state in
//! three more slots of the caller's frame, and a may_goto (timed, on
//! x86-64) keeps its counter and start time in two. The expected figures
//! are the host kernel's (6.18, `bpfvet verify --backend kernel`): each is
//! the deepest stack the program itself uses plus those slots.

use bpfvet_object::{LoadOptions, Object};
use bpfvet_verifier::{verify, Options, Verdict};
use std::path::PathBuf;

fn stack_depth(object: &str, prog: &str) -> Vec<u32> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/progs")
        .join(object);
    let obj = Object::from_file(&path, &LoadOptions::default()).expect("object loads");
    let idx = obj
        .programs
        .iter()
        .position(|p| p.name == prog)
        .expect("program in object");
    let out = verify(&obj, idx, &Options::default());
    assert!(
        matches!(out.verdict, Verdict::Accepted),
        "{prog}: {:?}",
        out.verdict
    );
    out.stats.stack_depth
}

#[test]
fn inlined_bpf_loop_adds_three_slots_to_its_caller() {
    // 32 bytes of its own, then 24 for the inlined loop.
    assert_eq!(
        stack_depth("callbacks.bpf.o", "xdp_bpf_loop")
            .iter()
            .sum::<u32>(),
        56
    );
}

#[test]
fn timed_may_goto_adds_two_slots() {
    // No stack of its own; 16 for the may_goto counter.
    assert_eq!(stack_depth("kfunc_iter.bpf.o", "xdp_may_goto"), vec![16]);
    assert_eq!(
        stack_depth("kfunc_iter.bpf.o", "xdp_may_goto_sum"),
        vec![16]
    );
}
