//! Verification statistics, with the kernel's meaning where the kernel has
//! the figure, plus bpfvet's own seed-mechanism counters.

use std::time::Duration;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Every instruction visited on every path ("processed N insns").
    pub processed_insns: u64,
    /// Checkpoints saved at prune points.
    pub total_states: u64,
    /// Most explored states alive at once.
    pub peak_states: u64,
    /// Longest explored-state list scanned at one instruction.
    pub max_states_per_insn: u64,
    /// Read marks propagated to parent states.
    pub mark_read: u64,
    pub duration: Duration,
    /// Peak bytes held in explored and pending states.
    pub peak_state_bytes: u64,
    /// Stack depth of each subprogram, as "stack depth 8+0".
    pub stack_depth: Vec<u32>,
    /// §1a: id-map resets (one per states_equal comparison).
    pub idmap_resets: u64,
    /// §1a: (old, cur) id pairs scanned during lookups.
    pub idmap_pairs_scanned: u64,
    /// §1b: precision walks started.
    pub backtrack_walks: u64,
    /// §1b: walks not started because everything requested was precise.
    pub backtrack_walks_avoided: u64,
    /// §1b: registers and stack slots dropped as already precise.
    pub backtrack_regs_skipped: u64,
    /// §1c: explored-state nodes reused from the pool's free list.
    pub state_nodes_from_pool: u64,
    /// §1c: explored-state nodes allocated fresh.
    pub state_nodes_fresh: u64,
    /// Comparisons with an explored state rejected by the register that
    /// failed the previous one against it, compared first.
    pub prune_hinted_rejects: u64,
}
