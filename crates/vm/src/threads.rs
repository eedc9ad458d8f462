//! One program run on several OS threads against the same maps, each thread
//! being one CPU of the VM (its slot of per-CPU maps, its
//! bpf_get_smp_processor_id), as the same program runs on every CPU of a
//! host at once.

use std::sync::Barrier;
use std::time::Instant;

use crate::error::{Result, VmError};
use crate::interp::Interpreter;
use crate::jit::{Decline, Jit};
use crate::test_run::{test_run_with, TestRunInput, TestRunOutput};
use crate::vm::Vm;

/// What each thread did, and the wall time of the whole.
#[derive(Debug)]
pub struct ThreadedRun {
    /// Thread i ran on CPU i.
    pub per_thread: Vec<TestRunOutput>,
    /// From the moment every thread was ready (JIT code compiled) until the
    /// last one finished.
    pub wall_ns: u64,
    /// CPU time each thread spent in its runs (CLOCK_THREAD_CPUTIME_ID):
    /// unlike wall time, it leaves out the time a thread waited for a core
    /// on a busy machine, so a rise per run from 1 to N threads is the cost
    /// of sharing (contended locks, cache lines moving between cores).
    pub cpu_ns: Vec<u64>,
    /// Why the JIT declined the program, when native code was asked for
    /// (the interpreter then ran it).
    pub declined: Option<Decline>,
}

impl ThreadedRun {
    /// Runs completed by all threads per second of wall time.
    pub fn total_runs_per_sec(&self, repeat: u32) -> f64 {
        let runs = self.per_thread.len() as f64 * repeat.max(1) as f64;
        runs * 1e9 / self.wall_ns.max(1) as f64
    }

    /// CPU time of all threads divided by all their runs.
    pub fn cpu_ns_per_run(&self, repeat: u32) -> f64 {
        let runs = self.per_thread.len() as f64 * repeat.max(1) as f64;
        self.cpu_ns.iter().sum::<u64>() as f64 / runs
    }
}

/// Runs `prog` `input.repeat` times on each of `threads` threads at once,
/// thread i on CPU i (`input.cpu` is ignored); with `jit`, each thread runs
/// native code it compiled itself. The first thread's error, if any, is the
/// result.
pub fn test_run_threads(
    vm: &Vm,
    prog: usize,
    input: &TestRunInput<'_>,
    threads: u32,
    jit: bool,
) -> Result<ThreadedRun> {
    if threads == 0 || threads > vm.cpus {
        return Err(VmError::Invalid(format!(
            "{threads} threads on a VM of {} CPUs (each thread is one CPU)",
            vm.cpus
        )));
    }
    let ready = Barrier::new(threads as usize + 1);
    let mut declined = None;
    let (results, wall_ns) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|cpu| {
                let ready = &ready;
                s.spawn(move || {
                    let input = TestRunInput {
                        cpu,
                        ..input.clone()
                    };
                    let native = jit.then(|| Jit::compile(vm));
                    let declined = native.as_ref().and_then(|j| j.declined(prog).cloned());
                    ready.wait();
                    let cpu_start = thread_cpu_ns();
                    let out = match &native {
                        Some(j) => test_run_with(j, vm, prog, &input),
                        None => test_run_with(&Interpreter, vm, prog, &input),
                    };
                    (out, declined, thread_cpu_ns().saturating_sub(cpu_start))
                })
            })
            .collect();
        ready.wait();
        let start = Instant::now();
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        (results, start.elapsed().as_nanos() as u64)
    });
    let mut per_thread = Vec::with_capacity(results.len());
    let mut cpu_ns = Vec::with_capacity(results.len());
    for (out, why, cpu) in results {
        per_thread.push(out?);
        declined = declined.or(why);
        cpu_ns.push(cpu);
    }
    Ok(ThreadedRun {
        per_thread,
        wall_ns,
        cpu_ns,
        declined,
    })
}

/// The calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
