//! ns per run of the interpreter and of bpfvet's JIT against the kernel
//! JIT's BPF_PROG_TEST_RUN duration, on the same program and frame,
//! measured in one process (both engines on the verified program, as
//! `bpfvet run` and `bpfvet run --jit` run it: proven accesses without
//! run-time checks):
//! `cargo bench -p bpfvet-vm` prints a markdown table (bench/vm/run.sh
//! writes it to bench/vm/RESULTS.md). Without root the kernel column says
//! so.

use std::path::Path;

use bpfvet_kernel::{Kernel, LoadOptions, TestRunInput as KInput};
use bpfvet_object::Object;
use bpfvet_vm::{test_run, test_run_with, Jit, TestRunInput, Vm};

/// (object, program, frame, what it shows)
const CASES: &[(&str, &str, &str, &str)] = &[
    (
        "xdp_parser.bpf.o",
        "xdp_parse_flows",
        "v4_tcp80.bin",
        "XDP parser, IPv4/TCP",
    ),
    (
        "xdp_parser.bpf.o",
        "xdp_parse_flows",
        "qinq_v4_udp9.bin",
        "XDP parser, QinQ/UDP",
    ),
    (
        "socket_filter.bpf.o",
        "sock_count_ipproto",
        "v4_tcp80.bin",
        "socket filter",
    ),
    (
        "loops.bpf.o",
        "xdp_collatz",
        "raw_collatz27.bin",
        "loop-heavy (Collatz of 27)",
    ),
    (
        "tc_classifier.bpf.o",
        "tc_classify",
        "v4_tcp80.bin",
        "tc: skb fields, helpers",
    ),
    (
        "calls.bpf.o",
        "xdp_calls",
        "v4_tcp80.bin",
        "bpf-to-bpf calls",
    ),
    (
        "atomics.bpf.o",
        "xdp_atomics",
        "v4_tcp80.bin",
        "atomics on a map value",
    ),
];

const BATCHES: usize = 15;

/// ns per run of one batch of `run` (REPEAT runs), in thread CPU time:
/// the kernel's test_run leaves out of its duration the time the task
/// spends rescheduled, and on a shared machine so do we (a batch of a slow
/// engine is preempted more often).
fn per_run_cpu_ns(run: impl FnOnce()) -> f64 {
    let t0 = bpfvet_vm::thread_cpu_ns();
    run();
    (bpfvet_vm::thread_cpu_ns() - t0) as f64 / REPEAT as f64
}
const REPEAT: u32 = 2000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs");
    let kernel = Kernel::open();
    if let Err(e) = &kernel {
        eprintln!("SKIP kernel column: {e}");
    }
    println!(
        "| program | frame | interpreter ns/run | bpfvet JIT ns/run | kernel JIT ns/run | interpreter / kernel | bpfvet JIT / kernel | JIT compile µs (whole object) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    // `cargo bench ... -- WORD` measures only the programs named with WORD.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for &(file, prog, frame, what) in CASES {
        if !only.is_empty() && !only.iter().any(|w| prog.contains(w.as_str())) {
            continue;
        }
        let obj = Object::from_file(dir.join(file), &Default::default()).expect("object");
        let idx = obj
            .programs
            .iter()
            .position(|p| p.name == prog)
            .expect("program");
        let data = std::fs::read(dir.join("packets").join(frame)).expect("frame");
        // As `bpfvet run` runs it: verified, the interpreter using the proof.
        let mut vm = Vm::load(&obj).expect("vm load");
        vm.verify_program(&obj, idx).expect("bpfvet verifies it");
        let vm = vm;
        let input = TestRunInput {
            data: &data,
            ctx: None,
            repeat: REPEAT,
            cpu: 0,
        };
        // As `bpfvet run --jit` runs it: verified, the JIT using the proof.
        let mut jit_vm = Vm::load(&obj).expect("vm load");
        jit_vm
            .verify_program(&obj, idx)
            .expect("bpfvet verifies it");
        let jit_vm = jit_vm;
        let t0 = std::time::Instant::now();
        let jit = Jit::compile(&jit_vm);
        let compile_us = t0.elapsed().as_secs_f64() * 1e6;
        assert_eq!(jit.declined(idx), None, "{prog} compiles");
        let loaded = kernel.as_ref().ok().and_then(|k| {
            let session = k.open_object(&obj);
            session.load_program(idx, &LoadOptions::default())?.loaded
        });
        // The engines take turns batch by batch (order rotated), so a
        // change of the machine's load falls on all three alike.
        let (mut ours, mut native, mut kernel_ns) = (Vec::new(), Vec::new(), Vec::new());
        for batch in 0..BATCHES {
            for turn in 0..3 {
                match (batch + turn) % 3 {
                    0 => ours.push(per_run_cpu_ns(|| {
                        test_run(&vm, idx, &input).expect("vm run");
                    })),
                    1 => native.push(per_run_cpu_ns(|| {
                        test_run_with(&jit, &jit_vm, idx, &input).expect("jit run");
                    })),
                    _ => {
                        if let Some(o) = loaded.as_ref().and_then(|l| {
                            l.test_run(&KInput {
                                data: &data,
                                repeat: REPEAT,
                                ..Default::default()
                            })
                            .ok()
                        }) {
                            kernel_ns.push(o.duration_ns as f64);
                        }
                    }
                }
            }
        }
        let (ours, native) = (median(ours), median(native));
        let theirs = (!kernel_ns.is_empty()).then(|| median(kernel_ns));
        let ratio = |x: f64| match theirs {
            Some(k) => format!("{:.2}x", x / k.max(1.0)),
            None => "n/a".into(),
        };
        let k = theirs.map_or("n/a".into(), |k| format!("{k:.0}"));
        println!(
            "| {prog} ({what}) | {frame} | {ours:.0} | {native:.0} | {k} | {} | {} | {compile_us:.0} |",
            ratio(ours),
            ratio(native)
        );
    }
}
