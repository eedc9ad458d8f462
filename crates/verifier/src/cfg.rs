//! Checks on the control-flow graph before exploration (the kernel's
//! check_subprogs and check_cfg), and the per-instruction marks they leave
//! behind: prune points, jump points, forced checkpoints, and static register
//! liveness.

use crate::error::VerifyError;
use bpfvet_isa::opcode::*;
use bpfvet_isa::Insn;

/// Helper ids that call a callback synchronously (before returning).
pub const SYNC_CALLBACK_HELPERS: [i32; 4] = [
    164, // for_each_map_elem
    180, // find_vma
    181, // loop
    209, // user_ringbuf_drain
];
/// Helper ids that register a callback run later (timers).
pub const ASYNC_CALLBACK_HELPERS: [i32; 1] = [170]; // timer_set_callback

/// A call that runs a callback before it returns (is_sync_callback_calling_insn):
/// one of SYNC_CALLBACK_HELPERS, or bpf_rbtree_add with its `less`.
pub fn is_sync_callback_insn(insn: &Insn) -> bool {
    (is_helper_call(insn) && SYNC_CALLBACK_HELPERS.contains(&insn.imm))
        || (insn.code == BPF_JMP | BPF_CALL
            && insn.src == BPF_PSEUDO_KFUNC_CALL
            && crate::kfunc::is_sync_callback_kfunc_call(insn))
}

#[derive(Clone, Debug, Default)]
pub struct Subprog {
    pub start: usize,
    /// One past the last instruction.
    pub end: usize,
    pub has_tail_call: bool,
    pub has_ld_abs: bool,
    /// It, or a function it calls, calls a helper that may move packet
    /// data: callers of a global one lose their packet pointers.
    pub changes_pkt_data: bool,
    /// It, or a function it calls, calls a helper or kfunc that may sleep.
    pub might_sleep: bool,
}

/// Per-instruction marks.
pub mod mark {
    pub const PRUNE_POINT: u8 = 1;
    pub const JMP_POINT: u8 = 2;
    pub const FORCE_CHECKPOINT: u8 = 4;
    pub const CALLS_CALLBACK: u8 = 8;
    /// A call of an iterator's next method.
    pub const ITER_NEXT: u8 = 16;
}

#[derive(Debug)]
pub struct Cfg {
    pub subprogs: Vec<Subprog>,
    pub marks: Vec<u8>,
    /// Bit i set: register ri may be read before written from this insn on.
    pub live_regs_before: Vec<u16>,
    /// Strongly connected component of each instruction; 0 outside loops.
    pub scc: Vec<u32>,
}

impl Cfg {
    pub fn is(&self, idx: usize, m: u8) -> bool {
        self.marks.get(idx).is_some_and(|x| x & m != 0)
    }
    pub fn subprog_at(&self, start: usize) -> Option<usize> {
        self.subprogs.binary_search_by(|s| s.start.cmp(&start)).ok()
    }
}

pub fn is_pseudo_call(i: &Insn) -> bool {
    i.code == BPF_JMP | BPF_CALL && i.src == BPF_PSEUDO_CALL
}
pub fn is_helper_call(i: &Insn) -> bool {
    i.code == BPF_JMP | BPF_CALL && i.src == 0
}
pub fn is_pseudo_func(i: &Insn) -> bool {
    i.is_ld_imm64() && i.src == BPF_PSEUDO_FUNC
}
pub fn is_may_goto(i: &Insn) -> bool {
    i.code == BPF_JMP | BPF_JCOND && i.src == BPF_MAY_GOTO
}

fn err(idx: usize, msg: String) -> VerifyError {
    VerifyError::new(Some(idx), msg)
}

/// The kernel's limit on functions per program (BPF_MAX_SUBPROGS), main
/// included.
pub(crate) const MAX_SUBPROGS: usize = 256;

