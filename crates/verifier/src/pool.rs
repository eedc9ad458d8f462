//! Explored-state list nodes (SEEDS.md §1c): nodes live in one arena and
//! freed nodes go to a free list for reuse, so a checkpoint rarely allocates.
//! States that are done with (a freed checkpoint, a finished path) keep
//! their buffers in a few spare states, which the next copy of a state (a
//! branch, a checkpoint) fills instead of allocating frames and stacks
//! afresh. The baseline switch drops freed nodes and states and always
//! allocates.

use crate::state::State;

pub const NIL: u32 = u32::MAX;

pub struct Node {
    pub state: State,
    /// Next node in the same explored-state bucket.
    pub next: u32,
    pub hit_cnt: u32,
    pub miss_cnt: u32,
    /// Evicted from its bucket; freed once no path continues from it.
    pub evicted: bool,
    /// Registers already cleaned by liveness.
    pub cleaned: bool,
    /// The register or slot that made the last comparison against this
    /// state fail.
    pub miss_hint: crate::prune::MissHint,
    /// The stack slots comparisons look at, known once it is cleaned.
    pub slots: crate::prune::SignificantSlots,
    /// The register of the current frame that differed at the last
    /// infinite-loop pre-check against this state (compared first next time).
    pub loop_hint: u8,
}

pub struct Pool {
    nodes: Vec<Option<Node>>,
    free: Vec<u32>,
    /// States whose buffers the next copies reuse.
    spare: Vec<State>,
    plain_alloc: bool,
    pub from_pool: u64,
    pub fresh: u64,
    pub live: u64,
}

impl Pool {
    pub fn new(plain_alloc: bool) -> Pool {
        Pool {
            nodes: Vec::new(),
            free: Vec::new(),
            spare: Vec::new(),
            plain_alloc,
            from_pool: 0,
            fresh: 0,
            live: 0,
        }
    }

    pub fn alloc(&mut self, node: Node) -> u32 {
        self.live += 1;
        if !self.plain_alloc {
            if let Some(i) = self.free.pop() {
                self.from_pool += 1;
                self.nodes[i as usize] = Some(node);
                return i;
            }
        }
        self.fresh += 1;
        self.nodes.push(Some(node));
        (self.nodes.len() - 1) as u32
    }

    pub fn release(&mut self, id: u32) {
        if let Some(slot) = self.nodes.get_mut(id as usize) {
            if let Some(node) = slot.take() {
                self.live -= 1;
                if !self.plain_alloc {
                    self.free.push(id);
                    self.recycle(node.state);
                }
            }
        }
    }

    /// A copy of `src`, in a spare state's buffers when there is one.
    pub fn copy_state(&mut self, src: &State) -> State {
        match self.spare.pop() {
            Some(mut st) => {
                st.clone_from(src);
                st
            }
            None => src.clone(),
        }
    }

    /// `st` is no longer needed: its buffers serve a later copy.
    pub fn recycle(&mut self, st: State) {
        // A few suffice: copies and releases alternate.
        const MAX_SPARE: usize = 16;
        if !self.plain_alloc && self.spare.len() < MAX_SPARE {
            self.spare.push(st);
        }
    }

    pub fn get(&self, id: u32) -> &Node {
        self.nodes[id as usize].as_ref().expect("live state node")
    }
    pub fn get_mut(&mut self, id: u32) -> &mut Node {
        self.nodes[id as usize].as_mut().expect("live state node")
    }
    pub fn try_get(&self, id: u32) -> Option<&Node> {
        self.nodes.get(id as usize).and_then(|n| n.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> Node {
        Node {
            state: State::new(),
            next: NIL,
            hit_cnt: 0,
            miss_cnt: 0,
            evicted: false,
            cleaned: false,
            miss_hint: Default::default(),
            slots: Default::default(),
            loop_hint: 0,
        }
    }

    #[test]
    fn a_copy_into_a_spare_state_equals_a_fresh_copy() {
        let mut p = Pool::new(false);
        // A spare with more frames, a longer stack and history than the
        // state copied into it.
        let mut big = State::new();
        big.frames.push(crate::state::Frame::new(7, 1, 1));
        big.frames[0].grow_stack(512);
        // Every field of the spare's frames differs from the source's.
        big.frames[0].regs[3] = crate::regs::Reg::known(9);
        big.frames[0].callsite = 4;
        big.frames[0].subprogno = 2;
        big.frames[0].callback_ret = Some((1, 2));
        big.frames[0].in_callback_fn = true;
        big.frames[0].in_async_callback_fn = true;
        big.frames[0].callback_depth = 3;
        big.frames[0].async_entry_cnt = 1;
        big.frames[1].grow_stack(64);
        big.jmp_history.resize(
            9,
            crate::state::HistEntry {
                idx: 1,
                prev_idx: 0,
                stack: 0,
                linked: 0,
                jmp_stack: 0,
            },
        );
        big.insn_idx = 99;
        p.recycle(big);
        let mut src = State::new();
        src.frames[0].grow_stack(16);
        src.frames[0].regs[3] = crate::regs::Reg::unknown_scalar();
        src.insn_idx = 5;
        src.branches = 2;
        let copy = p.copy_state(&src);
        assert_eq!(format!("{copy:?}"), format!("{:?}", src.clone()));
        assert!(p.spare.is_empty());
        // The baseline keeps no spare.
        let mut q = Pool::new(true);
        q.recycle(State::new());
        assert!(q.spare.is_empty());
    }

    #[test]
    fn freed_nodes_are_reused_unless_baseline() {
        let mut p = Pool::new(false);
        let a = p.alloc(node());
        p.release(a);
        let b = p.alloc(node());
        assert_eq!(a, b);
        assert_eq!((p.from_pool, p.fresh), (1, 1));
        let mut q = Pool::new(true);
        let a = q.alloc(node());
        q.release(a);
        let b = q.alloc(node());
        assert_ne!(a, b);
        assert_eq!((q.from_pool, q.fresh), (0, 2));
    }
}
