//! `bpfvet run`: one program run with BPF_PROG_TEST_RUN semantics in the
//! bpfvet runtime.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use bpfvet_isa::uapi::ProgType;
use bpfvet_vm::{
    test_run_threads, test_run_with, Engine, Interpreter, Jit, TestRunInput, TestRunOutput, Vm,
    VmError,
};

#[derive(clap::Args)]
pub struct Args {
    /// The BPF object file.
    pub object: PathBuf,
    /// Program (function) name; may be left out for an object with one
    /// program.
    #[arg(long)]
    pub prog: Option<String>,
    /// Packet bytes (data_in).
    #[arg(long)]
    pub data_in: Option<PathBuf>,
    /// Context bytes (ctx_in): __sk_buff, xdp_md, syscall or raw_tp args.
    #[arg(long)]
    pub ctx_in: Option<PathBuf>,
    /// Number of runs (the duration is the mean).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Where to write the output packet (data_out).
    #[arg(long)]
    pub data_out: Option<PathBuf>,
    /// Print every map's contents after the run.
    #[arg(long)]
    pub maps_dump: bool,
    /// Skip verification by bpfvet's verifier before running.
    #[arg(long)]
    pub no_verify: bool,
    /// Run native code from the JIT (a program it declines runs on the
    /// interpreter, with a note saying why).
    #[arg(long)]
    pub jit: bool,
    /// Run on N OS threads at once against the same maps, thread i being
    /// CPU i (its slot of per-CPU maps, bpf_get_smp_processor_id); each
    /// makes --repeat runs. Prints each thread's and the total runs/s.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Run on a virtual clock and, after the runs, move it forward by
    /// DURATION (e.g. 10ms, 2s, 500us, 250ns; a bare number is ns): every
    /// bpf_timer that expires on the way runs its callback then, as the
    /// kernel would after the program returned. bpf_ktime_get_ns reads the
    /// virtual clock (it stands still during the runs).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ns)]
    pub advance_time: Option<u64>,
}

/// "10ms", "2s", "500us", "250ns" or a bare number of nanoseconds.
fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 10ms, 2s, 500us, 250ns)"))?;
    let scale = match unit.trim() {
        "" | "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        u => return Err(format!("unknown unit {u:?} (ns, us, ms, s)")),
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("{s:?} is too long a duration"))
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn retval_name(t: ProgType, r: u32) -> &'static str {
    match (t, r) {
        (ProgType::XDP, 0) => "XDP_ABORTED",
        (ProgType::XDP, 1) => "XDP_DROP",
        (ProgType::XDP, 2) => "XDP_PASS",
        (ProgType::XDP, 3) => "XDP_TX",
        (ProgType::XDP, 4) => "XDP_REDIRECT",
        (ProgType::SCHED_CLS | ProgType::SCHED_ACT, 0) => "TC_ACT_OK",
        (ProgType::SCHED_CLS | ProgType::SCHED_ACT, 2) => "TC_ACT_SHOT",
        (ProgType::SCHED_CLS | ProgType::SCHED_ACT, u32::MAX) => "TC_ACT_UNSPEC",
        _ => "",
    }
}

