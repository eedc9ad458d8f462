//! Real objects with bytes flipped, runs overwritten or the tail cut off
//! must load or fail with a typed error, never panic. This runs in every
//! `cargo test`; the `load_object` cargo-fuzz target explores further.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use bpfvet_object::{LoadOptions, Object};
use proptest::prelude::*;

fn seeds() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/progs");
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "o") {
                if let Ok(b) = std::fs::read(&p) {
                    out.push((p.display().to_string(), b));
                }
            }
        }
    }
    out.sort();
    out
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, bit: u8 },
    Overwrite { at: usize, bytes: Vec<u8> },
    Truncate { keep: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Overwrite { at, bytes }),
        any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
    ]
}

fn apply(mut b: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        if b.is_empty() {
            break;
        }
        let n = b.len();
        match m {
            Mutation::Flip { at, bit } => b[at % n] ^= 1 << bit,
            Mutation::Overwrite { at, bytes } => {
                let start = at % n;
                for (i, x) in bytes.iter().enumerate() {
                    if start + i < n {
                        b[start + i] = *x;
                    }
                }
            }
            Mutation::Truncate { keep } => b.truncate(keep % n),
        }
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn mutated_objects_never_panic(
        pick in any::<usize>(),
        muts in prop::collection::vec(mutation(), 1..6),
    ) {
        let seeds = seeds();
        if seeds.is_empty() {
            return Ok(());
        }
        let (name, bytes) = &seeds[pick % seeds.len()];
        let data = apply(bytes.clone(), &muts);
        let res = catch_unwind(AssertUnwindSafe(|| {
            Object::parse(&data, name, &LoadOptions::offline())
        }));
        prop_assert!(res.is_ok(), "loader panicked on {} with {:?}", name, muts);
        if let Ok(Err(e)) = res {
            prop_assert!(e.to_string().contains(name.as_str()));
        }
    }
}
