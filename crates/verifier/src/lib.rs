//! The bpfvet verifier (issue 4): a user-space re-implementation of the
//! Linux 6.18 BPF verifier's method — path-sensitive exploration with state
//! pruning, precision tracking and liveness — giving the kernel's verdict,
//! error text and statistics.

mod access;
mod btf_walk;
mod cfg;
mod check_alu;
mod check_call;
mod check_jmp;
mod check_mem;
mod checkpoint;
pub mod ctx;
mod ctx_glue;
mod dead_code;
mod dynptr;
mod error;
mod error_injection;
mod exception;
pub mod explain;
mod explore;
mod fixups;
mod global_func;
mod graph;
pub mod helpers;
mod irq;
mod iter;
mod kernel_config;
mod kfunc;
mod kptr;
mod ksym;
mod linked_regs;
mod liveness;
mod load_attrs;
mod log;
mod log_state;
mod lsm;
mod map_record;
mod map_refs;
mod pool;
mod precision;
mod privilege;
mod prune;
mod regs;
mod rewrite_stack;
pub mod scalar;
mod scc;
mod spin_lock;
mod state;
mod stats;
mod struct_ops;
pub mod tnum;
mod unmodelled;

pub use access::AccessKinds;
pub use kernel_config::{cpu_mitigations_off, MITIGATIONS_ENV};
pub use ksym::KALLSYMS_ENV;
pub use map_record::{map_fields, Field as MapField};
pub use stats::Stats;

/// Reads the host's vmlinux BTF (kfuncs, BTF-typed contexts) and builds its
/// name index now, so that no program's duration pays for them. Without
/// it, the first program that needs kernel types does.
pub fn preload_kernel_btf() {
    if let Some(btf) = btf_walk::vmlinux() {
        let _ = btf.ids_by_essential_name("task_struct").next();
    }
}

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
    /// Compute every scalar bounds sync and ALU operation instead of
    /// looking up the result of a recent one on the same scalars.
    pub sync_no_memo: bool,
    /// Compare every explored state in full, without first comparing the
    /// register that made the last comparison against it fail.
    pub prune_no_miss_hint: bool,
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
    /// The loader's capabilities; the verifier's switches follow from them
    /// ([`Caps::of`]).
    pub privileges: Privileges,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            log_level: 0,
            max_processed_insns: 1_000_000,
            timeout: None,
            max_memory: None,
            baselines: Baselines::default(),
            privileges: Privileges::Root,
        }
    }
}

pub use bpfvet_isa::Privileges;

/// The verifier's switches that depend on the loader's capabilities, as
/// bpf_check sets them; every privilege-dependent check reads these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// CAP_PERFMON: pointers may become scalars (stored, compared, returned).
    pub allow_ptr_leaks: bool,
    /// CAP_PERFMON: reads of never-written stack are allowed.
    pub allow_uninit_stack: bool,
    /// CAP_PERFMON or `mitigations=off`: no Spectre v1 sanitation
    /// (speculative paths, ALU limits, constant stack offsets).
    pub bypass_spec_v1: bool,
    /// CAP_PERFMON or `mitigations=off`: no Spectre v4 sanitation.
    pub bypass_spec_v4: bool,
    /// CAP_BPF: subprograms, kfuncs, loops, precision tracking.
    pub bpf_capable: bool,
}

impl Caps {
    /// The switches of a load at `p` on the target kernel (its CPU
    /// mitigations: [`kernel_config::cpu_mitigations_off`]).
    pub fn of(p: Privileges) -> Caps {
        Caps::on_kernel(p, kernel_config::cpu_mitigations_off())
    }

    /// bpf_bypass_spec_v1/v4 hold for every loader of a kernel booted
    /// with `mitigations=off`; the other switches are capabilities only.
    pub fn on_kernel(p: Privileges, mitigations_off: bool) -> Caps {
        use bpfvet_isa::privileges::cap;
        let admin = p.has(cap::SYS_ADMIN);
        let perfmon = p.perfmon_capable();
        Caps {
            allow_ptr_leaks: perfmon,
            allow_uninit_stack: perfmon,
            bypass_spec_v1: perfmon || mitigations_off,
            bypass_spec_v4: perfmon || mitigations_off,
            bpf_capable: admin || p.has(cap::BPF),
        }
    }

