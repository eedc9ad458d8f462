//! Schedule exploration of RHASH's resize protocol with shuttle: writers
//! insert and delete (driving grows, shrinks and bucket migration) while a
//! reader looks up keys that must stay present. Shuttle runs many random
//! interleavings of every atomic step of the protocol.
//!
//! Run: cargo test -p bpfvet-maps --release --features shuttle --test shuttle_resize

#![cfg(feature = "shuttle")]

use std::sync::Arc;

use bpfvet_isa::uapi::{self, MapType};
use bpfvet_maps::{create, Map, MapAttr};

fn scenario() {
    let map: Arc<dyn Map> =
        create(MapAttr::new(MapType::RHASH, 4, 4, 64).with_flags(uapi::BPF_F_NO_PREALLOC)).unwrap();
    // Two stable keys; the table starts at 4 buckets.
    for k in [1000u32, 2000] {
        map.update(&k.to_ne_bytes(), &k.to_ne_bytes(), 0).unwrap();
    }
    let grower = {
        let map = map.clone();
        shuttle::thread::spawn(move || {
            for k in 0..8u32 {
                map.update(&k.to_ne_bytes(), &k.to_ne_bytes(), 0).unwrap();
            }
        })
    };
    let shrinker = {
        let map = map.clone();
        shuttle::thread::spawn(move || {
            for k in 100..106u32 {
                map.update(&k.to_ne_bytes(), &k.to_ne_bytes(), 0).unwrap();
            }
            for k in 100..106u32 {
                map.delete(&k.to_ne_bytes()).unwrap();
            }
        })
    };
    let reader = {
        let map = map.clone();
        shuttle::thread::spawn(move || {
            let mut v = [0u8; 4];
            for _ in 0..6 {
                for k in [1000u32, 2000] {
                    map.lookup(&k.to_ne_bytes(), &mut v, 0)
                        .expect("stable key missed");
                    assert_eq!(u32::from_ne_bytes(v), k);
                }
                assert!(map.lookup(&77u32.to_ne_bytes(), &mut v, 0).is_err());
            }
        })
    };
    grower.join().unwrap();
    shrinker.join().unwrap();
    reader.join().unwrap();
    let mut v = [0u8; 4];
    for k in (0..8u32).chain([1000, 2000]) {
        map.lookup(&k.to_ne_bytes(), &mut v, 0)
            .expect("inserted key lost");
    }
    for k in 100..106u32 {
        assert!(
            map.lookup(&k.to_ne_bytes(), &mut v, 0).is_err(),
            "deleted key back"
        );
    }
    let s = map
        .as_any()
        .downcast_ref::<bpfvet_maps::rhash::RHashMap>()
        .unwrap()
        .stats();
    assert!(
        s.grows >= 1 && s.buckets_migrated >= 4,
        "the protocol ran: {s:?}"
    );
}

#[test]
fn resize_protocol_under_random_schedules() {
    let iterations = std::env::var("BPFVET_SHUTTLE_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    shuttle::check_random(scenario, iterations);
}

#[test]
fn resize_protocol_under_pct_schedules() {
    shuttle::check_pct(scenario, 1000, 3);
}
