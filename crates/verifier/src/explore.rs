//! The exploration loop (the kernel's do_check): one path at a time, depth
//! first, with the pending-branch stack, checkpoints at prune points, and
//! the limits.

use crate::cfg::{mark, Cfg};
use crate::error::{VResult, VerifyError};
use crate::log::Log;
use crate::pool::{Pool, NIL};
use crate::prune::IdMap;
use crate::regs::{Reg, RegType};
use crate::state::{HistEntry, State};
use crate::{Limit, Options, Stats};
use bpfvet_isa::opcode::*;
use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;
use bpfvet_object::{Object, Program};
use std::time::Instant;

/// The kernel's BPF_COMPLEXITY_LIMIT_JMP_SEQ.
pub const MAX_PENDING: usize = 8192;

/// Flag in a register's map field: the inner map of a map-in-map.
pub const INNER_MAP: u32 = 1 << 31;

/// How an instruction left the current path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Go on with the next instruction.
    Next,
    /// `insn_idx` was set (a jump, call or return).
    Moved,
    /// The path ended (exit, or an exception thrown).
    PathEnd,
}

pub struct Pending {
    pub st: State,
    pub insn_idx: usize,
    pub prev_insn_idx: i64,
    pub log_pos: usize,
}

/// Facts about one instruction gathered across paths.
#[derive(Clone, Copy, Default)]
pub struct InsnAux {
    /// Pointer type and flags a load/store dereferenced first (mixing is
    /// an error).
    pub ptr_type: Option<(RegType, u16)>,
    /// Every pointer kind the access dereferenced, over all paths.
    pub accesses: crate::AccessKinds,
    pub seen: bool,
    /// Spectre v1: a speculative path failed here; speculative paths stop
    /// before it (a barrier is patched in).
    pub nospec: bool,
    /// Spectre v4: the instruction's result (a stack write) is followed
    /// by a barrier; speculative paths stop after it.
    pub nospec_result: bool,
}

/// Facts about one helper call site gathered across paths. Few
/// instructions are such calls, so these live apart from `InsnAux`
/// (`Env::call_sites`), which every instruction pays for.
#[derive(Clone, Copy, Default)]
pub struct CallSiteAux {
    /// At a bpf_loop call: whether the kernel will inline it.
    pub loop_inline: Option<crate::rewrite_stack::LoopInline>,
    /// At a bpf_tail_call: the map and key every path used.
    pub tail_call: TailCallSite,
    /// At a bpf_tail_call: the prog arrays its paths passed.
    pub tail_call_map: MapPtrState,
}

/// The kernel's map_ptr_state of a call site: the last map a path passed,
/// whether paths passed different maps (poisoned) and whether any of them
/// was created without the Spectre v1 bypass (unpriv).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct MapPtrState {
    pub map: Option<u32>,
    pub poisoned: bool,
    pub unpriv: bool,
}

impl MapPtrState {
    /// record_func_map: a path reaches the call with `map`.
    pub fn record(&mut self, map: u32, unpriv: bool) {
        match self.map {
            Some(seen) if seen == map => return,
            Some(_) => self.poisoned = true,
            None => {}
        }
        self.map = Some(map);
        self.unpriv |= unpriv;
    }
}

/// The map and key of a bpf_tail_call over all paths (the kernel's
/// map_ptr_state and map_key_state): one prog array and one constant
/// in-range key give the JIT a direct jump (a poke descriptor).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum TailCallSite {
    #[default]
    Unseen,
    /// `key` is below the map's max_entries (a u32).
    Direct {
        map: u32,
        key: u32,
    },
    Indirect,
}