    pub fn is_root(&self) -> bool {
        *self == Caps::on_kernel(Privileges::Root, false)
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
    /// Accepted programs only (empty otherwise): per instruction, the
    /// pointer kinds its memory access dereferenced (NONE for other
    /// instructions and for code no path reached).
    pub accesses: Vec<AccessKinds>,
}

/// Verifies program `prog_index` of `obj` as the Linux 6.18 verifier does for
/// a root loader.
pub fn verify(obj: &bpfvet_object::Object, prog_index: usize, opts: &Options) -> Outcome {
    verify_with(obj, prog_index, opts, None).0
}

/// [`verify`], also measuring where the verifier spent its work
/// (`bpfvet explain`).
pub fn verify_explained(
    obj: &bpfvet_object::Object,
    prog_index: usize,
    opts: &Options,
) -> (Outcome, explain::Profile) {
    let insn_cnt = obj.programs.get(prog_index).map_or(0, |p| p.insns.len());
    let collector = Box::new(explain::Collector::new(obj, insn_cnt));
    let (outcome, profile) = verify_with(obj, prog_index, opts, Some(collector));
    (outcome, profile.unwrap_or_default())
}

fn verify_with(
    obj: &bpfvet_object::Object,
    prog_index: usize,
    opts: &Options,
    explain: Option<Box<explain::Collector>>,
) -> (Outcome, Option<explain::Profile>) {
    let started = std::time::Instant::now();
    scalar::set_sync_memo(!opts.baselines.sync_no_memo);
    // A BTF the kernel refuses is not loaded: the programs go without it.
    let stripped;
    let obj = if obj.btf_refused.is_some() {
        stripped = obj.without_btf();
        &stripped
    } else {
        obj
    };
    let Some(prog) = obj.programs.get(prog_index) else {
        let outcome = Outcome {
            verdict: Verdict::Rejected {
                error: format!("no program with index {prog_index}"),
                insn: None,
                source: None,
            },
            stats: Stats::default(),
            log: String::new(),
            accesses: Vec::new(),
        };
        return (outcome, None);
    };
    let calls = |insn: &bpfvet_isa::Insn| {
        if insn.src == bpfvet_isa::opcode::BPF_PSEUDO_KFUNC_CALL {
            return kfunc::call_summary(insn, prog.prog_type, prog.expected_attach_type);
        }
        let proto = helpers::helper_proto_for(
            insn.imm as u32,
            &check_call::caller_prog(prog, opts.privileges),
        );
        cfg::CallSummary {
            args: proto.as_ref().map_or(5, |p| p.arg_count()),
            iter_next: false,
            might_sleep: proto.is_ok_and(|p| p.might_sleep),
            changes_pkt_data: false,
        }
    };
    let caps = Caps::of(opts.privileges);
    // Why bpf_prog_load refuses the program, which its errno does not say.
    let mut load_refusal = None;
    // What fd_array_cnt bound before verification.
    let mut bound = load_attrs::Bound::default();
    let result = unmodelled::loader_refusal(prog)
        .and_then(|()| unmodelled::prog_type(prog))
        .and_then(|()| {
            privilege::check_load(prog, opts.privileges).map_err(|(why, e)| {
                load_refusal = Some(why);
                e
            })
        })
        .and_then(|()| unmodelled::prog_flags(prog))
        .and_then(|()| load_attrs::process_fd_array(obj, prog).map(|b| bound = b))
        .and_then(|()| privilege::check_calls(prog, &caps))
        .and_then(|()| check_func_info_records(obj, prog))
        .and_then(|()| kfunc::check_kfunc_calls(obj, prog))
        .and_then(|complete| match complete {
            true => exception::exception_callback_insn(obj.btf.as_ref(), prog),
            // The layout check names the subprogram error first.
            false => Ok(None),
        })
        .and_then(|ex| {
            cfg::check_layout(&prog.insns, ex)
                .and_then(|subprogs| {
                    check_btf_func(obj, prog, &subprogs)?;
                    let starts: Vec<usize> = subprogs.iter().map(|s| s.start).collect();
                    check_line_info(obj, prog, &starts)?;
                    if func_info_sent(obj, prog) {
                        load_attrs::check_core_relos(prog)?;
                    }
                    Ok(())
                })
                .map(|()| ex)
        })
        .and_then(|ex| precheck(obj, prog, &caps, &bound).map(|()| ex))
        .and_then(|ex| cfg::analyze(&prog.insns, &calls, ex, caps.bpf_capable))
        // check_attach_btf_id runs after the CFG is checked (and after
        // resolve_pseudo_ldimm64's map checks): who may sleep, then the
        // target, then the LSM hook's own rules.
        .and_then(|c| lsm::check_sleepable(prog).map(|()| c))
        .and_then(|c| lsm::check_attach_target(prog).map(|()| c))
        .and_then(|c| lsm::check_attach(obj, prog).map(|()| c))
        .and_then(|c| struct_ops::check_target(obj, prog).map(|_| c));
    let cfg = match result {
        Ok(c) => c,
        Err(e) => {
            let mut log = log::Log::new(opts.log_level);
            if let Some(why) = &load_refusal {
                log.line(why);
            }
            log.line(&e.msg);
            let stats = Stats {
                duration: started.elapsed(),
                ..Stats::default()
            };
            let outcome = Outcome {
                verdict: rejected(prog, e),
                stats,
                log: log.into_string(),
                accesses: Vec::new(),
            };
            return (outcome, explain.map(|c| c.finish(None, &[])));
        }
    };
    let mut env = explore::Env::new(obj, prog, opts, cfg);
    env.explain = explain;
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
        .and_then(|()| env.check_max_stack_depth())
        .and_then(|()| env.check_fixups())
        .and_then(|()| match kernel_config::jit_enabled() {
            true => env.check_unexplored_callbacks(),
            false => env.check_interpreter_limits(),
        });
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
            &env.call_sites,
        );
    }
    stats.idmap_resets = env.idmap.resets;
    stats.idmap_pairs_scanned = env.idmap.pairs_scanned;
    stats.prune_hinted_rejects = env.idmap.hinted_rejects;
    stats.state_nodes_from_pool = env.pool.from_pool;
    stats.state_nodes_fresh = env.pool.fresh;
    let profile = env
        .explain
        .take()
        .map(|c| c.finish(Some(&env.cfg), env.insns));
    let mut log = std::mem::replace(&mut env.log, log::Log::new(0));
    let accesses = if res.is_ok() {
        env.aux.iter().map(|a| a.accesses).collect()
    } else {
        Vec::new()
    };
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
    let outcome = Outcome {
        verdict,
        stats,
        log: log.into_string(),
        accesses,
    };
    (outcome, profile)
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

