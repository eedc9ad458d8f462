//! Threaded scaling of a map-heavy XDP program (tests/fixtures/
//! map_heavy.bpf.c: 32 flow-table touches per run, a quarter of them
//! overwriting updates), with its flow table as HASH and as RHASH, on 1 and
//! 2 threads, for the interpreter and bpfvet's JIT. Each figure is the
//! median over batches of total runs per second (all threads' runs / wall
//! time of the batch); the configurations take turns batch by batch, so a
//! change in the machine's load touches them all alike. Prints a markdown
//! table (bench/vm/run.sh writes it to bench/vm/RESULTS.md). A control
//! row runs a program without maps (tests/progs' xdp_collatz) the same
//! way: its scaling is what the machine had to give at the time (2 cores
//! shared with other work scale less than 2x whatever the maps do). The
//! CPU-time columns divide the threads' CPU time by their runs: waiting for
//! a core does not count there, so their rise from 1 to 2 threads is what
//! sharing the maps costs (contended locks, cache lines moving between
//! cores), a figure a busy machine disturbs much less.

use std::path::Path;

use bpfvet_isa::uapi::{MapType, BPF_F_NO_PREALLOC};
use bpfvet_object::Object;
use bpfvet_vm::{test_run_threads, TestRunInput, Vm};

const BATCHES: usize = 15;
const REPEAT: u32 = 10_000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

struct Config {
    map: &'static str,
    prog: usize,
    input: usize,
    jit: bool,
    threads: u32,
    vm: Vm,
    runs_per_sec: Vec<f64>,
    cpu_ns_per_run: Vec<f64>,
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let hash = Object::from_file(dir.join("map_heavy.bpf.o"), &Default::default()).expect("object");
    let mut rhash = hash.clone();
    for m in &mut rhash.maps {
        if m.map_type == MapType::HASH {
            m.map_type = MapType::RHASH;
            m.map_flags |= BPF_F_NO_PREALLOC;
        }
    }
    let progs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs");
    let collatz =
        Object::from_file(progs.join("loops.bpf.o"), &Default::default()).expect("object");
    let v4 = std::fs::read(progs.join("packets/v4_tcp80.bin")).expect("frame");
    let c27 = std::fs::read(progs.join("packets/raw_collatz27.bin")).expect("frame");
    let inputs = [
        TestRunInput {
            data: &v4,
            repeat: REPEAT,
            ..Default::default()
        },
        TestRunInput {
            data: &c27,
            repeat: REPEAT * 10,
            ..Default::default()
        },
    ];
    let mut configs = Vec::new();
    for jit in [false, true] {
        let tables = [
            ("HASH", &hash, "xdp_map_heavy", 0),
            ("RHASH", &rhash, "xdp_map_heavy", 0),
            ("none (control: xdp_collatz)", &collatz, "xdp_collatz", 1),
        ];
        for (map, obj, name, input) in tables {
            for threads in [1, 2] {
                let mut vm = Vm::load_cpus(obj, 2).expect("vm load");
                let prog = vm.program_index(name).expect("program");
                // Verified, as `bpfvet run` runs it: the JIT uses the
                // proof. The RHASH table is the HASH program's code with
                // another map type the kernel's verifier does not know:
                // the HASH object's proof covers it.
                let verified = if map == "RHASH" { &hash } else { obj };
                let proof = Vm::verify(verified, prog).expect("bpfvet verifies it");
                assert!(vm.set_proof(prog, proof), "the same code");
                configs.push(Config {
                    map,
                    prog,
                    input,
                    jit,
                    threads,
                    vm,
                    runs_per_sec: Vec::new(),
                    cpu_ns_per_run: Vec::new(),
                });
            }
        }
    }
    let batch = |c: &Config| {
        let input = &inputs[c.input];
        let r = test_run_threads(&c.vm, c.prog, input, c.threads, c.jit).expect("run");
        assert!(
            r.declined.is_none() || !c.jit,
            "the JIT compiles the program"
        );
        (
            r.total_runs_per_sec(input.repeat),
            r.cpu_ns_per_run(input.repeat),
        )
    };
    // One unmeasured batch each: the flow tables fill up.
    for c in &configs {
        batch(c);
    }
    for round in 0..BATCHES {
        // Rotate the order so no configuration always runs first.
        let n = configs.len();
        for i in 0..n {
            let c = &mut configs[(i + round) % n];
            let (rate, cpu) = batch(c);
            c.runs_per_sec.push(rate);
            c.cpu_ns_per_run.push(cpu);
        }
    }
    println!(
        "| engine | flow table | 1 thread, runs/s | 2 threads, runs/s | 2 threads / 1 thread \
         | CPU ns per run, 1 thread | CPU ns per run, 2 threads | CPU cost of sharing |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for pair in configs.chunks(2) {
        let one = median(pair[0].runs_per_sec.clone());
        let two = median(pair[1].runs_per_sec.clone());
        let cpu_one = median(pair[0].cpu_ns_per_run.clone());
        let cpu_two = median(pair[1].cpu_ns_per_run.clone());
        let engine = if pair[0].jit {
            "bpfvet JIT"
        } else {
            "interpreter"
        };
        println!(
            "| {engine} | {} | {one:.0} | {two:.0} | {:.2}x | {cpu_one:.0} | {cpu_two:.0} | {:+.0}% |",
            pair[0].map,
            two / one,
            (cpu_two / cpu_one - 1.0) * 100.0
        );
    }
}
