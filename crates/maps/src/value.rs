//! Copying values in and out of shared map memory.
//!
//! Map memory is shared with running programs and other threads, so every
//! byte is read and written through relaxed atomics: a concurrent reader may
//! see a mix of old and new words (a "torn" value, as in the kernel) but the
//! copy itself is never undefined behaviour. Values start 8-byte aligned, so
//! the bulk goes word by word.
//!
//! The kernel never copies a value's special fields (`struct bpf_spin_lock`,
//! `struct bpf_timer`) from user space and zeroes them on the way out;
//! [`ValueLayout`] knows where they are.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

use crate::sync::spin_wait;

pub const SPIN_LOCK_SIZE: usize = 4;
pub const TIMER_SIZE: usize = 16;

/// Where a value's special fields are (the kernel learns this from BTF).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ValueLayout {
    pub size: usize,
    pub lock_off: Option<usize>,
    pub timer_off: Option<usize>,
}

impl ValueLayout {
    /// No special fields: copies are one straight run of bytes (the common
    /// case, kept off the range computation below).
    #[inline(always)]
    fn is_plain(&self) -> bool {
        self.lock_off.is_none() && self.timer_off.is_none()
    }

    /// The byte ranges of a value that user data may overwrite.
    fn plain_ranges(&self) -> ([(usize, usize); 3], usize) {
        let mut specials = [(usize::MAX, 0usize); 2];
        let mut n = 0;
        if let Some(o) = self.lock_off {
            specials[n] = (o, SPIN_LOCK_SIZE);
            n += 1;
        }
        if let Some(o) = self.timer_off {
            specials[n] = (o, TIMER_SIZE);
            n += 1;
        }
        specials[..n].sort_unstable();
        let mut out = [(0, 0); 3];
        let mut count = 0;
        let mut at = 0;
        for &(off, len) in &specials[..n] {
            if off > at {
                out[count] = (at, off - at);
                count += 1;
            }
            at = off + len;
        }
        if at < self.size {
            out[count] = (at, self.size - at);
            count += 1;
        }
        (out, count)
    }

    /// Copy `src` (exactly `size` bytes) into shared value memory, leaving
    /// special fields alone.
    ///
    /// # Safety
    /// `dst` must point to `size` bytes of live map memory, 8-byte aligned,
    /// only ever accessed atomically or by BPF programs.
    #[inline]
    pub unsafe fn copy_in(&self, dst: *mut u8, src: &[u8]) {
        // SAFETY (both): caller's contract.
        if self.is_plain() {
            unsafe { store_bytes(dst, &src[..self.size]) };
        } else {
            unsafe { self.copy_in_around_specials(dst, src) };
        }
    }

    /// # Safety
    /// As for [`ValueLayout::copy_in`].
    #[inline(never)]
    unsafe fn copy_in_around_specials(&self, dst: *mut u8, src: &[u8]) {
        let (ranges, n) = self.plain_ranges();
        for &(off, len) in &ranges[..n] {
            // SAFETY: the range lies inside the value (caller's contract).
            unsafe { store_bytes(dst.add(off), &src[off..off + len]) };
        }
    }

    /// Copy a shared value out, zeroing special fields.
    ///
    /// # Safety
    /// As for [`ValueLayout::copy_in`].
    #[inline]
    pub unsafe fn copy_out(&self, dst: &mut [u8], src: *const u8) {
        if self.is_plain() {
            // SAFETY: caller's contract.
            unsafe { load_bytes(&mut dst[..self.size], src) };
            return;
        }
        dst[..self.size].fill(0);
        let (ranges, n) = self.plain_ranges();
        for &(off, len) in &ranges[..n] {
            // SAFETY: the range lies inside the value (caller's contract).
            unsafe { load_bytes(&mut dst[off..off + len], src.add(off)) };
        }
    }

    /// Zero the special fields only: with a full copy_in after it, a
    /// recycled element's value is then wholly defined.
    ///
    /// # Safety
    /// As for [`ValueLayout::copy_in`].
    #[inline]
    pub unsafe fn zero_specials(&self, dst: *mut u8) {
        // SAFETY (both): the fields lie inside the value (caller's contract).
        if let Some(o) = self.lock_off {
            unsafe { fill_zero(dst.add(o), SPIN_LOCK_SIZE) };
        }
        if let Some(o) = self.timer_off {
            unsafe { fill_zero(dst.add(o), TIMER_SIZE) };
        }
    }

    /// Zero a whole value (new array slots, recycled elements).
    ///
    /// # Safety
    /// As for [`ValueLayout::copy_in`].
    pub unsafe fn zero(&self, dst: *mut u8) {
        // SAFETY: caller's contract.
        unsafe { fill_zero(dst, self.size) };
    }

    /// The value's embedded spin lock, if it has one.
    ///
    /// # Safety
    /// `value` must point to a live value of this layout.
    pub unsafe fn lock_of<'a>(&self, value: *mut u8) -> Option<ValueLock<'a>> {
        self.lock_off.map(|o| {
            // SAFETY: the offset is 4-aligned and inside the value (checked
            // at creation); the value is 8-aligned, so the AtomicU32 is too.
            ValueLock(unsafe { &*(value.add(o) as *const AtomicU32) })
        })
    }

