//! Against the host kernel (root + bpf() syscall); prints SKIP elsewhere.
//! Programs are hand-built `Object`s so these tests do not depend on the
//! ELF loader.

use bpfvet_isa::opcode::*;
use bpfvet_isa::uapi::{AttachType, MapType, ProgType, BPF_ANY, BPF_F_RDONLY_PROG};
use bpfvet_isa::Insn;
use bpfvet_kernel::{Kernel, LoadOptions, Refusal, TestRunInput, Verdict};
use bpfvet_object::{MapDef, MapInit, MapOrigin, Object, Program};

fn kernel() -> Option<Kernel> {
    match Kernel::open() {
        Ok(k) => Some(k),
        Err(e) => {
            println!("SKIP: {e}");
            None
        }
    }
}

fn mov_imm(dst: u8, imm: i32) -> Insn {
    Insn::new(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm)
}
fn exit() -> Insn {
    Insn::new(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
}
/// LD_IMM64 of map `idx` (value address at `off` when `value` is set).
fn ld_map(dst: u8, idx: i32, value: Option<i32>) -> [Insn; 2] {
    let src = if value.is_some() {
        BPF_PSEUDO_MAP_IDX_VALUE
    } else {
        BPF_PSEUDO_MAP_IDX
    };
    [
        Insn::new(BPF_LD | BPF_IMM | BPF_DW, dst, src, 0, idx),
        Insn::new(0, 0, 0, 0, value.unwrap_or(0)),
    ]
}

fn program(name: &str, prog_type: ProgType, insns: Vec<Insn>) -> Program {
    Program {
        name: name.into(),
        section: "socket".into(),
        prog_type,
        expected_attach_type: None,
        attach_target: None,
        sleepable: false,
        prog_flags: 0,
        insns,
        func_info: vec![],
        line_info: vec![],
        placement: vec![],
        core_unresolved: vec![],
        struct_ops: None,
        refused: None,
        load: Default::default(),
    }
}

fn map(name: &str, map_type: MapType, key: u32, value: u32, entries: u32) -> MapDef {
    MapDef::new(name, map_type, key, value, entries)
}

fn object(maps: Vec<MapDef>, programs: Vec<Program>) -> Object {
    Object {
        path: "hand-built.o".into(),
        license: "GPL".into(),
        kern_version: None,
        maps,
        programs,
        btf_raw: None,
        btf: None,
        btf_refused: None,
        unresolved_externs: vec![],
        warnings: Vec::new(),
        loader: bpfvet_object::Loader::Libbpf,
        loader_reason: None,
    }
}

#[test]
fn accepted_program_reports_the_same_insns_as_its_log() {
    let Some(k) = kernel() else { return };
    // if (r1 == 0) r0 = 1 else r0 = 2: two paths, a few processed insns.
    let insns = vec![
        Insn::new(BPF_LDX | BPF_MEM | BPF_W, 2, 1, 0, 0),
        mov_imm(0, 1),
        Insn::new(BPF_JMP | BPF_JEQ | BPF_K, 2, 0, 1, 0),
        mov_imm(0, 2),
        exit(),
    ];
    let obj = object(
        vec![],
        vec![program("branchy", ProgType::SOCKET_FILTER, insns)],
    );
    let s = k.open_object(&obj);
    let r = s.load_program(0, &LoadOptions::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Accepted, "log: {}", r.log);
    let from_info = r.verified_insns.expect("prog info read") as u64;
    assert_eq!(Some(from_info), r.stats.processed_insns, "log: {}", r.log);
    assert!(from_info > 5, "two paths are walked: {from_info}");
    assert!(r.stats.total_states.is_some() && r.stats.peak_states.is_some());
    assert!(r.stats.verification_time_usec.is_some());
    assert_eq!(r.stats.stack_depths, Some(vec![0]));
    assert!(r.jited_size.unwrap_or(0) > 0);
    assert_eq!(r.insn_cnt, 5);
    assert!(s.load_program(1, &LoadOptions::default()).is_none());
}

#[test]
fn uninitialised_r0_is_a_verifier_rejection() {
    let Some(k) = kernel() else { return };
    let obj = object(
        vec![],
        vec![program("bad", ProgType::SOCKET_FILTER, vec![exit()])],
    );
    let s = k.open_object(&obj);
    let r = s
        .load_program(
            0,
            &LoadOptions {
                log_level: 1,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(r.verdict, Verdict::Rejected);
    assert_eq!(r.errno, Some(bpfvet_kernel::Errno::EACCES));
    assert!(r.log.contains("R0 !read_ok"), "log: {}", r.log);
    assert_eq!(r.stats.processed_insns, Some(1));
    assert!(r.loaded.is_none());
}

#[test]
fn maps_are_passed_through_fd_array_and_global_data_is_initialised() {
    let Some(k) = kernel() else { return };
    let mut rodata = map("t.rodata", MapType::ARRAY, 4, 8, 1);
    rodata.origin = MapOrigin::GlobalData;
    rodata.map_flags = BPF_F_RDONLY_PROG;
    rodata.init = MapInit::Data(vec![42, 0, 0, 0, 7, 0, 0, 0]);
    rodata.frozen = true;
    let hash = map("counts", MapType::HASH, 4, 8, 16);
    // r0 = *(u32 *)(&rodata + 4); the verifier knows it is 7 (frozen).
    let mut insns = Vec::new();
    insns.extend(ld_map(1, 0, Some(4)));
    insns.push(Insn::new(BPF_LDX | BPF_MEM | BPF_W, 0, 1, 0, 0));
    // r1 = &counts (index 1), just referenced.
    insns.extend(ld_map(1, 1, None));
    insns.push(exit());
    let obj = object(
        vec![rodata, hash],
        vec![program("reads", ProgType::SOCKET_FILTER, insns)],
    );
    let s = k.open_object(&obj);
    let r = s.load_program(0, &LoadOptions::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Accepted, "log: {}", r.log);

    let ro = s.map(0).unwrap().as_ref().unwrap();
    assert_eq!(
        ro.lookup(&0u32.to_le_bytes()).unwrap().unwrap(),
        vec![42, 0, 0, 0, 7, 0, 0, 0]
    );
    // Frozen: user-space writes are refused.
    assert!(ro.update(&0u32.to_le_bytes(), &[0; 8], BPF_ANY).is_err());

    // The program runs: socket filters need at least an Ethernet header.
    let prog = r.loaded.as_ref().unwrap();
    let out = prog
        .test_run(&TestRunInput {
            data: &[0u8; 64],
            repeat: 3,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(out.retval, 7);

    let h = s.map_by_name("counts").unwrap();
    assert!(s.map_by_name("nope").is_none());
    assert_eq!(h.next_key(None).unwrap(), None);
    h.update(&5u32.to_le_bytes(), &9u64.to_le_bytes(), BPF_ANY)
        .unwrap();
    h.update(&6u32.to_le_bytes(), &10u64.to_le_bytes(), BPF_ANY)
        .unwrap();
    assert_eq!(
        h.lookup(&5u32.to_le_bytes()).unwrap(),
        Some(9u64.to_le_bytes().to_vec())
    );
    let first = h.next_key(None).unwrap().unwrap();
    let second = h.next_key(Some(&first)).unwrap().unwrap();
    assert_ne!(first, second);
    assert_eq!(h.next_key(Some(&second)).unwrap(), None);
    h.delete(&5u32.to_le_bytes()).unwrap();
    assert_eq!(h.lookup(&5u32.to_le_bytes()).unwrap(), None);
    assert_eq!(h.lookup(&[0u8; 3]), Err(bpfvet_kernel::Errno::EINVAL));
}

#[test]
fn map_in_map_uses_its_inner_template_and_slots() {
    let Some(k) = kernel() else { return };
    let inner = map("inner", MapType::ARRAY, 4, 4, 1);
    let mut outer = map("outer", MapType::ARRAY_OF_MAPS, 4, 4, 2);
    outer.inner = Some(Box::new(inner.clone()));
    outer.init = MapInit::InnerMaps(vec![(1, 0)]);
    let mut insns = Vec::new();
    insns.extend(ld_map(1, 1, None));
    insns.push(mov_imm(0, 0));
    insns.push(exit());
    let obj = object(
        vec![inner, outer],
        vec![program("mim", ProgType::SOCKET_FILTER, insns)],
    );
    let s = k.open_object(&obj);
    let r = s.load_program(0, &LoadOptions::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Accepted, "log: {}", r.log);
    let outer = s.map(1).unwrap().as_ref().unwrap();
    // Slot 1 holds the inner map (lookup from user space returns its id).
    assert!(outer.lookup(&1u32.to_le_bytes()).unwrap().is_some());
    assert_eq!(outer.lookup(&0u32.to_le_bytes()).unwrap(), None);
}

#[test]
fn refusals_that_are_not_verification_are_named() {
    let Some(k) = kernel() else { return };
    let ret0 = vec![mov_imm(0, 0), exit()];
    let mut missing = program("missing_target", ProgType::TRACING, ret0.clone());
    missing.section = "fentry/no_such_function_in_vmlinux".into();
    missing.attach_target = Some("no_such_function_in_vmlinux".into());
    missing.expected_attach_type = Some(AttachType::TRACE_FENTRY);
    let mut fentry = program("fentry_ok_target", ProgType::TRACING, ret0.clone());
    fentry.section = "fentry/do_sys_openat2".into();
    fentry.attach_target = Some("do_sys_openat2".into());
    fentry.expected_attach_type = Some(AttachType::TRACE_FENTRY);
    let mut uses_bad_map = Vec::new();
    uses_bad_map.extend(ld_map(1, 0, None));
    uses_bad_map.extend(ret0.clone());
    let bad_map = map("bad", MapType::HASH, 0, 4, 1); // key_size 0: EINVAL
    let mut no_inner = map("no_inner", MapType::HASH_OF_MAPS, 4, 4, 1);
    no_inner.inner = None;
    // A BTF-style ring buffer naming a value type still gets created.
    let ringbuf = map("events", MapType::RINGBUF, 0, 20, 4096);
    // So does a BTF-style perf event array with an event struct as value.
    let perf = map("perf", MapType::PERF_EVENT_ARRAY, 0, 84, 0);
    let mut uses_ringbuf = Vec::new();
    uses_ringbuf.extend(ld_map(1, 2, None));
    uses_ringbuf.extend(ld_map(1, 3, None));
    uses_ringbuf.extend(ret0.clone());
    let mut uses_no_inner = Vec::new();
    uses_no_inner.extend(ld_map(1, 1, None));
    uses_no_inner.extend(ret0.clone());
    let mut unknown = program("unknown_section", ProgType::UNSPEC, ret0.clone());
    unknown.section = "2/7".into();
    let obj = object(
        vec![bad_map, no_inner, ringbuf, perf],
        vec![
            missing,
            fentry,
            program("uses_bad_map", ProgType::SOCKET_FILTER, uses_bad_map),
            program("no_map", ProgType::SOCKET_FILTER, ret0),
            program("uses_ringbuf", ProgType::SOCKET_FILTER, uses_ringbuf),
            program("uses_no_inner", ProgType::SOCKET_FILTER, uses_no_inner),
            unknown,
        ],
    );
    let s = k.open_object(&obj);
    let o = LoadOptions::default();
    assert_eq!(
        s.load_program(0, &o).unwrap().verdict,
        Verdict::Refused(Refusal::AttachTargetMissing {
            target: "no_such_function_in_vmlinux".into()
        })
    );
    // Locked-down hosts refuse fentry with EPERM and no log; others verify it.
    let f = s.load_program(1, &o).unwrap();
    match &f.verdict {
        Verdict::Refused(Refusal::PermissionDenied) => assert!(f.log.is_empty()),
        Verdict::Accepted => {}
        v => panic!("fentry: unexpected {v:?}, log {}", f.log),
    }
    match s.load_program(2, &o).unwrap().verdict {
        Verdict::Refused(Refusal::MapCreation(m)) => assert!(m.contains("EINVAL"), "{m}"),
        v => panic!("expected a map creation refusal, got {v:?}"),
    }
    assert_eq!(s.load_program(3, &o).unwrap().verdict, Verdict::Accepted);
    assert_eq!(s.load_program(4, &o).unwrap().verdict, Verdict::Accepted);
    match s.load_program(5, &o).unwrap().verdict {
        Verdict::Refused(Refusal::MapCreation(m)) => {
            assert!(m.contains("no inner map template"), "{m}")
        }
        v => panic!("expected a map creation refusal, got {v:?}"),
    }
    assert_eq!(
        s.load_program(6, &o).unwrap().verdict,
        Verdict::Refused(Refusal::UnknownProgType {
            section: "2/7".into()
        })
    );
}

#[test]
fn a_log_larger_than_the_buffer_grows_it() {
    let Some(k) = kernel() else { return };
    let mut insns: Vec<Insn> = (0..200).map(|i| mov_imm(0, i)).collect();
    insns.push(exit());
    let obj = object(
        vec![],
        vec![program("long_log", ProgType::SOCKET_FILTER, insns)],
    );
    let s = k.open_object(&obj);
    let small = LoadOptions {
        log_level: 2,
        log_size: 1024,
        ..Default::default()
    };
    let r = s.load_program(0, &small).unwrap();
    assert_eq!(r.verdict, Verdict::Accepted);
    assert!(r.log.len() > 1024, "log grew to {}", r.log.len());
    assert!(
        r.log.starts_with("func#0") || r.log.contains("0: "),
        "{}",
        &r.log[..100]
    );
    let capped = LoadOptions {
        log_level: 2,
        log_size: 1024,
        log_size_cap: 2048,
        ..Default::default()
    };
    assert!(matches!(
        s.load_program(0, &capped).unwrap().verdict,
        Verdict::Refused(Refusal::LogTruncated { .. })
    ));
}

#[test]
fn refused_btf_is_named_and_programs_load_without_it() {
    let Some(k) = kernel() else { return };
    let mut obj = object(
        vec![],
        vec![program(
            "no_btf",
            ProgType::SOCKET_FILTER,
            vec![mov_imm(0, 0), exit()],
        )],
    );
    // A bare BTF header, no types and no string section: refused.
    obj.btf_raw = Some(vec![
        0x9f, 0xeb, 1, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ]);
    let s = k.open_object(&obj);
    let err = s.btf_error.clone().expect("bad BTF refused");
    assert_eq!(err.errno, bpfvet_kernel::Errno::EINVAL);
    assert!(!err.message.is_empty(), "the BTF log names the reason");
    let r = s.load_program(0, &LoadOptions::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Accepted);
    assert!(r.btf_dropped);
}

#[test]
fn load_all_fills_prog_arrays_and_tail_calls_run() {
    let Some(k) = kernel() else { return };
    let target = program(
        "target",
        ProgType::SOCKET_FILTER,
        vec![mov_imm(0, 42), exit()],
    );
    let mut insns = vec![Insn::new(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0)];
    insns.extend(ld_map(2, 0, None));
    insns.push(mov_imm(3, 0));
    // bpf_tail_call(ctx, &jumps, 0); falls through when the slot is empty.
    insns.push(Insn::new(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0));
    insns.push(Insn::new(BPF_JMP | BPF_CALL, 0, 0, 0, 12));
    insns.push(mov_imm(0, 1));
    insns.push(exit());
    let dispatch = program("dispatch", ProgType::SOCKET_FILTER, insns);
    let mut jumps = map("jumps", MapType::PROG_ARRAY, 4, 4, 4);
    jumps.init = MapInit::Programs(vec![(0, 0), (1, 7)]);
    let obj = object(vec![jumps], vec![target, dispatch]);
    let s = k.open_object(&obj);
    let (reports, unfilled) = s.load_all(&LoadOptions::default());
    assert_eq!(reports.len(), 2);
    assert!(reports.iter().all(|r| r.verdict == Verdict::Accepted));
    assert_eq!(unfilled, ["jumps[1]: program 7 not loaded"]);
    let out = reports[1]
        .loaded
        .as_ref()
        .unwrap()
        .test_run(&TestRunInput {
            data: &[0u8; 64],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(out.retval, 42, "the tail call reached the target");
}

#[test]
fn per_cpu_values_hold_one_slot_per_possible_cpu() {
    let Some(k) = kernel() else { return };
    let obj = object(
        vec![map("pcpu", MapType::PERCPU_ARRAY, 4, 4, 1)],
        vec![program(
            "p",
            ProgType::SOCKET_FILTER,
            vec![mov_imm(0, 0), exit()],
        )],
    );
    let s = k.open_object(&obj);
    let m = s.map_by_name("pcpu").unwrap();
    let cpus = bpfvet_kernel::map::possible_cpus();
    // 4-byte values are padded to 8 per CPU.
    assert_eq!(m.value_buf_size(), 8 * cpus);
    let value: Vec<u8> = (0..cpus)
        .flat_map(|c| (c as u64 + 1).to_le_bytes())
        .collect();
    m.update(&0u32.to_le_bytes(), &value, BPF_ANY).unwrap();
    let back = m.lookup(&0u32.to_le_bytes()).unwrap().unwrap();
    for c in 0..cpus {
        assert_eq!(back[c * 8], c as u8 + 1, "cpu {c}");
    }
    assert_eq!(
        m.update(&0u32.to_le_bytes(), &[0; 4], BPF_ANY),
        Err(bpfvet_kernel::Errno::EINVAL)
    );
}

#[test]
fn a_prog_array_of_another_program_type_is_a_refusal_after_verification() {
    let Some(k) = kernel() else { return };
    // Both tail-call through one prog array: the first load makes it an
    // XDP array, so the socket filter passes the verifier and is then
    // refused (bpf_check_tail_call, EINVAL, no error in the log).
    let tail_call = |ty| {
        let mut insns = vec![Insn::new(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0)];
        insns.extend(ld_map(2, 0, None));
        insns.extend([
            Insn::new(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0),
            mov_imm(3, 0),
            Insn::new(BPF_JMP | BPF_CALL, 0, 0, 0, 12),
            mov_imm(0, 0),
            exit(),
        ]);
        program("tc", ty, insns)
    };
    let obj = object(
        vec![map("progs", MapType::PROG_ARRAY, 4, 4, 4)],
        vec![tail_call(ProgType::XDP), tail_call(ProgType::SOCKET_FILTER)],
    );
    let s = k.open_object(&obj);
    let opts = LoadOptions {
        log_level: 1,
        ..Default::default()
    };
    let first = s.load_program(0, &opts).expect("program 0");
    assert_eq!(first.verdict, Verdict::Accepted, "{}", first.log);
    // The first program must stay loaded: it owns the array.
    let second = s.load_program(1, &opts).expect("program 1");
    assert!(
        matches!(
            second.verdict,
            Verdict::Refused(Refusal::AfterVerification { .. })
        ),
        "{:?}: {}",
        second.verdict,
        second.log
    );
    drop(first);
}
