//! `bpfvet dump`: the maps and programs of .bpf.o files, optionally
//! disassembled in verifier-log syntax with the C source lines above.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use crate::cmd_verify::input::{expand_inputs, not_bpf_object_reason, Input};
use crate::cmd_verify::{job_count, ordered_parallel, thread_pool};
use std::process::ExitCode;

use bpfvet_isa::disasm::{write_log_line, Symbols};
use bpfvet_isa::Ld64Kind;
use bpfvet_object::btf::Btf;
use bpfvet_object::{LoadOptions, MapDef, Object, Program, TargetBtf};
use serde_json::{json, Value};

#[derive(clap::Args)]
pub struct Args {
    /// Object files, or directories to search for *.o files.
    #[arg(required = true)]
    pub objects: Vec<PathBuf>,
    /// Print each program's instructions as the verifier log does.
    #[arg(long)]
    pub disasm: bool,
    /// With --disasm: print the C source line (from BTF line_info) above
    /// each group of instructions. Implies --disasm.
    #[arg(long)]
    pub source: bool,
    /// Machine-readable output, one JSON document for all objects.
    #[arg(long)]
    pub json: bool,
    /// Target BTF for CO-RE relocations and ksyms (default: the host's
    /// /sys/kernel/btf/vmlinux when present).
    #[arg(long, value_name = "PATH", conflicts_with = "no_core")]
    pub btf: Option<PathBuf>,
    /// Do not resolve CO-RE relocations against any kernel.
    #[arg(long)]
    pub no_core: bool,
    /// Objects read at once [default: all cores]; the output is the same.
    #[arg(short = 'j', long)]
    pub jobs: Option<usize>,
    #[arg(long, value_name = "LOADER", default_value = "auto", value_parser = crate::loader_arg::parse, help = crate::loader_arg::HELP)]
    pub loader: crate::loader_arg::LoaderArg,
}

/// What the kernel knows when it prints a loaded program: kfunc names
/// from vmlinux BTF, and a callback's LD_IMM64 as its raw offset.
struct KernelView<'a> {
    vmlinux: Option<&'a Btf>,
}

impl Symbols for KernelView<'_> {
    fn kfunc_name(&self, btf_id: i32, btf_fd_idx: i16) -> Option<&str> {
        let name = self
            .vmlinux
            .filter(|_| btf_fd_idx == 0)?
            .name_of(btf_id as u32);
        (!name.is_empty()).then_some(name)
    }

    fn ld_imm64_value(&self, kind: Ld64Kind, imm: i32, _next_imm: i32) -> Option<u64> {
        (kind == Ld64Kind::Func).then_some(imm as u32 as u64)
    }
}

/// One file's part of the output, or why it has none.
enum Dumped {
    Text(String),
    Json(Value),
    Skipped(String),
    Failed(String),
}

