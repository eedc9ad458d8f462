//! RINGBUF (kernel/bpf/ringbuf.c): a power-of-two byte ring shared by
//! producers (programs: reserve/submit/discard/output) and one consumer.
//!
//! Each record starts with the kernel's 8-byte header: a u32 length whose
//! bit 31 means "busy" (reserved, not yet submitted) and bit 30 "discard",
//! then a u32 page offset. Records are 8-byte aligned. The kernel maps the
//! data pages twice so a record crossing the end is contiguous; here the
//! data area is twice the ring size and a record is stored at its
//! position modulo the size, extending into the second half: producer and
//! consumer address it the same way, and the capacity check keeps live
//! records from overlapping.

use std::any::Any;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use bpfvet_isa::uapi;

use crate::value::{load_bytes, store_bytes, Slab};
use crate::{Common, Map, MapAttr, MapError, Result};

pub const BUSY_BIT: u32 = 1 << 31;
pub const DISCARD_BIT: u32 = 1 << 30;
pub const HDR_SZ: usize = 8;
/// bpf_ringbuf_output / submit flags.
pub const BPF_RB_NO_WAKEUP: u64 = 1;
pub const BPF_RB_FORCE_WAKEUP: u64 = 2;
const PAGE_SIZE: u32 = 4096;
/// Larger rings are refused with ENOMEM (the kernel's own limit is
/// higher, but this keeps a bad attribute from exhausting memory).
const MAX_RING: u32 = 1 << 30;

pub struct RingBuf {
    common: Common,
    data: Slab,
    mask: u64,
    producer: Mutex<()>,
    prod_pos: AtomicU64,
    cons_pos: AtomicU64,
}

/// The data size of a RINGBUF or USER_RINGBUF from its attributes, checked
/// as the kernel's shared ring buffer allocation checks them.
pub(crate) fn ring_size(attr: &MapAttr) -> Result<u64> {
    if attr.map_flags & !uapi::BPF_F_NUMA_NODE != 0 {
        return Err(MapError::Invalid("unknown ringbuf flags"));
    }
    if attr.key_size != 0
        || attr.value_size != 0
        || !attr.max_entries.is_power_of_two()
        || !attr.max_entries.is_multiple_of(PAGE_SIZE)
    {
        return Err(MapError::Invalid(
            "ringbuf size must be a power of two of pages",
        ));
    }
    if attr.max_entries > MAX_RING {
        return Err(MapError::NoMem);
    }
    Ok(attr.max_entries as u64)
}

impl RingBuf {
    pub fn new(attr: MapAttr) -> Result<RingBuf> {
        let size = ring_size(&attr)?;
        Ok(RingBuf {
            data: Slab::new_zeroed(2 * size as usize)?,
            common: Common::new(attr),
            mask: size - 1,
            producer: Mutex::new(()),
            prod_pos: AtomicU64::new(0),
            cons_pos: AtomicU64::new(0),
        })
    }

    pub fn size(&self) -> u64 {
        self.mask + 1
    }

    fn at(&self, pos: u64) -> *mut u8 {
        // SAFETY: pos & mask < size and every record fits in size bytes
        // after it, inside the 2*size data area.
        unsafe { self.data.base().add((pos & self.mask) as usize) }
    }

    fn header(&self, pos: u64) -> &AtomicU32 {
        // SAFETY: headers are 8-aligned inside the data area.
        unsafe { &*(self.at(pos) as *const AtomicU32) }
    }

