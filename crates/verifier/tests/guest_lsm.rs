//! LSM and tracing programs whose kernel answers come from the
//! lockdown-free 6.18 guest (batch.sh `KERNEL=6.18`, feature
//! `guest_tracing`): the host refuses to load them, so they are tests here,
//! not `.case` files. The hooks are in the host's vmlinux BTF too.

use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_object::Object;
use bpfvet_verifier::{verify, Options, Verdict};

fn lsm(section: &str, attach: AttachType, insns: Vec<Insn>) -> Option<Verdict> {
    if std::fs::metadata(bpfvet_object::vmlinux_btf_path()).is_err() {
        println!("SKIP: no vmlinux BTF");
        return None;
    }
    let mut obj = Object::single_program("guest_lsm", ProgType::LSM, insns);
    let p = &mut obj.programs[0];
    p.section = section.into();
    p.expected_attach_type = Some(attach);
    p.attach_target = section.split_once('/').map(|(_, t)| t.to_string());
    Some(verify(&obj, 0, &Options::default()).verdict)
}

fn rejected(v: Option<Verdict>) -> Option<String> {
    match v? {
        Verdict::Rejected { error, .. } => Some(error),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn lsm_arguments_may_be_written_at_any_width() {
    // sk_alloc_security(struct sock *sk, int family, gfp_t priority): a
    // 4-byte store into `family` passes, a read past the return value's
    // slot does not.
    let insns = vec![
        Insn::new(0x62, 1, 0, 8, 1),
        Insn::new(0x79, 7, 1, 40, 0),
        Insn::EXIT,
    ];
    if let Some(e) = rejected(lsm("lsm/sk_alloc_security", AttachType::LSM_MAC, insns)) {
        assert_eq!(e, "invalid bpf_context access off=40 size=8");
    }
    // A store into the first argument, then an unset R0.
    let insns = vec![Insn::new(0x7a, 1, 0, 0, 1), Insn::EXIT];
    if let Some(e) = rejected(lsm("lsm/bprm_check_security", AttachType::LSM_MAC, insns)) {
        assert_eq!(e, "R0 !read_ok");
    }
}

#[test]
fn a_cgroup_lsm_program_on_a_void_hook_ends_with_the_note() {
    let insns = vec![Insn::new(0xb7, 0, 0, 0, 0), Insn::EXIT];
    if let Some(e) = rejected(lsm(
        "lsm_cgroup/bprm_committed_creds",
        AttachType::LSM_CGROUP,
        insns,
    )) {
        assert_eq!(
            e,
            "Note, BPF_LSM_CGROUP that attach to void LSM hooks can't modify return value!"
        );
    }
}

#[test]
fn the_map_checks_come_before_the_attach_target() {
    // A sleepable LSM program on a hook that may not sleep, using a prog
    // array: resolve_pseudo_ldimm64 speaks first.
    if std::fs::metadata(bpfvet_object::vmlinux_btf_path()).is_err() {
        println!("SKIP: no vmlinux BTF");
        return;
    }
    let insns = vec![
        Insn::new(0x18, 2, bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX, 0, 0),
        Insn::new(0, 0, 0, 0, 0),
        Insn::new(0xb7, 0, 0, 0, 0),
        Insn::EXIT,
    ];
    let mut obj = Object::single_program("guest_lsm", ProgType::LSM, insns);
    obj.maps.push(bpfvet_object::MapDef::new(
        "progs",
        bpfvet_isa::uapi::MapType::PROG_ARRAY,
        4,
        4,
        4,
    ));
    let p = &mut obj.programs[0];
    p.section = "lsm.s/inet_csk_clone".into();
    p.expected_attach_type = Some(AttachType::LSM_MAC);
    p.attach_target = Some("inet_csk_clone".into());
    p.sleepable = true;
    match verify(&obj, 0, &Options::default()).verdict {
        Verdict::Rejected { error, .. } => assert_eq!(
            error,
            "Sleepable programs can only use array, hash, ringbuf and local storage maps"
        ),
        other => panic!("expected a rejection, got {other:?}"),
    }
}
