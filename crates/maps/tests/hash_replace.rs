//! HASH's replacing update (htab_map_update_elem on an existing key): the
//! new value goes into a spare element that is linked in place of the old
//! one, and the old element becomes the spare. Checks that the spares
//! survive callers that claim the same CPU number at once, and that the
//! swap is visible the way the kernel's is.

use std::sync::Arc;
use std::thread;

use bpfvet_isa::uapi::{self, MapType};
use bpfvet_maps::{create, pin, Map, MapAttr};

fn hash(max: u32, nr_cpus: u32) -> Arc<dyn Map> {
    let mut a = MapAttr::new(MapType::HASH, 8, 16, max);
    a.nr_cpus = nr_cpus;
    create(a).unwrap()
}

fn val(key: u64, writer: u64) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&key.to_ne_bytes());
    v[8..].copy_from_slice(&writer.to_ne_bytes());
    v
}

#[test]
fn replacing_updates_from_one_cpu_number_lose_no_element() {
    // Two spares (nr_cpus = 2) and six threads replacing at once, four of
    // them all claiming CPU 0 (the syscall side always does): a spare
    // handed to two callers would end up linked under two keys, and one
    // key would then read the other's value or vanish.
    const MAX: u64 = 512;
    let map = hash(MAX as u32, 2);
    for k in 0..MAX {
        map.update(&k.to_ne_bytes(), &val(k, 0), 0).unwrap();
    }
    let mut hs = Vec::new();
    for w in 1..=6u64 {
        let map = map.clone();
        hs.push(thread::spawn(move || {
            for round in 0..200u64 {
                for k in (w + round) % 3..MAX {
                    let k = (k * 7 + round) % MAX;
                    let r = if w <= 4 {
                        map.update(&k.to_ne_bytes(), &val(k, w), uapi::BPF_EXIST)
                    } else {
                        let g = pin();
                        map.update_elem_guarded(&k.to_ne_bytes(), &val(k, w), 0, (w % 2) as u32, &g)
                    };
                    r.expect("replacing an existing key of a full map succeeds");
                }
            }
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
    let mut v = [0u8; 16];
    for k in 0..MAX {
        map.lookup(&k.to_ne_bytes(), &mut v, 0).unwrap();
        assert_eq!(
            &v[..8],
            &k.to_ne_bytes(),
            "key {k} carries another key's value"
        );
        assert!(u64::from_ne_bytes(v[8..].try_into().unwrap()) <= 6);
    }
    // Still exactly MAX elements' worth of room: a leaked element would
    // make an insert fail early, a duplicated one would corrupt a key.
    assert_eq!(
        map.update(&MAX.to_ne_bytes(), &val(MAX, 0), 0)
            .unwrap_err()
            .errno(),
        7
    );
    for k in 0..MAX {
        map.delete(&k.to_ne_bytes()).unwrap();
    }
    for k in 1000..1000 + MAX {
        map.update(&k.to_ne_bytes(), &val(k, 9), uapi::BPF_NOEXIST)
            .unwrap();
    }
    for k in 1000..1000 + MAX {
        map.lookup(&k.to_ne_bytes(), &mut v, 0).unwrap();
        assert_eq!(v, val(k, 9));
    }
}

#[test]
fn a_replaced_value_is_a_new_element_and_the_old_pointer_keeps_the_old_value() {
    // The kernel links a new element and unlinks the old one, so a program
    // still holding the old pointer reads the old value, whole (until the
    // old element is reused by a later replacing update of that CPU).
    let map = hash(16, 1);
    let key = 3u64.to_ne_bytes();
    map.update(&key, &val(3, 1), 0).unwrap();
    let g = pin();
    let before = map.lookup_elem(&key, 0, &g).unwrap();
    map.update_elem_guarded(&key, &val(3, 2), 0, 0, &g).unwrap();
    let after = map.lookup_elem(&key, 0, &g).unwrap();
    assert_ne!(before, after, "HASH replaces, it does not copy in place");
    // SAFETY: preallocated elements live as long as the map; 16 bytes.
    let old = unsafe { std::ptr::read_volatile(before.as_ptr() as *const [u8; 16]) };
    assert_eq!(old, val(3, 1));
    let new = unsafe { std::ptr::read_volatile(after.as_ptr() as *const [u8; 16]) };
    assert_eq!(new, val(3, 2));
}
