//! Objects built by hand: tail calls through a PROG_ARRAY (a program that
//! tail-calls itself runs 1 + 33 times, MAX_TAIL_CALL_CNT, then the call
//! falls through), and verification as a separate step.

use bpfvet_isa::opcode::{BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE};
use bpfvet_isa::uapi::{MapType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_object::{MapDef, MapInit, Object};
use bpfvet_vm::{test_run, TestRunInput, Vm, MAX_TAIL_CALLS};

fn map(name: &str, map_type: MapType, value_size: u32, init: MapInit) -> MapDef {
    MapDef {
        init,
        ..MapDef::new(name, map_type, 4, value_size, 1)
    }
}

fn xdp_object(insns: Vec<Insn>, maps: Vec<MapDef>) -> Object {
    let mut obj = Object::single_program("prog", ProgType::XDP, insns);
    obj.maps = maps;
    obj
}

#[test]
fn verification_is_a_separate_step() {
    // r0 = r2 (never written); r0 = 2; exit
    let obj = xdp_object(
        vec![
            Insn::new(0xbf, 0, 2, 0, 0),
            Insn::new(0xb7, 0, 0, 0, 2),
            Insn::new(0x95, 0, 0, 0, 0),
        ],
        Vec::new(),
    );
    let e = Vm::verify(&obj, 0).unwrap_err();
    assert!(e.to_string().contains("R2 !read_ok"), "{e}");
    // The runtime itself does not refuse it: tests may bypass verification.
    let vm = Vm::load(&obj).unwrap();
    let out = test_run(
        &vm,
        0,
        &TestRunInput {
            data: &[0u8; 14],
            ctx: None,
            repeat: 1,
            cpu: 0,
        },
    )
    .unwrap();
    assert_eq!(out.retval, 2);
}

#[test]
fn self_tail_call_stops_after_33() {
    let insns = vec![
        Insn::new(0xbf, 6, 1, 0, 0),                        // r6 = r1
        Insn::new(0x18, 7, BPF_PSEUDO_MAP_IDX_VALUE, 0, 1), // r7 = &counter
        Insn::new(0, 0, 0, 0, 0),
        Insn::new(0x79, 0, 7, 0, 0), // r0 = *(u64 *)(r7 +0)
        Insn::new(0x07, 0, 0, 0, 1), // r0 += 1
        Insn::new(0x7b, 7, 0, 0, 0), // *(u64 *)(r7 +0) = r0
        Insn::new(0xbf, 1, 6, 0, 0), // r1 = r6
        Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, 0), // r2 = &jmp_table
        Insn::new(0, 0, 0, 0, 0),
        Insn::new(0xb7, 3, 0, 0, 0),  // r3 = 0
        Insn::new(0x85, 0, 0, 0, 12), // call bpf_tail_call
        Insn::new(0x79, 0, 7, 0, 0),  // r0 = *(u64 *)(r7 +0)
        Insn::new(0x95, 0, 0, 0, 0),  // exit
    ];
    let obj = xdp_object(
        insns,
        vec![
            map(
                "jmp_table",
                MapType::PROG_ARRAY,
                4,
                MapInit::Programs(vec![(0, 0)]),
            ),
            map("counter", MapType::ARRAY, 8, MapInit::None),
        ],
    );
    // bpfvet's verifier accepts it (a tail call to itself is legal).
    Vm::verify(&obj, 0).unwrap();
    let vm = Vm::load(&obj).unwrap();
    let out = test_run(
        &vm,
        0,
        &TestRunInput {
            data: &[0u8; 14],
            ctx: None,
            repeat: 1,
            cpu: 0,
        },
    )
    .unwrap();
    assert_eq!(out.retval, 1 + MAX_TAIL_CALLS);
    let mut v = [0u8; 8];
    vm.maps[1].lookup(&0u32.to_le_bytes(), &mut v, 0).unwrap();
    assert_eq!(u64::from_le_bytes(v), 34);
    // An empty slot falls through at once.
    vm.maps[0].delete(&0u32.to_le_bytes()).unwrap();
    let out = test_run(
        &vm,
        0,
        &TestRunInput {
            data: &[0u8; 14],
            ctx: None,
            repeat: 1,
            cpu: 0,
        },
    )
    .unwrap();
    assert_eq!(out.retval, 35);
}