    /// Update under the value's lock (BPF_F_LOCK) or plainly.
    ///
    /// # Safety
    /// As for [`ValueLayout::copy_in`].
    #[inline]
    pub unsafe fn store(&self, dst: *mut u8, src: &[u8], locked: bool) {
        // SAFETY (both): caller's contract.
        if locked {
            unsafe { self.store_locked(dst, src) }
        } else {
            unsafe { self.copy_in(dst, src) }
        }
    }

    /// # Safety
    /// As for [`ValueLayout::copy_in`].
    #[inline(never)]
    unsafe fn store_locked(&self, dst: *mut u8, src: &[u8]) {
        // SAFETY: caller's contract.
        unsafe {
            match self.lock_of(dst) {
                Some(l) => {
                    let _g = l.lock();
                    self.copy_in(dst, src);
                }
                None => self.copy_in(dst, src),
            }
        }
    }

    /// Read under the value's lock (BPF_F_LOCK) or plainly.
    ///
    /// # Safety
    /// As for [`ValueLayout::copy_in`].
    #[inline]
    pub unsafe fn load(&self, dst: &mut [u8], src: *mut u8, locked: bool) {
        // SAFETY: caller's contract.
        unsafe {
            match (locked, self.lock_of(src)) {
                (true, Some(l)) => {
                    let _g = l.lock();
                    self.copy_out(dst, src);
                }
                _ => self.copy_out(dst, src),
            }
        }
    }
}

/// A `struct bpf_spin_lock` living inside a value: 0 free, 1 held. Programs
/// take the same word through bpf_spin_lock, so the vm must use the same
/// encoding.
pub struct ValueLock<'a>(&'a AtomicU32);

pub struct ValueLockGuard<'a>(&'a AtomicU32);

impl<'a> ValueLock<'a> {
    pub fn lock(&self) -> ValueLockGuard<'a> {
        let mut spins = 0;
        while self
            .0
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spin_wait(&mut spins);
        }
        ValueLockGuard(self.0)
    }
}

impl Drop for ValueLockGuard<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// Store bytes into shared memory with relaxed atomics.
///
/// # Safety
/// `dst..dst+src.len()` must be live memory accessed only atomically.
#[inline]
pub unsafe fn store_bytes(dst: *mut u8, src: &[u8]) {
    if (dst as usize).is_multiple_of(8) {
        // The usual case (values and keys start 8-aligned): whole words,
        // then the tail.
        let mut words = src.chunks_exact(8);
        let mut at = dst;
        // SAFETY (whole block): `at` stays inside dst..dst+len and is
        // 8-aligned for every word store.
        unsafe {
            for w in &mut words {
                let w = u64::from_ne_bytes(w.try_into().unwrap_or([0; 8]));
                (*(at as *const AtomicU64)).store(w, Ordering::Relaxed);
                at = at.add(8);
            }
            for &b in words.remainder() {
                (*(at as *const AtomicU8)).store(b, Ordering::Relaxed);
                at = at.add(1);
            }
        }
        return;
    }
    let mut i = 0;
    let len = src.len();
    // SAFETY (whole block): every pointer stays inside dst..dst+len; word
    // stores are only made at 8-aligned addresses.
    unsafe {
        while i < len && !(dst as usize + i).is_multiple_of(8) {
            (*(dst.add(i) as *const AtomicU8)).store(src[i], Ordering::Relaxed);
            i += 1;
        }
        while i + 8 <= len {
            let w = u64::from_ne_bytes(src[i..i + 8].try_into().unwrap_or([0; 8]));
            (*(dst.add(i) as *const AtomicU64)).store(w, Ordering::Relaxed);
            i += 8;
        }
        while i < len {
            (*(dst.add(i) as *const AtomicU8)).store(src[i], Ordering::Relaxed);
            i += 1;
        }
    }
}

/// Load bytes from shared memory with relaxed atomics.
///
/// # Safety
/// `src..src+dst.len()` must be live memory accessed only atomically.
#[inline]
pub unsafe fn load_bytes(dst: &mut [u8], src: *const u8) {
    if (src as usize).is_multiple_of(8) {
        // As in store_bytes.
        let mut words = dst.chunks_exact_mut(8);
        let mut at = src;
        // SAFETY (whole block): as in store_bytes.
        unsafe {
            for w in &mut words {
                let v = (*(at as *const AtomicU64)).load(Ordering::Relaxed);
                w.copy_from_slice(&v.to_ne_bytes());
                at = at.add(8);
            }
            for b in words.into_remainder() {
                *b = (*(at as *const AtomicU8)).load(Ordering::Relaxed);
                at = at.add(1);
            }
        }
        return;
    }
    let mut i = 0;
    let len = dst.len();
    // SAFETY (whole block): as in store_bytes.
    unsafe {
        while i < len && !(src as usize + i).is_multiple_of(8) {
            dst[i] = (*(src.add(i) as *const AtomicU8)).load(Ordering::Relaxed);
            i += 1;
        }
        while i + 8 <= len {
            let w = (*(src.add(i) as *const AtomicU64)).load(Ordering::Relaxed);
            dst[i..i + 8].copy_from_slice(&w.to_ne_bytes());
            i += 8;
        }
        while i < len {
            dst[i] = (*(src.add(i) as *const AtomicU8)).load(Ordering::Relaxed);
            i += 1;
        }
    }
}