/// The program's func_info as the kernel gets it: only with BTF.
fn func_info_sent(obj: &bpfvet_object::Object, prog: &bpfvet_object::Program) -> bool {
    obj.btf.is_some() && !prog.func_info.is_empty()
}

/// check_btf_func_early: the first record at 0, offsets increasing, each
/// type a FUNC with a prototype.
fn check_func_info_records(
    obj: &bpfvet_object::Object,
    prog: &bpfvet_object::Program,
) -> Result<(), error::VerifyError> {
    let Some(btf) = obj.btf.as_ref().filter(|_| func_info_sent(obj, prog)) else {
        return Ok(());
    };
    load_attrs::check_func_info_rec_size(prog)?;
    let fail = |msg: String| Err(error::VerifyError::new(None, msg));
    let mut prev = 0;
    for (i, f) in prog.func_info.iter().enumerate() {
        if i == 0 && f.insn_off != 0 {
            return fail(format!(
                "nonzero insn_off {} for the first func info record",
                f.insn_off
            ));
        }
        if i > 0 && f.insn_off <= prev {
            return fail(format!(
                "same or smaller insn offset ({}) than previous func info record ({prev})",
                f.insn_off
            ));
        }
        let func = btf
            .type_by_id(f.type_id)
            .filter(|t| f.type_id != 0 && t.kind == bpfvet_object::btf::Kind::Func);
        let Some(func) = func else {
            return fail(format!("invalid type id {} in func info", f.type_id));
        };
        let proto = btf.type_by_id(func.size_or_type);
        if proto.is_none_or(|p| p.kind != bpfvet_object::btf::Kind::FuncProto) {
            // The kernel checked this when it loaded the BTF: no message.
            return Err(error::VerifyError::unsupported(
                None,
                "func_info naming a FUNC without a prototype".into(),
            ));
        }
        prev = f.insn_off;
    }
    Ok(())
}

