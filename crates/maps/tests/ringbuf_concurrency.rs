//! RINGBUF with producers on several threads and the consumer on another,
//! all at once, through a ring small enough to fill up and wrap many times:
//! every record submitted arrives once, whole, and each producer's records
//! in its own order; discarded records never arrive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bpfvet_isa::uapi::MapType;
use bpfvet_maps::{create, MapAttr, RingBuf};

const PRODUCERS: u64 = 3;
const RECORDS: u64 = 20_000;

#[test]
fn concurrent_producers_and_consumer_lose_nothing() {
    let map = create(MapAttr::new(MapType::RINGBUF, 0, 0, 4096)).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let map = &map;
                s.spawn(move || {
                    let rb = map.as_any().downcast_ref::<RingBuf>().unwrap();
                    for seq in 0..RECORDS {
                        // Records of varying length: 16..=47 bytes, the
                        // rest of the record repeating its producer's id.
                        let len = 16 + (seq % 32) as usize;
                        let mut rec = vec![p as u8; len];
                        rec[..8].copy_from_slice(&p.to_le_bytes());
                        rec[8..16].copy_from_slice(&seq.to_le_bytes());
                        // Reserve/submit for odd, output for even records;
                        // a discarded reservation in between every 7th.
                        loop {
                            if seq % 7 == 0 {
                                if let Some(junk) = rb.reserve(24, 0) {
                                    rb.discard(junk, 0).unwrap();
                                }
                            }
                            let ok = if seq % 2 == 0 {
                                rb.output(&rec, 0).is_ok()
                            } else if let Some(at) = rb.reserve(len as u64, 0) {
                                // SAFETY: the reservation holds len bytes.
                                unsafe {
                                    std::ptr::copy_nonoverlapping(rec.as_ptr(), at.as_ptr(), len)
                                };
                                rb.submit(at, 0).unwrap();
                                true
                            } else {
                                false
                            };
                            if ok {
                                break;
                            }
                            std::thread::yield_now(); // full: let the consumer drain
                        }
                    }
                })
            })
            .collect();
        let consumer = {
            let (map, done) = (&map, done.clone());
            s.spawn(move || {
                let rb = map.as_any().downcast_ref::<RingBuf>().unwrap();
                let mut next = [0u64; PRODUCERS as usize];
                let mut check = |r: &[u8]| {
                    let p = u64::from_le_bytes(r[..8].try_into().unwrap());
                    let seq = u64::from_le_bytes(r[8..16].try_into().unwrap());
                    assert!(p < PRODUCERS, "record from no producer: {r:?}");
                    assert_eq!(seq, next[p as usize], "producer {p}: lost or reordered");
                    assert_eq!(r.len(), 16 + (seq % 32) as usize);
                    assert!(r[16..].iter().all(|&b| b == p as u8), "torn record");
                    next[p as usize] += 1;
                    true
                };
                loop {
                    let finished = done.load(Ordering::Acquire);
                    if rb.consume(&mut check) == 0 {
                        if finished {
                            break;
                        }
                        std::thread::yield_now();
                    }
                }
                next
            })
        };
        for p in producers {
            p.join().unwrap();
        }
        done.store(true, Ordering::Release);
        let counts = consumer.join().unwrap();
        assert_eq!(counts, [RECORDS; PRODUCERS as usize]);
    });
    let rb = map.as_any().downcast_ref::<RingBuf>().unwrap();
    assert_eq!(rb.query(0), 0, "nothing left behind");
}
