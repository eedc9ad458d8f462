//! Differential fuzzing against the host kernel's verifier (Linux 6.18, the
//! oracle): random plausible programs (ALU, ctx loads, stack spills/fills,
//! map lookups with and without NULL checks, packet access with and without
//! data_end checks, forward branches, bounded loops, helper calls, and the
//! feature blocks of `gen::Features`: bpf-to-bpf calls, dead-path calls,
//! tail calls, callbacks, helper arguments of every kind, more program
//! types, pointer ALU, atomics, variable stack offsets, loops with bodies)
//! go through bpfvet and the kernel. The test fails on a bpfvet panic or hang
//! and on any program bpfvet accepts and the kernel rejects that is not in
//! [`KNOWN_UNSOUND`]; other disagreements are counted and printed (they are
//! tracked in bench/verifier_fuzz/FINDINGS.md).
//!
//! Environment: `BPFVET_FUZZ_PROGRAMS` (default 500), `BPFVET_FUZZ_SEED`
//! (default [`SEED`]), `BPFVET_FUZZ_FEATURES` (a `gen::Features` bit set;
//! default all), `BPFVET_FUZZ_FINDINGS=<path>` writes the findings
//! report there (report mode: no allow-list, nothing asserted).
//!
//! Needs root and a working bpf(2); prints `SKIP:` otherwise.

mod random_diff;

use bpfvet_object::Object;
use bpfvet_verifier::{verify, Options};
use proptest::prelude::*;
use random_diff::diff::{cause, ours_text, theirs_text, Class};
use random_diff::oracle::Oracle;
use std::time::Duration;

const SEED: u64 = 0x6272_6666_757a_7a31;

/// Unsound accepts known at the committed seed: (program index, cause),
/// each listed with its minimal program in FINDINGS.md. Empty: the causes
/// found so far (scalar OP= pointer, sign-extending ctx loads) are fixed, so
/// any unsound accept fails the test.
const KNOWN_UNSOUND: &[(usize, &str)] = &[];

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

