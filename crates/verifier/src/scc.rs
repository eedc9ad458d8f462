//! Loops as strongly connected components of the control flow graph, and
//! what 6.18's is_state_visited does with them: a checkpoint inside a loop
//! whose paths are not all explored yet has incomplete precision marks, so
//! it is compared range-within; a path pruned against such a checkpoint is
//! kept as a "backedge" until the loop's first checkpoint has no pending
//! paths, when precision is propagated over the backedges to a fixed point.
//! Backedges and the states they keep alive count in peak_states.

use crate::cfg;
use crate::error::VResult;
use crate::explore::Env;
use crate::state::{State, MAX_CALL_FRAMES};
use bpfvet_isa::Insn;

/// Loop ids per instruction (0: not in a loop), numbered in the order
/// Tarjan's algorithm completes them from instruction 0. A component
/// counts as a loop when it has two or more instructions or a self edge
/// (in 6.18 a helper call that runs a callback is not one).
pub fn compute_scc(insns: &[Insn]) -> Vec<u32> {
    let n = insns.len();
    let mut scc = vec![0u32; n];
    let mut index = vec![u32::MAX; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut next_index = 0u32;
    let mut next_scc = 1u32;
    // (node, successors, next successor to visit)
    let mut dfs: Vec<(usize, [usize; 2], usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != u32::MAX {
            continue;
        }
        let mut enter = |v: usize,
                         dfs: &mut Vec<(usize, [usize; 2], usize, usize)>,
                         stack: &mut Vec<usize>,
                         index: &mut [u32],
                         low: &mut [u32],
                         on_stack: &mut [bool]| {
            index[v] = next_index;
            low[v] = next_index;
            next_index += 1;
            stack.push(v);
            on_stack[v] = true;
            let mut succ = [0usize; 2];
            let k = cfg::successors(insns, v, &mut succ);
            dfs.push((v, succ, k, 0));
        };
        enter(
            root,
            &mut dfs,
            &mut stack,
            &mut index,
            &mut low,
            &mut on_stack,
        );
        while let Some(top) = dfs.last_mut() {
            let (v, succ, k, i) = *top;
            if i < k {
                top.3 += 1;
                let w = succ[i];
                if index[w] == u32::MAX {
                    enter(w, &mut dfs, &mut stack, &mut index, &mut low, &mut on_stack);
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            dfs.pop();
            if let Some(parent) = dfs.last() {
                let p = parent.0;
                low[p] = low[p].min(low[v]);
            }
            if low[v] != index[v] {
                continue;
            }
            let self_edge = succ[..k].contains(&v);
            let single = stack.last() == Some(&v);
            let is_loop = !single || self_edge;
            while let Some(w) = stack.pop() {
                on_stack[w] = false;
                if is_loop {
                    scc[w] = next_scc;
                }
                if w == v {
                    break;
                }
            }
            if is_loop {
                next_scc += 1;
            }
        }
    }
    scc
}

/// Call sites leading to the outermost frame that is inside a loop, and
/// that loop (the kernel's bpf_scc_callchain).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Callchain {
    callsites: [u32; MAX_CALL_FRAMES],
    scc: u32,
}

/// A path pruned inside a loop, kept until the loop's visit ends.
struct Backedge {
    state: State,
    /// Pool id of the checkpoint it was found equal to.
    equal: u32,
}

struct Visit {
    callchain: Callchain,
    /// Pool id of the first checkpoint of this visit of the loop.
    entry: Option<u32>,
    backedges: Vec<Backedge>,
}

#[derive(Default)]
pub struct SccVisits {
    visits: Vec<Visit>,
    /// Backedges alive now (they count in peak_states).
    pub num_backedges: u64,
}

impl SccVisits {
    fn find(&self, c: &Callchain) -> Option<usize> {
        self.visits.iter().position(|v| v.callchain == *c)
    }
}

/// The instruction each frame of `st` is at: call sites for the callers,
/// `insn_idx` for the innermost frame.
fn callchain(scc: &[u32], st: &State, insn_idx: usize) -> Option<Callchain> {
    let mut c = Callchain {
        callsites: [0; MAX_CALL_FRAMES],
        scc: 0,
    };
    let last = st.curframe();
    for i in 0..=last {
        let at = if i < last {
            st.frames[i + 1].callsite.max(0) as usize
        } else {
            insn_idx
        };
        let id = scc.get(at).copied().unwrap_or(0);
        if id != 0 {
            c.scc = id;
            return Some(c);
        }
        if i < last {
            c.callsites[i] = at as u32;
        }
    }
    None
}

/// The kernel's cap on fixed-point rounds over backedges.
const MAX_BACKEDGE_ITERS: u32 = 64;

impl Env<'_> {
    fn node_callchain(&self, id: u32) -> Option<Callchain> {
        let st = &self.pool.get(id).state;
        callchain(&self.cfg.scc, st, st.insn_idx)
    }

    /// `(1)`, `(5,2)`: call sites then loop id, as the kernel logs them.
    fn callchain_str(c: &Callchain) -> String {
        let mut s = String::from("(");
        for cs in c.callsites.iter().take_while(|x| **x != 0) {
            s.push_str(&format!("{cs},"));
        }
        s.push_str(&format!("{})", c.scc));
        s
    }

    /// A new checkpoint inside a loop starts a visit of it if none is open
    /// (maybe_enter_scc).
    pub fn maybe_enter_scc(&mut self, id: u32) {
        let Some(c) = self.node_callchain(id) else {
            return;
        };
        let k = match self.scc.find(&c) {
            Some(k) => k,
            None => {
                self.scc.visits.push(Visit {
                    callchain: c,
                    entry: None,
                    backedges: Vec::new(),
                });
                self.scc.visits.len() - 1
            }
        };
        if self.scc.visits[k].entry.is_none() {
            self.scc.visits[k].entry = Some(id);
            if self.log.level >= 2 {
                self.log
                    .line(&format!("SCC enter {}", Self::callchain_str(&c)));
            }
        }
    }

    /// Whether checkpoint `id` is in a loop visit that still has backedges:
    /// its precision marks may yet change (incomplete_read_marks).
    pub fn incomplete_marks(&self, id: u32) -> bool {
        // Only loop hits create backedges: most programs never have one.
        if self.scc.num_backedges == 0 {
            return false;
        }
        self.node_callchain(id)
            .and_then(|c| self.scc.find(&c))
            .is_some_and(|k| !self.scc.visits[k].backedges.is_empty())
    }

    /// The current path was pruned at `insn_idx` against checkpoint `equal`
    /// inside a loop: keep a copy of it (add_scc_backedge).
    pub fn add_scc_backedge(&mut self, equal: u32, insn_idx: usize) -> VResult<()> {
        let Some(k) = self.node_callchain(equal).and_then(|c| self.scc.find(&c)) else {
            return self.err(format!(
                "verifier bug: add backedge: no loop visit at insn {insn_idx}"
            ));
        };
        if self.log.level >= 2 {
            let c = self.scc.visits[k].callchain;
            self.log
                .line(&format!("SCC backedge {}", Self::callchain_str(&c)));
        }
        let mut state = self.cur.clone();
        state.insn_idx = insn_idx;
        self.scc.visits[k].backedges.push(Backedge { state, equal });
        self.scc.num_backedges += 1;
        self.update_peak_states();
        Ok(())
    }

    /// Explored plus evicted-but-kept states plus backedges.
    pub fn update_peak_states(&mut self) {
        let cur = self.pool.live + self.scc.num_backedges;
        if cur > self.stats.peak_states {
            self.stats.peak_states = cur;
        }
    }

    /// A path that ends inside a loop, which only bpf_throw does: 6.18
    /// closes the loop visit of the ending state too, and when no
    /// checkpoint of that loop opened one on this call chain it reports a
    /// verifier bug and rejects the program (maybe_exit_scc).
    pub fn check_exit_inside_loop(&self) -> VResult<()> {
        if self.cur.speculative {
            return Ok(());
        }
        let Some(c) = callchain(&self.cfg.scc, &self.cur, self.insn_idx) else {
            return Ok(());
        };
        if self.scc.find(&c).is_none() {
            return self.err(format!(
                "verifier bug: scc exit: no visit info for call chain {}",
                Self::callchain_str(&c)
            ));
        }
        Ok(())
    }

    /// Checkpoint `id` has no pending paths: if it opened a loop visit,
    /// close it and settle precision over its backedges (maybe_exit_scc).
    pub fn maybe_exit_scc(&mut self, id: u32) -> VResult<()> {
        let Some(c) = self.node_callchain(id) else {
            return Ok(());
        };
        let Some(k) = self.scc.find(&c) else {
            return Ok(());
        };
        if self.scc.visits[k].entry != Some(id) {
            return Ok(());
        }
        if self.log.level >= 2 {
            self.log
                .line(&format!("SCC exit {}", Self::callchain_str(&c)));
        }
        self.scc.visits[k].entry = None;
        let backedges = std::mem::take(&mut self.scc.visits[k].backedges);
        self.scc.num_backedges -= backedges.len() as u64;
        self.propagate_backedges(backedges)
    }

    /// Precision found in the equal checkpoints flows into the paths that
    /// were pruned against them, until nothing changes.
    fn propagate_backedges(&mut self, mut backedges: Vec<Backedge>) -> VResult<()> {
        let saved_idx = self.insn_idx;
        let mut rounds = 0;
        let res = loop {
            rounds += 1;
            if rounds > MAX_BACKEDGE_ITERS {
                for b in &mut backedges {
                    std::mem::swap(&mut self.cur, &mut b.state);
                    self.mark_all_scalars_precise();
                    std::mem::swap(&mut self.cur, &mut b.state);
                }
                break Ok(());
            }
            let before = self.precise_marks;
            let mut res = Ok(());
            for b in &mut backedges {
                if self.pool.try_get(b.equal).is_none() {
                    continue;
                }
                std::mem::swap(&mut self.cur, &mut b.state);
                self.insn_idx = self.cur.insn_idx;
                res = self.propagate_precision(b.equal);
                std::mem::swap(&mut self.cur, &mut b.state);
                if res.is_err() {
                    break;
                }
            }
            if res.is_err() || self.precise_marks == before {
                break res;
            }
        };
        self.insn_idx = saved_idx;
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asm(text: &str) -> Vec<Insn> {
        bpfvet_isa::asm::assemble_insns(text).unwrap()
    }

    #[test]
    fn loop_body_shares_one_id_and_straight_code_has_none() {
        // 0: r0 = 0; 1: r0 += 1; 2: if r0 < 10 goto 1; 3: exit
        let insns = asm("r0 = 0\nr0 += 1\nif r0 < 10 goto pc-2\nexit\n");
        assert_eq!(compute_scc(&insns), vec![0, 1, 1, 0]);
    }

    #[test]
    fn self_loop_is_a_loop_and_a_call_alone_is_not() {
        let insns = asm("r0 = 0\ngoto pc-1\n");
        assert_eq!(compute_scc(&insns), vec![0, 1]);
        let insns = asm("call bpf_loop#181\nexit\n");
        assert_eq!(compute_scc(&insns), vec![0, 0]);
    }
}
