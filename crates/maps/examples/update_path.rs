//! One map, one workload, nothing else: the full-map update of the seed
//! benchmark (100k 8-byte keys = max_entries, 8-byte values), for profilers
//! and instruction counters. `bpfvet bench maps` gives the tables; this
//! gives a process to point perf or valgrind at.
//!
//!   cargo build --release -p bpfvet-maps --example update_path
//!   update_path hash|rhash OPS guarded|unguarded|lookup
//!
//! Per-operation counts: run it under `valgrind --tool=cachegrind
//! --cache-sim=yes` with OPS = 0 and OPS = N and divide the difference by N.
//! It prints the thread CPU time per operation.

use bpfvet_isa::uapi::{self, MapType};
use bpfvet_maps::{create, pin, Map, MapAttr};

const N: usize = 100_000;

fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: update_path hash|rhash OPS guarded|unguarded|lookup";
    let (t, flags) = match args.get(1).map(String::as_str) {
        Some("hash") => (MapType::HASH, 0),
        Some("rhash") => (MapType::RHASH, uapi::BPF_F_NO_PREALLOC),
        _ => return eprintln!("{usage}"),
    };
    let Some(ops) = args.get(2).and_then(|s| s.parse::<usize>().ok()) else {
        return eprintln!("{usage}");
    };
    let mode = args.get(3).map_or("guarded", String::as_str);
    let mut a = MapAttr::new(t, 8, 8, N as u32).with_flags(flags);
    a.nr_cpus = 1;
    let m = create(a).expect("valid attributes");
    let mut x = 7u64;
    let keys: Vec<[u8; 8]> = (0..N as u64)
        .map(|i| ((xorshift(&mut x) << 32) | i).to_ne_bytes())
        .collect();
    for k in &keys {
        m.update(k, &[1; 8], 0).expect("fill within max_entries");
    }
    if let Some(r) = m.as_any().downcast_ref::<bpfvet_maps::rhash::RHashMap>() {
        r.rehash_step(usize::MAX);
    }
    let idx: Vec<usize> = (0..ops).map(|_| xorshift(&mut x) as usize % N).collect();
    let v = [2u8; 8];
    let t0 = thread_cpu_ns();
    let done = run(&*m, &keys, &idx, &v, mode);
    let ns = (thread_cpu_ns() - t0) / ops.max(1) as f64;
    println!(
        "{} {mode}: {done} of {ops} ops succeeded, {ns:.1} ns/op (thread CPU time)",
        args[1]
    );
}

fn run(m: &dyn Map, keys: &[[u8; 8]], idx: &[usize], v: &[u8], mode: &str) -> usize {
    let mut done = 0;
    for chunk in idx.chunks(256) {
        if mode == "unguarded" {
            // Each update pins and unpins by itself.
            for &i in chunk {
                done += m.update_elem(&keys[i], v, uapi::BPF_ANY, 0).is_ok() as usize;
            }
            continue;
        }
        // A program run's guard, as the bench and the vm hold one.
        let g = pin();
        for &i in chunk {
            done += if mode == "guarded" {
                m.update_elem_guarded(&keys[i], v, uapi::BPF_ANY, 0, &g)
                    .is_ok()
            } else {
                m.lookup_elem(&keys[i], 0, &g).is_some()
            } as usize;
        }
    }
    done
}