pub struct Env<'a> {
    pub obj: &'a Object,
    pub prog: &'a Program,
    pub insns: &'a [Insn],
    pub prog_type: ProgType,
    pub opts: &'a Options,
    /// The capability switches of `opts.privileges`.
    pub caps: crate::Caps,
    pub cfg: Cfg,
    pub log: Log,
    pub stats: Stats,
    pub pool: Pool,
    /// Explored-state buckets, as the kernel hashes them: (insn ^ callsite) % len.
    pub buckets: Vec<u32>,
    pub pending: Vec<Pending>,
    pub cur: State,
    pub insn_idx: usize,
    pub prev_insn_idx: i64,
    pub insn_processed: u64,
    pub prev_insn_processed: u64,
    pub jmps_processed: u64,
    pub prev_jmps_processed: u64,
    pub id_gen: u32,
    pub idmap: IdMap,
    pub aux: Vec<InsnAux>,
    /// Helper call sites' facts, by instruction (bpf_loop, bpf_tail_call).
    pub call_sites: std::collections::HashMap<usize, CallSiteAux>,
    /// Spectre v1 masking of ALU instructions with a register operand, by
    /// instruction: the kind of operation (`crate::check_alu::alu_state`)
    /// and its limit, which must agree across paths. Few instructions have
    /// one, so it is kept apart from `aux`.
    pub alu_sanitation: std::collections::HashMap<usize, (u8, u32)>,
    /// Recent scalar ALU results.
    pub alu_memo: crate::scalar::AluMemo,
    /// Deepest stack use seen per subprogram, in bytes.
    pub subprog_stack: Vec<u32>,
    pub explored_count: u64,
    pub explored_bytes: u64,
    pub started: Instant,
    /// Set when the current instruction touched a stack slot whose
    /// provenance precision backtracking must follow.
    pub hist_stack_flag: u16,
    /// Global subprograms reached by a call, and those already verified.
    pub called_global: Vec<bool>,
    pub stack_live: crate::liveness::StackLiveness,
    pub verified_global: Vec<bool>,
    /// Subprograms run as async callbacks (timers): roots of their own
    /// call chains in the combined stack check.
    pub async_cb: Vec<bool>,
    /// The program references an arena map (its addr_space_cast target).
    pub arena: bool,
    /// For a struct_ops program: the member it implements.
    pub struct_ops: Option<crate::struct_ops::StructOpsTarget>,
    /// The references a struct_ops program holds from entry, one per
    /// `__ref` argument: (argument, reference id). Global subprograms see
    /// the same ids, which their own states never hold.
    pub ctx_arg_refs: Vec<(u32, u32)>,
    /// Open loop visits and their backedges (scc.rs).
    pub scc: crate::scc::SccVisits,
    /// Registers and slots marked precise in checkpoints so far; a change
    /// tells propagation over backedges to go another round.
    pub precise_marks: u64,
    /// Per instruction, the registers whose tracking makes a precision walk
    /// stop there (see precision::walk_masks); built at the first walk.
    pub walk_masks: Vec<u16>,
    /// Subprograms entered as callbacks of helpers or timers.
    pub is_cb: Vec<bool>,
    /// The exception callback the program names, if any.
    pub exception_cb: Option<usize>,
    /// Set while a kfunc's pointer argument is checked as memory. The
    /// kernel gives arguments naming a list head, rb root, node or lock
    /// kinds of their own, which bpfvet checks as memory: the value's
    /// special fields are not held against them.
    pub in_kfunc_mem_arg: bool,
    /// Special fields of each map's value and of its inner map template.
    pub map_fields: Vec<[Vec<crate::map_record::Field>; 2]>,
    /// Cost collection for `bpfvet explain`; None in ordinary runs.
    pub explain: Option<Box<crate::explain::Collector>>,
    /// Records of the program's structs as allocated objects, by type id,
    /// as they are asked for (graph.rs).
    pub alloc_records: std::cell::RefCell<
        std::collections::HashMap<u32, Result<Vec<crate::map_record::Field>, ()>>,
    >,
    /// Whether every struct of the program's BTF has a well-formed record
    /// (Err: the first that has not), computed at the first bpf_obj_new.
    pub btf_metas_ok: std::cell::OnceCell<Result<(), String>>,
}