    /// bpf_ringbuf_reserve: room for `size` bytes, or None when the ring
    /// is full, the size too large, or `flags` non-zero.
    pub fn reserve(&self, size: u64, flags: u64) -> Option<NonNull<u8>> {
        if flags != 0 || size > (u32::MAX / 4) as u64 {
            return None;
        }
        let len = (size + HDR_SZ as u64 + 7) & !7;
        if len > self.size() {
            return None;
        }
        let _g = self.producer.lock().unwrap_or_else(|p| p.into_inner());
        let prod = self.prod_pos.load(Ordering::Relaxed);
        let cons = self.cons_pos.load(Ordering::Acquire);
        if prod + len - cons > self.mask {
            return None;
        }
        let hdr = self.header(prod);
        hdr.store(size as u32 | BUSY_BIT, Ordering::Relaxed);
        // The page offset word, as the kernel records it.
        // SAFETY: second word of the header.
        unsafe { &*(self.at(prod).add(4) as *const AtomicU32) }.store(
            ((prod & self.mask) / PAGE_SIZE as u64) as u32 + 1,
            Ordering::Relaxed,
        );
        self.prod_pos.store(prod + len, Ordering::Release);
        // SAFETY: the sample follows its header inside the data area.
        NonNull::new(unsafe { self.at(prod).add(HDR_SZ) })
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

    /// bpf_ringbuf_submit.
    pub fn submit(&self, sample: NonNull<u8>, _flags: u64) -> Result<()> {
        self.commit(sample, false)
    }

    /// bpf_ringbuf_discard.
    pub fn discard(&self, sample: NonNull<u8>, _flags: u64) -> Result<()> {
        self.commit(sample, true)
    }

    /// bpf_ringbuf_output: EINVAL for unknown flags, EAGAIN when full.
    pub fn output(&self, data: &[u8], flags: u64) -> Result<()> {
        if flags & !(BPF_RB_NO_WAKEUP | BPF_RB_FORCE_WAKEUP) != 0 {
            return Err(MapError::Invalid("unknown ringbuf output flags"));
        }
        let p = self.reserve(data.len() as u64, 0).ok_or(MapError::Again)?;
        // SAFETY: the reservation holds data.len() bytes.
        unsafe { store_bytes(p.as_ptr(), data) };
        self.commit(p, false)
    }

    /// bpf_ringbuf_query: BPF_RB_AVAIL_DATA (0), RING_SIZE (1),
    /// CONS_POS (2), PROD_POS (3).
    pub fn query(&self, what: u64) -> u64 {
        let cons = self.cons_pos.load(Ordering::Acquire);
        let prod = self.prod_pos.load(Ordering::Acquire);
        match what {
            0 => prod - cons,
            1 => self.size(),
            2 => cons,
            3 => prod,
            _ => 0,
        }
    }

    /// The consumer (libbpf's ring_buffer__consume): hands each submitted
    /// record to `f` in order, skips discarded ones, stops at the first
    /// busy one or when `f` returns false. Returns the records handed out.
    pub fn consume(&self, f: &mut dyn FnMut(&[u8]) -> bool) -> usize {
        let mut n = 0;
        let mut buf = Vec::new();
        loop {
            let cons = self.cons_pos.load(Ordering::Relaxed);
            let prod = self.prod_pos.load(Ordering::Acquire);
            if cons >= prod {
                return n;
            }
            let len = self.header(cons).load(Ordering::Acquire);
            if len & BUSY_BIT != 0 {
                return n;
            }
            let size = (len & !DISCARD_BIT) as usize;
            let total = (size + HDR_SZ + 7) & !7;
            let mut keep_going = true;
            if len & DISCARD_BIT == 0 {
                buf.resize(size, 0);
                // SAFETY: the record's bytes lie inside the data area.
                unsafe { load_bytes(&mut buf, self.at(cons).add(HDR_SZ)) };
                n += 1;
                keep_going = f(&buf);
            }
            self.cons_pos.store(cons + total as u64, Ordering::Release);
            if !keep_going {
                return n;
            }
        }
    }
}

impl Map for RingBuf {
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

    fn ring(size: u32) -> RingBuf {
        RingBuf::new(MapAttr::new(MapType::RINGBUF, 0, 0, size)).unwrap()
    }

    #[test]
    fn records_wrap_around_and_discards_are_skipped() {
        let rb = ring(4096);
        let mut got = Vec::new();
        for round in 0..100u32 {
            let data = vec![round as u8; 1000 + round as usize];
            rb.output(&data, 0).unwrap();
            let p = rb.reserve(10, 0).unwrap();
            rb.discard(p, 0).unwrap();
            rb.consume(&mut |r| {
                got.push(r.to_vec());
                true
            });
            assert_eq!(got.last().unwrap(), &data);
        }
        assert_eq!(got.len(), 100);
        assert_eq!(rb.query(0), 0);
    }

    #[test]
    fn full_ring_refuses_and_busy_record_blocks_the_consumer() {
        let rb = ring(4096);
        let p = rb.reserve(2000, 0).unwrap();
        rb.output(&[1; 2000], 0).unwrap();
        assert_eq!(rb.output(&[1; 100], 0).unwrap_err().errno(), 11);
        assert_eq!(rb.consume(&mut |_| true), 0, "busy record first");
        rb.submit(p, 0).unwrap();
        assert_eq!(rb.submit(p, 0).unwrap_err().errno(), 22);
        assert_eq!(rb.consume(&mut |_| true), 2);
        assert!(rb.reserve(1, 1).is_none());
        assert_eq!(rb.output(&[1], 4).unwrap_err().errno(), 22);
    }

    #[test]
    fn ringbuf_attribute_checks() {
        for (k, v, max, flags, errno) in [
            (0, 0, 4095, 0, 22),
            (0, 0, 8192 + 4096, 0, 22),
            (4, 0, 4096, 0, 22),
            (0, 0, 4096, 1, 22),
        ] {
            let a = MapAttr::new(MapType::RINGBUF, k, v, max).with_flags(flags);
            assert_eq!(crate::create(a).err().map(|e| e.errno()), Some(errno));
        }
    }
}
