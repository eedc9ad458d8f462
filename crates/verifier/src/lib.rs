//! The bpfvet verifier (issue 4): a user-space re-implementation of the
//! Linux 6.18 BPF verifier's method — path-sensitive exploration with state
//! pruning, precision tracking and liveness — giving the kernel's verdict,
//! error text and statistics.

mod btf_walk;
mod cfg;
mod check_alu;
mod check_call;
mod check_jmp;
mod check_mem;
mod checkpoint;
pub mod ctx;
mod ctx_glue;
mod dynptr;
mod error;
mod explore;
mod global_func;
pub mod helpers;
mod iter;
mod kfunc;
mod kptr;
mod linked_regs;
mod liveness;
mod log;
mod log_state;
mod pool;
mod precision;
mod prune;
mod regs;
mod rewrite_stack;
pub mod scalar;
mod scc;
mod state;
mod stats;
pub mod tnum;

pub use stats::Stats;

use std::time::Duration;

/// Run-time switches that restore the baseline of each seed mechanism
/// (SEEDS.md §1a-1c) so their effect can be measured A/B.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Baselines {
    /// §1a: clear the whole id map on every comparison (memset) instead of
    /// resetting its count.
    pub idmap_memset: bool,
    /// §1b: start every precision walk even when all requested registers and
    /// slots are already precise.
    pub backtrack_no_skip: bool,
    /// §1c: allocate every explored-state node fresh instead of from the pool.
    pub state_nodes_plain_alloc: bool,
}

