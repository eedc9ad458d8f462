//! USER_RINGBUF (kernel/bpf/ringbuf.c): the ring buffer in the other
//! direction. User space produces records (libbpf's user_ring_buffer__*:
//! [`UserRingBuf::reserve`] / [`UserRingBuf::submit`] /
//! [`UserRingBuf::discard`], or [`UserRingBuf::produce`]); a program
//! consumes them with bpf_user_ringbuf_drain ([`UserRingBuf::drain`]).
//!
//! Records carry the same 8-byte header as RINGBUF's (length, busy bit 31,
//! discard bit 30) and are 8-byte aligned. As in [`crate::RingBuf`], the
//! data area is twice the ring size instead of the kernel's double mapping:
//! a record lives at its position modulo the size and its sample follows
//! its header directly, so producer and consumer address it alike.

use std::any::Any;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::ringbuf::{BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP, BUSY_BIT, DISCARD_BIT, HDR_SZ};
use crate::value::Slab;
use crate::{Common, Map, MapAttr, MapError, Result};

/// The kernel's cap on samples one bpf_user_ringbuf_drain call hands out.
pub const MAX_DRAIN_SAMPLES: i64 = 128 * 1024;
/// A sample must fit a dynptr (24-bit size).
const DYNPTR_MAX_SIZE: u32 = (1 << 24) - 1;

const EINVAL: i64 = -22;
const EBUSY: i64 = -16;
const E2BIG: i64 = -7;

pub struct UserRingBuf {
    common: Common,
    data: Slab,
    mask: u64,
    /// User-space producers take turns (libbpf requires one at a time).
    producer: Mutex<()>,
    prod_pos: AtomicU64,
    cons_pos: AtomicU64,
    /// One drain at a time; another gets EBUSY.
    draining: AtomicBool,
}

/// What the drain found at the consumer position.
enum Peek {
    Sample { pos: u64, len: u32 },
    Empty,
    Skipped,
    Error(i64),
}

impl UserRingBuf {
    pub fn new(attr: MapAttr) -> Result<UserRingBuf> {
        let size = crate::ringbuf::ring_size(&attr)?;
        Ok(UserRingBuf {
            data: Slab::new_zeroed(2 * size as usize)?,
            common: Common::new(attr),
            mask: size - 1,
            producer: Mutex::new(()),
            prod_pos: AtomicU64::new(0),
            cons_pos: AtomicU64::new(0),
            draining: AtomicBool::new(false),
        })
    }

    pub fn size(&self) -> u64 {
        self.mask + 1
    }

    /// How far the drains have consumed (the kernel's consumer_pos, which
    /// user space reads from the map's first page).
    pub fn consumer_pos(&self) -> u64 {
        self.cons_pos.load(Ordering::Acquire)
    }

    fn at(&self, pos: u64) -> *mut u8 {
        // SAFETY: pos & mask < size; a record (at most size bytes) fits
        // after it inside the 2*size data area.
        unsafe { self.data.base().add((pos & self.mask) as usize) }
    }

    fn header(&self, pos: u64) -> &AtomicU32 {
        // SAFETY: headers are 8-aligned inside the data area.
        unsafe { &*(self.at(pos) as *const AtomicU32) }
    }

    /// user_ring_buffer__reserve: room for `size` bytes, marked busy until
    /// submitted or discarded. E2BIG when the record can never fit, ENOSPC
    /// when the ring is too full now.
    pub fn reserve(&self, size: u32) -> Result<NonNull<u8>> {
        if size & (BUSY_BIT | DISCARD_BIT) != 0 {
            return Err(MapError::TooBig);
        }
        let total = (size as u64 + HDR_SZ as u64 + 7) & !7;
        if total > self.size() {
            return Err(MapError::TooBig);
        }
        let _g = self.producer.lock().unwrap_or_else(|p| p.into_inner());
        let prod = self.prod_pos.load(Ordering::Relaxed);
        let cons = self.cons_pos.load(Ordering::Acquire);
        if self.size() - (prod - cons) < total {
            return Err(MapError::NoSpace);
        }
        self.header(prod).store(size | BUSY_BIT, Ordering::Relaxed);
        // SAFETY: second word of the header.
        unsafe { &*(self.at(prod).add(4) as *const AtomicU32) }.store(0, Ordering::Relaxed);
        self.prod_pos.store(prod + total, Ordering::Release);
        // SAFETY: the sample follows its header inside the data area.
        Ok(unsafe { NonNull::new_unchecked(self.at(prod).add(HDR_SZ)) })
    }

