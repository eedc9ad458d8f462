//! A JIT for verified programs: each program of a [`Vm`] is translated to
//! Cranelift IR ([`translate`]) and compiled to native code once. Compiled
//! code keeps the interpreter's semantics by calling the interpreter's own
//! memory checks, helpers and kfuncs through `extern "C"` shims ([`env`]).
//! A program the translation does not cover is declined with a
//! [`Decline`] and runs on the interpreter instead, as do callbacks and
//! runs that start mid-program.
//!
//! Checks: a program handed the verifier's proof ([`Vm::verify_program`],
//! `bpfvet run` without `--no-verify`, the default) runs the memory
//! accesses the proof covers (stack, packet, map value; context fields at
//! a known offset) as plain loads and stores; every other access, and
//! every access of a program without a proof or compiled by
//! [`Jit::compile_checked`], keeps the interpreter's run-time check, so an
//! unverified program still cannot touch memory the run does not own.
//! The call-depth limit stays in both; the budget on backward jumps only
//! in code that may not end by itself (see `translate::terminates`).
//!
//! `BPFVET_JIT_DUMP=DIR` writes each compiled program's machine code to
//! `DIR/progN.bin` (N counts compilations in the process), to read with
//! `objdump -D -b binary -mi386:x86-64`.

mod env;
mod translate;

use cranelift_codegen::ir::{types, AbiParam, UserFuncName};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};

use crate::error::{Result, VmError};
use crate::interp::{Engine, Interpreter};
use crate::run::{Run, MAX_FRAMES};
use crate::vm::Vm;
use env::Env;

/// Why a program runs on the interpreter instead of native code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Decline {
    #[error("insn {pc}: opcode {code:#04x} is not compiled")]
    Opcode { pc: usize, code: u8 },
    #[error("insn {pc}: writes r10 (compiled code keeps r10 the frame pointer)")]
    WritesFramePointer { pc: usize },
    #[error("insn {pc}: jumps into the second slot of an LD_IMM64")]
    JumpIntoImm64 { pc: usize },
    #[error("no native code generator for this host: {0}")]
    Host(String),
    #[error("code generation failed: {0}")]
    Codegen(String),
    /// A program the object loader refused: there is nothing to compile.
    #[error("the program has no code")]
    NoCode,
}

type NativeFn = unsafe extern "C" fn(*mut Env) -> u64;

struct Native {
    /// Owns the executable memory `entry` points into.
    module: Option<JITModule>,
    entry: NativeFn,
    /// The code reads r0..r9 from `Env::regs` at its entry (unverified
    /// code); verified code reads only r1 there.
    reads_entry_regs: bool,
}

impl Drop for Native {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: `entry` is only called through `&self`, so no call is
            // running, and it is dropped with the memory.
            unsafe { m.free_memory() };
        }
    }
}

/// The compiled programs of one [`Vm`]; an [`Engine`]. It borrows the VM
/// because the code has the VM's map addresses baked in.
pub struct Jit<'vm> {
    vm: &'vm Vm,
    programs: Vec<std::result::Result<Native, Decline>>,
}