/// Finds the subprograms: entry, targets of bpf-to-bpf calls and of
/// callback (ld_imm64 func) references.
fn find_subprogs(insns: &[Insn], exception_cb: Option<usize>) -> Result<Vec<Subprog>, VerifyError> {
    let n = insns.len() as i64;
    let mut starts = vec![0usize];
    starts.extend(exception_cb.filter(|&s| s < insns.len()));
    for (i, ins) in insns.iter().enumerate() {
        if is_pseudo_call(ins) || is_pseudo_func(ins) {
            let t = i as i64 + ins.imm as i64 + 1;
            if t < 0 || t >= n {
                return Err(err(i, "call to invalid destination".into()));
            }
            if !starts.contains(&(t as usize)) {
                if starts.len() >= MAX_SUBPROGS {
                    return Err(err(i, "too many subprograms".into()));
                }
                starts.push(t as usize);
            }
        }
    }
    starts.sort_unstable();
    starts.dedup();
    let mut subs: Vec<Subprog> = starts
        .iter()
        .map(|&s| Subprog {
            start: s,
            ..Default::default()
        })
        .collect();
    for k in 0..subs.len() {
        subs[k].end = subs.get(k + 1).map_or(insns.len(), |s| s.start);
    }
    Ok(subs)
}

/// check_subprogs: every jump stays in its subprogram and every subprogram
/// ends in an exit or an unconditional jump.
fn check_subprogs(
    insns: &[Insn],
    subs: &mut [Subprog],
    calls: &dyn Fn(&Insn) -> CallSummary,
) -> Result<(), VerifyError> {
    for sp in subs.iter_mut() {
        for (i, &ins) in insns.iter().enumerate().take(sp.end).skip(sp.start) {
            let code = ins.code;
            if code == BPF_JMP | BPF_CALL && ins.src == 0 && ins.imm == 12 {
                sp.has_tail_call = true;
            }
            if class(code) == BPF_LD && (mode(code) == BPF_ABS || mode(code) == BPF_IND) {
                sp.has_ld_abs = true;
            }
            if is_helper_call(&ins) && crate::helpers::classes::changes_pkt_data(ins.imm as u32) {
                sp.changes_pkt_data = true;
            }
            let kfunc_call = code == BPF_JMP | BPF_CALL && ins.src == BPF_PSEUDO_KFUNC_CALL;
            if kfunc_call && calls(&ins).changes_pkt_data {
                sp.changes_pkt_data = true;
            }
            if (is_helper_call(&ins) || kfunc_call) && calls(&ins).might_sleep {
                sp.might_sleep = true;
            }
            let is_jmp = class(code) == BPF_JMP || class(code) == BPF_JMP32;
            if is_jmp && op(code) != BPF_EXIT && op(code) != BPF_CALL {
                let off = if code == BPF_JMP32 | BPF_JA {
                    ins.imm as i64
                } else {
                    ins.off as i64
                };
                let t = i as i64 + off + 1;
                if t < sp.start as i64 || t >= sp.end as i64 {
                    return Err(err(i, format!("jump out of range from insn {i} to {t}")));
                }
            }
            if i == sp.end - 1
                && code != BPF_JMP | BPF_EXIT
                && code != BPF_JMP32 | BPF_JA
                && code != BPF_JMP | BPF_JA
            {
                return Err(err(i, "last insn is not an exit or jmp".into()));
            }
        }
    }
    Ok(())
}