/// check_btf_line: line_info goes with func_info; its offsets increase
/// inside the program, never at the second slot of an ld_imm64 (or any
/// zero opcode), name strings of the program's BTF, and cover every
/// subprogram's first instruction.
fn check_line_info(
    obj: &bpfvet_object::Object,
    prog: &bpfvet_object::Program,
    starts: &[usize],
) -> Result<(), error::VerifyError> {
    let Some(btf) = obj.btf.as_ref().filter(|_| func_info_sent(obj, prog)) else {
        return Ok(());
    };
    if prog.line_info.is_empty() {
        return Ok(());
    }
    let fail = |msg: String| Err(error::VerifyError::new(None, msg));
    let len = prog.insns.len();
    let mut prev = 0;
    let mut next_sub = 0;
    for (i, l) in prog.line_info.iter().enumerate() {
        let off = l.insn_off as usize;
        if (i > 0 && l.insn_off <= prev) || off >= len {
            return fail(format!(
                "Invalid line_info[{i}].insn_off:{} (prev_offset:{prev} prog->len:{len})",
                l.insn_off
            ));
        }
        if prog.insns[off].code == 0 {
            return fail(format!("Invalid insn code at line_info[{i}].insn_off"));
        }
        if !btf.str_off_valid(l.line_off) || !btf.str_off_valid(l.file_name_off) {
            return fail(format!("Invalid line_info[{i}].line_off or .file_name_off"));
        }
        if let Some(&start) = starts.get(next_sub) {
            if off == start {
                next_sub += 1;
            } else if start < off {
                return fail(format!("missing bpf_line_info for func#{next_sub}"));
            }
        }
        prev = l.insn_off;
    }
    if next_sub != starts.len() {
        return fail(format!(
            "missing bpf_line_info for {} funcs starting from func#{next_sub}",
            starts.len() - next_sub
        ));
    }
    Ok(())
}
/// check_btf_func: with func_info, one record per subprogram at its start;
/// LD_ABS/IND and tail calls can leave a subprogram with a hidden
/// `return 0` (check_abnormal_return), so only subprograms whose BTF says
/// they return an integer may contain them, and without func_info none
/// but the main program. The kernel checks each record in turn.
fn check_btf_func(
    obj: &bpfvet_object::Object,
    prog: &bpfvet_object::Program,
    subprogs: &[cfg::Subprog],
) -> Result<(), error::VerifyError> {
    let fail = |msg: &str| Err(error::VerifyError::new(None, msg.to_string()));
    let btf = match obj.btf.as_ref() {
        Some(btf) if func_info_sent(obj, prog) => btf,
        _ => {
            for sp in subprogs.iter().skip(1) {
                if sp.has_ld_abs {
                    return fail("LD_ABS is not allowed in subprogs without BTF");
                }
                if sp.has_tail_call {
                    return fail("tail_call is not allowed in subprogs without BTF");
                }
            }
            return Ok(());
        }
    };
    if prog.func_info.len() != subprogs.len() {
        return fail("number of funcs in func_info doesn't match number of subprogs");
    }
    for (i, (sp, fi)) in subprogs.iter().zip(&prog.func_info).enumerate() {
        if sp.start != fi.insn_off as usize {
            return fail("func_info BTF section doesn't match subprog layout in BPF program");
        }
        if i == 0 {
            continue;
        }
        let returns_int = btf
            .type_by_id(fi.type_id)
            .and_then(|func| btf.type_by_id(func.size_or_type))
            .and_then(|proto| btf.skip_mods_and_typedefs(proto.size_or_type))
            .is_some_and(|(id, t)| {
                id != 0
                    && ((t.kind == bpfvet_object::btf::Kind::Int && t.size_or_type <= 8)
                        || t.kind.is_enum())
            });
        if !returns_int && sp.has_ld_abs {
            return fail("LD_ABS is only allowed in functions that return 'int'.");
        }
        if !returns_int && sp.has_tail_call {
            return fail("tail_call is only allowed in functions that return 'int'.");
        }
    }
    Ok(())
}