impl<'vm> Jit<'vm> {
    /// Compiles every program of `vm`. Programs the JIT declines run on the
    /// interpreter; [`Jit::declined`] says which and why.
    ///
    /// A program [`Vm::verify_program`] accepted compiles its proven
    /// memory accesses (stack, packet, map value) to plain loads and
    /// stores; every other access, and every access of a program not
    /// verified that way, keeps the interpreter's run-time check.
    pub fn compile(vm: &'vm Vm) -> Jit<'vm> {
        Jit::compile_with(vm, true)
    }

    /// [`Jit::compile`] keeping every run-time check, verified or not.
    pub fn compile_checked(vm: &'vm Vm) -> Jit<'vm> {
        Jit::compile_with(vm, false)
    }

    fn compile_with(vm: &'vm Vm, use_proofs: bool) -> Jit<'vm> {
        // Writable maps whose lookups need no more than their value's
        // region: compiled code looks up a not per-CPU ARRAY itself, and
        // calls the map's own lookup for a not per-CPU hash map.
        let lookups: Vec<Option<translate::InlineLookup>> = vm
            .arrays
            .iter()
            .zip(&vm.plain_lookup)
            .zip(&vm.maps)
            .map(|((a, plain), m)| {
                if *plain != Some(true) {
                    return None;
                }
                let value_size = m.attr().value_size;
                if let Some(a) = a.as_ref() {
                    return (a.cpu_stride == 0).then(|| {
                        translate::InlineLookup::Array(translate::InlineArray {
                            base: a.base as u64,
                            elem_bytes: a.elem_bytes as u64,
                            entries: a.entries,
                            value_size,
                            static_values: a.entries == 1
                                && vm.static_regions.iter().any(|r| {
                                    r.writable
                                        && r.start == a.base as u64
                                        && r.end >= a.base as u64 + value_size as u64
                                }),
                        })
                    });
                }
                let h = m.as_any().downcast_ref::<bpfvet_maps::htab::HashMap>()?;
                Some(translate::InlineLookup::Hash(translate::InlineHash {
                    map: std::ptr::from_ref(h) as u64,
                    shim: h.shared_lookup()? as usize,
                    key_size: m.attr().key_size,
                    value_size,
                }))
            })
            .collect();
        Jit {
            vm,
            programs: vm
                .programs
                .iter()
                .map(|p| {
                    let proof = if use_proofs { &p.proof[..] } else { &[] };
                    compile(&p.ops, &vm.static_regions, proof, &lookups)
                })
                .collect(),
        }
    }

    /// Why program `prog` is not compiled, or None when it is.
    pub fn declined(&self, prog: usize) -> Option<&Decline> {
        self.programs.get(prog)?.as_ref().err()
    }

    fn native(&self, run: &Run<'_>, prog: usize) -> Option<NativeFn> {
        if !std::ptr::eq(run.vm, self.vm) {
            return None;
        }
        self.programs.get(prog)?.as_ref().ok().map(|n| n.entry)
    }
}

/// How a driven program ended.
pub(super) enum Outcome {
    Returned(u64),
    /// LD_ABS/LD_IND left the packet: the whole run returns 0.
    EndedZero,
}

impl Jit<'_> {
    /// Runs program `prog` natively from its start at `depth` with r0..r9 =
    /// `regs`, following tail calls made at its base depth.
    pub(super) fn drive(
        &self,
        run: &mut Run<'_>,
        prog: usize,
        regs: &[u64; 16],
        depth: usize,
    ) -> Result<Outcome> {
        // Compiled code addresses r10 without checks, so its frames must
        // lie inside the run's stack.
        let native = match self.native(run, prog) {
            Some(f) if depth < MAX_FRAMES => f,
            _ => {
                let args: [u64; 5] = regs[1..6].try_into().expect("5 registers");
                return Interpreter
                    .execute(run, prog, 0, args, depth)
                    .map(Outcome::Returned);
            }
        };
        let mut env = Env::new(run, prog, depth, self);
        env.regs = *regs;
        let r = self.drive_env(run, &mut env, native);
        // The caller goes on with this run: what the code looked up is
        // the run's memory from now on.
        env.register_pending(run);
        r
    }

    /// [`Jit::drive`] on a prepared `env` whose program is `native`. The
    /// common end (the program returned) is inline; tail calls and faults
    /// are handled out of line.
    #[inline(always)]
    fn drive_env(&self, run: &mut Run<'_>, env: &mut Env, native: NativeFn) -> Result<Outcome> {
        env.run = std::ptr::from_mut(run).cast();
        // SAFETY: `native` was compiled for this VM (checked by `native`)
        // from a program `translate::check` accepted; `env` lives across
        // the call and `run` is reached only through it meanwhile.
        let r0 = unsafe { native(env) };
        run.may_goto_left = env.may_goto_left;
        if env.status == env::RUNNING {
            return Ok(Outcome::Returned(r0));
        }
        env.register_pending(run);
        self.after_stop(run, env)
    }

    /// The compiled code stopped other than by returning: a tail call
    /// (followed here, at the same depth), LD_ABS leaving the packet, or
    /// a fault.
    #[cold]
    #[inline(never)]
    fn after_stop(&self, run: &mut Run<'_>, env: &mut Env) -> Result<Outcome> {
        let depth = env.base_depth as usize;
        loop {
            match env.status {
                env::ENDED_ZERO => return Ok(Outcome::EndedZero),
                env::TAIL_CALLED => {
                    let target = env.tail_target;
                    let Some(f) = self.native(run, target) else {
                        let a: [u64; 5] = env.regs[1..6].try_into().expect("5 registers");
                        let r = Interpreter.execute(run, target, 0, a, depth);
                        // What the interpreter changed unseen, for a next
                        // run on this Env.
                        env.ctx_valid = 0;
                        env.refresh_packet(run);
                        env.refresh_regions(run);
                        return r.map(Outcome::Returned);
                    };
                    env.prog = target;
                    env.status = env::RUNNING;
                    // SAFETY: as in `drive_env`; `f` is the target's code.
                    let r0 = unsafe { f(env) };
                    run.may_goto_left = env.may_goto_left;
                    if env.status == env::RUNNING {
                        return Ok(Outcome::Returned(r0));
                    }
                    env.register_pending(run);
                }
                _ => {
                    return Err(env.fault.take().unwrap_or(VmError::BadInsn {
                        pc: 0,
                        what: "compiled code stopped without a reason".into(),
                    }))
                }
            }
        }
    }
}

impl Engine for Jit<'_> {
    fn execute(
        &self,
        run: &mut Run<'_>,
        prog: usize,
        pc: usize,
        args: [u64; 5],
        depth: usize,
    ) -> Result<u64> {
        if pc != 0 {
            return Interpreter.execute(run, prog, pc, args, depth);
        }
        let mut regs = [0; 16];
        regs[1..6].copy_from_slice(&args);
        Ok(match self.drive(run, prog, &regs, depth)? {
            Outcome::Returned(r0) => r0,
            Outcome::EndedZero => 0,
        })
    }

    /// One `Env` for all the runs: what a run leaves in it that the next
    /// may use (packet bounds, cached context fields) is still true, since
    /// only the program changes the context and every change is seen.
    fn execute_repeated(
        &self,
        run: &mut Run<'_>,
        prog: usize,
        ctx: u64,
        times: u32,
    ) -> Result<u64> {
        let Some(native) = self.native(run, prog) else {
            return Interpreter.execute_repeated(run, prog, ctx, times);
        };
        let clear_regs = self
            .programs
            .get(prog)
            .and_then(|p| p.as_ref().ok())
            .is_none_or(|n| n.reads_entry_regs);
        let mut env = Env::new(run, prog, 0, self);
        let mut ret = 0;
        // The region cache right after a reset, once one was made: the
        // reset leaves the same static regions every time.
        let mut reset_cache = None;
        for _ in 0..times {
            match reset_cache {
                Some(start) if !env.shim_called => {
                    env.restart_untouched(run, start, clear_regs);
                }
                _ => {
                    run.reset_dynamic();
                    env.restart(run, prog, clear_regs);
                    reset_cache = Some(env.region_cache());
                }
            }
            env.shim_called = false;
            env.regs[1] = ctx;
            ret = match self.drive_env(run, &mut env, native)? {
                Outcome::Returned(r0) => r0,
                Outcome::EndedZero => 0,
            };
        }
        Ok(ret)
    }
}

fn compile(
    ops: &[crate::code::Op],
    statics: &[crate::run::Region],
    proof: &[bpfvet_verifier::AccessKinds],
    lookups: &[Option<translate::InlineLookup>],
) -> std::result::Result<Native, Decline> {
    translate::check(ops)?;
    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k, v| {
        f.set(k, v)
            .map_err(|e| Decline::Host(format!("setting {k}: {e}")))
    };
    set(&mut flags, "opt_level", "speed")?;
    set(&mut flags, "is_pic", "false")?;
    // Cranelift checks its IR after every pass by default, a cost at each
    // compilation that finds only bugs of the translation: debug builds
    // keep the check.
    set(
        &mut flags,
        "enable_verifier",
        if cfg!(debug_assertions) {
            "true"
        } else {
            "false"
        },
    )?;
    let isa = cranelift_native::builder()
        .map_err(|e| Decline::Host(e.to_string()))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| Decline::Host(e.to_string()))?;
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let mut ctx = module.make_context();
    let ptr = module.target_config().pointer_type();
    ctx.func.signature.params.push(AbiParam::new(ptr));
    ctx.func.signature.returns.push(AbiParam::new(types::I64));
    let call_conv = ctx.func.signature.call_conv;
    let id = module
        .declare_function("bpf_prog", Linkage::Local, &ctx.func.signature)
        .map_err(|e| Decline::Codegen(e.to_string()))?;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        translate::build(&mut b, call_conv, ops, statics, proof, lookups)?;
        b.finalize();
    }
    drop_unused_loads(&mut ctx.func);
    drop_unread_region_cache(&mut ctx.func);
    module
        .define_function(id, &mut ctx)
        .map_err(|e| Decline::Codegen(format!("{e:?}")))?;
    if let Some(dir) = std::env::var_os("BPFVET_JIT_DUMP") {
        dump_code(&dir, &ctx);
    }
    module.clear_context(&mut ctx);
    module
        .finalize_definitions()
        .map_err(|e| Decline::Codegen(e.to_string()))?;
    let code = module.get_finalized_function(id);
    // SAFETY: the function was declared with this signature: one pointer
    // argument, one i64 result, the host's default calling convention.
    let entry = unsafe { std::mem::transmute::<*const u8, NativeFn>(code) };
    Ok(Native {
        module: Some(module),
        entry,
        reads_entry_regs: proof.is_empty(),
    })
}