/// A caller changes packet data (or may sleep) when a function it calls
/// does, or a callback whose address it loads (the kernel merges the
/// marks along its CFG walk, where a function's address is an edge to it
/// as a call is; a fixpoint gives the same).
fn merge_callee_effects(insns: &[Insn], subs: &mut [Subprog]) {
    // (caller, callee) for every bpf-to-bpf call and callback address.
    let mut edges = Vec::new();
    for (k, sp) in subs.iter().enumerate() {
        for (i, ins) in insns.iter().enumerate().take(sp.end).skip(sp.start) {
            if !is_pseudo_call(ins) && !is_pseudo_func(ins) {
                continue;
            }
            let t = i as i64 + ins.imm as i64 + 1;
            if let Ok(c) = subs.binary_search_by(|s| (s.start as i64).cmp(&t)) {
                edges.push((k, c));
            }
        }
    }
    let mut changed = true;
    while changed {
        changed = false;
        for &(caller, callee) in &edges {
            if subs[callee].changes_pkt_data && !subs[caller].changes_pkt_data {
                subs[caller].changes_pkt_data = true;
                changed = true;
            }
            if subs[callee].might_sleep && !subs[caller].might_sleep {
                subs[caller].might_sleep = true;
                changed = true;
            }
        }
    }
}

const DISCOVERED: u8 = 0x10;
const EXPLORED: u8 = 0x20;
const FALLTHROUGH: u8 = 1;
const BRANCH: u8 = 2;

enum Step {
    Done,
    Keep,
}

struct Walk<'a> {
    insns: &'a [Insn],
    calls: &'a dyn Fn(&Insn) -> CallSummary,
    /// A loader without CAP_BPF may not loop (bpf_capable).
    loops_allowed: bool,
    state: Vec<u8>,
    stack: Vec<usize>,
    marks: Vec<u8>,
}

impl Walk<'_> {
    fn push(&mut self, t: usize, w: i64, e: u8) -> Result<Step, VerifyError> {
        if e == FALLTHROUGH && self.state[t] >= DISCOVERED | FALLTHROUGH {
            return Ok(Step::Done);
        }
        if e == BRANCH && self.state[t] >= DISCOVERED | BRANCH {
            return Ok(Step::Done);
        }
        if w < 0 || w >= self.insns.len() as i64 {
            return Err(err(t, format!("jump out of range from insn {t} to {w}")));
        }
        let w = w as usize;
        if e == BRANCH {
            self.marks[w] |= mark::PRUNE_POINT | mark::JMP_POINT;
        }
        if self.state[w] == 0 {
            self.state[t] = DISCOVERED | e;
            self.state[w] = DISCOVERED;
            self.stack.push(w);
            Ok(Step::Keep)
        } else if self.state[w] & 0xf0 == DISCOVERED {
            // A back-edge: loops are allowed for a loader with CAP_BPF.
            if self.loops_allowed {
                Ok(Step::Done)
            } else {
                Err(err(t, format!("back-edge from insn {t} to {w}")))
            }
        } else {
            self.state[t] = DISCOVERED | e;
            Ok(Step::Done)
        }
    }

    fn visit_call(&mut self, t: usize, callee: bool) -> Result<Step, VerifyError> {
        let sz = if self.insns[t].is_ld_imm64() { 2 } else { 1 };
        if let Step::Keep = self.push(t, (t + sz) as i64, FALLTHROUGH)? {
            return Ok(Step::Keep);
        }
        if t + sz < self.marks.len() {
            self.marks[t + sz] |= mark::PRUNE_POINT | mark::JMP_POINT;
        }
        if callee {
            self.marks[t] |= mark::PRUNE_POINT;
            let w = t as i64 + self.insns[t].imm as i64 + 1;
            return self.push(t, w, BRANCH);
        }
        Ok(Step::Done)
    }

    fn visit(&mut self, t: usize) -> Result<Step, VerifyError> {
        let ins = self.insns[t];
        if is_pseudo_func(&ins) {
            return self.visit_call(t, true);
        }
        let cls = ins.class();
        if cls != BPF_JMP && cls != BPF_JMP32 {
            let sz = if ins.is_ld_imm64() { 2 } else { 1 };
            return self.push(t, (t + sz) as i64, FALLTHROUGH);
        }
        match op(ins.code) {
            BPF_EXIT => Ok(Step::Done),
            BPF_CALL => {
                if is_sync_callback_insn(&ins) {
                    self.marks[t] |= mark::CALLS_CALLBACK
                        | mark::FORCE_CHECKPOINT
                        | mark::PRUNE_POINT
                        | mark::JMP_POINT;
                }
                if is_helper_call(&ins) {
                    if ASYNC_CALLBACK_HELPERS.contains(&ins.imm) {
                        self.marks[t] |= mark::PRUNE_POINT;
                    }
                } else if ins.src == BPF_PSEUDO_KFUNC_CALL
                    && crate::kfunc::is_async_callback_kfunc_call(&ins)
                {
                    self.marks[t] |= mark::PRUNE_POINT;
                } else if ins.src == BPF_PSEUDO_KFUNC_CALL && (self.calls)(&ins).iter_next {
                    // Iterator loops converge at the next call: always
                    // checkpoint there.
                    self.marks[t] |= mark::PRUNE_POINT | mark::FORCE_CHECKPOINT | mark::ITER_NEXT;
                }
                self.visit_call(t, ins.src == BPF_PSEUDO_CALL)
            }
            BPF_JA => {
                let off = if cls == BPF_JMP {
                    ins.off as i64
                } else {
                    ins.imm as i64
                };
                let w = t as i64 + off + 1;
                let r = self.push(t, w, FALLTHROUGH)?;
                if (w as usize) < self.marks.len() {
                    self.marks[w as usize] |= mark::PRUNE_POINT | mark::JMP_POINT;
                }
                Ok(r)
            }
            _ => {
                self.marks[t] |= mark::PRUNE_POINT;
                if is_may_goto(&ins) {
                    self.marks[t] |= mark::FORCE_CHECKPOINT;
                }
                if let Step::Keep = self.push(t, t as i64 + 1, FALLTHROUGH)? {
                    return Ok(Step::Keep);
                }
                self.push(t, t as i64 + ins.off as i64 + 1, BRANCH)
            }
        }
    }
}

