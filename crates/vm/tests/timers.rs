//! bpf_timer on the virtual clock, against the host kernel.
//!
//! The kernel runs a timer's callback asynchronously, after the
//! BPF_PROG_TEST_RUN that armed it returned; the runtime runs it when
//! `Vm::advance_time` moves its virtual clock past the expiry. So the
//! comparison is of the maps once the callbacks have run: the kernel's
//! after waiting for them (polling until the expected callbacks are seen,
//! then a margin in which no other may fire), the runtime's after advancing
//! its clock well past every expiry. Time stamps are compared by their
//! relation only (the kernel's callback runs at or after the expiry; the
//! runtime's exactly at it). Needs root and bpf(); prints SKIP otherwise.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bpfvet_kernel::{Kernel, LoadOptions, TestRunInput as KInput};
use bpfvet_object::Object;
use bpfvet_vm::{test_run, test_run_with, Interpreter, Jit, TestRunInput, Vm};

const MS: u64 = 1_000_000;

fn fixture(dir: &str, name: &str) -> Object {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join(name);
    Object::from_file(&path, &Default::default()).expect("object loads")
}

fn frame() -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// Every map's (key, value) pairs, in key order, by name.
type Dump = Vec<(String, Vec<(Vec<u8>, Vec<u8>)>)>;

fn dump_vm(vm: &Vm) -> Dump {
    vm.map_names
        .iter()
        .zip(&vm.maps)
        .map(|(name, m)| {
            let mut pairs = Vec::new();
            let mut prev: Option<Vec<u8>> = None;
            let mut next = vec![0u8; m.attr().key_size as usize];
            while m.get_next_key(prev.as_deref(), &mut next).is_ok() {
                let mut v = vec![0u8; m.attr().syscall_value_size()];
                m.lookup(&next, &mut v, 0).expect("listed key");
                pairs.push((next.clone(), v));
                prev = Some(next.clone());
            }
            pairs.sort();
            (name.clone(), pairs)
        })
        .collect()
}

fn dump_kernel(session: &bpfvet_kernel::ObjectSession<'_>, obj: &Object) -> Dump {
    (0..obj.maps.len())
        .map(|i| {
            let m = session
                .map(i)
                .and_then(|m| m.as_ref().ok())
                .expect("kernel map");
            let mut pairs = Vec::new();
            let mut prev: Option<Vec<u8>> = None;
            while let Ok(Some(k)) = m.next_key(prev.as_deref()) {
                let v = m.lookup(&k).unwrap().unwrap_or_default();
                pairs.push((k.clone(), v));
                prev = Some(k);
            }
            pairs.sort();
            (obj.maps[i].name.clone(), pairs)
        })
        .collect()
}

fn value<'d>(d: &'d Dump, map: &str, key: u32) -> &'d [u8] {
    let (_, pairs) = d.iter().find(|(n, _)| n == map).expect("map");
    &pairs
        .iter()
        .find(|(k, _)| k[..4] == key.to_le_bytes())
        .expect("key")
        .1
}