impl<'a> Env<'a> {
    pub fn new(obj: &'a Object, prog: &'a Program, opts: &'a Options, cfg: Cfg) -> Env<'a> {
        let n = prog.insns.len();
        let nsub = cfg.subprogs.len();
        let exception_cb = crate::exception::exception_callback_insn(obj.btf.as_ref(), prog)
            .ok()
            .flatten()
            .and_then(|i| cfg.subprog_at(i));
        Env {
            obj,
            prog,
            insns: &prog.insns,
            prog_type: prog.prog_type,
            opts,
            caps: crate::Caps::of(opts.privileges),
            cfg,
            log: {
                let mut log = Log::new(opts.log_level);
                if opts.log_level > 0 {
                    log.maps = crate::log_state::map_infos(obj);
                }
                log
            },
            stats: Stats::default(),
            pool: Pool::new(opts.baselines.state_nodes_plain_alloc),
            buckets: vec![NIL; n.max(1)],
            pending: Vec::new(),
            cur: State::new(),
            insn_idx: 0,
            prev_insn_idx: -1,
            insn_processed: 0,
            prev_insn_processed: 0,
            jmps_processed: 0,
            prev_jmps_processed: 0,
            id_gen: 0,
            idmap: {
                let mut m = IdMap::new(opts.baselines.idmap_memset);
                m.uninit_stack_readable = crate::Caps::of(opts.privileges).allow_uninit_stack;
                m
            },
            aux: vec![InsnAux::default(); n],
            call_sites: std::collections::HashMap::new(),
            alu_sanitation: std::collections::HashMap::new(),
            alu_memo: crate::scalar::AluMemo::new(!opts.baselines.sync_no_memo, n),
            subprog_stack: vec![0; nsub],
            explored_count: 0,
            explored_bytes: 0,
            started: Instant::now(),
            hist_stack_flag: 0,
            called_global: vec![false; nsub],
            stack_live: Default::default(),
            verified_global: vec![false; nsub],
            async_cb: vec![false; nsub],
            arena: crate::map_refs::arena_map(obj, prog).is_some(),
            struct_ops: crate::struct_ops::check_target(obj, prog).ok().flatten(),
            ctx_arg_refs: Vec::new(),
            scc: Default::default(),
            precise_marks: 0,
            walk_masks: Vec::new(),
            is_cb: vec![false; nsub],
            in_kfunc_mem_arg: false,
            exception_cb,
            map_fields: obj
                .maps
                .iter()
                .map(|m| {
                    let btf = obj.btf.as_ref();
                    [
                        crate::map_record::map_fields(btf, m),
                        m.inner
                            .as_deref()
                            .map_or_else(Vec::new, |i| crate::map_record::map_fields(btf, i)),
                    ]
                })
                .collect(),
            explain: None,
            alloc_records: Default::default(),
            btf_metas_ok: Default::default(),
        }
    }

    pub fn err<T>(&self, msg: impl Into<String>) -> VResult<T> {
        Err(VerifyError::new(Some(self.insn_idx), msg.into()))
    }

    /// Stops verification with a refusal: the program needs `what`, which
    /// bpfvet does not model.
    pub fn unsupported<T>(&self, what: impl Into<String>) -> VResult<T> {
        Err(VerifyError::unsupported(Some(self.insn_idx), what.into()))
    }

    /// The map a register's `map` field names: an index into the object's
    /// maps, or with [`INNER_MAP`] set the inner template of that map.
    pub fn map_def(&self, m: u32) -> Option<&'a bpfvet_object::MapDef> {
        let obj: &'a Object = self.obj;
        if m & INNER_MAP != 0 {
            obj.maps.get((m & !INNER_MAP) as usize)?.inner.as_deref()
        } else {
            obj.maps.get(m as usize)
        }
    }

    /// Whether map `m` bypasses Spectre v1 (map->bypass_spec_v1): the
    /// loader creates the object's maps with its own privileges on the
    /// same kernel (CAP_PERFMON or mitigations off), and only
    /// array_map_alloc's maps record it.
    pub fn map_bypasses_spec_v1(&self, m: u32) -> bool {
        self.map_def(m)
            .is_some_and(|d| d.map_type.records_creator_spec_v1_bypass())
            && self.caps.bypass_spec_v1
    }

