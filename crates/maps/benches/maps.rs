//! Criterion benches of the hot paths: HASH vs RHASH lookups and in-place
//! updates, and the hash functions. The full seed tables (all points, the
//! peers, memory) come from `bpfvet bench maps`. Run with
//! `cargo bench -p bpfvet-maps --features bench`.

use std::hint::black_box;

use bpfvet_isa::uapi::{self, MapType};
use bpfvet_maps::{create, pin, Map, MapAttr};
use criterion::{criterion_group, criterion_main, Criterion};

fn map(t: MapType, ks: u32, max: u32, n: u64) -> std::sync::Arc<dyn Map> {
    let flags = if t == MapType::RHASH {
        uapi::BPF_F_NO_PREALLOC
    } else {
        0
    };
    let m = create(MapAttr::new(t, ks, 8, max).with_flags(flags)).unwrap();
    for i in 0..n {
        let mut k = vec![0u8; ks as usize];
        k[..4].copy_from_slice(&(i as u32).to_ne_bytes());
        m.update_elem(&k, &[1; 8], 0, 0).unwrap();
    }
    m
}

fn lookups(c: &mut Criterion) {
    for (ks, max, n) in [(4u32, 1000u32, 500u64), (8, 1_000_000, 700_000)] {
        for t in [MapType::HASH, MapType::RHASH] {
            let m = map(t, ks, max, n);
            let mut i = 0u64;
            c.bench_function(&format!("lookup {t} ks={ks} {n}/{max}"), |b| {
                let g = pin();
                b.iter(|| {
                    i = (i + 7919) % n;
                    let mut k = [0u8; 8];
                    k[..4].copy_from_slice(&(i as u32).to_ne_bytes());
                    black_box(m.lookup_elem(&k[..ks as usize], 0, &g))
                })
            });
        }
    }
}

fn updates(c: &mut Criterion) {
    for t in [MapType::HASH, MapType::RHASH] {
        let n = 100_000u64;
        let m = map(t, 8, n as u32, n);
        let mut i = 0u64;
        c.bench_function(&format!("in-place update {t} 100k full"), |b| {
            let g = pin();
            b.iter(|| {
                i = (i + 7919) % n;
                let mut k = [0u8; 8];
                k[..4].copy_from_slice(&(i as u32).to_ne_bytes());
                black_box(m.update_elem_guarded(&k, &[2; 8], uapi::BPF_ANY, 0, &g))
            })
        });
    }
}

fn hashes(c: &mut Criterion) {
    for ks in [4usize, 8, 32, 256] {
        let key = vec![0xa5u8; ks];
        c.bench_function(&format!("jhash {ks}B"), |b| {
            b.iter(|| bpfvet_maps::hash::jhash(black_box(&key), 7))
        });
    }
    let k8 = 0x1234_5678_9abc_def0u64;
    c.bench_function("hash_u64 8B", |b| {
        b.iter(|| bpfvet_maps::hash::hash_u64(black_box(k8), 7))
    });
}

criterion_group!(benches, lookups, updates, hashes);
criterion_main!(benches);
