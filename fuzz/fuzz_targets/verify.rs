//! The verifier on arbitrary instruction bytes: it must return a verdict
//! (no panic, no hang past its wall-clock limit). The first byte picks the
//! program type; the object has one ARRAY map so map references resolve.
#![no_main]

use bpfvet_isa::insns_from_bytes;
use bpfvet_isa::uapi::{MapType, ProgType};
use bpfvet_object::{MapDef, Object};
use bpfvet_verifier::{verify, Options};
use libfuzzer_sys::fuzz_target;
use std::time::Duration;

const PROG_TYPES: [ProgType; 6] = [
    ProgType::SOCKET_FILTER,
    ProgType::XDP,
    ProgType::SCHED_CLS,
    ProgType::KPROBE,
    ProgType::TRACEPOINT,
    ProgType::CGROUP_SKB,
];

/// One program and one ARRAY map, so map references can resolve.
fn object(prog_type: ProgType, insns: Vec<bpfvet_isa::Insn>) -> Object {
    let mut obj = Object::single_program("fuzz", prog_type, insns);
    obj.maps
        .push(MapDef::new("array", MapType::ARRAY, 4, 16, 4));
    obj
}

fuzz_target!(|data: &[u8]| {
    let Some((&ty, rest)) = data.split_first() else {
        return;
    };
    let whole = rest.len() - rest.len() % 8;
    let Ok(insns) = insns_from_bytes(&rest[..whole]) else {
        return;
    };
    let prog_type = PROG_TYPES[ty as usize % PROG_TYPES.len()];
    let opts = Options {
        log_level: u32::from(ty >> 7) + 1,
        timeout: Some(Duration::from_secs(1)),
        ..Options::default()
    };
    let _ = verify(&object(prog_type, insns), 0, &opts);
});
