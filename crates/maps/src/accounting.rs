//! Bytes of map memory alive now and at the peak, across all maps of the
//! process: the maps' own accounting, used by the overwrite benchmark to
//! show steady versus peak memory. Counts slabs, bucket arrays, RHASH
//! tables and on-demand elements (freed when the epoch scheme frees them).

use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn add(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    // Read first: most allocations do not set a new peak, and a plain
    // load keeps writers from contending on the peak's cache line.
    if now > PEAK.load(Ordering::Relaxed) {
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

pub(crate) fn sub(bytes: usize) {
    LIVE.fetch_sub(bytes, Ordering::Relaxed);
}

/// Map bytes alive now.
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The most map bytes alive at once since the last [`reset_peak`].
pub fn peak_bytes() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Start a new peak measurement from the current live figure.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
}
