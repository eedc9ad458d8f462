//! The bpfvet runtime (issue 6): runs BPF programs in user space with Linux
//! 6.18's semantics.
//!
//! - [`Vm::load`] creates an object's maps (global data filled, prog arrays
//!   and map-in-map slots set) and pre-decodes its programs. Verification
//!   is a separate step ([`Vm::verify`], bpfvet's verifier), so tests can
//!   run what the kernel accepts without it.
//! - [`test_run`] runs a program as BPF_PROG_TEST_RUN does (XDP, skb
//!   types, flow dissector, syscall, raw_tp); [`Run`] + [`Engine`] run one
//!   on any context, e.g. plain memory ([`Run::set_bytes_ctx`]).
//! - Maps are `bpfvet_maps::Map`s: read them through [`Vm::maps`] /
//!   [`Vm::map`] with the syscall-side API.
//! - Every load, store and atomic is checked against the memory the run
//!   owns (stack, context, packet, map values, helper memory); a violation
//!   ends the run with a [`VmError`] naming the instruction. The one
//!   exception: the [`Jit`] compiles the accesses of a program whose
//!   verifier proof the VM holds ([`Vm::verify_program`]) without the
//!   check where the proof covers them; the interpreter checks always.
//! - A VM stands for a machine of [`Vm::cpus`] CPUs ([`Vm::load_cpus`]):
//!   each run is on one (per-CPU map slots, bpf_get_smp_processor_id), and
//!   [`test_run_threads`] runs a program on several threads at once, each
//!   its own CPU, against the same maps.
//! - bpf_timer and bpf_wq callbacks run on a virtual clock
//!   ([`Vm::use_virtual_clock`], [`Vm::advance_time`]), as the kernel runs
//!   them after the program returned (docs/run.md).

mod code;
mod csum;
mod ctx;
mod dynptr;
mod error;
mod format;
mod helpers;
mod interp;
mod jit;
mod run;
mod test_run;
mod threads;
mod timers;
mod vm;

pub use code::{map_handle, Op};
pub use ctx::Ctx;
pub use error::{Result, VmError};
pub use interp::{Engine, Interpreter, MAX_TAIL_CALLS};
pub use jit::{Decline, Jit};
pub use run::{Output, Run, MAX_FRAMES, MAY_GOTO_BUDGET, STACK_PER_FRAME};
pub use test_run::{test_run, test_run_with, TestRunInput, TestRunOutput};
pub use threads::{test_run_threads, thread_cpu_ns, ThreadedRun};
pub use timers::MAX_CALLBACKS_PER_ADVANCE;
pub use vm::{Kfunc, Program, Proof, Vm};

/// Runs `insns` on `memory` as the bpf_conformance suite does: r1 = the
/// memory's address, r2 = its length; returns r0.
pub fn run_on_memory(insns: &[bpfvet_isa::Insn], memory: &mut [u8]) -> Result<u64> {
    let vm = Vm::from_insns(insns, bpfvet_isa::uapi::ProgType::SOCKET_FILTER)?;
    let (mut run, args) = memory_run(&vm, memory);
    Interpreter.execute(&mut run, 0, 0, args, 0)
}

/// [`run_on_memory`] on native code. When the JIT declines the program it
/// runs on the interpreter, and the second value says why.
pub fn run_on_memory_jit(
    insns: &[bpfvet_isa::Insn],
    memory: &mut [u8],
) -> Result<(u64, Option<Decline>)> {
    let vm = Vm::from_insns(insns, bpfvet_isa::uapi::ProgType::SOCKET_FILTER)?;
    let jit = Jit::compile(&vm);
    let declined = jit.declined(0).cloned();
    let (mut run, args) = memory_run(&vm, memory);
    let r0 = jit.execute(&mut run, 0, 0, args, 0)?;
    Ok((r0, declined))
}

fn memory_run<'vm>(vm: &'vm Vm, memory: &mut [u8]) -> (Run<'vm>, [u64; 5]) {
    let mut run = Run::new(vm, Ctx::Bytes);
    let len = memory.len() as u64;
    let addr = if len == 0 {
        0
    } else {
        memory.as_mut_ptr() as u64
    };
    if len > 0 {
        run.set_bytes_ctx(addr, memory.len(), true);
    }
    (run, [addr, len, 0, 0, 0])
}
