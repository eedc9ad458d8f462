//! The seed benchmarks (SEEDS.md §2) for HASH and RHASH, with papaya and
//! dashmap as Rust peers on the same workloads. Used by `bpfvet bench
//! maps` and by the criterion benches; every figure is measured here.
//!
//! Each figure is the median of `runs` timed runs of a fixed operation
//! count (wall clock, or the thread's CPU time with `cpu_time`); HASH and
//! RHASH updates are timed alternately, run by run. Our maps are driven through `&dyn Map` and the program-side API
//! (lookup_elem and update_elem_guarded under a guard re-pinned every 256
//! operations, as a program run holds one, like the kernel's helpers run
//! inside the program's RCU section), the peers through their own APIs
//! with their default hashers.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use bpfvet_isa::uapi::{self, MapType};

use crate::{accounting, create, Map, MapAttr};

#[derive(Clone, Debug)]
pub struct Options {
    /// Timed runs per figure (the median is reported).
    pub runs: usize,
    /// Scale operation counts and map sizes down (smoke test).
    pub quick: bool,
    /// Which tables: "lookup", "update", "overwrite", "hash".
    pub only: Vec<String>,
    /// Time the one-thread tables by the measuring thread's CPU time
    /// instead of the wall clock: on a machine shared with other work it
    /// leaves out the time the thread waited for a CPU (on an idle machine
    /// the two agree).
    pub cpu_time: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            runs: 5,
            quick: false,
            only: Vec::new(),
            cpu_time: false,
        }
    }
}

impl Options {
    fn wants(&self, table: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|t| t == table)
    }
    fn scale(&self, n: usize) -> usize {
        if self.quick {
            (n / 100).max(100)
        } else {
            n
        }
    }
}

/// Deterministic xorshift keys.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `n` distinct keys of `ks` bytes, flattened.
fn keys(n: usize, ks: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed | 1);
    let mut out = vec![0u8; n * ks];
    for i in 0..n {
        let k = &mut out[i * ks..(i + 1) * ks];
        for (j, b) in k.iter_mut().enumerate() {
            *b = (rng.next() >> (j % 8)) as u8;
        }
        // The index makes keys distinct.
        let idx = (i as u32).to_le_bytes();
        let at = ks.saturating_sub(4);
        k[at..].copy_from_slice(&idx[..ks - at]);
    }
    out
}

/// `n` keys of `ks` bytes as the seed's lookup bench makes them: `i + 1`
/// (little-endian u32) first, then bytes that are random but the same in
/// every key.
fn seed_keys(n: usize, ks: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed | 1);
    let tail: Vec<u8> = (0..ks.saturating_sub(4))
        .map(|_| rng.next() as u8)
        .collect();
    let mut out = Vec::with_capacity(n * ks);
    for i in 0..n {
        let id = (i as u32 + 1).to_le_bytes();
        out.extend_from_slice(&id[..ks.min(4)]);
        out.extend_from_slice(&tail);
    }
    out
}