/// Runs `prog` once in the kernel, then waits until `done` holds for its
/// maps (at most 3 s) and `margin` more; returns the maps.
fn kernel_run(
    kernel: &Kernel,
    obj: &Object,
    prog: &str,
    done: impl Fn(&Dump) -> bool,
    margin: Duration,
) -> Dump {
    let idx = obj.programs.iter().position(|p| p.name == prog).unwrap();
    let session = kernel.open_object(obj);
    let report = session.load_program(idx, &LoadOptions::default()).unwrap();
    let kprog = report.loaded.expect("the kernel loads it");
    let data = frame();
    let out = kprog
        .test_run(&KInput {
            data: &data,
            data_out_size: 4096,
            repeat: 1,
            ..Default::default()
        })
        .expect("kernel test_run");
    assert_eq!(out.retval, 2, "{prog}: XDP_PASS in the kernel");
    let start = Instant::now();
    while !done(&dump_kernel(&session, obj)) {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{prog}: the kernel's timers did not fire in 3 s: {:?}",
            dump_kernel(&session, obj)
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(margin);
    dump_kernel(&session, obj)
}

/// Runs `prog` once in the runtime (interpreter or JIT) on a virtual clock,
/// then advances it by `advance`; returns the maps and the callbacks run.
fn vm_run(obj: &Object, prog: &str, jit: bool, advance: u64) -> (Dump, u64, Vm) {
    let mut vm = Vm::load(obj).unwrap();
    vm.use_virtual_clock();
    let idx = vm.program_index(prog).unwrap();
    let data = frame();
    let input = TestRunInput {
        data: &data,
        repeat: 1,
        ..Default::default()
    };
    let out = if jit {
        test_run_with(&Jit::compile(&vm), &vm, idx, &input)
    } else {
        test_run(&vm, idx, &input)
    }
    .unwrap();
    assert_eq!(out.retval, 2, "{prog}: XDP_PASS in the runtime");
    let fired = vm.advance_time(&Interpreter, advance).unwrap();
    (dump_vm(&vm), fired, vm)
}

/// `fired` of timer value `key` (after the 16-byte struct bpf_timer).
fn fired(d: &Dump, map: &str, key: u32) -> u64 {
    u64_at(value(d, map, key), 16)
}

#[test]
fn timer_api_and_callbacks_agree_with_the_kernel() {
    let obj = fixture("tests/fixtures", "timers.bpf.o");
    let prog = "xdp_timer_api";
    // What the runtime does, kernel or not.
    for jit in [false, true] {
        let (d, callbacks, vm) = vm_run(&obj, prog, jit, 100 * MS);
        assert_eq!(callbacks, 2, "B's and C's callbacks ran");
        assert_eq!(vm.armed_timers(), 0);
        let now = u64_at(value(&d, "results", 24), 0);
        assert_eq!(
            u64_at(value(&d, "timers", 2), 24),
            now + 2 * MS,
            "C's callback runs at its absolute expiry on the virtual clock"
        );
        assert_eq!(vm.virtual_elapsed_ns(), 100 * MS);
    }
    // Before its expiry a timer does not fire; at it, it does.
    let mut vm = Vm::load(&obj).unwrap();
    vm.use_virtual_clock();
    let data = frame();
    let input = TestRunInput {
        data: &data,
        repeat: 1,
        ..Default::default()
    };
    test_run(&vm, vm.program_index(prog).unwrap(), &input).unwrap();
    assert_eq!(vm.advance_time(&Interpreter, MS - 1).unwrap(), 0);
    assert_eq!(vm.advance_time(&Interpreter, 1).unwrap(), 1, "B at 1 ms");
    assert_eq!(vm.advance_time(&Interpreter, MS).unwrap(), 1, "C at 2 ms");

    let kernel = match Kernel::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    // B and C fire once; D (20 ms, freed by the element's update) must not:
    // wait past its expiry.
    let k = kernel_run(
        &kernel,
        &obj,
        prog,
        |d| fired(d, "timers", 1) >= 1 && fired(d, "timers", 2) >= 1,
        Duration::from_millis(60),
    );
    let (v, _, _) = vm_run(&obj, prog, false, 100 * MS);
    let k_now = u64_at(value(&k, "results", 24), 0);
    assert!(
        u64_at(value(&k, "timers", 2), 24) >= k_now + 2 * MS,
        "the kernel runs C's callback at or after its expiry"
    );
    // Time stamps aside, the maps agree.
    let mask = |mut d: Dump| {
        for (name, pairs) in &mut d {
            for (key, val) in pairs {
                let k = u32::from_le_bytes(key[..4].try_into().unwrap());
                if name == "timers" {
                    val[24..32].fill(0);
                } else if name == "results" && k == 24 {
                    val.fill(0);
                }
            }
        }
        d
    };
    assert_eq!(
        mask(v),
        mask(k),
        "maps after the callbacks (runtime, kernel)"
    );
}

/// The timer programs of tests/progs: a one-shot timer, and one whose
/// callback arms it again until it has fired `limit` times.
#[test]
fn project_timer_programs_agree_with_the_kernel() {
    let cases = [
        ("callbacks.bpf.o", "xdp_arm_timer", "timers", 1, 1),
        ("timer_rearm.bpf.o", "xdp_timer_rearm", "rearm_timers", 4, 4),
    ];
    for (file, prog, map, want, callbacks) in cases {
        let obj = fixture("../../tests/progs", file);
        let (v, ran, vm) = vm_run(&obj, prog, true, 50 * MS);
        assert_eq!((fired(&v, map, 0), ran), (want, callbacks), "{prog}");
        assert_eq!(vm.armed_timers(), 0, "{prog}");
    }
    let kernel = match Kernel::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    for (file, prog, map, want, _) in cases {
        let obj = fixture("../../tests/progs", file);
        let k = kernel_run(
            &kernel,
            &obj,
            prog,
            |d| fired(d, map, 0) >= want,
            Duration::from_millis(20),
        );
        let (v, _, _) = vm_run(&obj, prog, false, 50 * MS);
        assert_eq!(v, k, "{prog}: maps after the callbacks (runtime, kernel)");
    }
}

/// bpf_wq (kfuncs): the kernel runs started work soon after the run, the
/// runtime at its next clock advance (even by 0 ns). The return values and
/// what the callbacks did (one of them starting a second work item) agree.
#[test]
fn work_queue_agrees_with_the_kernel() {
    let obj = fixture("tests/fixtures", "wq.bpf.o");
    let prog = "xdp_wq_api";
    for jit in [false, true] {
        let (d, ran, vm) = vm_run(&obj, prog, jit, 0);
        assert_eq!(ran, 2, "the started work and the one it started");
        assert_eq!(vm.armed_timers(), 0);
        let ran_of = |k: u32| u64_at(value(&d, "works", k), 0);
        assert_eq!((ran_of(0), ran_of(1)), (1, 1), "each work ran once");
    }
    let kernel = match Kernel::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    let k = kernel_run(
        &kernel,
        &obj,
        prog,
        |d| u64_at(value(d, "works", 1), 0) >= 1,
        Duration::from_millis(20),
    );
    let (v, _, _) = vm_run(&obj, prog, false, 0);
    assert_eq!(v, k, "maps after the work ran (runtime, kernel)");
}

fn key_u32(k: &[u8]) -> u32 {
    u32::from_le_bytes(k[..4].try_into().unwrap())
}

/// Timers in HASH values live and die with their element: deleted or
/// replaced elements' timers never fire, a replacement starts without one,
/// a callback may delete its own element. The maps agree with the kernel's
/// once its callbacks ran.
#[test]
fn hash_timers_follow_their_elements_as_the_kernel() {
    let obj = fixture("tests/fixtures", "timers_hash.bpf.o");
    let prog = "xdp_hash_timers";
    let conns = |d: &Dump| -> Vec<(u32, u64, u64)> {
        let (_, pairs) = d.iter().find(|(n, _)| n == "conns").unwrap();
        let mut v: Vec<_> = pairs
            .iter()
            .map(|(k, v)| (key_u32(k), u64_at(v, 16), u64_at(v, 24)))
            .collect();
        v.sort();
        v
    };
    for jit in [false, true] {
        let (d, ran, vm) = vm_run(&obj, prog, jit, 100 * MS);
        assert_eq!(ran, 3, "keys 1, 3 and 4 fire");
        assert_eq!(vm.armed_timers(), 0);
        // key 2 deleted, key 4 deleted by its own callback.
        assert_eq!(conns(&d), vec![(1, 1, 1), (3, 1, 3)]);
    }
    let kernel = match Kernel::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    let k = kernel_run(
        &kernel,
        &obj,
        prog,
        |d| conns(d) == vec![(1, 1, 1), (3, 1, 3)],
        Duration::from_millis(20),
    );
    let (v, _, _) = vm_run(&obj, prog, false, 100 * MS);
    assert_eq!(v, k, "maps after the callbacks (runtime, kernel)");
}

/// An LRU hash evicting elements cancels their timers: every element left
/// fired once, with its own key, and nothing else fired. Which elements
/// the LRU keeps is the map's choice (the kernel's differs), so the
/// comparison is of that invariant on both.
#[test]
fn lru_eviction_cancels_timers() {
    let obj = fixture("tests/fixtures", "timers_hash.bpf.o");
    let prog = "xdp_lru_timers";
    let each_fired_once = |d: &Dump| {
        let (_, pairs) = d.iter().find(|(n, _)| n == "lru").unwrap();
        !pairs.is_empty()
            && pairs
                .iter()
                .all(|(k, v)| u64_at(v, 16) == 1 && u64_at(v, 24) == key_u32(k) as u64)
    };
    let lru_len = |d: &Dump| d.iter().find(|(n, _)| n == "lru").unwrap().1.len() as u64;
    for jit in [false, true] {
        let (d, ran, _) = vm_run(&obj, prog, jit, 100 * MS);
        assert!(each_fired_once(&d), "{d:?}");
        assert_eq!(ran, lru_len(&d), "only the elements kept fired");
        assert!(lru_len(&d) < 6, "the 4-entry LRU evicted");
    }
    let kernel = match Kernel::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    // 6 ms is the last expiry; wait until the kept ones fired, then past it.
    let k = kernel_run(
        &kernel,
        &obj,
        prog,
        each_fired_once,
        Duration::from_millis(20),
    );
    assert!(each_fired_once(&k), "{k:?}");
}
