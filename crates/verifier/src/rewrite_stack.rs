//! Stack that the kernel's rewrites after a successful verification add
//! to a subprogram's depth, and so to the "stack depth" figure: an
//! inlined bpf_loop call needs three slots for its loop state
//! (optimize_bpf_loop), a may_goto two for its timed counter
//! (do_misc_fixups, on JITs with timed may_goto such as x86-64).

use crate::cfg::{is_may_goto, Subprog};
use crate::explore::{CallSiteAux, InsnAux};
use bpfvet_isa::Insn;
use std::collections::HashMap;

/// Whether a bpf_loop call site can be inlined: every visit had flags 0
/// and the same callback (update_loop_inline_state).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LoopInline {
    pub fit: bool,
    pub callback: u32,
}

impl LoopInline {
    /// The call site's state after one more visit.
    pub fn visit(prev: Option<LoopInline>, flags_zero: bool, callback: u32) -> LoopInline {
        match prev {
            None => LoopInline {
                fit: flags_zero,
                callback,
            },
            Some(p) => LoopInline {
                fit: p.fit && flags_zero && p.callback == callback,
                callback: p.callback,
            },
        }
    }
}

const LOOP_INLINE_STACK: u32 = 3 * 8;
pub const TIMED_MAY_GOTO_STACK: u32 = 2 * 8;

/// Adds the rewrites' stack to `depths` (one per subprogram). Only
/// instructions some path reached count: the kernel removes the others
/// before rewriting.
pub fn add_rewrite_stack(
    depths: &mut [u32],
    subprogs: &[Subprog],
    insns: &[Insn],
    aux: &[InsnAux],
    call_sites: &HashMap<usize, CallSiteAux>,
) {
    for (depth, sp) in depths.iter_mut().zip(subprogs) {
        let reached = (sp.start..sp.end.min(insns.len())).filter(|&i| aux[i].seen);
        if reached.clone().any(|i| {
            call_sites
                .get(&i)
                .and_then(|c| c.loop_inline)
                .is_some_and(|l| l.fit)
        }) {
            *depth += LOOP_INLINE_STACK + (depth.next_multiple_of(8) - *depth);
        }
        if reached.clone().any(|i| is_may_goto(&insns[i])) {
            *depth += TIMED_MAY_GOTO_STACK;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_stays_inlinable_only_with_zero_flags_and_one_callback() {
        let first = LoopInline::visit(None, true, 3);
        assert!(first.fit);
        assert!(LoopInline::visit(Some(first), true, 3).fit);
        assert!(!LoopInline::visit(Some(first), true, 4).fit);
        assert!(!LoopInline::visit(Some(first), false, 3).fit);
        let unfit = LoopInline::visit(None, false, 3);
        assert!(!LoopInline::visit(Some(unfit), true, 3).fit);
    }
}