    fn commit(&self, sample: NonNull<u8>, discard: bool) -> Result<()> {
        let base = self.data.base() as usize;
        let p = sample.as_ptr() as usize;
        if p < base + HDR_SZ
            || p >= base + self.size() as usize + HDR_SZ
            || !(p - base).is_multiple_of(8)
        {
            return Err(MapError::Invalid("pointer is not a record of this ring"));
        }
        // SAFETY: the header sits 8 bytes before a sample of this ring.
        let hdr = unsafe { &*((p - HDR_SZ) as *const AtomicU32) };
        let len = hdr.load(Ordering::Relaxed);
        if len & BUSY_BIT == 0 {
            return Err(MapError::Invalid("record already submitted"));
        }
        let new = (len & !BUSY_BIT) | if discard { DISCARD_BIT } else { 0 };
        hdr.store(new, Ordering::Release);
        Ok(())
    }

    /// user_ring_buffer__submit.
    pub fn submit(&self, sample: NonNull<u8>) -> Result<()> {
        self.commit(sample, false)
    }

    /// user_ring_buffer__discard: the drain skips the record.
    pub fn discard(&self, sample: NonNull<u8>) -> Result<()> {
        self.commit(sample, true)
    }

    /// Reserves, fills and submits one record.
    pub fn produce(&self, data: &[u8]) -> Result<()> {
        let len = u32::try_from(data.len()).map_err(|_| MapError::TooBig)?;
        let p = self.reserve(len)?;
        // SAFETY: the reservation holds data.len() bytes.
        unsafe { crate::value::store_bytes(p.as_ptr(), data) };
        self.submit(p)
    }

    /// The kernel's checks of the record at the consumer position.
    fn peek(&self) -> Peek {
        let prod = self.prod_pos.load(Ordering::Acquire);
        if !prod.is_multiple_of(8) {
            return Peek::Error(EINVAL);
        }
        let cons = self.cons_pos.load(Ordering::Acquire);
        if cons >= prod {
            return Peek::Empty;
        }
        let hdr = self.header(cons).load(Ordering::Acquire);
        let flags = hdr & (BUSY_BIT | DISCARD_BIT);
        let len = hdr & !flags;
        let total = (len as u64 + HDR_SZ as u64 + 7) & !7;
        if total > prod - cons {
            return Peek::Error(EINVAL);
        }
        if total > self.size() || len > DYNPTR_MAX_SIZE {
            return Peek::Error(E2BIG);
        }
        if flags & DISCARD_BIT != 0 {
            self.cons_pos.store(cons + total, Ordering::Release);
            return Peek::Skipped;
        }
        if flags & BUSY_BIT != 0 {
            return Peek::Empty;
        }
        Peek::Sample { pos: cons, len }
    }

    /// bpf_user_ringbuf_drain: hands each submitted sample (its address and
    /// length) to `f` until the ring is empty, a busy record is reached,
    /// `f` returns false, or MAX_DRAIN_SAMPLES were taken. Returns the
    /// kernel's r0: the samples handed out (discarded ones not counted), or
    /// a negative errno (EINVAL for bad flags or a corrupt ring, EBUSY when
    /// another drain runs, E2BIG for an oversized record).
    pub fn drain(&self, flags: u64, f: &mut dyn FnMut(NonNull<u8>, u32) -> bool) -> i64 {
        if flags & !(BPF_RB_NO_WAKEUP | BPF_RB_FORCE_WAKEUP) != 0 {
            return EINVAL;
        }
        if self
            .draining
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return EBUSY;
        }
        let (mut samples, mut discarded) = (0i64, 0i64);
        let mut more = true;
        let mut ret = None;
        while samples < MAX_DRAIN_SAMPLES && more {
            match self.peek() {
                Peek::Empty => break,
                Peek::Skipped => discarded += 1,
                Peek::Error(e) => {
                    ret = Some(e);
                    break;
                }
                Peek::Sample { pos, len } => {
                    // SAFETY: the sample follows its header in the data area.
                    let sample = unsafe { NonNull::new_unchecked(self.at(pos).add(HDR_SZ)) };
                    more = f(sample, len);
                    let total = (len as u64 + HDR_SZ as u64 + 7) & !7;
                    self.cons_pos.store(pos + total, Ordering::Release);
                }
            }
            samples += 1;
        }
        self.draining.store(false, Ordering::Release);
        ret.unwrap_or(samples - discarded)
    }
}

