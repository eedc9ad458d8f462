//! Explored-state list nodes (SEEDS.md §1c): nodes live in one arena and
//! freed nodes go to a free list for reuse, so a checkpoint rarely allocates.
//! The baseline switch drops freed nodes and always allocates a fresh one.

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
}

pub struct Pool {
    nodes: Vec<Option<Node>>,
    free: Vec<u32>,
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
            if slot.take().is_some() {
                self.live -= 1;
                if !self.plain_alloc {
                    self.free.push(id);
                }
            }
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
        }
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
