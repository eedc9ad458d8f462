//! Threaded runs (`test_run_threads`): several threads run one program at
//! once against the same maps, thread i on CPU i. After the run the maps
//! must hold what N sequential runs would leave (tests/fixtures/threads.bpf.c
//! numbers every run, so that state is known exactly): no atomic increment
//! lost, every HASH / RHASH insert and delete applied once, every ring
//! buffer record there once, per-CPU slots written by their own CPU only.
//! For the interpreter and the JIT, with the program's hash maps as HASH
//! and as RHASH.

use std::collections::BTreeMap;
use std::path::Path;

use bpfvet_isa::uapi::{MapType, BPF_F_NO_PREALLOC};
use bpfvet_maps::{Map, RingBuf};
use bpfvet_object::Object;
use bpfvet_vm::{test_run_threads, TestRunInput, Vm};

const THREADS: u32 = 4;
const REPEAT: u32 = 2500;
const HOT_KEYS: u64 = 16;
const XDP_PASS: u32 = 2;

fn fixture(name: &str) -> Object {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    Object::from_file(&path, &Default::default()).expect("fixture object loads")
}

/// The object with its HASH maps turned into RHASH maps.
fn as_rhash(mut obj: Object) -> Object {
    for m in &mut obj.maps {
        if m.map_type == MapType::HASH {
            m.map_type = MapType::RHASH;
            m.map_flags |= BPF_F_NO_PREALLOC;
        }
    }
    obj
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

fn lookup(m: &dyn Map, key: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; m.attr().syscall_value_size()];
    m.lookup(key, &mut v, 0).expect("key present");
    v
}

fn keys(m: &dyn Map) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut next = vec![0u8; m.attr().key_size as usize];
    let mut prev: Option<Vec<u8>> = None;
    while m.get_next_key(prev.as_deref(), &mut next).is_ok() {
        out.push(next.clone());
        prev = Some(next.clone());
    }
    out
}

/// `verified`: run the JIT with the proof bpfvet's verifier gives for
/// this program of that object (the same code; RHASH is a map type the
/// verifier does not know).
fn check_threaded_run(obj: &Object, jit: bool, verified: Option<&Object>, what: &str) {
    let mut vm = Vm::load_cpus(obj, THREADS).expect("vm loads");
    let prog = vm.program_index("xdp_threads").unwrap();
    if let Some(v) = verified {
        let proof = Vm::verify(v, prog).expect("bpfvet verifies it");
        assert!(vm.set_proof(prog, proof), "{what}: the same code");
    }
    let vm = vm;
    let frame = [0x5au8; 60];
    let input = TestRunInput {
        data: &frame,
        repeat: REPEAT,
        ..Default::default()
    };
    let r = test_run_threads(&vm, prog, &input, THREADS, jit).expect("threaded run");
    if jit {
        assert_eq!(r.declined, None, "{what}: the JIT compiles the program");
    }
    assert_eq!(r.per_thread.len(), THREADS as usize);
    for (cpu, out) in r.per_thread.iter().enumerate() {
        assert_eq!(out.retval, XDP_PASS, "{what}: thread {cpu}'s last run");
    }
    let n = (THREADS * REPEAT) as u64;
    let len = frame.len() as u64;
    let map = |name: &str| vm.map(name).unwrap_or_else(|| panic!("map {name}"));

    // Shared counters: atomic adds from every thread, none lost.
    let counters = map("counters");
    let c = |k: u32| u64_at(&lookup(&**counters, &k.to_le_bytes()), 0);
    assert_eq!((c(0), c(1), c(2)), (n, n * len, n), "{what}: counters");

    // Per-CPU slots: CPU i's own runs and id, seen through the syscall side
    // as one value per CPU.
    let per_cpu = map("per_cpu");
    assert_eq!(per_cpu.attr().nr_cpus, THREADS);
    let runs = lookup(&**per_cpu, &0u32.to_le_bytes());
    let ids = lookup(&**per_cpu, &1u32.to_le_bytes());
    for cpu in 0..THREADS as usize {
        assert_eq!(
            u64_at(&runs, cpu * 8),
            REPEAT as u64,
            "{what}: cpu {cpu} runs"
        );
        assert_eq!(
            u64_at(&ids, cpu * 8),
            cpu as u64 + 1,
            "{what}: cpu {cpu} id"
        );
    }

    // The ring buffer: one record per sequence number.
    let events = map("events");
    let rb = events
        .as_any()
        .downcast_ref::<RingBuf>()
        .expect("ring buffer");
    let mut by_seq = BTreeMap::new();
    rb.consume(&mut |s| {
        let (seq, cpu, l) = (u64_at(s, 0), u32_at(s, 8), u32_at(s, 12));
        assert_eq!(l as u64, len);
        assert!(
            by_seq.insert(seq, cpu).is_none(),
            "{what}: record {seq} twice"
        );
        true
    });
    assert_eq!(by_seq.len() as u64, n, "{what}: ring buffer records");
    assert_eq!(
        by_seq.keys().copied().collect::<Vec<_>>(),
        (0..n).collect::<Vec<_>>()
    );
    let mut per_cpu_records = [0u32; THREADS as usize];
    for &cpu in by_seq.values() {
        per_cpu_records[cpu as usize] += 1;
    }
    assert_eq!(per_cpu_records, [REPEAT; THREADS as usize], "{what}");

    // seen: the even sequence numbers, each with the CPU that ran it.
    let seen = map("seen");
    let mut got: Vec<u64> = keys(&**seen).iter().map(|k| u64_at(k, 0)).collect();
    got.sort_unstable();
    let want: Vec<u64> = (0..n).step_by(2).collect();
    assert_eq!(got, want, "{what}: seen keeps exactly the even runs");
    for seq in want {
        let v = lookup(&**seen, &seq.to_le_bytes());
        assert_eq!(u32_at(&v, 0), by_seq[&seq], "{what}: seen[{seq}].cpu");
        assert_eq!(u32_at(&v, 4) as u64, len);
    }

    // hot: every key replaced concurrently ends with a value of its class.
    let hot = map("hot");
    let mut hot_keys: Vec<u32> = keys(&**hot).iter().map(|k| u32_at(k, 0)).collect();
    hot_keys.sort_unstable();
    assert_eq!(hot_keys, (0..HOT_KEYS as u32).collect::<Vec<_>>(), "{what}");
    for k in hot_keys {
        let v = u64_at(&lookup(&**hot, &k.to_le_bytes()), 0);
        assert!(v < n && v % HOT_KEYS == k as u64, "{what}: hot[{k}] = {v}");
    }
}

