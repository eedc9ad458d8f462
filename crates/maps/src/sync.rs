//! The atomics and the yield the resize protocol uses: std's normally, and
//! shuttle's under the `shuttle` feature so its test can explore schedules.

#[cfg(not(feature = "shuttle"))]
pub use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};

#[cfg(feature = "shuttle")]
pub use shuttle::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};

/// Called in spin loops: lets the holder of a lock run.
#[inline]
pub fn spin_wait(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// The spin wait of the resize protocol: under shuttle it yields to the
/// scheduler so every interleaving can be explored.
#[inline]
pub fn model_spin_wait(spins: &mut u32) {
    #[cfg(feature = "shuttle")]
    {
        let _ = spins;
        shuttle::thread::yield_now();
    }
    #[cfg(not(feature = "shuttle"))]
    {
        *spins += 1;
        if *spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}