/// Checks the kernel makes on the raw stream before building the CFG
/// (resolve_pseudo_ldimm64 and the opcode check).
fn precheck(
    obj: &bpfvet_object::Object,
    prog: &bpfvet_object::Program,
    caps: &Caps,
    bound: &load_attrs::Bound,
) -> Result<(), error::VerifyError> {
    use bpfvet_isa::opcode::*;
    let insns = &prog.insns;
    let err = |i: usize, m: &str| Err(error::VerifyError::new(Some(i), m.to_string()));
    // A program may use one arena: the load of a second one is rejected
    // where it comes in the instruction stream.
    let mut arenas = map_refs::arena_refs(obj, prog).peekable();
    let first_arena = arenas.peek().map(|&(_, m)| m);
    let second_arena = arenas
        .find(|&(_, m)| Some(m) != first_arena)
        .map(|(i, _)| i);
    let first_arena_insn = map_refs::arena_refs(obj, prog).next().map(|(i, _)| i);
    let arena_allowed = caps.allow_ptr_leaks && caps.bpf_capable;
    // Maps fd_array_cnt bound count as used (and hold their cgroup
    // storage slot); so do its BTFs, vmlinux's joins them at a ksym.
    let mut cgroup_storages = [None; 2];
    for &m in &bound.maps {
        let kind = obj
            .maps
            .get(m as usize)
            .and_then(load_attrs::cgroup_storage_kind);
        if let Some(kind) = kind {
            cgroup_storages[kind] = Some(m as usize);
        }
    }
    let mut used_maps = bound.maps.clone();
    let mut used_btfs = bound.btfs;
    let mut vmlinux_btf_used = false;
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
            match ins.src {
                0 | BPF_PSEUDO_FUNC => {}
                BPF_PSEUDO_BTF_ID => {
                    ksym::pseudo_btf_id(i, ins.imm as u32, n.imm)?;
                    if !std::mem::replace(&mut vmlinux_btf_used, true) {
                        if used_btfs >= load_attrs::MAX_USED_BTFS {
                            return err(i, &load_attrs::too_many_btfs());
                        }
                        used_btfs += 1;
                    }
                }
                BPF_PSEUDO_MAP_FD
                | BPF_PSEUDO_MAP_VALUE
                | BPF_PSEUDO_MAP_IDX
                | BPF_PSEUDO_MAP_IDX_VALUE => {
                    map_refs::check_map_ref(obj, prog, i, &ins, &n, &mut used_maps)?;
                    if map_refs::second_cgroup_storage(obj, &mut cgroup_storages, &ins) {
                        return err(i, "only one cgroup storage of each type is allowed");
                    }
                }
                _ => return err(i, "unrecognized bpf_ld_imm64 insn"),
            }
            if second_arena == Some(i) {
                return err(i, "Only one arena per program");
            }
            if first_arena_insn == Some(i) && !arena_allowed {
                return err(i, "CAP_BPF and CAP_PERFMON are required to use arena");
            }
            if first_arena_insn == Some(i) && !kernel_config::jit_enabled() {
                return err(i, "JIT is required to use arena");
            }
            // Its user address comes from map_extra or the loader's mmap.
            let unmapped = |m: &bpfvet_object::MapDef| m.arena_unmapped && m.map_extra == 0;
            if first_arena_insn == Some(i)
                && first_arena
                    .and_then(|m| obj.maps.get(m))
                    .is_some_and(unmapped)
            {
                return err(
                    i,
                    "arena's user address must be set via map_extra or mmap()",
                );
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