fn dump_file(args: &Args, input: &Input, opts: &LoadOptions, syms: Option<&KernelView>) -> Dumped {
    let f = &input.path;
    let syms = syms.map(|s| s as &dyn Symbols);
    let bytes = match std::fs::read(f) {
        Ok(b) => b,
        Err(e) => return Dumped::Failed(format!("failed to read '{}': {e}", f.display())),
    };
    if let Some(why) = not_bpf_object_reason(&bytes) {
        let msg = format!("'{}' is not a BPF object file: {why}", f.display());
        return if input.named {
            Dumped::Failed(msg)
        } else {
            Dumped::Skipped(msg)
        };
    }
    match Object::parse(&bytes, f, opts) {
        Ok(obj) if args.json => Dumped::Json(object_json(&obj, syms, args.source)),
        Ok(obj) => {
            let mut text = String::new();
            write_object(&mut text, &obj, syms, args.source);
            Dumped::Text(text)
        }
        Err(e) => Dumped::Failed(e.to_string()),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let inputs = expand_inputs(&args.objects)?;
    let mut opts = LoadOptions {
        loader: args.loader.0,
        ..Default::default()
    };
    if args.no_core {
        opts.target_btf = TargetBtf::None;
    } else if let Some(p) = &args.btf {
        opts.target_btf = TargetBtf::Path(p.clone());
    }
    opts.preload_target()?;
    let disasm = args.disasm || args.source;
    let vmlinux = match &opts.target_btf {
        TargetBtf::Loaded(b) => Some(b.clone()),
        _ => None,
    };
    let syms = KernelView {
        vmlinux: vmlinux.as_deref(),
    };
    let syms = disasm.then_some(&syms);
    let pool = thread_pool(job_count(args.jobs))?;
    let mut failed = false;
    let mut dumped = vec![false; args.objects.len()];
    let mut docs = Vec::new();
    let mut stdout = std::io::stdout().lock();
    let mut write_error = None;
    ordered_parallel(
        &pool,
        &inputs,
        |input| dump_file(&args, input, &opts, syms),
        |input, out| match out {
            Dumped::Text(text) => {
                dumped[input.origin] = true;
                // A closed pipe (`| head`) is not an error worth a panic.
                if write_error.is_none() {
                    write_error = stdout.write_all(text.as_bytes()).err();
                }
            }
            Dumped::Json(doc) => {
                dumped[input.origin] = true;
                docs.push(doc);
            }
            Dumped::Skipped(why) => eprintln!("bpfvet: skipping {why}"),
            Dumped::Failed(why) => {
                failed = true;
                dumped[input.origin] = true;
                if args.json {
                    docs.push(json!({ "path": input.path.display().to_string(), "error": why }));
                }
                eprintln!("bpfvet: {why}");
            }
        },
    );
    for (path, done) in args.objects.iter().zip(&dumped) {
        if !done {
            failed = true;
            eprintln!("bpfvet: '{}': no BPF object files found", path.display());
        }
    }
    if args.json {
        let mut text = serde_json::to_string_pretty(&Value::Array(docs))?;
        text.push('\n');
        write_error = stdout.write_all(text.as_bytes()).err();
    }
    match write_error {
        Some(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// The attach type, or for a struct_ops program the member it implements.
fn attach_name(p: &Program) -> String {
    if let Some(m) = &p.struct_ops {
        return format!("{}.{}", m.type_name, m.member);
    }
    p.expected_attach_type
        .map(|a| a.to_string())
        .unwrap_or_else(|| "-".into())
}

fn write_object(out: &mut String, obj: &Object, disasm: Option<&dyn Symbols>, source: bool) {
    let _ = writeln!(out, "{}:", obj.path.display());
    let _ = writeln!(out, "  license: {:?}", obj.license);
    if !obj.maps.is_empty() {
        let w = obj
            .maps
            .iter()
            .map(|m| m.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let _ = writeln!(
            out,
            "  maps:\n    {:<w$}  {:<16} {:>8} {:>10} {:>11}  flags",
            "name", "type", "key_size", "value_size", "max_entries"
        );
        for m in &obj.maps {
            let _ = writeln!(
                out,
                "    {:<w$}  {:<16} {:>8} {:>10} {:>11}  {:#x}",
                m.name,
                m.map_type.to_string(),
                m.key_size,
                m.value_size,
                m.max_entries,
                m.map_flags
            );
        }
    }
    if !obj.programs.is_empty() {
        let w = obj
            .programs
            .iter()
            .map(|p| p.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let sw = obj
            .programs
            .iter()
            .map(|p| p.section.len())
            .max()
            .unwrap_or(7)
            .max(7);
        let aw = obj
            .programs
            .iter()
            .map(|p| attach_name(p).len())
            .max()
            .unwrap_or(22)
            .max(22);
        let _ = writeln!(
            out,
            "  programs:\n    {:<w$}  {:<sw$}  {:<16} {:<aw$} {:>6}",
            "name", "section", "prog_type", "attach_type", "insns"
        );
        for p in &obj.programs {
            let _ = writeln!(
                out,
                "    {:<w$}  {:<sw$}  {:<16} {:<aw$} {:>6}",
                p.name,
                p.section,
                p.prog_type.to_string(),
                attach_name(p),
                p.insns.len()
            );
        }
    }
    if obj.programs.is_empty() {
        let _ = writeln!(
            out,
            "  no programs: no function is in a program section (.text functions are subprograms)"
        );
    }
    if let Some(note) = crate::loader_arg::detected_note(obj) {
        let _ = writeln!(out, "  {note}");
    }
    for w in &obj.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
    for e in &obj.unresolved_externs {
        let _ = writeln!(out, "  unresolved extern: {e}");
    }
    for p in &obj.programs {
        if let Some(why) = &p.refused {
            let _ = writeln!(out, "  {}: refused by the loader: {why}", p.name);
        }
    }
    for p in &obj.programs {
        for c in &p.core_unresolved {
            let _ = writeln!(
                out,
                "  {}: unresolved CO-RE at insn {}: {}",
                p.name, c.insn_off, c.reason
            );
        }
    }
    if let Some(syms) = disasm {
        for p in &obj.programs {
            let _ = writeln!(out, "\n  {} ({}):", p.name, p.section);
            for line in disasm_lines(p, syms, source) {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
}

/// The program's log lines, with `; <source> @ file:line` above each
/// instruction that starts a line_info record when `source` is set. An
/// instruction the decoder refuses is printed raw with the reason.
fn disasm_lines(p: &Program, syms: &dyn Symbols, source: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut linfo = p.line_info.iter().peekable();
    let mut emit_source = |pc: usize, lines: &mut Vec<String>| {
        while let Some(l) = linfo.peek() {
            if l.insn_off as usize > pc {
                break;
            }
            if source && l.insn_off as usize == pc {
                lines.push(format!(
                    "; {} @ {}:{}",
                    l.line_text.trim_start(),
                    l.file_name,
                    l.line
                ));
            }
            linfo.next();
        }
    };
    match bpfvet_isa::decode_program(&p.insns) {
        Ok(prog) => {
            for l in &prog {
                emit_source(l.pc, &mut lines);
                let mut s = String::new();
                let _ = write_log_line(&mut s, l.pc, &l.insn, syms);
                lines.push(s);
            }
        }
        Err(e) => {
            for (pc, i) in p.insns.iter().enumerate() {
                emit_source(pc, &mut lines);
                lines.push(format!(
                    "{pc}: ({:02x}) dst=r{} src=r{} off={} imm={}",
                    i.code, i.dst, i.src, i.off, i.imm
                ));
            }
            lines.push(format!("(not decodable: {e})"));
        }
    }
    lines
}

fn map_json(m: &MapDef) -> Value {
    json!({
        "name": m.name,
        "section": m.section,
        "origin": format!("{:?}", m.origin),
        "type": m.map_type.to_string(),
        "key_size": m.key_size,
        "value_size": m.value_size,
        "max_entries": m.max_entries,
        "flags": m.map_flags,
        "map_extra": m.map_extra,
        "numa_node": m.numa_node,
        "pinning": m.pinning,
        "btf_key_type_id": m.btf_key_type_id,
        "btf_value_type_id": m.btf_value_type_id,
        "inner": m.inner.as_deref().map(map_json),
        "frozen": m.frozen,
    })
}

fn object_json(obj: &Object, disasm: Option<&dyn Symbols>, source: bool) -> Value {
    let programs: Vec<Value> = obj
        .programs
        .iter()
        .map(|p| {
            let mut v = json!({
                "name": p.name,
                "section": p.section,
                "prog_type": p.prog_type.to_string(),
                "attach_type": p.expected_attach_type.map(|a| a.to_string()),
                "attach_target": p.attach_target,
                "struct_ops": p.struct_ops.as_ref().map(|m| json!({"map": m.map, "type": m.type_name, "member": m.member})),
                "sleepable": p.sleepable,
                "insns": p.insns.len(),
                "funcs": p.func_info.iter().map(|f| json!({"insn": f.insn_off, "name": f.name})).collect::<Vec<_>>(),
                "core_unresolved": p.core_unresolved.iter().map(|c| json!({"insn": c.insn_off, "reason": c.reason})).collect::<Vec<_>>(),
                "refused": p.refused,
            });
            if let Some(syms) = disasm {
                v["disasm"] = json!(disasm_lines(p, syms, source));
            }
            v
        })
        .collect();
    json!({
        "path": obj.path.display().to_string(),
        "license": obj.license,
        "maps": obj.maps.iter().map(map_json).collect::<Vec<_>>(),
        "programs": programs,
        "unresolved_externs": obj.unresolved_externs,
        "loader": obj.loader.name(),
        "loader_reason": obj.loader_reason,
        "warnings": obj.warnings,
    })
}
