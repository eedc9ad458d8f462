//! tests/progs/dynptr.bpf.o with inputs the packet differential cannot
//! give: samples produced into the USER_RINGBUF before a run, and map
//! values set beforehand. Expectations follow from dynptr.bpf.c and the
//! kernel's drain rules (a callback returning 1 stops the drain after that
//! sample; a bpf_dynptr_read past the end of a sample fails with E2BIG).

use std::path::Path;

use bpfvet_maps::user_ringbuf::UserRingBuf;
use bpfvet_object::{LoadOptions, Object};
use bpfvet_vm::{test_run, TestRunInput, Vm};

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;

fn load() -> Vm {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs/dynptr.bpf.o");
    let obj = Object::from_file(path, &LoadOptions::default()).expect("dynptr.bpf.o");
    Vm::load(&obj).expect("loads")
}

fn run(vm: &Vm, prog: &str, frame: &[u8]) -> u32 {
    let idx = vm.program_index(prog).unwrap();
    test_run(
        vm,
        idx,
        &TestRunInput {
            data: frame,
            ctx: None,
            repeat: 1,
            cpu: 0,
        },
    )
    .unwrap()
    .retval
}

fn commands(vm: &Vm) -> &UserRingBuf {
    vm.map("commands")
        .and_then(|m| m.as_any().downcast_ref::<UserRingBuf>())
        .expect("commands is a USER_RINGBUF")
}

#[test]
fn drain_sums_the_samples_user_space_produced() {
    let vm = load();
    let frame = [0u8; 60];
    assert_eq!(run(&vm, "xdp_dynptr_user_ringbuf", &frame), XDP_PASS);
    let rb = commands(&vm);
    rb.produce(&1u32.to_le_bytes()).unwrap();
    rb.produce(&2u32.to_le_bytes()).unwrap();
    assert_eq!(
        run(&vm, "xdp_dynptr_user_ringbuf", &frame),
        XDP_DROP,
        "1 + 2 is odd"
    );
    // Both were consumed.
    assert_eq!(run(&vm, "xdp_dynptr_user_ringbuf", &frame), XDP_PASS);
    assert_eq!(rb.drain(0, &mut |_, _| true), 0);
}

#[test]
fn short_sample_stops_the_drain_and_discards_are_skipped() {
    let vm = load();
    let frame = [0u8; 60];
    let rb = commands(&vm);
    let p = rb.reserve(4).unwrap();
    rb.discard(p).unwrap();
    // 2 bytes: the callback's 4-byte read fails, it returns 1, the drain
    // stops with the next sample still queued.
    rb.produce(&[9, 9]).unwrap();
    rb.produce(&3u32.to_le_bytes()).unwrap();
    assert_eq!(run(&vm, "xdp_dynptr_user_ringbuf", &frame), XDP_PASS);
    assert_eq!(run(&vm, "xdp_dynptr_user_ringbuf", &frame), XDP_DROP);
}

#[test]
fn local_dynptr_writes_reads_and_slices_the_map_value() {
    let vm = load();
    let scratch = vm.map("scratch").unwrap();
    let key = 0u32.to_le_bytes();
    for len in [60usize, 61, 200] {
        assert_eq!(run(&vm, "xdp_dynptr_local", &vec![0u8; len]), XDP_PASS);
    }
    let mut v = [0u8; 32];
    scratch.lookup(&key, &mut v, 0).unwrap();
    assert_eq!(
        u64::from_le_bytes(v[..8].try_into().unwrap()),
        200,
        "last length"
    );
    assert_eq!(
        u64::from_le_bytes(v[8..16].try_into().unwrap()),
        3,
        "counter"
    );
    // The word read back at offset 16 decides the verdict.
    v[16..20].copy_from_slice(&[0xff; 4]);
    scratch.update(&key, &v, 0).unwrap();
    assert_eq!(run(&vm, "xdp_dynptr_local", &[0u8; 60]), XDP_DROP);
}

#[test]
fn global_function_reads_through_the_callers_dynptr() {
    let vm = load();
    let scratch = vm.map("scratch").unwrap();
    assert_eq!(run(&vm, "xdp_dynptr_global", &[0u8; 60]), XDP_PASS);
    let mut v = [0u8; 32];
    v[0] = 0xff;
    scratch.update(&0u32.to_le_bytes(), &v, 0).unwrap();
    assert_eq!(run(&vm, "xdp_dynptr_global", &[0u8; 60]), XDP_DROP);
}

/// A hand-built XDP program: r0 = bpf_ringbuf_reserve_dynptr(&ring, size,
/// flags, &d); bpf_ringbuf_discard_dynptr(&d, 0); return r0.
fn reserve_dynptr_program(size: i32, flags: i32) -> Vm {
    use bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX;
    use bpfvet_isa::uapi::{MapType, ProgType};
    use bpfvet_isa::Insn;
    use bpfvet_object::MapDef;
    let insns = vec![
        Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, 0), // r1 = &ring
        Insn::new(0, 0, 0, 0, 0),
        Insn::new(0xb7, 2, 0, 0, size),  // r2 = size
        Insn::new(0xb7, 3, 0, 0, flags), // r3 = flags
        Insn::new(0xbf, 4, 10, 0, 0),    // r4 = r10
        Insn::new(0x07, 4, 0, 0, -16),   // r4 += -16
        Insn::new(0x85, 0, 0, 0, 198),   // call bpf_ringbuf_reserve_dynptr
        Insn::new(0xbf, 6, 0, 0, 0),     // r6 = r0
        Insn::new(0xbf, 1, 10, 0, 0),    // r1 = r10
        Insn::new(0x07, 1, 0, 0, -16),   // r1 += -16
        Insn::new(0xb7, 2, 0, 0, 0),     // r2 = 0
        Insn::new(0x85, 0, 0, 0, 200),   // call bpf_ringbuf_discard_dynptr
        Insn::new(0xbf, 0, 6, 0, 0),     // r0 = r6
        Insn::new(0x95, 0, 0, 0, 0),     // exit
    ];
    let mut obj = Object::single_program("prog", ProgType::XDP, insns);
    obj.maps = vec![MapDef::new("ring", MapType::RINGBUF, 0, 0, 4096)];
    Vm::load(&obj).unwrap()
}

#[test]
fn ringbuf_reserve_dynptr_failures_give_the_kernels_errnos() {
    // kernel/bpf/ringbuf.c: flags first (EINVAL), then the dynptr size
    // limit of 2^24 - 1 (E2BIG), then a failed reservation (EINVAL, where
    // bpf_ringbuf_reserve would return NULL).
    const EINVAL: u32 = -22i32 as u32;
    const E2BIG: u32 = -7i32 as u32;
    let frame = [0u8; 60];
    assert_eq!(run(&reserve_dynptr_program(4000, 0), "prog", &frame), 0);
    assert_eq!(run(&reserve_dynptr_program(8, 1), "prog", &frame), EINVAL);
    assert_eq!(
        run(&reserve_dynptr_program(1 << 24, 0), "prog", &frame),
        E2BIG
    );
    // A discarded record keeps its room until a consumer passes it.
    let vm = reserve_dynptr_program(4000, 0);
    assert_eq!(run(&vm, "prog", &frame), 0);
    assert_eq!(run(&vm, "prog", &frame), EINVAL);
}
