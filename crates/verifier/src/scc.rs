//! Strongly connected components of the instruction graph, numbered as
//! the kernel numbers them (it prints the numbers in the level-2 log's
//! live-registers table): a depth-first walk from each unvisited
//! instruction in index order, successors in the order fall-through then
//! jump target, components numbered from 1 in the order they complete;
//! an instruction alone in its component without a self-loop gets 0.

use bpfvet_isa::opcode::*;
use bpfvet_isa::Insn;

/// Successors of instruction `idx` in the control-flow graph (calls and
/// exits do not leave the function: a call continues with the next
/// instruction, an exit has none).
fn successors(insns: &[Insn], idx: usize) -> ([usize; 2], usize) {
    let insn = insns[idx];
    let target = |off: i64| (idx as i64 + off + 1).max(0) as usize;
    if insn.is_ld_imm64() {
        return ([idx + 2, 0], 1);
    }
    match insn.class() {
        BPF_JMP | BPF_JMP32 => match op(insn.code) {
            BPF_EXIT => ([0, 0], 0),
            BPF_CALL => ([idx + 1, 0], 1),
            BPF_JA => {
                let off = if insn.class() == BPF_JMP {
                    insn.off as i64
                } else {
                    insn.imm as i64
                };
                ([target(off), 0], 1)
            }
            _ => ([idx + 1, target(insn.off as i64)], 2),
        },
        _ => ([idx + 1, 0], 1),
    }
}

/// The component number of every instruction (0: not in a loop).
pub fn scc_numbers(insns: &[Insn]) -> Vec<u32> {
    let n = insns.len();
    const DONE: u32 = u32::MAX;
    let mut scc = vec![0u32; n];
    let mut pre = vec![0u32; n];
    let mut low = vec![0u32; n];
    let mut stack: Vec<usize> = Vec::new();
    // (vertex, index of the next successor to look at)
    let mut dfs: Vec<(usize, usize)> = Vec::new();
    let mut next_pre = 1u32;
    let mut next_id = 1u32;
    for root in 0..n {
        if pre[root] != 0 {
            continue;
        }
        dfs.push((root, 0));
        while let Some(&(w, first)) = dfs.last() {
            if pre[w] == 0 {
                pre[w] = next_pre;
                low[w] = next_pre;
                next_pre += 1;
                stack.push(w);
            }
            let (succ, cnt) = successors(insns, w);
            // A successor already visited lends its lowest reachable
            // number (a finished component's is DONE, which lends nothing).
            let mut k = first;
            let mut child = None;
            while k < cnt {
                let s = succ[k];
                if s < n && pre[s] == 0 {
                    child = Some(s);
                    break;
                }
                if s < n {
                    low[w] = low[w].min(low[s]);
                }
                k += 1;
            }
            if let Some(s) = child {
                // Resume at the same successor, to take its low number.
                if let Some(top) = dfs.last_mut() {
                    top.1 = k;
                }
                dfs.push((s, 0));
                continue;
            }
            dfs.pop();
            if low[w] < pre[w] {
                continue;
            }
            let self_loop = succ[..cnt].contains(&w);
            let assign = stack.last() != Some(&w) || self_loop;
            loop {
                let t = stack.pop().expect("w is on the stack");
                low[t] = DONE;
                if assign {
                    scc[t] = next_id;
                }
                if t == w {
                    break;
                }
            }
            if assign {
                next_id += 1;
            }
        }
    }
    scc
}