/// Runs the CFG checks and computes the instruction marks.
/// What the CFG pass needs to know about a helper or kfunc call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSummary {
    /// Registers r1..r<args> are read by the call.
    pub args: usize,
    /// An iterator's next method: a forced checkpoint, where iterator loops
    /// converge.
    pub iter_next: bool,
    /// A helper or kfunc that may sleep.
    pub might_sleep: bool,
    /// A kfunc that may move packet data (helpers: classes::changes_pkt_data).
    pub changes_pkt_data: bool,
}

/// `exception_cb`: the first instruction of the program's exception
/// callback, a subprogram nothing calls that the kernel walks after main.
/// The kernel's first passes over the subprogram layout
/// (add_subprog_and_kfunc, check_subprogs), which run before the opcode
/// and ld_imm64 checks of resolve_pseudo_ldimm64; returns the
/// subprograms, their calls not yet looked at.
pub fn check_layout(
    insns: &[Insn],
    exception_cb: Option<usize>,
) -> Result<Vec<Subprog>, VerifyError> {
    if insns.is_empty() {
        return Err(VerifyError::new(
            None,
            "last insn is not an exit or jmp".into(),
        ));
    }
    let mut subprogs = find_subprogs(insns, exception_cb)?;
    // Only the layout is checked here: no call is looked at.
    let no_calls = |_: &Insn| CallSummary {
        args: 5,
        iter_next: false,
        might_sleep: false,
        changes_pkt_data: false,
    };
    check_subprogs(insns, &mut subprogs, &no_calls)?;
    Ok(subprogs)
}

