//! Where the threaded HASH figure's sharing cost comes from: the map_heavy
//! workload (per "run": 24 lookups each followed by two atomic adds on the
//! value, 8 BPF_ANY overwrites of existing keys; 4096 u32 keys, 16-byte
//! values) on 1 and 2 threads, the threads' keys either drawn from the whole
//! table (as map_heavy does) or from disjoint halves. Prints CPU ns per run.
//!
//!   sharing hash|rhash shared|disjoint THREADS RUNS
//!
//! A rise from 1 to 2 threads with shared keys and none with disjoint ones
//! is the workload's own sharing (every key written by both CPUs), not a
//! bpfvet structure. Only meaningful when the two threads really run at
//! once (an idle machine: compare the control row of threads_scaling).

use std::sync::atomic::{AtomicU64, Ordering};

use bpfvet_isa::uapi::{self, MapType};
use bpfvet_maps::{create, pin, MapAttr};

const FLOWS: u32 = 4096;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let t = if a[1] == "rhash" {
        MapType::RHASH
    } else {
        MapType::HASH
    };
    let disjoint = a[2] == "disjoint";
    let threads: u32 = a[3].parse().unwrap();
    let runs: u32 = a[4].parse().unwrap();
    let flags = if t == MapType::RHASH {
        uapi::BPF_F_NO_PREALLOC
    } else {
        0
    };
    let mut attr = MapAttr::new(t, 4, 16, FLOWS).with_flags(flags);
    attr.nr_cpus = 2;
    let m = create(attr).unwrap();
    for k in 0..FLOWS {
        m.update(&k.to_ne_bytes(), &[0; 16], 0).unwrap();
    }
    let m = &*m;
    let cpu: Vec<u64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|cpu| {
                s.spawn(move || {
                    let mut x = 0x9e37_79b9u32.wrapping_mul(cpu + 1);
                    let t0 = thread_cpu_ns();
                    let g = pin();
                    for _ in 0..runs {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        for i in 0..32u32 {
                            let mut key = x.wrapping_add(i.wrapping_mul(2_654_435_761)) % FLOWS;
                            if disjoint {
                                key = key / 2 + cpu * (FLOWS / 2);
                            }
                            let k = key.to_ne_bytes();
                            if i % 4 == 3 {
                                m.update_elem_guarded(&k, &[1; 16], uapi::BPF_ANY, cpu, &g)
                                    .unwrap();
                                continue;
                            }
                            if let Some(p) = m.lookup_elem(&k, cpu, &g) {
                                // SAFETY: a live 16-byte, 8-aligned value.
                                let v = unsafe { &*(p.as_ptr() as *const [AtomicU64; 2]) };
                                v[0].fetch_add(1, Ordering::Relaxed);
                                v[1].fetch_add(60, Ordering::Relaxed);
                            }
                        }
                    }
                    thread_cpu_ns() - t0
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total: u64 = cpu.iter().sum();
    println!(
        "{} {} threads={} cpu ns/run {:.0}",
        a[1],
        a[2],
        threads,
        total as f64 / (runs as f64 * threads as f64)
    );
}
