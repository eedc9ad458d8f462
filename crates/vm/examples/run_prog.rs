//! Runs one program of an object on one frame many times with the
//! interpreter (or bpfvet's JIT with `jit` last) and prints ns per run:
//! `cargo run --release -p bpfvet-vm --example run_prog -- OBJ PROG FRAME
//! [REPEAT [jit|jit-checked|interp]]` (for profiling). `jit` verifies the
//! program first and uses the proof, as `bpfvet run --jit` does;
//! `jit-checked` keeps every run-time check; `interp` is the interpreter on
//! the verified program, as `bpfvet run` runs it (no mode: unverified).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: run_prog OBJ PROG FRAME [REPEAT [jit|jit-checked]]".into());
    }
    let obj = bpfvet_object::Object::from_file(&args[1], &Default::default())?;
    let mut vm = bpfvet_vm::Vm::load(&obj)?;
    let idx = vm.program_index(&args[2])?;
    let mode = args.get(5).map(String::as_str);
    if matches!(mode, Some("jit" | "interp")) {
        vm.verify_program(&obj, idx)?;
    }
    let vm = vm;
    let data = std::fs::read(&args[3])?;
    let repeat = args
        .get(4)
        .map(|r| r.parse())
        .transpose()?
        .unwrap_or(100_000);
    let input = bpfvet_vm::TestRunInput {
        data: &data,
        ctx: None,
        repeat,
        cpu: 0,
    };
    let out = if let Some(m @ ("jit" | "jit-checked")) = mode {
        let jit = if m == "jit" {
            bpfvet_vm::Jit::compile(&vm)
        } else {
            bpfvet_vm::Jit::compile_checked(&vm)
        };
        if let Some(why) = jit.declined(idx) {
            return Err(format!("the JIT declines {}: {why}", args[2]).into());
        }
        bpfvet_vm::test_run_with(&jit, &vm, idx, &input)?
    } else {
        bpfvet_vm::test_run(&vm, idx, &input)?
    };
    println!(
        "retval {} duration {} ns per run",
        out.retval, out.duration_ns
    );
    Ok(())
}