pub fn analyze(
    insns: &[Insn],
    calls: &dyn Fn(&Insn) -> CallSummary,
    exception_cb: Option<usize>,
    loops_allowed: bool,
) -> Result<Cfg, VerifyError> {
    if insns.is_empty() {
        return Err(VerifyError::new(
            None,
            "last insn is not an exit or jmp".into(),
        ));
    }
    let mut subprogs = find_subprogs(insns, exception_cb)?;
    check_subprogs(insns, &mut subprogs, calls)?;
    merge_callee_effects(insns, &mut subprogs);
    let n = insns.len();
    let mut w = Walk {
        insns,
        calls,
        loops_allowed,
        state: vec![0; n],
        stack: Vec::with_capacity(64),
        marks: vec![0; n],
    };
    for entry in std::iter::once(0).chain(exception_cb) {
        if w.state[entry] != 0 {
            continue;
        }
        w.state[entry] = DISCOVERED;
        w.stack.push(entry);
        while let Some(&t) = w.stack.last() {
            if let Step::Done = w.visit(t)? {
                w.state[t] = EXPLORED;
                w.stack.pop();
            }
        }
    }
    let mut i = 0;
    while i < n {
        if w.state[i] != EXPLORED {
            return Err(err(i, format!("unreachable insn {i}")));
        }
        if insns[i].is_ld_imm64() {
            if i + 1 < n && w.state[i + 1] != 0 {
                return Err(err(i, format!("jump into the middle of ldimm64 insn {i}")));
            }
            i += 1;
        }
        i += 1;
    }
    let live_regs_before = compute_live_regs(insns, calls);
    let scc = crate::scc::compute_scc(insns);
    Ok(Cfg {
        scc,
        subprogs,
        marks: w.marks,
        live_regs_before,
    })
}

/// Registers an instruction reads (`use`) and writes (`def`), as bit sets.
/// A helper or kfunc call reads only its arguments (`calls` gives their count).
fn use_def(ins: &Insn, calls: &dyn Fn(&Insn) -> CallSummary) -> (u16, u16) {
    let d = 1u16 << (ins.dst & 0xf);
    let s = 1u16 << (ins.src & 0xf);
    let code = ins.code;
    match class(code) {
        BPF_ALU | BPF_ALU64 => {
            let o = op(code);
            if o == BPF_MOV {
                if source(code) == BPF_X {
                    (s, d)
                } else {
                    (0, d)
                }
            } else if o == BPF_NEG || o == BPF_END {
                (d, d)
            } else if source(code) == BPF_X {
                (d | s, d)
            } else {
                (d, d)
            }
        }
        BPF_LDX => (s, d),
        BPF_ST => (d, 0),
        BPF_STX => {
            if mode(code) == BPF_ATOMIC {
                if ins.imm == BPF_CMPXCHG {
                    (d | s | 1, 1)
                } else if ins.imm == BPF_LOAD_ACQ {
                    (s, d)
                } else if ins.imm & BPF_FETCH != 0 {
                    (d | s, s)
                } else {
                    (d | s, 0)
                }
            } else {
                (d | s, 0)
            }
        }
        BPF_LD => {
            if mode(code) == BPF_IMM {
                (0, d)
            } else {
                // compute_live_registers keeps its defaults for LD_ABS/IND:
                // every register read, none written.
                (0xffff, 0)
            }
        }
        BPF_JMP | BPF_JMP32 => match op(code) {
            BPF_EXIT => (1, 0),
            BPF_CALL if ins.src == 0 || ins.src == BPF_PSEUDO_KFUNC_CALL => {
                let n = calls(ins).args.min(5);
                (((1u16 << (n + 1)) - 1) & !1, 0x3f)
            }
            BPF_CALL => (0x3e, 0x3f),
            BPF_JA => (0, 0),
            BPF_JCOND => (0, 0),
            _ => {
                if source(code) == BPF_X {
                    (d | s, 0)
                } else {
                    (d, 0)
                }
            }
        },
        _ => (0, 0),
    }
}

