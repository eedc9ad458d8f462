//! Programs bpfvet must refuse by name rather than verify: one the object
//! loader could not prepare, one whose section names no type
//! (tests/progs/loader_*). Their neighbours verify as usual, and so does a
//! program using a BPF arena, which older libbpf cannot load.

use bpfvet_object::{LoadOptions, Object};
use bpfvet_verifier::{verify, Options, Verdict};
use std::path::PathBuf;

fn load(name: &str) -> Object {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/progs")
        .join(name);
    Object::from_file(&p, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn verdict(obj: &Object, prog: &str) -> Verdict {
    let i = obj
        .programs
        .iter()
        .position(|p| p.name == prog)
        .unwrap_or_else(|| panic!("no program {prog}"));
    verify(obj, i, &Options::default()).verdict
}

fn refusal(v: Verdict) -> String {
    match v {
        Verdict::Unsupported { what, .. } => what,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn loader_refusals_are_not_verified() {
    let obj = load("loader_extern_one_prog.bpf.o");
    let what = refusal(verdict(&obj, "xdp_calls_memcpy"));
    assert!(what.contains("no BTF for extern 'memcpy'"), "{what}");
    assert!(matches!(verdict(&obj, "xdp_plain"), Verdict::Accepted));
}

#[test]
fn arena_programs_verify() {
    let obj = load("loader_arena.bpf.o");
    for prog in ["syscall_bumps_arena_global", "syscall_without_arena"] {
        let v = verdict(&obj, prog);
        assert!(matches!(v, Verdict::Accepted), "{prog}: {v:?}");
    }
}

#[test]
fn untyped_sections_are_refused() {
    let obj = load("loader_unknown_section.bpf.o");
    let what = refusal(verdict(&obj, "prog_in_unknown_section"));
    assert!(what.contains("section 'mysec' names none"), "{what}");
    assert!(matches!(
        verdict(&obj, "xdp_known_section"),
        Verdict::Accepted
    ));
}