impl Map for UserRingBuf {
    fn attr(&self) -> &MapAttr {
        &self.common.attr
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn freeze(&self) -> Result<()> {
        self.common.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpfvet_isa::uapi::MapType;

    fn ring(size: u32) -> UserRingBuf {
        UserRingBuf::new(MapAttr::new(MapType::USER_RINGBUF, 0, 0, size)).unwrap()
    }

    fn drain_all(rb: &UserRingBuf) -> (i64, Vec<Vec<u8>>) {
        let mut got = Vec::new();
        let n = rb.drain(0, &mut |p, len| {
            let mut v = vec![0u8; len as usize];
            // SAFETY: the sample holds len bytes.
            unsafe { crate::value::load_bytes(&mut v, p.as_ptr()) };
            got.push(v);
            true
        });
        (n, got)
    }

    #[test]
    fn empty_ring_drains_nothing() {
        // The kernel's ENODATA at the start ends the loop: r0 = 0.
        assert_eq!(drain_all(&ring(4096)), (0, vec![]));
    }

    #[test]
    fn samples_come_out_in_order_across_the_wrap() {
        let rb = ring(4096);
        for round in 0..50u8 {
            // 1000 + round bytes: records of varying length wrap the ring.
            let a = vec![round; 1000 + round as usize];
            let b = vec![round ^ 0xff; 3];
            rb.produce(&a).unwrap();
            rb.produce(&b).unwrap();
            assert_eq!(drain_all(&rb), (2, vec![a, b]));
        }
    }

    #[test]
    fn discarded_samples_are_skipped_and_not_counted() {
        let rb = ring(4096);
        let p = rb.reserve(16).unwrap();
        rb.discard(p).unwrap();
        rb.produce(&[7; 5]).unwrap();
        assert_eq!(drain_all(&rb), (1, vec![vec![7; 5]]));
    }

    #[test]
    fn busy_record_stops_the_drain_until_submitted() {
        let rb = ring(4096);
        rb.produce(&[1]).unwrap();
        let p = rb.reserve(4).unwrap();
        rb.produce(&[3]).unwrap();
        assert_eq!(drain_all(&rb), (1, vec![vec![1]]));
        rb.submit(p).unwrap();
        assert_eq!(rb.submit(p).unwrap_err().errno(), 22);
        let (n, got) = drain_all(&rb);
        assert_eq!((n, got.len(), got[1].clone()), (2, 2, vec![3]));
    }

    #[test]
    fn callback_stop_counts_the_sample_it_saw() {
        // The kernel increments its count before testing the callback's 1.
        let rb = ring(4096);
        for i in 0..3u8 {
            rb.produce(&[i]).unwrap();
        }
        assert_eq!(rb.drain(0, &mut |_, _| false), 1);
        assert_eq!(drain_all(&rb).0, 2);
    }

    #[test]
    fn producer_limits_and_drain_flags() {
        let rb = ring(4096);
        // 4096 - 8 is the largest record (header included, 4096 bytes).
        assert_eq!(rb.reserve(4089).unwrap_err().errno(), 7);
        rb.produce(&[0; 4088]).unwrap();
        assert_eq!(rb.produce(&[0; 1]).unwrap_err().errno(), 28);
        assert_eq!(rb.drain(4, &mut |_, _| true), -22);
        assert_eq!(rb.drain(BPF_RB_NO_WAKEUP, &mut |_, _| true), 1);
        assert_eq!(rb.reserve(BUSY_BIT).unwrap_err().errno(), 7);
    }

    #[test]
    fn nested_drain_is_busy() {
        let rb = ring(4096);
        rb.produce(&[1]).unwrap();
        let mut inner = 0;
        assert_eq!(
            rb.drain(0, &mut |_, _| {
                inner = rb.drain(0, &mut |_, _| true);
                true
            }),
            1
        );
        assert_eq!(inner, -16);
    }

    #[test]
    fn attribute_checks_match_ringbuf() {
        for (k, v, max, flags) in [
            (0, 0, 4095, 0),
            (0, 0, 8192 + 4096, 0),
            (4, 0, 4096, 0),
            (0, 4, 4096, 0),
            (0, 0, 4096, 1),
        ] {
            let a = MapAttr::new(MapType::USER_RINGBUF, k, v, max).with_flags(flags);
            assert_eq!(crate::create(a).err().map(|e| e.errno()), Some(22));
        }
        let m = crate::create(MapAttr::new(MapType::USER_RINGBUF, 0, 0, 8192)).unwrap();
        assert!(m.as_any().downcast_ref::<UserRingBuf>().is_some());
        assert_eq!(m.get_next_key(None, &mut []).unwrap_err().errno(), 524);
    }
}