    /// The special fields of the value of `map_def(m)`.
    pub fn map_fields(&self, m: u32) -> &'_ [crate::map_record::Field] {
        crate::map_record::fields_of(&self.map_fields, m)
    }

    /// What a register holding an invalidated pointer becomes
    /// (mark_reg_invalid): an unknown scalar for a loader with
    /// CAP_PERFMON, unreadable for the others.
    pub fn invalid_reg(&self) -> Reg {
        if self.caps.allow_ptr_leaks {
            Reg::unknown_scalar()
        } else {
            Reg::not_init()
        }
    }

    pub fn new_id(&mut self) -> u32 {
        self.id_gen += 1;
        self.id_gen
    }

    /// Sets up the entry state: r1 = ctx, r10 = fp.
    pub fn init_main_state(&mut self) {
        let mut st = State::new();
        let mut ctx = Reg::pointer(RegType::Ctx);
        ctx.v = crate::scalar::Scalar::constant(0);
        st.frames[0].regs[1] = ctx;
        st.in_sleepable = self.prog.sleepable;
        self.cur = st;
        // The `__ref` arguments' references, taken before the first
        // instruction (alloc_insn=0).
        let refcounted = self.struct_ops.map_or(0, |so| so.tags.refcounted);
        for arg in (0..32).filter(|a| refcounted & (1 << a) != 0) {
            let id = self.new_id();
            self.cur.refs.push(crate::state::RefState {
                kind: crate::state::RefKind::Ptr,
                id,
                insn_idx: 0,
                lock_ptr: 0,
            });
            self.ctx_arg_refs.push((arg, id));
        }
    }

    /// How the log marks the start of a speculative path.
    fn speculative_note(&self) -> &'static str {
        if self.cur.speculative {
            " (speculative execution)"
        } else {
            ""
        }
    }

    /// Queues a path the kernel explores only as speculative execution
    /// (sanitize_speculative_path): a copy of the current state resuming at
    /// `insn_idx`, which may be pruned by non-speculative states but never
    /// prunes them.
    pub fn push_speculative(
        &mut self,
        insn_idx: usize,
        prev_insn_idx: usize,
    ) -> VResult<&mut State> {
        let st = self.push_stack(insn_idx, prev_insn_idx)?;
        st.speculative = true;
        Ok(st)
    }

    /// Queues the other side of a branch: a copy of the current state
    /// resuming at `insn_idx`.
    pub fn push_stack(&mut self, insn_idx: usize, prev_insn_idx: usize) -> VResult<&mut State> {
        let st = self.pool.copy_state(&self.cur);
        if let Some(p) = st.parent {
            self.pool.get_mut(p).state.branches += 1;
        }
        self.pending.push(Pending {
            st,
            insn_idx,
            prev_insn_idx: prev_insn_idx as i64,
            log_pos: self.log.len(),
        });
        if self.pending.len() > MAX_PENDING {
            let msg = format!(
                "The sequence of {} jumps is too complex.",
                self.pending.len()
            );
            self.log.line(&msg);
            return Err(VerifyError::limit(
                Some(self.insn_idx),
                Limit::JumpSequence,
                msg,
            ));
        }
        self.track_memory()?;
        Ok(&mut self.pending.last_mut().expect("just pushed").st)
    }

    /// A path finished (exit or pruned): the checkpoints it continued from
    /// have one branch less; fully explored ones may be freed.
    pub fn update_branch_counts(&mut self, mut parent: Option<u32>) -> VResult<()> {
        while let Some(p) = parent {
            let node = self.pool.get_mut(p);
            node.state.branches -= 1;
            if node.state.branches != 0 {
                break;
            }
            let next = node.state.parent;
            self.maybe_exit_scc(p)?;
            // A loop visit with backedges still needs the states they
            // point into.
            if self.pool.get(p).evicted && !self.incomplete_marks(p) {
                // Evicted and no path continues from it any more.
                let bytes = self.pool.get(p).state.bytes() as u64;
                self.explored_bytes = self.explored_bytes.saturating_sub(bytes);
                self.pool.release(p);
            }
            parent = next;
        }
        Ok(())
    }

    fn pop_stack(&mut self) -> bool {
        match self.pending.pop() {
            Some(p) => {
                if self.opts.log_level < 2 {
                    self.log.truncate(p.log_pos);
                }
                let mut done = std::mem::replace(&mut self.cur, p.st);
                // The popped state's history was copied at its exact length
                // and would be reallocated at its next jump; the finished
                // path's buffer has grown to a path's length already.
                if done.jmp_history.capacity() > self.cur.jmp_history.capacity() {
                    std::mem::swap(&mut done.jmp_history, &mut self.cur.jmp_history);
                    self.cur.jmp_history.clear();
                    self.cur.jmp_history.extend_from_slice(&done.jmp_history);
                }
                self.pool.recycle(done);
                self.insn_idx = p.insn_idx;
                self.prev_insn_idx = p.prev_insn_idx;
                true
            }
            None => false,
        }
    }

    pub fn track_memory(&mut self) -> VResult<()> {
        let bytes = self.explored_bytes
            + self
                .pending
                .last()
                .map_or(0, |p| (p.st.bytes() * self.pending.len()) as u64);
        if bytes > self.stats.peak_state_bytes {
            self.stats.peak_state_bytes = bytes;
        }
        if let Some(max) = self.opts.max_memory {
            if bytes as usize > max {
                return Err(VerifyError::limit(
                    Some(self.insn_idx),
                    Limit::Memory,
                    format!("verifier state memory exceeds the limit of {max} bytes"),
                ));
            }
        }
        Ok(())
    }

    pub fn push_history(&mut self, stack: u16, linked: u64) {
        self.push_history_entry(stack, linked, 0);
    }

    /// A history entry with every kind of flag (push_jmp_history): flags
    /// of one instruction go into one entry.
    pub fn push_history_entry(&mut self, stack: u16, linked: u64, jmp_stack: u8) {
        let idx = self.insn_idx as u32;
        let prev = self.prev_insn_idx as u32;
        if let Some(last) = self.cur.jmp_history.last_mut() {
            if last.idx == idx && (stack != 0 || linked != 0 || jmp_stack != 0) {
                last.stack |= stack;
                last.jmp_stack |= jmp_stack;
                if linked != 0 {
                    last.linked = linked;
                }
                return;
            }
        }
        self.cur.jmp_history.push(HistEntry {
            idx,
            prev_idx: prev,
            stack,
            linked,
            jmp_stack,
        });
    }

    /// Runs the main loop until every path is explored or one fails.
    pub fn do_check(&mut self) -> VResult<()> {
        let mut do_print_state = false;
        let mut prev_insn_idx: i64 = -1;
        self.live_chain_changed();
        loop {
            self.prev_insn_idx = prev_insn_idx;
            self.hist_stack_flag = 0;
            if self.insn_idx >= self.insns.len() {
                return self.err(format!(
                    "invalid insn idx {} insn_cnt {}",
                    self.insn_idx,
                    self.insns.len()
                ));
            }
            self.insn_processed += 1;
            if let Some(c) = self.explain.as_deref_mut() {
                c.processed(self.insn_idx);
            }
            if self.insn_processed > self.opts.max_processed_insns {
                let msg = format!(
                    "BPF program is too large. Processed {} insn",
                    self.insn_processed
                );
                self.log.line(&msg);
                return Err(VerifyError::limit(
                    Some(self.insn_idx),
                    Limit::ProcessedInsns,
                    msg,
                ));
            }
            if self.insn_processed & 0xfff == 0 {
                if let Some(t) = self.opts.timeout {
                    if self.started.elapsed() > t {
                        return Err(VerifyError::limit(
                            Some(self.insn_idx),
                            Limit::Timeout,
                            format!("verification timed out after {} ms", t.as_millis()),
                        ));
                    }
                }
            }
            self.cur.last_insn_idx = self.prev_insn_idx as usize;
            let idx = self.insn_idx;
            if self.cfg.is(idx, mark::PRUNE_POINT) && self.is_state_visited(idx)? {
                if self.log.level >= 1 {
                    if do_print_state {
                        let spec = self.speculative_note();
                        self.log.line(&format!(
                            "\nfrom {} to {}{spec}: safe",
                            self.prev_insn_idx, idx
                        ));
                    } else {
                        self.log.line(&format!("{idx}: safe"));
                    }
                    self.log.scratch_all();
                }
                if !self.finish_path()? {
                    return Ok(());
                }
                prev_insn_idx = self.prev_insn_idx;
                do_print_state = true;
                continue;
            }
            if self.cfg.is(idx, mark::JMP_POINT) {
                self.push_history(0, 0);
            }
            if self.log.level >= 2 && do_print_state {
                let spec = self.speculative_note();
                self.log
                    .append(&format!("\nfrom {} to {}{spec}:", self.prev_insn_idx, idx));
                self.log.full_state(&self.cur, self.cur.curframe());
                do_print_state = false;
            }
            if self.log.level >= 1 {
                self.log.insn(self.prog, self.insns, &self.cur, idx);
            }
            // Speculative paths leave unreachable code to dead-code
            // sanitation (sanitize_mark_insn_seen).
            if !self.cur.speculative {
                self.aux[idx].seen = true;
            }
            prev_insn_idx = idx as i64;
            let insn = self.insns[idx];
            // A speculative path stops before an instruction that failed
            // on another speculative path (it got a barrier).
            let step = if self.cur.speculative && self.aux[idx].nospec {
                Ok(Step::PathEnd)
            } else {
                self.live_begin_insn();
                self.do_check_insn(insn, &mut do_print_state)
            };
            let step = match step {
                Ok(Step::Next) => {
                    self.live_end_insn();
                    // Wrapping: a hidden exit may have stepped back from index 0.
                    self.insn_idx = self.insn_idx.wrapping_add(1);
                    Step::Next
                }
                Ok(s) => s,
                // error_recoverable_with_nospec: on a speculative path the
                // instruction gets a barrier and the path ends.
                Err(e) if self.cur.speculative && e.recoverable_with_nospec() => {
                    // Logged as a final error would be; popping the path
                    // takes it back out at level 1.
                    self.log.lines_before_error();
                    self.log.line(&e.msg);
                    self.log.error_details();
                    self.live_end_insn();
                    self.aux[idx].nospec = true;
                    self.alu_sanitation.remove(&idx);
                    Step::PathEnd
                }
                Err(e) => return Err(e),
            };
            // Spectre v4: a speculative path stops after a sanitized store.
            if step == Step::PathEnd || (self.cur.speculative && self.aux[idx].nospec_result) {
                if !self.finish_path()? {
                    return Ok(());
                }
                prev_insn_idx = self.prev_insn_idx;
                do_print_state = true;
            }
        }
    }

    /// One instruction (the kernel's do_check_insn). Inlined into the
    /// main loop, as it was before it was split out: called for every
    /// processed instruction, its call and result cost ~5% on ALU-heavy
    /// programs.
    #[inline(always)]
    fn do_check_insn(&mut self, insn: Insn, do_print_state: &mut bool) -> VResult<Step> {
        let idx = self.insn_idx;
        match insn.class() {
            BPF_ALU | BPF_ALU64 => self.check_alu(&insn)?,
            BPF_LDX => self.check_ldx(&insn)?,
            BPF_STX => {
                if mode(insn.code) == BPF_ATOMIC {
                    self.check_atomic(&insn)?;
                } else {
                    if mode(insn.code) != BPF_MEM || insn.imm != 0 {
                        return self.err("BPF_STX uses reserved fields");
                    }
                    self.check_stx(&insn)?;
                }
            }
            BPF_ST => {
                if mode(insn.code) != BPF_MEM || insn.src != 0 {
                    return self.err("BPF_ST uses reserved fields");
                }
                self.check_st(&insn)?;
            }
            BPF_JMP | BPF_JMP32 => {
                self.jmps_processed += 1;
                let o = op(insn.code);
                let cls = insn.class();
                if o == BPF_CALL {
                    if source(insn.code) != BPF_K
                        || (insn.src != BPF_PSEUDO_KFUNC_CALL && insn.off != 0)
                        || (insn.src != 0
                            && insn.src != BPF_PSEUDO_CALL
                            && insn.src != BPF_PSEUDO_KFUNC_CALL)
                        || insn.dst != 0
                        || cls == BPF_JMP32
                    {
                        return self.err("BPF_CALL uses reserved fields");
                    }
                    if self.cur.active_locks > 0 {
                        self.check_call_under_lock(&insn)?;
                    }
                    if insn.src == BPF_PSEUDO_CALL {
                        let depth = self.cur.frames.len();
                        self.check_func_call(&insn)?;
                        self.live_end_insn();
                        if self.log.level >= 1 && self.cur.frames.len() > depth {
                            self.log.call_dump(&self.cur);
                        }
                        return Ok(Step::Moved);
                    } else if insn.src == BPF_PSEUDO_KFUNC_CALL {
                        let throw = crate::exception::is_bpf_throw(&insn);
                        self.check_kfunc_call(&insn)?;
                        if throw {
                            // The program unwinds: this path ends here,
                            // holding nothing.
                            self.check_resource_leak_at("bpf_throw", true, true)?;
                            self.check_exit_inside_loop()?;
                            self.live_end_insn();
                            return Ok(Step::PathEnd);
                        }
                    } else {
                        if let Some(next) = self.check_helper_call(&insn)? {
                            // A callback frame was entered.
                            self.insn_idx = next;
                            *do_print_state = self.log.level >= 2;
                            return Ok(Step::Moved);
                        }
                    }
                } else if o == BPF_JA {
                    if source(insn.code) != BPF_K
                        || insn.src != 0
                        || insn.dst != 0
                        || (cls == BPF_JMP && insn.imm != 0)
                        || (cls == BPF_JMP32 && insn.off != 0)
                    {
                        return self.err("BPF_JA uses reserved fields");
                    }
                    let off = if cls == BPF_JMP {
                        insn.off as i64
                    } else {
                        insn.imm as i64
                    };
                    self.insn_idx = (idx as i64 + off + 1) as usize;
                    self.live_end_insn();
                    return Ok(Step::Moved);
                } else if o == BPF_EXIT {
                    if source(insn.code) != BPF_K
                        || insn.imm != 0
                        || insn.src != 0
                        || insn.dst != 0
                        || cls == BPF_JMP32
                    {
                        return self.err("BPF_EXIT uses reserved fields");
                    }
                    self.check_exit_locks()?;
                    if self.cur.curframe() > 0 {
                        self.update_live_stack();
                        let callee = (self.log.level >= 1).then(|| self.cur.clone());
                        self.prepare_func_exit()?;
                        if let Some(callee) = callee {
                            self.log.return_dump(&callee, &self.cur, self.insn_idx);
                        }
                        *do_print_state = true;
                        return Ok(Step::Moved);
                    }
                    self.check_return_code(0)?;
                    self.live_end_insn();
                    return Ok(Step::PathEnd);
                } else {
                    self.check_cond_jmp(&insn)?;
                    if self.log.level >= 1 {
                        self.log.insn_state(&self.cur, idx);
                    }
                }
            }
            BPF_LD => {
                let m = mode(insn.code);
                if m == BPF_ABS || m == BPF_IND {
                    self.check_ld_abs(&insn)?;
                } else if m == BPF_IMM {
                    self.check_ld_imm(&insn)?;
                    self.insn_idx += 1;
                } else {
                    return self.err("invalid BPF_LD mode");
                }
            }
            _ => {
                return self.err(format!("unknown insn class {}", insn.class()));
            }
        }
        Ok(Step::Next)
    }

    /// Ends the current path and continues with the next pending one.
    /// Returns false when none is left.
    fn finish_path(&mut self) -> VResult<bool> {
        self.log.scratch_all();
        let parent = self.cur.parent;
        self.update_branch_counts(parent)?;
        self.update_live_stack();
        Ok(self.pop_stack())
    }

    /// While a bpf_spin_lock is held only bpf_spin_unlock, bpf-to-bpf
    /// calls (global ones are refused at the call) and the kfuncs of
    /// SPIN_LOCK_ALLOWED and the list and rbtree kfuncs may be called.
    fn check_call_under_lock(&self, insn: &Insn) -> VResult<()> {
        use crate::helpers::kfuncs::{is_graph_kfunc, SPIN_LOCK_ALLOWED, SPIN_LOCK_UNCERTAIN};
        let allowed = match insn.src {
            0 => insn.imm as u32 == crate::helpers::ids::id::SPIN_LOCK + 1,
            BPF_PSEUDO_KFUNC_CALL => {
                let name = crate::btf_walk::vmlinux()
                    .filter(|_| insn.off == 0)
                    .map(|b| b.name_of(insn.imm as u32))
                    .unwrap_or("");
                if SPIN_LOCK_UNCERTAIN.contains(&name) {
                    return Err(VerifyError::unsupported(
                        Some(self.insn_idx),
                        format!("whether {name} may be called while holding a bpf_spin_lock"),
                    ));
                }
                SPIN_LOCK_ALLOWED.contains(&name) || is_graph_kfunc(name)
            }
            _ => true,
        };
        if allowed {
            return Ok(());
        }
        self.err("function calls are not allowed while holding a lock")
    }

    pub fn check_exit_locks(&mut self) -> VResult<()> {
        let main = self.cur.curframe() == 0;
        self.check_resource_leak("BPF_EXIT instruction in main prog", main)
    }

    /// 6.18's check_resource_leak: an instruction that may leave the
    /// program (exit, LD_ABS/IND) must not hold a lock (when `check_lock`),
    /// references, nor an RCU or preemption region; each error names `what`.
    pub fn check_resource_leak(&mut self, what: &str, check_lock: bool) -> VResult<()> {
        self.check_resource_leak_at(what, check_lock, false)
    }

    /// check_resource_leak; an exception exit (bpf_throw) leaves every
    /// frame, so every frame's references count.
    pub fn check_resource_leak_at(
        &mut self,
        what: &str,
        check_lock: bool,
        exception_exit: bool,
    ) -> VResult<()> {
        if self.cur.active_locks > 0 && check_lock {
            return self.err(format!(
                "{what} cannot be used inside bpf_spin_lock-ed region"
            ));
        }
        self.check_reference_leak(what, exception_exit)?;
        if self.cur.active_irq_id != 0 && check_lock {
            return self.err(format!(
                "{what} cannot be used inside bpf_local_irq_save-ed region"
            ));
        }
        if self.cur.active_rcu_lock && check_lock {
            return self.err(format!(
                "{what} cannot be used inside bpf_rcu_read_lock-ed region"
            ));
        }
        if self.cur.active_preempt_locks > 0 && check_lock {
            return self.err(format!(
                "{what} cannot be used inside bpf_preempt_disable-ed region"
            ));
        }
        Ok(())
    }

    /// check_reference_leak: references still held where the program would
    /// end (a subprogram's exit hands them back to its caller, an exception
    /// exit does not); every one held is logged.
    pub fn check_reference_leak(&mut self, what: &str, exception_exit: bool) -> VResult<()> {
        if self.cur.curframe() > 0 && !exception_exit {
            return Ok(());
        }
        // A struct_ops program may hand the reference in r0 back to the
        // kernel (check_return_code judges its type later).
        let returned = if self.prog_type == ProgType::STRUCT_OPS && !exception_exit {
            self.cur.reg(0).ref_obj_id
        } else {
            0
        };
        let held: Vec<String> = self
            .cur
            .refs
            .iter()
            .filter(|r| r.kind == crate::state::RefKind::Ptr)
            .filter(|r| returned == 0 || r.id != returned)
            .map(|r| format!("Unreleased reference id={} alloc_insn={}", r.id, r.insn_idx))
            .collect();
        if held.is_empty() {
            return Ok(());
        }
        for line in &held {
            self.log.line(line);
        }
        self.err(format!("{what} would lead to reference leak"))
    }
}