/// Writes the machine code just compiled to a new file in `dir`
/// (`BPFVET_JIT_DUMP=dir`), to read with a disassembler: a debugging aid.
fn dump_code(dir: &std::ffi::OsStr, ctx: &cranelift_codegen::Context) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    if let Some(code) = ctx.compiled_code() {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::path::Path::new(dir).join(format!("prog{n}.bin"));
        if let Err(e) = std::fs::write(&path, code.code_buffer()) {
            eprintln!("BPFVET_JIT_DUMP: {}: {e}", path.display());
        }
    }
}

/// Removes the stores of the newest-region cache (`Env::last_*`, which
/// inline map lookups update) from a function that never reads it: only
/// checked memory accesses of compiled code read it, and whatever runs
/// after the code (a shim, the driver, the next program) recomputes it
/// from the run's regions first (`Env::register_pending`).
fn drop_unread_region_cache(func: &mut cranelift_codegen::ir::Function) {
    use cranelift_codegen::ir::InstructionData;
    let Some(entry) = func.layout.entry_block() else {
        return;
    };
    let Some(&env_ptr) = func.dfg.block_params(entry).first() else {
        return;
    };
    let cache = [
        env::OFF_LAST_LO,
        env::OFF_LAST_LEN,
        env::OFF_LAST_LEN_WRITABLE,
    ];
    let touches_cache = |data: &InstructionData| -> Option<bool> {
        let (arg, offset) = match *data {
            InstructionData::Load { arg, offset, .. } => (arg, offset),
            InstructionData::Store { args, offset, .. } => (args[1], offset),
            _ => return None,
        };
        Some(func.dfg.resolve_aliases(arg) == env_ptr && cache.contains(&i32::from(offset)))
    };
    let mut stores = Vec::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            let data = &func.dfg.insts[inst];
            if touches_cache(data) != Some(true) {
                continue;
            }
            if matches!(data, InstructionData::Load { .. }) {
                return;
            }
            stores.push(inst);
        }
    }
    for inst in stores {
        func.layout.remove_inst(inst);
    }
}

/// Removes the loads that cannot trap whose value nothing uses: the `Env`
/// fields read at the entry for paths a program turns out not to have
/// (run-time checks its proof made unneeded). Cranelift keeps every load
/// until lowering, where each still costs an instruction.
fn drop_unused_loads(func: &mut cranelift_codegen::ir::Function) {
    use cranelift_codegen::ir::{InstructionData, Opcode};
    let mut used = std::collections::HashSet::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            for v in func.dfg.inst_values(inst) {
                used.insert(func.dfg.resolve_aliases(v));
            }
        }
    }
    let dead: Vec<_> = func
        .layout
        .blocks()
        .flat_map(|block| func.layout.block_insts(block))
        .filter(|&inst| {
            matches!(
                func.dfg.insts[inst],
                InstructionData::Load { opcode: Opcode::Load, flags, .. } if flags.notrap()
            ) && func
                .dfg
                .inst_results(inst)
                .iter()
                .all(|r| !used.contains(r))
        })
        .collect();
    for inst in dead {
        func.layout.remove_inst(inst);
    }
}