#[test]
fn random_programs_match_host_kernel() {
    let kernel = match Oracle::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    let n = env_u64("BPFVET_FUZZ_PROGRAMS").unwrap_or(500);
    let seed = env_u64("BPFVET_FUZZ_SEED").unwrap_or(SEED);
    let started = std::time::Instant::now();
    let features = match env_u64("BPFVET_FUZZ_FEATURES") {
        Some(bits) => random_diff::gen::Features(bits as u32),
        None => random_diff::gen::Features::ALL,
    };
    let run = random_diff::run(&kernel, seed, n, features);
    println!("{n} programs in {:?}", started.elapsed());
    for c in Class::ALL {
        println!("{:>5}  {}", run.count(c), c.name());
    }
    println!(
        "kernel accepted {} of {}",
        run.kernel_accepted(),
        run.results.len()
    );
    if let Ok(path) = std::env::var("BPFVET_FUZZ_FINDINGS") {
        let text = random_diff::report(&kernel, &run);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{path}: {e}"));
        println!("wrote {path}");
        return;
    }
    let mut failures = Vec::new();
    for c in [Class::Panic, Class::Hang] {
        for i in run.of(c) {
            failures.push(format!(
                "#{i}: {}: {}\n{}",
                c.name(),
                ours_text(&run.results[i].ours),
                random_diff::listing(&run.programs[i])
            ));
        }
    }
    let default_run = seed == SEED;
    for i in run.of(Class::Unsound) {
        let r = &run.results[i];
        let key = cause(r);
        if default_run && KNOWN_UNSOUND.iter().any(|&(k, _)| k == i) {
            println!("known unsound #{i}: kernel `{key}`");
            continue;
        }
        let small =
            random_diff::minimise::minimise(&kernel, &run.programs[i], Class::Unsound, &key, 600);
        failures.push(format!(
            "#{i} ({}): bpfvet {}, kernel {}; minimised:\n{}",
            random_diff::diff::prog_type_name(small.prog_type),
            ours_text(&r.ours),
            theirs_text(&r.theirs),
            random_diff::listing(&small)
        ));
    }
    assert!(
        failures.is_empty(),
        "{} new findings (seed {seed:#x}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The fuzzer's agent inside a guest kernel (`random_diff::guest`): the
/// guest boots this executable as init with `BPFVET_FUZZ_GUEST_AGENT=1`.
#[test]
#[ignore = "the guest's init, started by batch.sh KERNEL=..."]
fn fuzz_guest_agent() {
    if std::env::var(random_diff::guest::AGENT_ENV).is_err() {
        println!("SKIP: not in a guest (batch.sh KERNEL=6.18 boots one)");
        return;
    }
    random_diff::guest::agent();
}

/// A program survives the trip to a guest agent: what the agent rebuilds
/// from the request line is the object the host's bpfvet verified.
#[test]
fn guest_requests_carry_the_program() {
    use random_diff::gen::{program_with, Features};
    let mut seen_attach = false;
    let mut seen_funcs = false;
    let mut seen_flags = false;
    let features = Features(Features::ALL.0 | Features::ALIGNMENT);
    for i in 0..300 {
        let p = program_with(0x6775_6573_7435, i, features);
        let obj = random_diff::diff::object(std::slice::from_ref(&p));
        let line = random_diff::guest::encode(&obj.programs[0]);
        let back = random_diff::guest::decode(line.trim_end()).expect("a request line decodes");
        let again = random_diff::diff::object(std::slice::from_ref(&back));
        let (a, b) = (&obj.programs[0], &again.programs[0]);
        assert_eq!(a.insns, b.insns, "program {i}");
        assert_eq!(
            (a.prog_type, a.expected_attach_type, &a.section, a.sleepable),
            (b.prog_type, b.expected_attach_type, &b.section, b.sleepable),
            "program {i}"
        );
        assert_eq!(a.prog_flags, b.prog_flags, "program {i}");
        seen_flags |= a.prog_flags != 0;
        let offs = |p: &bpfvet_object::Program| {
            p.func_info
                .iter()
                .map(|f| (f.insn_off, f.type_id, f.name.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(offs(a), offs(b), "program {i}");
        assert_eq!(obj.maps.len(), again.maps.len(), "program {i}");
        assert_eq!(a.struct_ops, b.struct_ops, "program {i}");
        seen_attach |= a.expected_attach_type.is_some();
        seen_funcs |= !a.func_info.is_empty();
    }
    assert!(
        seen_attach && seen_funcs && seen_flags,
        "the sample has tracing programs, func_info and prog_flags"
    );
    assert!(random_diff::guest::decode("prog 6 - - 0 - 0").is_none());
}

/// The resumable batch runner behind bench/verifier_fuzz/batch.sh
/// (`--ignored`): `BPFVET_FUZZ_DIR` (output directory, required),
/// `BPFVET_FUZZ_BATCHES` (50), `BPFVET_FUZZ_BATCH_SIZE` (2000),
/// `BPFVET_FUZZ_SEED` (base seed), `BPFVET_FUZZ_SWARM` (1: each batch draws
/// a feature subset; 0: all features), `BPFVET_FUZZ_MINIMISE` (tries per
/// minimisation, 300). Fails when a batch holds an unsound accept or a
/// bpfvet panic or hang, after writing everything.
#[test]
#[ignore = "long run: bench/verifier_fuzz/batch.sh"]
fn fuzz_batches() {
    let kernel = match Oracle::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    let Some(cfg) = batch_config_from_env(300) else {
        return;
    };
    random_diff::batch::run_batches(&kernel, &cfg).unwrap_or_else(|e| panic!("{e}"));
    let report = random_diff::batch::report(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let bad: Vec<&str> = report
        .lines()
        .filter(|l| {
            l.starts_with("| unsound |") || l.starts_with("| panic |") || l.starts_with("| hang |")
        })
        .collect();
    assert!(bad.is_empty(), "findings:\n{}", bad.join("\n"));
}

/// The batch run `BPFVET_FUZZ_*` describes (see `fuzz_batches`), None
/// (after a visible SKIP) without an output directory.
fn batch_config_from_env(default_minimise_tries: u64) -> Option<random_diff::batch::Config> {
    let Ok(dir) = std::env::var("BPFVET_FUZZ_DIR") else {
        println!("SKIP: BPFVET_FUZZ_DIR is not set");
        return None;
    };
    Some(random_diff::batch::Config {
        dir: dir.into(),
        base_seed: env_u64("BPFVET_FUZZ_SEED").unwrap_or(SEED),
        batches: env_u64("BPFVET_FUZZ_BATCHES").unwrap_or(50),
        size: env_u64("BPFVET_FUZZ_BATCH_SIZE").unwrap_or(2000),
        swarm: env_u64("BPFVET_FUZZ_SWARM").unwrap_or(1) != 0,
        minimise_tries: env_u64("BPFVET_FUZZ_MINIMISE").unwrap_or(default_minimise_tries) as usize,
    })
}

/// bpfvet again on the programs of a finished batch directory, against
/// the kernel answers its TSVs recorded (no kernel needed: for checking a
/// fix on a guest run without booting the guest again). Same environment
/// as `fuzz_batches` (batch.sh `RESCORE=1`); prints counts per class and
/// the disagreements left by cause.
#[test]
#[ignore = "batch.sh RESCORE=1"]
fn fuzz_rescore() {
    let Some(cfg) = batch_config_from_env(0) else {
        return;
    };
    let text = random_diff::batch::rescore(&cfg).unwrap_or_else(|e| panic!("{e}"));
    println!("{text}");
    assert!(
        !text.contains("| unsound |"),
        "unsound accepts against the recorded kernel answers"
    );
}

/// Mutation of real programs behind bench/verifier_fuzz/mutate.sh
/// (`--ignored`): `BPFVET_MUTATE_DIR` (output, required),
/// `BPFVET_MUTATE_OBJECTS` (`:`-separated directories or object files),
/// `BPFVET_MUTATE_N` (mutants per program, 20), `BPFVET_MUTATE_MAX_INSNS`
/// (longer programs skipped, 3000), `BPFVET_FUZZ_SEED`, `BPFVET_FUZZ_MINIMISE`
/// (tries per minimisation, 300). Resumable: one `mut-UNIT.tsv` per object.
/// Fails on an unsound accept, a panic or a hang in any unit of the
/// directory, after writing everything.
#[test]
#[ignore = "long run: bench/verifier_fuzz/mutate.sh"]
fn mutate_real_programs() {
    let kernel = match Oracle::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    let Ok(dir) = std::env::var("BPFVET_MUTATE_DIR") else {
        println!("SKIP: BPFVET_MUTATE_DIR is not set");
        return;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let list = std::env::var("BPFVET_MUTATE_OBJECTS")
        .unwrap_or_else(|_| root.join("../../tests/progs").display().to_string());
    let mut objects = Vec::new();
    for part in list.split(':').filter(|s| !s.is_empty()) {
        let p = std::path::PathBuf::from(part);
        if p.is_dir() {
            objects.extend(random_diff::mutate::objects_in(&p));
        } else {
            objects.push(p);
        }
    }
    let cfg = random_diff::mutate::Config {
        dir: dir.into(),
        objects,
        mutants_per_prog: env_u64("BPFVET_MUTATE_N").unwrap_or(20),
        seed: env_u64("BPFVET_FUZZ_SEED").unwrap_or(SEED),
        max_insns: env_u64("BPFVET_MUTATE_MAX_INSNS").unwrap_or(3000) as usize,
        minimise_tries: env_u64("BPFVET_FUZZ_MINIMISE").unwrap_or(300) as usize,
    };
    let counts = random_diff::mutate::run(&kernel, &cfg).unwrap_or_else(|e| panic!("{e}"));
    for (c, n) in &counts {
        println!("{n:>7}  {}", c.name());
    }
    let bad: usize = [Class::Unsound, Class::Panic, Class::Hang]
        .iter()
        .map(|c| counts.get(c).copied().unwrap_or(0))
        .sum();
    assert_eq!(
        bad,
        0,
        "unsound/panic/hang mutants: see {}/mutants",
        cfg.dir.display()
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Arbitrary instruction bytes (opcodes drawn from the valid ones half
    /// of the time) never make the verifier panic; it returns a verdict.
    #[test]
    fn raw_instructions_never_panic(
        slots in proptest::collection::vec(
            (any::<bool>(), any::<u8>(), 0u8..16, 0u8..16, -8i16..8, any::<i32>()),
            1..24,
        ),
        ty in 0usize..3,
    ) {
        const CODES: [u8; 16] = [
            0x07, 0x0f, 0xb7, 0xbf, 0x61, 0x79, 0x63, 0x7b, 0x72, 0x15, 0x2d, 0xa6, 0x85,
            0x95, 0x18, 0x05,
        ];
        let insns: Vec<bpfvet_isa::Insn> = slots
            .iter()
            .map(|&(valid, code, dst, src, off, imm)| {
                let code = if valid { CODES[code as usize % CODES.len()] } else { code };
                bpfvet_isa::Insn::new(code, dst, src, off, imm)
            })
            .collect();
        let ty = [
            bpfvet_isa::uapi::ProgType::SOCKET_FILTER,
            bpfvet_isa::uapi::ProgType::XDP,
            bpfvet_isa::uapi::ProgType::SCHED_CLS,
        ][ty];
        let obj = Object::single_program("raw", ty, insns);
        let opts = Options {
            log_level: 2,
            timeout: Some(Duration::from_secs(2)),
            ..Options::default()
        };
        let out = verify(&obj, 0, &opts);
        // A tiny program either passes or names why not.
        if let bpfvet_verifier::Verdict::Rejected { error, .. } = &out.verdict {
            prop_assert!(!error.is_empty());
        }
    }
}

/// Prints one generated program and both verdicts (`--ignored`):
/// `BPFVET_FUZZ_SHOW` (its index), `BPFVET_FUZZ_SEED`,
/// `BPFVET_FUZZ_FEATURES` as for the smoke test.
#[test]
#[ignore = "debugging aid"]
fn show_program() {
    let Some(i) = env_u64("BPFVET_FUZZ_SHOW") else {
        println!("SKIP: BPFVET_FUZZ_SHOW is not set");
        return;
    };
    let seed = env_u64("BPFVET_FUZZ_SEED").unwrap_or(SEED);
    let features = env_u64("BPFVET_FUZZ_FEATURES").map_or(random_diff::gen::Features::ALL, |b| {
        random_diff::gen::Features(b as u32)
    });
    let p = random_diff::gen::program_with(seed, i, features);
    println!(
        "{}\n{}",
        random_diff::diff::prog_type_name(p.prog_type),
        random_diff::listing(&p)
    );
    if let Ok(kernel) = Oracle::open() {
        let r = random_diff::diff::diff_one(&kernel, &p);
        println!(
            "kernel: {}\nbpfvet: {}",
            theirs_text(&r.theirs),
            ours_text(&r.ours)
        );
    }
}

/// The func_info type ids `gen/prog_blocks.rs` uses name the functions
/// and decl tags the object BTF lays out for them.
#[test]
fn program_btf_ids_name_their_functions() {
    use bpfvet_object::btf::{Btf, Kind};
    use random_diff::gen::btf_objects as b;
    let btf = Btf::from_bytes(&b::object_btf()).expect("object BTF parses");
    for (id, name, linkage) in [
        (b::T_EXC, "fz_exc", 1),
        (b::T_EXC_STATIC, "fz_exc_static", 0),
        (b::T_MAIN_EXC, "fz_main", 0),
        (b::T_MAIN_MISSING, "fz_main_missing", 0),
        (b::T_MAIN_STATIC, "fz_main_static", 0),
        (b::T_MAIN_TWO, "fz_main_two", 0),
        (b::T_SELF, "fz_self", 1),
        (b::T_VOID, "fz_void", 0),
        (b::T_GLOBAL, "fz_global", 1),
    ] {
        let t = btf.type_by_id(id).expect("type exists");
        assert_eq!(
            (t.kind, btf.name(t), t.linkage()),
            (Kind::Func, name, linkage)
        );
    }
    let tags: Vec<&str> = btf.decl_tags_of(b::T_MAIN_TWO).collect();
    assert_eq!(
        tags,
        [
            "exception_callback:fz_exc",
            "exception_callback:fz_exc_static"
        ]
    );
}

/// The struct_ops range of the fuzz BTF (ids 81-90) holds the struct_ops
/// maps' value types where `gen/structops_blocks.rs` expects them, and the
/// BTF reaches its last id, whichever helpers' types precede it.
#[test]
fn struct_ops_btf_ids_name_their_types() {
    use bpfvet_object::btf::{Btf, Kind};
    use random_diff::gen::btf_objects as b;
    let btf = Btf::from_bytes(&b::object_btf()).expect("object BTF parses");
    for (id, name) in [
        (b::T_DUMMY_OPS, "bpf_dummy_ops"),
        (b::T_TCP_CA_OPS, "tcp_congestion_ops"),
    ] {
        let t = btf.type_by_id(id).expect("type exists");
        assert_eq!((t.kind, btf.name(t)), (Kind::Struct, name));
    }
    assert!(btf.type_by_id(b::T_STRUCT_OPS_LAST).is_some());
}

/// A generated struct_ops program's `# struct_ops:` line names the same
/// attach ids when a case is read back (the types by name, the members by
/// index), for valid and wrong targets alike.
#[test]
fn struct_ops_case_directive_gives_the_same_ids() {
    use random_diff::gen::{program_with, structops_blocks, Features};
    let Some(vmlinux) = std::fs::read(bpfvet_object::HOST_VMLINUX)
        .ok()
        .and_then(|b| bpfvet_object::btf::Btf::from_bytes(&b).ok())
    else {
        println!("SKIP: no vmlinux BTF");
        return;
    };
    let mut seen = 0;
    for i in 0..300 {
        let p = program_with(SEED, i, Features(Features::STRUCT_OPS));
        let Some(m) = p.struct_ops else { continue };
        seen += 1;
        let line = structops_blocks::case_directive(&m);
        let (t, member) = line.split_once(' ').expect("type and member");
        let back = bpfvet_object::StructOpsMember::by_ids(&vmlinux, t, member);
        assert_eq!(back.and_then(|b| b.raw), m.raw, "program {i}: {line}");
    }
    assert!(seen > 50, "only {seen} struct_ops programs in 300");
}

/// Load limits checked around the exploration: 64 distinct maps and 256
/// distinct kfuncs (at load) and 1024 direct tail calls (after it, the JIT's poke table): both
/// verifiers give the same verdict and line on each side of the limit.
#[test]
fn kfunc_and_tail_call_limits_match_host_kernel() {
    use random_diff::gen::{prog_blocks, GenProgram};
    let kernel = match Oracle::open() {
        Ok(k) => k,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    let program = |insns| GenProgram::plain(bpfvet_isa::uapi::ProgType::SCHED_CLS, insns);
    let mut shapes = vec![
        (
            "1024 tail calls",
            prog_blocks::tail_calls(1024, false),
            None,
        ),
        (
            "1025 tail calls",
            prog_blocks::tail_calls(1025, false),
            Some("adding tail call poke descriptor failed"),
        ),
        // Out-of-range and variable keys take no direct jump.
        (
            "1030 tail calls, 11 indirect",
            prog_blocks::tail_calls(1030, true),
            None,
        ),
    ];
    // Distinct maps: 64 fit, the 65th is refused where it is named.
    let map_refs = |n: i32| {
        let mut insns = Vec::new();
        for k in 0..n {
            let map = prog_blocks::MANY_MAPS_BASE + k;
            insns.push(bpfvet_isa::Insn::new(0x18, 1, 5, 0, map));
            insns.push(bpfvet_isa::Insn::new(0, 0, 0, 0, 0));
        }
        insns.push(bpfvet_isa::Insn::new(0xb7, 0, 0, 0, 0));
        insns.push(bpfvet_isa::Insn::new(0x95, 0, 0, 0, 0));
        insns
    };
    shapes.push(("64 maps", map_refs(64), None));
    shapes.push((
        "65 maps",
        map_refs(65),
        Some("The total number of maps per program has reached the limit of 64"),
    ));
    match (
        prog_blocks::kfunc_calls(256, true),
        prog_blocks::kfunc_calls(257, false),
    ) {
        (Some(at), Some(past)) => {
            shapes.push(("256 kfuncs", at, None));
            shapes.push((
                "257 kfuncs",
                past,
                Some("too many different kernel function calls"),
            ));
        }
        _ => println!("SKIP: kfunc limit (no vmlinux BTF or kallsyms)"),
    }
    for (what, insns, error) in shapes {
        let r = random_diff::diff::diff_one(&kernel, &program(insns));
        assert_eq!(r.class, Class::Agree, "{what}: {}", cause(&r));
        let kernel_error = match &r.theirs {
            random_diff::diff::Theirs::Rejected(e) => Some(e.as_str()),
            _ => None,
        };
        assert_eq!(kernel_error, error, "{what}: {}", theirs_text(&r.theirs));
    }
}
