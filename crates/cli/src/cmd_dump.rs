//! `bpfvet dump`: the maps and programs of .bpf.o files, optionally
//! disassembled in verifier-log syntax with the C source lines above.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
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

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading directory {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            if e.is_dir() || e.extension().is_some_and(|x| x == "o") {
                collect(&e, out)?;
            }
        }
    } else {
        out.push(path.to_owned());
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut files = Vec::new();
    for p in &args.objects {
        collect(p, &mut files)?;
    }
    let mut opts = LoadOptions::default();
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
    let mut failed = false;
    let mut docs = Vec::new();
    let mut text = String::new();
    for f in &files {
        match Object::from_file(f, &opts) {
            Ok(obj) => {
                if args.json {
                    docs.push(object_json(&obj, disasm.then_some(&syms), args.source));
                } else {
                    write_object(&mut text, &obj, disasm.then_some(&syms), args.source);
                }
            }
            Err(e) => {
                failed = true;
                if args.json {
                    docs.push(json!({ "path": f.display().to_string(), "error": e.to_string() }));
                } else {
                    eprintln!("bpfvet: {e}");
                }
            }
        }
    }
    if args.json {
        text = serde_json::to_string_pretty(&Value::Array(docs))?;
        text.push('\n');
    }
    // A closed pipe (`| head`) is not an error worth a panic.
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn attach_name(p: &Program) -> String {
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
        let _ = writeln!(
            out,
            "  programs:\n    {:<w$}  {:<sw$}  {:<16} {:<22} {:>6}",
            "name", "section", "prog_type", "attach_type", "insns"
        );
        for p in &obj.programs {
            let _ = writeln!(
                out,
                "    {:<w$}  {:<sw$}  {:<16} {:<22} {:>6}",
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
        "warnings": obj.warnings,
    })
}