/// The program `--prog` names, or the object's only program.
fn pick_program(obj: &bpfvet_object::Object, wanted: Option<&str>) -> anyhow::Result<usize> {
    let names = || {
        obj.programs
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match wanted {
        Some(w) => obj
            .programs
            .iter()
            .position(|p| p.name == w)
            .with_context(|| format!("no program {w:?} (programs: {})", names())),
        None if obj.programs.len() == 1 => Ok(0),
        None if obj.programs.is_empty() => anyhow::bail!("the object has no programs"),
        None => anyhow::bail!(
            "the object has {} programs; choose one with --prog ({})",
            obj.programs.len(),
            names()
        ),
    }
}

/// Which accesses of the compiled program keep their run-time check.
fn checks_note(vm: &Vm, idx: usize) -> &'static str {
    if vm.programs[idx].proof.is_empty() {
        " (unverified: every memory access checked at run time)"
    } else {
        " (accesses the verifier proved run unchecked)"
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // The loader's errors name the file already.
    let obj = bpfvet_object::Object::from_file(&args.object, &Default::default())?;
    let idx = pick_program(&obj, args.prog.as_deref())?;
    let name = obj.programs[idx].name.clone();
    if let Some(why) = &obj.programs[idx].refused {
        anyhow::bail!("{name}: the object loader refused this program: {why}");
    }
    let mut proof = None;
    if !args.no_verify {
        match Vm::verify(&obj, idx) {
            Ok(p) => proof = Some(p),
            Err(e) => {
                // A verdict, not a usage error: exit 1, as `verify` does.
                eprintln!(
                    "bpfvet: {name} was not run: {e}\n\
                 (bpfvet runs only programs its verifier accepts; --no-verify runs it unverified)"
                );
                return Ok(ExitCode::from(1));
            }
        }
    }
    let data = match &args.data_in {
        Some(p) => std::fs::read(p).with_context(|| format!("reading {}", p.display()))?,
        None => Vec::new(),
    };
    let ctx = match &args.ctx_in {
        Some(p) => Some(std::fs::read(p).with_context(|| format!("reading {}", p.display()))?),
        None => None,
    };
    // A machine with a CPU per thread, and at least the host's (so a
    // one-thread run sees per-CPU maps as the kernel's).
    let mut vm = Vm::load_cpus(&obj, bpfvet_maps::possible_cpus().max(args.threads))?;
    if args.advance_time.is_some() {
        vm.use_virtual_clock();
    }
    // Both engines run the accesses the verifier proved without run-time
    // checks; --no-verify keeps them all.
    if let Some(p) = proof {
        vm.set_proof(idx, p);
    }
    let vm = vm;
    let t = vm.programs[idx].prog_type;
    let input = TestRunInput {
        data: &data,
        ctx: ctx.as_deref(),
        repeat: args.repeat,
        cpu: 0,
    };
    // Without ctx_in, these types' context pointer is NULL.
    let explain = |e: VmError| match e {
        VmError::OutOfBounds { addr, .. }
            if addr < 0x1000
                && ctx.is_none()
                && matches!(t, ProgType::SYSCALL | ProgType::RAW_TRACEPOINT) =>
        {
            anyhow::anyhow!(
                "{name}: {t} programs read their context from --ctx-in, and none was \
                 given ({e})"
            )
        }
        e => e.into(),
    };
    let out = if args.threads > 1 {
        run_threaded(&vm, idx, &name, &input, &args, explain)?
    } else {
        let jit = args.jit.then(|| Jit::compile(&vm));
        let engine: &dyn Engine = match &jit {
            Some(jit) => {
                match jit.declined(idx) {
                    Some(why) => eprintln!("note: the JIT declines {name}: {why}; interpreting"),
                    None => eprintln!(
                        "note: running native code from the JIT{}",
                        checks_note(&vm, idx)
                    ),
                }
                jit
            }
            None => &Interpreter,
        };
        test_run_with(engine, &vm, idx, &input).map_err(explain)?
    };
    println!("retval: {} {}", out.retval, retval_name(t, out.retval));
    println!(
        "duration: {} ns per run ({} runs)",
        out.duration_ns,
        args.repeat.max(1)
    );
    if !data.is_empty() {
        let same = if out.data_out == data {
            " (unchanged)"
        } else {
            ""
        };
        println!("data_out: {} bytes{same}", out.data_out.len());
    }
    if !out.ctx_out.is_empty() && ctx.is_some() {
        println!("ctx_out: {}", hex(&out.ctx_out));
    }
    if let Some(p) = &args.data_out {
        std::fs::write(p, &out.data_out).with_context(|| format!("writing {}", p.display()))?;
    }
    for line in &out.output.trace {
        println!("trace_printk: {}", line.trim_end());
    }
    for ev in &out.output.perf_events {
        println!("perf_event_output: {}", hex(ev));
    }
    match args.advance_time {
        Some(ns) => {
            // Callbacks run on the interpreter (compiled code starts only at
            // a program's first instruction).
            let fired = vm
                .advance_time(&Interpreter, ns)
                .with_context(|| format!("{name}: running timer callbacks"))?;
            println!(
                "timers: virtual clock advanced {ns} ns, {fired} callbacks ran, {} still armed",
                vm.armed_timers()
            );
        }
        None if vm.armed_timers() > 0 => eprintln!(
            "note: {} bpf_timer(s) armed and not fired: the run ended first \
             (--advance-time runs them on a virtual clock)",
            vm.armed_timers()
        ),
        None => {}
    }
    if args.maps_dump {
        dump_maps(&vm);
    }
    Ok(ExitCode::SUCCESS)
}

/// `--threads`: every thread's figures, then the total; the output
/// shown after them (retval, data_out, ...) is thread 0's.
fn run_threaded(
    vm: &Vm,
    idx: usize,
    name: &str,
    input: &TestRunInput<'_>,
    args: &Args,
    explain: impl Fn(VmError) -> anyhow::Error,
) -> anyhow::Result<TestRunOutput> {
    let r = test_run_threads(vm, idx, input, args.threads, args.jit).map_err(explain)?;
    if args.jit {
        match &r.declined {
            Some(why) => eprintln!("note: the JIT declines {name}: {why}; interpreting"),
            None => eprintln!(
                "note: running native code from the JIT{}",
                checks_note(vm, idx)
            ),
        }
    }
    let runs = args.repeat.max(1);
    for (cpu, out) in r.per_thread.iter().enumerate() {
        println!(
            "thread {cpu} (cpu {cpu}): retval {}, {:.0} runs/s ({} ns per run)",
            out.retval,
            1e9 / out.duration_ns.max(1) as f64,
            out.duration_ns
        );
    }
    println!(
        "total: {} threads x {runs} runs in {:.3} ms: {:.0} runs/s",
        args.threads,
        r.wall_ns as f64 / 1e6,
        r.total_runs_per_sec(runs)
    );
    let mut per_thread = r.per_thread;
    let mut first = per_thread.swap_remove(0);
    // Every thread's trace and perf output, in thread order.
    for other in per_thread {
        first.output.trace.extend(other.output.trace);
        first.output.perf_events.extend(other.output.perf_events);
    }
    Ok(first)
}

fn dump_maps(vm: &Vm) {
    for (name, m) in vm.map_names.iter().zip(&vm.maps) {
        let a = m.attr();
        println!(
            "map {name} ({}, key {} B, value {} B):",
            a.map_type, a.key_size, a.value_size
        );
        if let Some(rb) = m.as_any().downcast_ref::<bpfvet_maps::RingBuf>() {
            rb.consume(&mut |sample| {
                println!("  sample: {}", hex(sample));
                true
            });
            continue;
        }
        let mut key: Option<Vec<u8>> = None;
        let mut next = vec![0u8; a.key_size as usize];
        let mut value = vec![0u8; a.syscall_value_size()];
        let mut shown = 0;
        while m.get_next_key(key.as_deref(), &mut next).is_ok() {
            if m.lookup(&next, &mut value, 0).is_ok()
                && (a.map_type.0 != 2 || value.iter().any(|&b| b != 0))
            {
                println!("  {} => {}", hex(&next), hex(&value));
                shown += 1;
            }
            key = Some(next.clone());
            if shown >= 1000 {
                println!("  ... (first 1000 entries)");
                break;
            }
        }
    }
}
