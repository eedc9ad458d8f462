//! RHASH against a model (an ordered map with the kernel's flag and
//! capacity rules) and against HASH (BPF_F_NO_PREALLOC) on the operations
//! whose semantics they share; a second RHASH takes its updates through
//! the program side (update_elem_guarded, with its own fast path). Small tables make every sequence grow,
//! shrink and migrate. BPFVET_DIFF_CASES sets the sequence count.

use std::collections::BTreeMap;
use std::sync::Arc;

use bpfvet_isa::uapi::{self, MapType};
use bpfvet_maps::rhash::RHashMap;
use bpfvet_maps::{create, Map, MapAttr, MapError};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const MAX: u32 = 24;

#[derive(Clone, Debug)]
enum Op {
    Update(u32, u8, u64),
    Delete(u32),
    Lookup(u32),
    LookupAndDelete(u32),
    Walk,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => (0..40u32, any::<u8>(), prop_oneof![Just(0u64), Just(1), Just(2), Just(3)])
            .prop_map(|(k, v, f)| Op::Update(k, v, f)),
        3 => (0..40u32).prop_map(Op::Delete),
        2 => (0..40u32).prop_map(Op::Lookup),
        1 => (0..40u32).prop_map(Op::LookupAndDelete),
        1 => Just(Op::Walk),
    ];
    proptest::collection::vec(op, 1..200)
}

fn errno(r: Result<(), MapError>) -> i32 {
    r.err().map_or(0, |e| e.errno())
}

/// The model: kernel flag rules, max_entries as a hard element cap.
fn model_update(m: &mut BTreeMap<u32, [u8; 8]>, k: u32, v: [u8; 8], f: u64) -> i32 {
    let exists = m.contains_key(&k);
    match f {
        f if f > 2 => 22,
        1 if exists => 17,
        2 if !exists => 2,
        _ if !exists && m.len() >= MAX as usize => 7,
        _ => {
            m.insert(k, v);
            0
        }
    }
}

fn walk(map: &Arc<dyn Map>) -> Vec<u32> {
    let mut out = Vec::new();
    let mut cur: Option<[u8; 4]> = None;
    let mut next = [0u8; 4];
    while map
        .get_next_key(cur.as_ref().map(|c| &c[..]), &mut next)
        .is_ok()
    {
        out.push(u32::from_ne_bytes(next));
        cur = Some(next);
        assert!(out.len() <= MAX as usize, "walk longer than the map");
    }
    out.sort_unstable();
    out
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let attr = |t| MapAttr::new(t, 4, 8, MAX).with_flags(uapi::BPF_F_NO_PREALLOC);
    let rhash = create(attr(MapType::RHASH)).unwrap();
    let rhash_prog = create(attr(MapType::RHASH)).unwrap();
    let hash = create(attr(MapType::HASH)).unwrap();
    let mut model = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        let ctx = format!("step {i} {op:?}");
        match *op {
            Op::Update(k, v, f) => {
                let val = [v; 8];
                let want = model_update(&mut model, k, val, f);
                prop_assert_eq!(
                    errno(rhash.update(&k.to_ne_bytes(), &val, f)),
                    want,
                    "{}",
                    ctx
                );
                prop_assert_eq!(
                    errno(hash.update(&k.to_ne_bytes(), &val, f)),
                    want,
                    "{}",
                    ctx
                );
                let g = bpfvet_maps::pin();
                let prog = rhash_prog.update_elem_guarded(&k.to_ne_bytes(), &val, f, 0, &g);
                prop_assert_eq!(errno(prog), want, "program side {}", ctx);
            }
            Op::Delete(k) => {
                let want = if model.remove(&k).is_some() { 0 } else { 2 };
                prop_assert_eq!(errno(rhash.delete(&k.to_ne_bytes())), want, "{}", ctx);
                prop_assert_eq!(errno(hash.delete(&k.to_ne_bytes())), want, "{}", ctx);
                prop_assert_eq!(errno(rhash_prog.delete(&k.to_ne_bytes())), want, "{}", ctx);
            }
            Op::Lookup(k) | Op::LookupAndDelete(k) => {
                let del = matches!(op, Op::LookupAndDelete(_));
                let want = if del {
                    model.remove(&k)
                } else {
                    model.get(&k).copied()
                };
                for m in [&rhash, &hash, &rhash_prog] {
                    let mut v = [0u8; 8];
                    let r = if del {
                        m.lookup_and_delete(&k.to_ne_bytes(), &mut v, 0)
                    } else {
                        m.lookup(&k.to_ne_bytes(), &mut v, 0)
                    };
                    prop_assert_eq!(r.ok().map(|_| v), want, "{}", ctx);
                }
            }
            Op::Walk => {
                let keys: Vec<u32> = model.keys().copied().collect();
                prop_assert_eq!(walk(&rhash), keys.clone(), "{}", ctx);
                prop_assert_eq!(walk(&rhash_prog), keys.clone(), "{}", ctx);
                prop_assert_eq!(walk(&hash), keys, "{}", ctx);
            }
        }
    }
    // Batches see the same pairs.
    let b = rhash.lookup_batch(None, MAX + 1, false).unwrap();
    prop_assert_eq!(b.count as usize, model.len());
    Ok(())
}

#[test]
fn rhash_agrees_with_model_and_hash() {
    let cases = std::env::var("BPFVET_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner.run(&ops(), |ops| run(&ops)).unwrap();
    println!("rhash: {cases} sequences agree with the model and with HASH");
}

#[test]
fn resize_machinery_runs_in_these_sequences() {
    // The sizes used above (max 24 elements, tables from 4 buckets) do
    // make the tables grow and shrink.
    let m = create(MapAttr::new(MapType::RHASH, 4, 8, MAX).with_flags(uapi::BPF_F_NO_PREALLOC))
        .unwrap();
    for round in 0..3 {
        for k in 0..MAX {
            m.update(&k.to_ne_bytes(), &[round; 8], 0).unwrap();
        }
        for k in 0..MAX {
            m.delete(&k.to_ne_bytes()).unwrap();
        }
    }
    let s = m.as_any().downcast_ref::<RHashMap>().unwrap().stats();
    assert!(
        s.grows >= 3 && s.shrinks >= 3 && s.buckets_migrated > 0,
        "{s:?}"
    );
}

#[test]
fn size_hint_sets_the_initial_table() {
    let mut a = MapAttr::new(MapType::RHASH, 8, 8, 1000).with_flags(uapi::BPF_F_NO_PREALLOC);
    a.map_extra = 600;
    let m = create(a.clone()).unwrap();
    let s = m.as_any().downcast_ref::<RHashMap>().unwrap().stats();
    assert_eq!(s.table_size, 1024);
    a.map_extra = 2000;
    assert_eq!(create(a).err().map(|e| e.errno()), Some(22));
}