#[derive(Clone, Debug)]
pub struct Options {
    /// 0: no log; 1: the path to the error; 2: every processed instruction.
    pub log_level: u32,
    /// The kernel's BPF_COMPLEXITY_LIMIT_INSNS.
    pub max_processed_insns: u64,
    pub timeout: Option<Duration>,
    /// Limit on the verifier's own state memory, in bytes.
    pub max_memory: Option<usize>,
    pub baselines: Baselines,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            log_level: 0,
            max_processed_insns: 1_000_000,
            timeout: None,
            max_memory: None,
            baselines: Baselines::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Limit {
    /// More than `max_processed_insns` instructions processed.
    ProcessedInsns,
    /// More than 8192 pending branches.
    JumpSequence,
    Timeout,
    Memory,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    Rejected {
        /// The kernel's last log line for the same cause.
        error: String,
        insn: Option<usize>,
        /// "file.c:42: <line text>" from line_info.
        source: Option<String>,
    },
    /// A limit stopped verification; `error` is the kernel's message where it
    /// has one (e.g. "BPF program is too large. Processed 1000001 insn").
    LimitExceeded {
        limit: Limit,
        error: String,
        insn: Option<usize>,
    },
    /// bpfvet does not model something the program needs (`what` names it)
    /// and refuses to give a verdict under semantics it does not have.
    Unsupported {
        what: String,
        insn: Option<usize>,
    },
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub verdict: Verdict,
    pub stats: Stats,
    pub log: String,
}

/// Verifies program `prog_index` of `obj` as the Linux 6.18 verifier does for
/// a root loader.
pub fn verify(obj: &bpfvet_object::Object, prog_index: usize, opts: &Options) -> Outcome {
    let started = std::time::Instant::now();
    let Some(prog) = obj.programs.get(prog_index) else {
        return Outcome {
            verdict: Verdict::Rejected {
                error: format!("no program with index {prog_index}"),
                insn: None,
                source: None,
            },
            stats: Stats::default(),
            log: String::new(),
        };
    };
    let calls = |insn: &bpfvet_isa::Insn| {
        if insn.src == bpfvet_isa::opcode::BPF_PSEUDO_KFUNC_CALL {
            return cfg::CallSummary {
                args: kfunc::kfunc_arg_count(insn),
                iter_next: kfunc::is_iter_next_call(insn),
            };
        }
        let args =
            helpers::helper_proto(insn.imm as u32, prog.prog_type, prog.expected_attach_type)
                .map_or(5, |p| p.arg_count());
        cfg::CallSummary {
            args,
            iter_next: false,
        }
    };
    let result = unmodelled_prog_type(prog)
        .and_then(|()| precheck(&prog.insns))
        .and_then(|()| kptr::check_map_prog_compatibility(obj, prog))
        .and_then(|()| cfg::analyze(&prog.insns, &calls));
    let cfg = match result {
        Ok(c) => c,
        Err(e) => {
            let mut log = log::Log::new(opts.log_level);
            log.line(&e.msg);
            let stats = Stats {
                duration: started.elapsed(),
                ..Stats::default()
            };
            return Outcome {
                verdict: rejected(prog, e),
                stats,
                log: log.into_string(),
            };
        }
    };
    let mut env = explore::Env::new(obj, prog, opts, cfg);
    if opts.log_level >= 2 {
        let starts: Vec<usize> = env.cfg.subprogs.iter().map(|s| s.start).collect();
        env.log
            .program_summary(&starts, env.insns, &env.cfg.live_regs_before, &env.cfg.scc);
    }
    env.init_main_state();
    let res = env
        .do_check()
        .map(|()| env.log.pass_verified())
        .and_then(|()| env.check_global_subprogs())
        .and_then(|()| env.check_max_stack_depth());
    let mut stats = std::mem::take(&mut env.stats);
    stats.processed_insns = env.insn_processed;
    stats.duration = started.elapsed();
    stats.stack_depth = env.subprog_stack.clone();
    if res.is_ok() {
        rewrite_stack::add_rewrite_stack(
            &mut stats.stack_depth,
            &env.cfg.subprogs,
            env.insns,
            &env.aux,
        );
    }
    stats.idmap_resets = env.idmap.resets;
    stats.idmap_pairs_scanned = env.idmap.pairs_scanned;
    stats.state_nodes_from_pool = env.pool.from_pool;
    stats.state_nodes_fresh = env.pool.fresh;
    let mut log = std::mem::replace(&mut env.log, log::Log::new(0));
    let verdict = match res {
        Ok(()) => Verdict::Accepted,
        Err(e) => {
            if log.level > 0 && e.limit.is_none() && !e.unsupported {
                log.lines_before_error();
                log.line(&e.msg);
                log.error_details();
            }
            rejected(prog, e)
        }
    };
    if opts.log_level > 0 {
        let depth: Vec<String> = stats.stack_depth.iter().map(|d| d.to_string()).collect();
        log.line(&format!("stack depth {}", depth.join("+")));
        log.line(&format!(
            "processed {} insns (limit {}) max_states_per_insn {} total_states {} peak_states {} mark_read {}",
            stats.processed_insns,
            opts.max_processed_insns,
            stats.max_states_per_insn,
            stats.total_states,
            stats.peak_states,
            stats.mark_read
        ));
    }
    Outcome {
        verdict,
        stats,
        log: log.into_string(),
    }
}

fn rejected(prog: &bpfvet_object::Program, e: error::VerifyError) -> Verdict {
    if e.unsupported {
        return Verdict::Unsupported {
            what: e.msg,
            insn: e.insn,
        };
    }
    let source = e.insn.and_then(|i| source_line(prog, i));
    match e.limit {
        Some(limit) => Verdict::LimitExceeded {
            limit,
            error: e.msg,
            insn: e.insn,
        },
        None => Verdict::Rejected {
            error: e.msg,
            insn: e.insn,
            source,
        },
    }
}

/// "file.c:42: <line text>" of the line_info entry covering `insn`.
fn source_line(prog: &bpfvet_object::Program, insn: usize) -> Option<String> {
    let i = prog
        .line_info
        .partition_point(|l| l.insn_off as usize <= insn)
        .checked_sub(1)?;
    let l = &prog.line_info[i];
    let file = l.file_name.rsplit('/').next().unwrap_or(&l.file_name);
    Some(format!("{}:{}: {}", file, l.line, l.line_text.trim()))
}

/// Program types whose verification depends on something bpfvet does not
/// resolve: they are refused by name rather than verified as something else.
fn unmodelled_prog_type(prog: &bpfvet_object::Program) -> Result<(), error::VerifyError> {
    use bpfvet_isa::uapi::ProgType as Pt;
    let what = match prog.prog_type {
        Pt::UNSPEC => format!(
            "no program type: section '{}' names none (give one with --prog-type)",
            prog.section
        ),
        Pt::STRUCT_OPS => "struct_ops programs (the struct_ops member a program implements \
                           decides its arguments, return value and allowed kfuncs)"
            .to_string(),
        Pt::EXT => "freplace programs (verified against the program they replace)".to_string(),
        _ => return Ok(()),
    };
    Err(error::VerifyError::unsupported(None, what))
}

/// Checks the kernel makes on the raw stream before building the CFG
/// (resolve_pseudo_ldimm64 and the opcode check).
fn precheck(insns: &[bpfvet_isa::Insn]) -> Result<(), error::VerifyError> {
    use bpfvet_isa::opcode::*;
    let err = |i: usize, m: &str| Err(error::VerifyError::new(Some(i), m.to_string()));
    let mut i = 0;
    while i < insns.len() {
        let ins = insns[i];
        if ins.class() == BPF_LDX
            && ((mode(ins.code) != BPF_MEM && mode(ins.code) != BPF_MEMSX) || ins.imm != 0)
        {
            return err(i, "BPF_LDX uses reserved fields");
        }
        if ins.is_ld_imm64() {
            if i + 1 >= insns.len() {
                return err(i, "invalid bpf_ld_imm64 insn");
            }
            let n = insns[i + 1];
            if n.code != 0 || n.dst != 0 || n.src != 0 || n.off != 0 {
                return err(i, "invalid bpf_ld_imm64 insn");
            }
            if ins.src > 6 {
                return err(i, "unrecognized bpf_ld_imm64 insn");
            }
            i += 2;
            continue;
        }
        if !bpfvet_isa::decode::opcode_known(ins.code) {
            return err(i, &format!("unknown opcode {:02x}", ins.code));
        }
        i += 1;
    }
    Ok(())
}
