//! `bpfvet run`: one program run with BPF_PROG_TEST_RUN semantics in the
//! bpfvet runtime.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use bpfvet_isa::uapi::ProgType;
use bpfvet_vm::{test_run_with, Engine, Interpreter, Jit, TestRunInput, Vm};

#[derive(clap::Args)]
pub struct Args {
    /// The BPF object file.
    pub object: PathBuf,
    /// Program (function) name.
    #[arg(long)]
    pub prog: String,
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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let obj = bpfvet_object::Object::from_file(&args.object, &Default::default())
        .with_context(|| format!("loading {}", args.object.display()))?;
    let idx = obj
        .programs
        .iter()
        .position(|p| p.name == args.prog)
        .with_context(|| {
            let names: Vec<_> = obj.programs.iter().map(|p| p.name.as_str()).collect();
            format!(
                "no program {:?} (programs: {})",
                args.prog,
                names.join(", ")
            )
        })?;
    if let Some(why) = &obj.programs[idx].refused {
        anyhow::bail!(
            "{}: the object loader refused this program: {why}",
            args.prog
        );
    }
    if !args.no_verify {
        Vm::verify(&obj, idx).context("--no-verify runs it anyway")?;
    }
    let data = match &args.data_in {
        Some(p) => std::fs::read(p).with_context(|| format!("reading {}", p.display()))?,
        None => Vec::new(),
    };
    let ctx = match &args.ctx_in {
        Some(p) => Some(std::fs::read(p).with_context(|| format!("reading {}", p.display()))?),
        None => None,
    };
    let vm = Vm::load(&obj)?;
    let jit = args.jit.then(|| Jit::compile(&vm));
    let engine: &dyn Engine = match &jit {
        Some(jit) => {
            match jit.declined(idx) {
                Some(why) => eprintln!("note: the JIT declines {}: {why}; interpreting", args.prog),
                None => eprintln!("note: running native code from the JIT"),
            }
            jit
        }
        None => &Interpreter,
    };
    let out = test_run_with(
        engine,
        &vm,
        idx,
        &TestRunInput {
            data: &data,
            ctx: ctx.as_deref(),
            repeat: args.repeat,
        },
    )?;
    let t = vm.programs[idx].prog_type;
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
    if args.maps_dump {
        dump_maps(&vm);
    }
    Ok(ExitCode::SUCCESS)
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