/// Compare shared memory with a key, word by word.
///
/// # Safety
/// `shared` must be 8-aligned live memory of at least `key.len()` bytes,
/// accessed only atomically.
#[inline(always)]
pub unsafe fn bytes_equal(shared: *const u8, key: &[u8]) -> bool {
    let len = key.len();
    let mut i = 0;
    // SAFETY (whole block): pointers stay inside shared..shared+len, word
    // loads at 8-aligned offsets of an 8-aligned base.
    unsafe {
        while i + 8 <= len {
            let w = (*(shared.add(i) as *const AtomicU64)).load(Ordering::Relaxed);
            let k = u64::from_ne_bytes(key[i..i + 8].try_into().unwrap_or([0; 8]));
            if w != k {
                return false;
            }
            i += 8;
        }
        if i + 4 <= len {
            let w = (*(shared.add(i) as *const AtomicU32)).load(Ordering::Relaxed);
            let k = u32::from_ne_bytes(key[i..i + 4].try_into().unwrap_or([0; 4]));
            if w != k {
                return false;
            }
            i += 4;
        }
        while i < len {
            if (*(shared.add(i) as *const AtomicU8)).load(Ordering::Relaxed) != key[i] {
                return false;
            }
            i += 1;
        }
    }
    true
}

/// # Safety
/// As for [`store_bytes`].
pub unsafe fn fill_zero(dst: *mut u8, len: usize) {
    const ZEROS: [u8; 256] = [0; 256];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(ZEROS.len());
        // SAFETY: caller's contract.
        unsafe { store_bytes(dst.add(at), &ZEROS[..n]) };
        at += n;
    }
}

const LINE: usize = 64;

/// One cache line of map memory.
#[repr(C, align(64))]
struct Line([AtomicU64; LINE / 8]);

/// Cache-line aligned, atomically accessed storage for map memory (the
/// kernel's map areas are page aligned). The alignment matters: a 32-byte
/// hash element at a line offset of 48 would span two lines, costing a
/// second cache miss on every lookup that reaches it.
pub struct Slab(Box<[Line]>);

impl Drop for Slab {
    fn drop(&mut self) {
        crate::accounting::sub(self.len_bytes());
    }
}

impl Slab {
    pub fn new_zeroed(bytes: usize) -> Result<Slab, crate::MapError> {
        let lines = bytes.div_ceil(LINE);
        let mut v = Vec::new();
        v.try_reserve_exact(lines)
            .map_err(|_| crate::MapError::NoMem)?;
        v.resize_with(lines, || Line(Default::default()));
        crate::accounting::add(lines * LINE);
        Ok(Slab(v.into_boxed_slice()))
    }

    pub fn base(&self) -> *mut u8 {
        self.0.as_ptr() as *mut u8
    }

    pub fn len_bytes(&self) -> usize {
        self.0.len() * LINE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_skip_special_fields_and_zero_them_on_the_way_out() {
        let layout = ValueLayout {
            size: 32,
            lock_off: Some(4),
            timer_off: Some(16),
        };
        let slab = Slab::new_zeroed(32).unwrap();
        // SAFETY: the slab is 32 bytes, 8-aligned, accessed atomically.
        unsafe {
            store_bytes(slab.base().add(4), &[9, 9, 9, 9]);
            layout.copy_in(slab.base(), &[0xab; 32]);
            let mut raw = [0u8; 32];
            load_bytes(&mut raw, slab.base());
            assert_eq!(&raw[4..8], &[9, 9, 9, 9], "lock word untouched");
            assert_eq!(&raw[16..32], &[0; 16], "timer untouched");
            assert_eq!(&raw[..4], &[0xab; 4]);
            assert_eq!(&raw[8..16], &[0xab; 8]);
            let mut out = [0xffu8; 32];
            layout.copy_out(&mut out, slab.base());
            assert_eq!(&out[4..8], &[0; 4]);
            assert_eq!(&out[..4], &[0xab; 4]);
        }
    }

    #[test]
    fn unaligned_ranges_round_trip() {
        let slab = Slab::new_zeroed(40).unwrap();
        let data: Vec<u8> = (0..29).collect();
        // SAFETY: 3..32 lies inside the 40-byte slab.
        unsafe {
            store_bytes(slab.base().add(3), &data);
            let mut out = vec![0u8; 29];
            load_bytes(&mut out, slab.base().add(3));
            assert_eq!(out, data);
            assert!(!bytes_equal(slab.base(), &[0, 0, 0, 1]));
        }
    }
}
