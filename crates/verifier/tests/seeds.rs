//! The seed mechanisms (SEEDS.md §1a-1c) and the bounds-sync memo must not
//! change what the verifier computes, and their counters must show whether
//! they fire.

use bpfvet_object::{LoadOptions, Object};
use bpfvet_verifier::{verify, Baselines, Options, Stats};
use std::path::PathBuf;

fn run(file: &str, baselines: Baselines) -> Stats {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/progs")
        .join(file);
    let obj = Object::from_file(&path, &LoadOptions::default()).expect("test object loads");
    let opts = Options {
        baselines,
        ..Options::default()
    };
    verify(&obj, 0, &opts).stats
}

fn same_work(a: &Stats, b: &Stats) {
    assert_eq!(a.processed_insns, b.processed_insns);
    assert_eq!(a.total_states, b.total_states);
    assert_eq!(a.peak_states, b.peak_states);
    assert_eq!(a.max_states_per_insn, b.max_states_per_insn);
}

#[test]
fn idmap_reset_in_o1_scans_fewer_pairs_than_memset() {
    let fast = run("stress_states.bpf.o", Baselines::default());
    let base = run(
        "stress_states.bpf.o",
        Baselines {
            idmap_memset: true,
            ..Baselines::default()
        },
    );
    same_work(&fast, &base);
    assert!(fast.idmap_resets > 0);
    assert_eq!(fast.idmap_resets, base.idmap_resets);
    assert!(fast.idmap_pairs_scanned <= base.idmap_pairs_scanned);
}

#[test]
fn pooled_state_nodes_are_reused_and_change_nothing() {
    let pooled = run("loops.bpf.o", Baselines::default());
    let plain = run(
        "loops.bpf.o",
        Baselines {
            state_nodes_plain_alloc: true,
            ..Baselines::default()
        },
    );
    same_work(&pooled, &plain);
    assert_eq!(plain.state_nodes_from_pool, 0);
    assert_eq!(
        pooled.state_nodes_from_pool + pooled.state_nodes_fresh,
        plain.state_nodes_fresh
    );
}

#[test]
fn backtrack_skip_counts_and_changes_nothing() {
    let skip = run("stress_backtrack.bpf.o", Baselines::default());
    let walk = run(
        "stress_backtrack.bpf.o",
        Baselines {
            backtrack_no_skip: true,
            ..Baselines::default()
        },
    );
    same_work(&skip, &walk);
    assert!(walk.backtrack_walks > 0);
    assert_eq!(walk.backtrack_walks_avoided, 0);
    assert_eq!(
        skip.backtrack_walks + skip.backtrack_walks_avoided,
        walk.backtrack_walks
    );
}

#[test]
fn remembered_bounds_syncs_change_nothing() {
    for file in ["stress_states.bpf.o", "stress_backtrack.bpf.o"] {
        let memo = run(file, Baselines::default());
        let computed = run(
            file,
            Baselines {
                sync_no_memo: true,
                ..Baselines::default()
            },
        );
        assert!(memo.processed_insns > 0);
        same_work(&memo, &computed);
        assert_eq!(memo.mark_read, computed.mark_read);
        assert_eq!(memo.stack_depth, computed.stack_depth);
    }
}

#[test]
fn comparing_the_last_failing_register_first_changes_nothing() {
    for file in [
        "stress_states.bpf.o",
        "stress_backtrack.bpf.o",
        "loops.bpf.o",
    ] {
        let hinted = run(file, Baselines::default());
        let full = run(
            file,
            Baselines {
                prune_no_miss_hint: true,
                ..Baselines::default()
            },
        );
        assert!(hinted.processed_insns > 0);
        same_work(&hinted, &full);
        assert_eq!(hinted.mark_read, full.mark_read);
        assert_eq!(full.prune_hinted_rejects, 0);
    }
    // On the backtracking stress program most misses repeat a register.
    let hinted = run("stress_backtrack.bpf.o", Baselines::default());
    assert!(hinted.prune_hinted_rejects > 0);
}
