//! Peak heap of one verification against the state memory it needs.
//! A counting global allocator records the most bytes live at once while
//! `verify` runs (above what was live when it started); the verifier's own
//! statistic gives the most bytes its explored and pending states held at
//! once (`State::bytes`). Each program is verified twice and the second
//! run measured: the first fills the process-wide caches (the kernel's BTF
//! is parsed once per process), which are not memory of one verification.
//! Prints one CSV row per program:
//! file,prog,verdict,processed,heap_peak_bytes,state_peak_bytes.
//! Used by bench/speed/speed.py.
//!   heap_peak OBJECT [PROGRAM]

use bpfvet_object::{LoadOptions, Object};
use bpfvet_verifier::{verify, Options, Verdict};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grew(l.size());
        System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        grew(l.size());
        System.alloc_zeroed(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new >= l.size() {
            grew(new - l.size());
        } else {
            LIVE.fetch_sub(l.size() - new, Relaxed);
        }
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = args.first() else {
        eprintln!("usage: heap_peak OBJECT [PROGRAM]");
        std::process::exit(2);
    };
    let obj = match Object::from_file(file, &LoadOptions::default()) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{file}: {e}");
            std::process::exit(1);
        }
    };
    let opts = Options::default();
    println!("file,prog,verdict,processed,heap_peak_bytes,state_peak_bytes");
    for (i, p) in obj.programs.iter().enumerate() {
        if args.get(1).is_some_and(|only| *only != p.name) {
            continue;
        }
        drop(verify(&obj, i, &opts));
        let base = LIVE.load(Relaxed);
        PEAK.store(base, Relaxed);
        let out = verify(&obj, i, &opts);
        let heap = PEAK.load(Relaxed) - base;
        let verdict = match out.verdict {
            Verdict::Accepted => "accepted",
            Verdict::Rejected { .. } => "rejected",
            Verdict::LimitExceeded { .. } => "limit",
            Verdict::Unsupported { .. } => "refused",
        };
        println!(
            "{file},{},{verdict},{},{heap},{}",
            p.name, out.stats.processed_insns, out.stats.peak_state_bytes
        );
    }
}