fn order(n: usize, ops: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng(seed | 1);
    (0..ops).map(|_| (rng.next() % n as u64) as u32).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

/// Seconds on the clock the options ask for.
fn now(o: &Options) -> f64 {
    if o.cpu_time {
        thread_cpu_seconds()
    } else {
        // Wall time since a fixed origin.
        static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed().as_secs_f64()
    }
}

fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Median ops/s of `o.runs` timed runs of `f`.
fn rate(o: &Options, ops: usize, mut f: impl FnMut()) -> f64 {
    median((0..o.runs).map(|_| timed_once(o, ops, &mut f)).collect())
}

fn timed_once(o: &Options, ops: usize, f: &mut impl FnMut()) -> f64 {
    let t = now(o);
    f();
    ops as f64 / (now(o) - t)
}

/// Median rates of `a` and `b`, timed alternately.
fn rates_interleaved(
    o: &Options,
    ops: usize,
    mut a: impl FnMut(),
    mut b: impl FnMut(),
) -> (f64, f64) {
    let mut ra = Vec::with_capacity(o.runs);
    let mut rb = Vec::with_capacity(o.runs);
    for _ in 0..o.runs {
        ra.push(timed_once(o, ops, &mut a));
        rb.push(timed_once(o, ops, &mut b));
    }
    (median(ra), median(rb))
}

fn new_map(t: MapType, ks: usize, vs: usize, max: usize) -> Arc<dyn Map> {
    let flags = if t == MapType::RHASH {
        uapi::BPF_F_NO_PREALLOC
    } else {
        0
    };
    let mut a = MapAttr::new(t, ks as u32, vs as u32, max as u32).with_flags(flags);
    a.nr_cpus = 1;
    create(a).expect("benchmark map attributes are valid")
}

fn fill(m: &dyn Map, keys: &[u8], ks: usize, vs: usize) {
    let v = vec![1u8; vs];
    for k in keys.chunks(ks) {
        m.update_elem(k, &v, uapi::BPF_ANY, 0)
            .expect("fill within max_entries");
    }
}

fn lookups_ours(m: &dyn Map, keys: &[u8], ks: usize, idx: &[u32]) -> u64 {
    let mut acc = 0u64;
    for chunk in idx.chunks(256) {
        let g = crate::pin();
        for &i in chunk {
            let k = &keys[i as usize * ks..][..ks];
            if let Some(p) = m.lookup_elem(k, 0, &g) {
                // SAFETY: 8-byte aligned value of at least 8 bytes, guard held.
                acc =
                    acc.wrapping_add(unsafe { std::ptr::read_volatile(p.as_ptr() as *const u64) });
            }
        }
    }
    acc
}

/// BPF_ANY updates of `keys[idx]`; returns how many succeeded.
fn updates_ours(m: &dyn Map, keys: &[u8], ks: usize, idx: &[u32], v: &[u8]) -> usize {
    let mut ok = 0;
    for chunk in idx.chunks(256) {
        let g = crate::pin();
        for &i in chunk {
            let k = &keys[i as usize * ks..][..ks];
            ok += m.update_elem_guarded(k, v, uapi::BPF_ANY, 0, &g).is_ok() as usize;
        }
    }
    ok
}

fn peer_keys<const K: usize>(keys: &[u8]) -> Vec<[u8; K]> {
    keys.chunks(K)
        .map(|c| c.try_into().unwrap_or([0; K]))
        .collect()
}

/// Lookups/s of papaya and dashmap holding `n` keys.
fn peers_lookup<const K: usize>(keys: &[u8], idx: &[u32], o: &Options) -> (f64, f64) {
    let ks: Vec<[u8; K]> = peer_keys(keys);
    let p = papaya::HashMap::new();
    {
        let pin = p.pin();
        for k in &ks {
            pin.insert(*k, 1u64);
        }
    }
    let papaya_rate = rate(o, idx.len(), || {
        let mut acc = 0u64;
        for chunk in idx.chunks(256) {
            let pin = p.pin();
            for &i in chunk {
                acc = acc.wrapping_add(*pin.get(&ks[i as usize]).unwrap_or(&0));
            }
        }
        black_box(acc);
    });
    drop(p);
    let d = dashmap::DashMap::new();
    for k in &ks {
        d.insert(*k, 1u64);
    }
    let dash_rate = rate(o, idx.len(), || {
        let mut acc = 0u64;
        for &i in idx {
            acc = acc.wrapping_add(d.get(&ks[i as usize]).map_or(0, |v| *v));
        }
        black_box(acc);
    });
    (papaya_rate, dash_rate)
}

fn peers_update<const K: usize>(keys: &[u8], idx: &[u32], o: &Options) -> (f64, f64) {
    let ks: Vec<[u8; K]> = peer_keys(keys);
    let p = papaya::HashMap::new();
    {
        let pin = p.pin();
        for k in &ks {
            pin.insert(*k, 1u64);
        }
    }
    let papaya_rate = rate(o, idx.len(), || {
        for chunk in idx.chunks(256) {
            let pin = p.pin();
            for &i in chunk {
                pin.insert(ks[i as usize], i as u64);
            }
        }
    });
    drop(p);
    let d = dashmap::DashMap::new();
    for k in &ks {
        d.insert(*k, 1u64);
    }
    let dash_rate = rate(o, idx.len(), || {
        for &i in idx {
            d.insert(ks[i as usize], i as u64);
        }
    });
    (papaya_rate, dash_rate)
}

fn peers_lookup_by_size(ks: usize, keys: &[u8], idx: &[u32], o: &Options) -> (f64, f64) {
    match ks {
        4 => peers_lookup::<4>(keys, idx, o),
        8 => peers_lookup::<8>(keys, idx, o),
        16 => peers_lookup::<16>(keys, idx, o),
        32 => peers_lookup::<32>(keys, idx, o),
        _ => (f64::NAN, f64::NAN),
    }
}

pub struct LookupRow {
    pub key_size: usize,
    pub max_entries: usize,
    pub entries: usize,
    pub hash: f64,
    pub rhash: f64,
    pub papaya: f64,
    pub dashmap: f64,
}

/// The seed's six lookup points.
pub const LOOKUP_POINTS: [(usize, usize, usize); 6] = [
    (4, 1_000, 500),
    (8, 1_000_000, 200_000),
    (8, 1_000_000, 700_000),
    (8, 1_000_000, 1_000_000),
    (16, 1_000_000, 700_000),
    (32, 1_000_000, 700_000),
];

/// The seed's lookup workload (the kernel's `bpf_hashmap_lookup` bench):
/// key `i` holds `i + 1` in its first four bytes and the same random bytes
/// after them; the map holds keys 0..entries and is looked up in that order,
/// round and round. HASH and RHASH exist side by side and are timed
/// alternately, so a change in the machine's load hits both columns alike.
pub fn lookup_table(o: &Options) -> Vec<LookupRow> {
    let ops = o.scale(2_000_000);
    LOOKUP_POINTS
        .iter()
        .map(|&(ks, max, n)| {
            let (max, n) = if o.quick && max > 1000 {
                (max / 100, n / 100)
            } else {
                (max, n)
            };
            let keys = seed_keys(n, ks, 0x5eed + ks as u64);
            let idx: Vec<u32> = (0..ops).map(|r| (r % n) as u32).collect();
            let [hash_map, rhash_map] = [MapType::HASH, MapType::RHASH].map(|t| {
                let m = new_map(t, ks, 8, max);
                fill(&*m, &keys, ks, 8);
                settle(&*m);
                m
            });
            let (hash, rhash) = rates_interleaved(
                o,
                ops,
                || {
                    black_box(lookups_ours(&*hash_map, &keys, ks, &idx));
                },
                || {
                    black_box(lookups_ours(&*rhash_map, &keys, ks, &idx));
                },
            );
            drop((hash_map, rhash_map));
            let (papaya, dashmap) = peers_lookup_by_size(ks, &keys, &idx, o);
            LookupRow {
                key_size: ks,
                max_entries: max,
                entries: n,
                hash,
                rhash,
                papaya,
                dashmap,
            }
        })
        .collect()
}

/// Finish the grow a fill started, as the kernel's resize worker would,
/// rather than inside the timed operations.
fn settle(m: &dyn Map) {
    if let Some(r) = m.as_any().downcast_ref::<crate::rhash::RHashMap>() {
        r.rehash_step(usize::MAX);
    }
}

pub struct UpdateRow {
    pub what: &'static str,
    pub hash: f64,
    pub rhash: f64,
    pub papaya: f64,
    pub dashmap: f64,
}

/// Entries of the seed's full-update map (the kernel's
/// `bpf_hashmap_full_update` bench: u32 keys 0..1000, u64 values).
pub const FULL_UPDATE_ENTRIES: usize = 1_000;
/// Entries of the larger in-place row, updated in random order.
pub const LARGE_UPDATE_ENTRIES: usize = 100_000;

/// Full-map updates. The seed's workload: a full map of 1,000 u32 keys
/// where one key is updated over and over, first an absent one (E2BIG each
/// time) and then an existing one (in place). Beyond the seed: in-place
/// updates of 100,000 8-byte keys in random order, where cache misses
/// rather than the update path dominate.
pub fn update_table(o: &Options) -> Vec<UpdateRow> {
    let ops = o.scale(2_000_000);
    let v = [2u8; 8];
    let mut rows = Vec::new();

    let n = FULL_UPDATE_ENTRIES;
    let keys: Vec<u8> = (0..n as u32).flat_map(|i| i.to_ne_bytes()).collect();
    let maps = [MapType::HASH, MapType::RHASH].map(|t| {
        let m = new_map(t, 4, 8, n);
        fill(&*m, &keys, 4, 8);
        settle(&*m);
        m
    });
    let absent = (n as u32).to_ne_bytes();
    let same_key = vec![0u32; ops];
    let absent_rates = update_rates(o, &maps, &absent, 4, &same_key, &v);
    let present_rates = update_rates(o, &maps, &keys, 4, &same_key, &v);
    drop(maps);
    rows.push(UpdateRow {
        what: "1,000 u32 keys: absent key, full map (E2BIG)",
        hash: absent_rates.0,
        rhash: absent_rates.1,
        papaya: f64::NAN,
        dashmap: f64::NAN,
    });
    let (papaya, dashmap) = peers_update::<4>(&keys, &same_key, o);
    rows.push(UpdateRow {
        what: "1,000 u32 keys: existing key (in place / replace)",
        hash: present_rates.0,
        rhash: present_rates.1,
        papaya,
        dashmap,
    });

    let n = o.scale(LARGE_UPDATE_ENTRIES);
    let keys = self::keys(n, 8, 7);
    let idx = order(n, ops, 3);
    let maps = [MapType::HASH, MapType::RHASH].map(|t| {
        let m = new_map(t, 8, 8, n);
        fill(&*m, &keys, 8, 8);
        settle(&*m);
        m
    });
    let random_rates = update_rates(o, &maps, &keys, 8, &idx, &v);
    drop(maps);
    let (papaya, dashmap) = peers_update::<8>(&keys, &idx, o);
    rows.push(UpdateRow {
        what: "100,000 8-byte keys, random order: existing key",
        hash: random_rates.0,
        rhash: random_rates.1,
        papaya,
        dashmap,
    });
    rows
}

/// BPF_ANY updates of `keys[idx]` on HASH (`maps[0]`) and RHASH
/// (`maps[1]`), timed alternately.
fn update_rates(
    o: &Options,
    maps: &[Arc<dyn Map>; 2],
    keys: &[u8],
    ks: usize,
    idx: &[u32],
    v: &[u8],
) -> (f64, f64) {
    rates_interleaved(
        o,
        idx.len(),
        || {
            black_box(updates_ours(&*maps[0], keys, ks, idx, v));
        },
        || {
            black_box(updates_ours(&*maps[1], keys, ks, idx, v));
        },
    )
}

pub struct OverwriteRow {
    pub map: &'static str,
    pub value_size: usize,
    pub ops_per_sec: f64,
    pub steady_bytes: usize,
    pub peak_bytes: usize,
}

/// 8 writer threads overwrite random existing keys of a full map.
pub fn overwrite_table(o: &Options) -> Vec<OverwriteRow> {
    const THREADS: usize = 8;
    let n = 4096usize;
    let per_thread = o.scale(200_000);
    let keys = Arc::new(keys(n, 8, 11));
    let mut rows = Vec::new();
    for vs in [32usize, 4096] {
        for (name, t, flags) in [
            ("HASH", MapType::HASH, 0),
            ("HASH no_prealloc", MapType::HASH, uapi::BPF_F_NO_PREALLOC),
            ("RHASH", MapType::RHASH, uapi::BPF_F_NO_PREALLOC),
        ] {
            let mut attr = MapAttr::new(t, 8, vs as u32, n as u32).with_flags(flags);
            attr.nr_cpus = THREADS as u32;
            // Let deferred frees of earlier maps run before the baseline.
            for _ in 0..256 {
                crate::pin().flush();
            }
            let before = accounting::live_bytes();
            let m = create(attr).expect("valid attributes");
            fill(&*m, &keys, 8, vs);
            // Let deferred frees of earlier runs settle before measuring.
            for _ in 0..64 {
                crate::pin().flush();
            }
            let steady = accounting::live_bytes().saturating_sub(before);
            accounting::reset_peak();
            let peak_base = accounting::peak_bytes();
            let mut rates = Vec::new();
            for _ in 0..o.runs {
                let t0 = Instant::now();
                std::thread::scope(|s| {
                    for th in 0..THREADS {
                        let m = m.clone();
                        let keys = keys.clone();
                        s.spawn(move || {
                            let v = vec![th as u8; vs];
                            let mut rng = Rng(0x9e37_79b9 + th as u64);
                            for _ in 0..per_thread {
                                let j = (rng.next() % n as u64) as usize;
                                let _ = m.update_elem(
                                    &keys[j * 8..j * 8 + 8],
                                    &v,
                                    uapi::BPF_ANY,
                                    th as u32,
                                );
                            }
                        });
                    }
                });
                rates.push((THREADS * per_thread) as f64 / t0.elapsed().as_secs_f64());
            }
            let peak = accounting::peak_bytes()
                .max(peak_base)
                .saturating_sub(before);
            rows.push(OverwriteRow {
                map: name,
                value_size: vs,
                ops_per_sec: median(rates),
                steady_bytes: steady,
                peak_bytes: peak.max(steady),
            });
            drop(m);
            for _ in 0..64 {
                crate::pin().flush();
            }
        }
    }
    rows
}

pub struct HashRow {
    pub function: &'static str,
    pub key_size: usize,
    pub inlined: f64,
    pub fn_pointer: f64,
}

fn h_jhash(k: &[u8], seed: u32) -> u32 {
    crate::hash::jhash(k, seed)
}
fn h_xxh64(k: &[u8], seed: u32) -> u32 {
    xxhash_rust::xxh64::xxh64(k, seed as u64) as u32
}
fn h_xxh3(k: &[u8], seed: u32) -> u32 {
    crate::hash::xxh3_32(k, seed)
}
fn h_siphash13(k: &[u8], seed: u32) -> u32 {
    use std::hash::Hasher;
    let mut h = siphasher::sip::SipHasher13::new_with_keys(seed as u64, 0);
    h.write(k);
    h.finish() as u32
}

#[inline(always)]
fn hash_loop(keys: &[u8], ks: usize, f: impl Fn(&[u8], u32) -> u32) -> u32 {
    let mut acc = 0u32;
    for k in keys.chunks_exact(ks) {
        acc = acc.wrapping_add(f(black_box(k), 7));
    }
    acc
}

/// Hashes/s of each function, inlined and through a function pointer.
pub fn hash_table(o: &Options) -> Vec<HashRow> {
    type HashFn = fn(&[u8], u32) -> u32;
    let fns: [(&'static str, HashFn); 4] = [
        ("jhash", h_jhash),
        ("xxh64", h_xxh64),
        ("xxh3", h_xxh3),
        ("siphash-1-3", h_siphash13),
    ];
    let mut rows = Vec::new();
    for ks in [4usize, 8, 32, 256] {
        let n = o.scale(if ks == 256 { 500_000 } else { 2_000_000 });
        let keys = keys(n, ks, 5);
        for (i, (name, fp)) in fns.iter().enumerate() {
            // Inlined: a direct, monomorphised call per function.
            let inlined = rate(o, n, || {
                black_box(match i {
                    0 => hash_loop(&keys, ks, h_jhash),
                    1 => hash_loop(&keys, ks, h_xxh64),
                    2 => hash_loop(&keys, ks, h_xxh3),
                    _ => hash_loop(&keys, ks, h_siphash13),
                });
            });
            let opaque: HashFn = black_box(*fp);
            let fn_pointer = rate(o, n, || {
                black_box(hash_loop(&keys, ks, opaque));
            });
            rows.push(HashRow {
                function: name,
                key_size: ks,
                inlined,
                fn_pointer,
            });
        }
    }
    rows
}

/// The machine, as the report names it.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    format!("{cpus} CPUs (nproc), {model}, Linux {kernel}")
}

fn m(r: f64) -> String {
    if r.is_nan() {
        "n/a".into()
    } else {
        format!("{:.2}M", r / 1e6)
    }
}

fn mib(b: usize) -> String {
    format!("{:.2} MiB", b as f64 / (1 << 20) as f64)
}

/// Run the selected tables and render them as Markdown.
pub fn report(o: &Options) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "Machine: {}", machine());
    let _ = writeln!(
        s,
        "Each figure: median of {} runs{}{}.\n",
        o.runs,
        if o.cpu_time {
            "; one-thread tables timed by the thread's CPU time"
        } else {
            ""
        },
        if o.quick {
            ", QUICK mode (scaled down 100x)"
        } else {
            ""
        }
    );
    if o.wants("lookup") {
        let _ = writeln!(
            s,
            "### Lookups/s (value 8 B; one thread; keys looked up in insertion order, \
             as the kernel's bpf_hashmap_lookup bench; HASH and RHASH timed alternately)\n"
        );
        let _ = writeln!(s, "| key size | max_entries | entries | load | HASH | RHASH | RHASH/HASH | papaya | dashmap |");
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|");
        for r in lookup_table(o) {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.0}% | {} | {} | {:.2}x | {} | {} |",
                r.key_size,
                r.max_entries,
                r.entries,
                100.0 * r.entries as f64 / r.max_entries as f64,
                m(r.hash),
                m(r.rhash),
                r.rhash / r.hash,
                m(r.papaya),
                m(r.dashmap)
            );
        }
        s.push('\n');
    }
    if o.wants("update") {
        let _ = writeln!(
            s,
            "### Full-map updates/s (value 8 B, entries = max_entries; one thread; \
         the 1,000-key rows as the kernel's bpf_hashmap_full_update bench; \
         HASH and RHASH timed alternately)\n"
        );
        let _ = writeln!(
            s,
            "| update | HASH | RHASH | RHASH/HASH | papaya | dashmap |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|");
        for r in update_table(o) {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.2}x | {} | {} |",
                r.what,
                m(r.hash),
                m(r.rhash),
                r.rhash / r.hash,
                m(r.papaya),
                m(r.dashmap)
            );
        }
        s.push('\n');
    }
    if o.wants("overwrite") {
        let _ = writeln!(
            s,
            "### Overwrite: 8 writer threads, 4096 keys, BPF_ANY on existing keys\n"
        );
        let _ = writeln!(
            s,
            "| map | value size | ops/s | steady memory | peak memory | peak/steady |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|");
        for r in overwrite_table(o) {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {:.3} |",
                r.map,
                r.value_size,
                m(r.ops_per_sec),
                mib(r.steady_bytes),
                mib(r.peak_bytes),
                r.peak_bytes as f64 / r.steady_bytes.max(1) as f64
            );
        }
        s.push_str("\nMemory: the maps' own accounting (slabs, buckets, tables, elements; deferred frees count until they run).\n\n");
    }
    if o.wants("hash") {
        let _ = writeln!(
            s,
            "### Hash functions: hashes/s, inlined vs through a function pointer\n"
        );
        let _ = writeln!(s, "| function | key size | inlined | fn pointer |");
        let _ = writeln!(s, "|---|---|---|---|");
        for r in hash_table(o) {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                r.function,
                r.key_size,
                m(r.inlined),
                m(r.fn_pointer)
            );
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_keys_are_distinct() {
        for ks in [4usize, 8, 16, 32, 256] {
            let k = keys(5000, ks, 1);
            let set: std::collections::HashSet<&[u8]> = k.chunks(ks).collect();
            assert_eq!(set.len(), 5000, "ks {ks}");
        }
    }

    #[test]
    fn quick_report_has_every_table() {
        let o = Options {
            runs: 1,
            quick: true,
            only: vec!["update".into(), "hash".into()],
            cpu_time: true,
        };
        let r = report(&o);
        assert!(
            r.contains("| 1,000 u32 keys: absent key, full map (E2BIG) |"),
            "{r}"
        );
        assert!(r.contains("| xxh3 | 256 |"), "{r}");
        assert!(!r.contains("Lookups/s"));
    }
}