#[test]
fn threaded_runs_leave_the_sequential_map_state() {
    let obj = fixture("threads.bpf.o");
    let rhash = as_rhash(fixture("threads.bpf.o"));
    // A few rounds: races that lose an update need the right interleaving.
    for round in 0..3 {
        for (jit, verified) in [(false, None), (true, None), (true, Some(&obj))] {
            let engine = match (jit, verified) {
                (false, _) => "interpreter",
                (true, None) => "jit",
                (true, Some(_)) => "proven jit",
            };
            check_threaded_run(
                &obj,
                jit,
                verified,
                &format!("HASH, {engine}, round {round}"),
            );
            check_threaded_run(
                &rhash,
                jit,
                verified,
                &format!("RHASH, {engine}, round {round}"),
            );
        }
    }
}

#[test]
fn each_thread_is_its_own_cpu() {
    let vm = Vm::load_cpus(&fixture("threads.bpf.o"), 3).unwrap();
    let prog = vm.program_index("xdp_threads").unwrap();
    let frame = [0u8; 20];
    let input = TestRunInput {
        data: &frame,
        repeat: 1,
        ..Default::default()
    };
    // More threads than the VM has CPUs is refused by name.
    let e = test_run_threads(&vm, prog, &input, 4, false).unwrap_err();
    assert!(e.to_string().contains("3 CPUs"), "{e}");
    // A single run on CPU 2 writes only CPU 2's slot.
    let one = TestRunInput {
        cpu: 2,
        ..input.clone()
    };
    bpfvet_vm::test_run(&vm, prog, &one).unwrap();
    let ids = lookup(&**vm.map("per_cpu").unwrap(), &1u32.to_le_bytes());
    assert_eq!(
        (u64_at(&ids, 0), u64_at(&ids, 8), u64_at(&ids, 16)),
        (0, 0, 3)
    );
    let bad = TestRunInput { cpu: 3, ..input };
    assert!(bpfvet_vm::test_run(&vm, prog, &bad).is_err());
}

/// bpf_spin_lock taken by runs on other threads is waited for, as the
/// kernel spins: the counters it protects lose no update (plain `+=` under
/// the lock), for the interpreter and the JIT.
#[test]
fn spin_locks_serialise_threads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs");
    let obj = Object::from_file(dir.join("spin_lock.bpf.o"), &Default::default()).unwrap();
    let frame = std::fs::read(dir.join("packets/v4_tcp80.bin")).unwrap();
    for (jit, verified) in [(false, false), (true, false), (true, true)] {
        let mut vm = Vm::load_cpus(&obj, THREADS).unwrap();
        let prog = vm.program_index("tc_spin_lock").unwrap();
        if verified {
            vm.verify_program(&obj, prog).expect("bpfvet verifies it");
        }
        let vm = vm;
        let input = TestRunInput {
            data: &frame,
            repeat: REPEAT,
            ..Default::default()
        };
        let r = test_run_threads(&vm, prog, &input, THREADS, jit).expect("threaded run");
        assert!(r.per_thread.iter().all(|o| o.retval == 0));
        let n = (THREADS * REPEAT) as u64;
        // struct totals: lock (4, padded to 8), packets, bytes, max_len.
        let totals = lookup(&**vm.map("global_totals").unwrap(), &0u32.to_le_bytes());
        assert_eq!(
            (u64_at(&totals, 8), u64_at(&totals, 16)),
            (n, n * frame.len() as u64),
            "jit: {jit}"
        );
        // IPv4's skb->protocol (0x0800, network order) keys per_protocol.
        let proto = lookup(&**vm.map("per_protocol").unwrap(), &0x0008u32.to_le_bytes());
        assert_eq!(u64_at(&proto, 8), n, "jit: {jit}");
    }
}