pub fn successors(insns: &[Insn], t: usize, out: &mut [usize; 2]) -> usize {
    let ins = insns[t];
    let cls = ins.class();
    let n = insns.len();
    let mut k = 0;
    let mut add = |w: i64, k: &mut usize| {
        if w >= 0 && (w as usize) < n {
            out[*k] = w as usize;
            *k += 1;
        }
    };
    if cls != BPF_JMP && cls != BPF_JMP32 {
        add((t + if ins.is_ld_imm64() { 2 } else { 1 }) as i64, &mut k);
        return k;
    }
    match op(ins.code) {
        BPF_EXIT => {}
        BPF_CALL => add(t as i64 + 1, &mut k),
        BPF_JA => {
            let off = if cls == BPF_JMP {
                ins.off
            } else {
                ins.imm as i16
            } as i64;
            let off = if cls == BPF_JMP32 {
                ins.imm as i64
            } else {
                off
            };
            add(t as i64 + off + 1, &mut k)
        }
        _ => {
            add(t as i64 + 1, &mut k);
            add(t as i64 + ins.off as i64 + 1, &mut k);
        }
    }
    k
}

/// Backward dataflow to a fixed point: which registers may be read before
/// being written from each instruction on (compute_live_registers).
fn compute_live_regs(insns: &[Insn], calls: &dyn Fn(&Insn) -> CallSummary) -> Vec<u16> {
    let n = insns.len();
    let mut live_in = vec![0u16; n];
    let ud: Vec<(u16, u16)> = insns.iter().map(|i| use_def(i, calls)).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for t in (0..n).rev() {
            let mut succ = [0usize; 2];
            let k = successors(insns, t, &mut succ);
            let mut out = 0u16;
            for &s in &succ[..k] {
                out |= live_in[s];
            }
            let (u, d) = ud[t];
            let new = u | (out & !d);
            if new != live_in[t] {
                live_in[t] = new;
                changed = true;
            }
        }
    }
    live_in
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analyze_all(insns: &[Insn]) -> Result<Cfg, VerifyError> {
        analyze(
            insns,
            &|_| CallSummary {
                args: 5,
                iter_next: false,
                might_sleep: false,
                changes_pkt_data: false,
            },
            None,
            true,
        )
    }

    fn mov(d: u8, imm: i32) -> Insn {
        Insn::new(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, imm)
    }
    fn exit() -> Insn {
        Insn::new(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
    }

    #[test]
    fn unreachable_and_out_of_range() {
        let e = analyze_all(&[mov(0, 0), exit(), mov(0, 1), exit()]).unwrap_err();
        assert_eq!(e.msg, "unreachable insn 2");
        let ja = Insn::new(BPF_JMP | BPF_JA, 0, 0, 5, 0);
        let e = analyze_all(&[ja, exit()]).unwrap_err();
        assert_eq!(e.msg, "jump out of range from insn 0 to 6");
        let e = analyze_all(&[mov(0, 0)]).unwrap_err();
        assert_eq!(e.msg, "last insn is not an exit or jmp");
    }

    #[test]
    fn conditional_jump_marks_itself_and_target() {
        let jeq = Insn::new(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1, 0);
        let c = analyze_all(&[mov(0, 0), jeq, mov(0, 1), exit()]).unwrap();
        assert!(c.is(1, mark::PRUNE_POINT));
        assert!(c.is(3, mark::PRUNE_POINT));
        assert!(!c.is(2, mark::PRUNE_POINT));
        // r1 is read at insn 1; r0 reaches the exit on the taken edge.
        assert_eq!(c.live_regs_before[1], 0b11);
        assert_eq!(c.live_regs_before[2], 0);
        assert_eq!(c.live_regs_before[3], 0b1);
    }

    #[test]
    fn ld_abs_keeps_every_register_live() {
        // 6.18 gives LD_ABS/IND no use/def of their own: every register is
        // live before one (r9 too, never used), none is written by it.
        let ld_abs = Insn::new(BPF_LD | BPF_ABS | BPF_W, 0, 0, 0, 12);
        let c = analyze_all(&[mov(7, 1), ld_abs, exit()]).unwrap();
        assert_eq!(c.live_regs_before[1], 0xffff);
        assert_eq!(c.live_regs_before[0] & (1 << 9), 1 << 9);
        assert_eq!(c.live_regs_before[0] & (1 << 7), 0);
    }
}
