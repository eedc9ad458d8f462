//! The loader's driver: ELF -> BTF -> code sections and functions -> maps ->
//! externs -> relocation records -> CO-RE -> one linked instruction stream
//! per entry program, in the order libbpf does these steps.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bpfvet_isa::opcode::{self as op, BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC};
use bpfvet_isa::Insn;
use object::elf as E;

use crate::btf::{Btf, BtfError};
use crate::btf_ext::BtfExt;
use crate::elf::{ElfFile, SHN_LORESERVE, SHN_UNDEF};
use crate::error::{err, ErrorKind, LResult, Located, ObjectError};
use crate::externs::{self, Extern};
use crate::loader::Loader;

use crate::link::{CodeSec, Func, Reloc};
use crate::maps::{self, MapClass, MapLoc, PendingValues};
use crate::sec_def;
use crate::types::{MapDef, MapInit, Object, Program};
use crate::{core_relo, link};

/// Where CO-RE relocations and typed ksyms are resolved.
#[derive(Clone, Debug)]
pub enum TargetBtf {
    /// No target: CO-RE relocations are reported unresolved.
    None,
    /// The target kernel's vmlinux BTF ([`vmlinux_btf_path`]: the host's
    /// unless `BPFVET_VMLINUX_BTF` names another) when readable, else none.
    Host,
    /// This file; failing to read or parse it is an error.
    Path(PathBuf),
    /// Already parsed (e.g. shared across a corpus walk).
    Loaded(Arc<Btf>),
}

pub const HOST_VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// Names another kernel's vmlinux BTF (a raw BTF file) for the verifier's
/// kernel types, kfuncs and attach targets: to verify for a guest kernel.
/// Module BTF is then read from the files beside it.
pub const VMLINUX_ENV: &str = "BPFVET_VMLINUX_BTF";

/// The vmlinux BTF the verifier reads: [`VMLINUX_ENV`] when set, else the
/// host's.
pub fn vmlinux_btf_path() -> PathBuf {
    std::env::var_os(VMLINUX_ENV).map_or_else(|| PathBuf::from(HOST_VMLINUX), PathBuf::from)
}

/// The vmlinux BTF at [`vmlinux_btf_path`], read and parsed once per
/// process and shared by the loader (CO-RE target) and the verifier
/// (kernel types, kfuncs, attach targets); none when unreadable or invalid.
/// Parsing it is most of a small object's run time.
pub fn target_vmlinux() -> Option<&'static Arc<Btf>> {
    static VMLINUX: std::sync::OnceLock<Option<Arc<Btf>>> = std::sync::OnceLock::new();
    VMLINUX
        .get_or_init(|| {
            let bytes = std::fs::read(vmlinux_btf_path()).ok()?;
            Btf::from_bytes(&bytes).ok().map(Arc::new)
        })
        .as_ref()
}

#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub target_btf: TargetBtf,
    /// Where typeless `__ksym` addresses are looked up; None to leave them
    /// unresolved.
    pub kallsyms: Option<PathBuf>,
    /// LINUX_KERNEL_VERSION as seen by `.kconfig` externs.
    pub kernel_version: u32,
    /// Kernel config (`/proc/config.gz` or a text `.config`) for
    /// `CONFIG_*` externs; None leaves them unresolved (zero).
    pub kconfig: Option<PathBuf>,
    /// Overrides the object name used to prefix global data maps.
    pub object_name: Option<String>,
    /// List the global functions of an object whose only code is `.text`
    /// as programs (objects built without SEC(), as PREVAIL's samples
    /// are). libbpf treats `.text` functions as subprograms only, so by
    /// default such an object has no programs.
    pub text_programs: bool,
    /// The loader whose conventions apply; None to detect it from the
    /// object (crate::loader).
    pub loader: Option<Loader>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            target_btf: TargetBtf::Host,
            kallsyms: Some(PathBuf::from("/proc/kallsyms")),
            kernel_version: (6 << 16) | (18 << 8),
            kconfig: Some(PathBuf::from("/proc/config.gz")),
            object_name: None,
            text_programs: false,
            loader: None,
        }
    }
}

impl LoadOptions {
    /// Options that read nothing from the host: no CO-RE target, no kallsyms.
    pub fn offline() -> Self {
        LoadOptions {
            target_btf: TargetBtf::None,
            kallsyms: None,
            kconfig: None,
            ..Default::default()
        }
    }

    /// Parses the target BTF once so it can be shared by many loads.
    pub fn preload_target(&mut self) -> Result<(), ObjectError> {
        let path = match &self.target_btf {
            TargetBtf::Host => vmlinux_btf_path(),
            TargetBtf::Path(p) => p.clone(),
            _ => return Ok(()),
        };
        match load_target(&self.target_btf) {
            Ok(Some(b)) => self.target_btf = TargetBtf::Loaded(b),
            Ok(None) => self.target_btf = TargetBtf::None,
            Err(l) => {
                return Err(ObjectError {
                    path,
                    section: l.section,
                    kind: l.kind,
                })
            }
        }
        Ok(())
    }
}

fn load_target(t: &TargetBtf) -> LResult<Option<Arc<Btf>>> {
    let read = |p: &Path| -> LResult<Btf> {
        let bytes = std::fs::read(p).map_err(|e| Located {
            section: None,
            kind: ErrorKind::TargetBtf {
                path: p.to_owned(),
                reason: e.to_string(),
            },
        })?;
        Btf::from_bytes(&bytes).map_err(|e| Located {
            section: None,
            kind: ErrorKind::TargetBtf {
                path: p.to_owned(),
                reason: e.to_string(),
            },
        })
    };
    Ok(match t {
        TargetBtf::None => None,
        TargetBtf::Host => target_vmlinux().cloned(),
        TargetBtf::Path(p) => Some(Arc::new(read(p)?)),
        TargetBtf::Loaded(b) => Some(b.clone()),
    })
}

impl Object {
    pub fn from_file(path: impl AsRef<Path>, opts: &LoadOptions) -> Result<Object, ObjectError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| ObjectError {
            path: path.to_owned(),
            section: None,
            kind: ErrorKind::Io(e),
        })?;
        Object::parse(&bytes, path, opts)
    }

    /// Loads an object from memory; `path` names it in errors and gives the
    /// prefix of global data map names.
    pub fn parse(
        bytes: &[u8],
        path: impl AsRef<Path>,
        opts: &LoadOptions,
    ) -> Result<Object, ObjectError> {
        let path = path.as_ref();
        load(bytes, path, opts).map_err(|l| ObjectError {
            path: path.to_owned(),
            section: l.section,
            kind: l.kind,
        })
    }
}

fn load(bytes: &[u8], path: &Path, opts: &LoadOptions) -> LResult<Object> {
    let elf = ElfFile::parse(bytes)?;
    let license = elf
        .section_by_name("license")
        .map(|(_, s)| {
            let end = memchr::memchr(0, s.data).unwrap_or(s.data.len());
            String::from_utf8_lossy(&s.data[..end]).into_owned()
        })
        .unwrap_or_default();
    let kern_version = match elf.section_by_name("version") {
        Some((_, s)) if s.data.len() == 4 => Some(u32::from_le_bytes([
            s.data[0], s.data[1], s.data[2], s.data[3],
        ])),
        Some((_, s)) => {
            return err(
                Some("version"),
                ErrorKind::Elf(format!("version section is {} bytes, not 4", s.data.len())),
            )
        }
        None => None,
    };

    let (btf, mut btf_raw) = match elf.section_by_name(".BTF") {
        Some((_, s)) => {
            let first = Btf::from_bytes(s.data)?;
            let raw = crate::btf_fixup::fixup(&first, &elf).map_err(BtfError::Fixup)?;
            (Some(Btf::from_bytes(&raw)?), Some(raw))
        }
        None => (None, None),
    };
    let btf_ext = match (elf.section_by_name(".BTF.ext"), &btf) {
        (Some((_, s)), Some(b)) => Some(BtfExt::parse(s.data, b).map_err(|m| Located {
            section: Some(".BTF.ext".into()),
            kind: ErrorKind::BtfExt(m),
        })?),
        _ => None,
    };

    // Code sections and their functions.
    let text_shndx = elf.section_by_name(".text").map(|(i, _)| i);
    let mut code: Vec<CodeSec> = Vec::new();
    for (shndx, sec) in elf.sections.iter().enumerate() {
        if !sec.is_exec() || sec.data.is_empty() {
            continue;
        }
        code.push(code_section(&elf, shndx, Some(shndx) == text_shndx)?);
    }
    // An object whose only code is in .text (no SEC() annotations) has no
    // programs for libbpf; on request its global functions are listed.
    if opts.text_programs && !code.iter().any(|c| c.funcs.iter().any(|f| f.entry)) {
        for c in code.iter_mut() {
            for f in c.funcs.iter_mut() {
                f.entry = f.global;
            }
        }
    }

    // Maps in libbpf's order.
    let mut maps_acc: Vec<(MapDef, MapLoc)> = Vec::new();
    let mut elf_map_records = false;
    for (shndx, sec) in elf.sections.iter().enumerate() {
        if maps::is_legacy_maps_section(&sec.name) {
            elf_map_records |= maps::legacy_maps(&elf, shndx, &mut maps_acc)?;
        }
    }
    let mut pending = Vec::new();
    let mut warnings = Vec::new();
    let btf_maps_shndx = elf.section_by_name(".maps").map(|(i, _)| i);
    if let Some(shndx) = btf_maps_shndx {
        let Some(b) = &btf else {
            return err(
                Some(".maps"),
                ErrorKind::Map("BTF-defined maps need a .BTF section".into()),
            );
        };
        maps::btf_maps(&elf, b, shndx, &mut maps_acc, &mut pending)?;
    }
    let obj_name = opts
        .object_name
        .clone()
        .unwrap_or_else(|| maps::object_name(path));
    maps::global_data_maps(&elf, btf.as_ref(), &obj_name, &mut maps_acc)?;

    // Externs; the kconfig map comes last.
    let target = if externs::any(&elf) || btf_ext.as_ref().is_some_and(|e| !e.core_relos.is_empty())
    {
        load_target(&opts.target_btf)?
    } else {
        None
    };
    let mut unresolved = Vec::new();
    let ext = externs::collect(&elf, btf.as_ref(), target.as_deref(), opts, &mut unresolved)?;
    let ext_values = ext.values();
    if let (Some(raw), Some(b)) = (btf_raw.take(), btf.as_ref()) {
        let mut raw = raw;
        externs::patch_kconfig_datasec(&mut raw, b, &ext);
        btf_raw = Some(externs::sanitize_ksyms(raw, b)?);
    }
    let kconfig_map = match externs::kconfig_map(&ext, &obj_name) {
        Some(m) => {
            maps_acc.push((
                m,
                MapLoc {
                    class: MapClass::Kconfig,
                    shndx: usize::MAX,
                    offset: 0,
                },
            ));
            Some(maps_acc.len() - 1)
        }
        None => None,
    };
    let (mut maps_out, locs): (Vec<MapDef>, Vec<MapLoc>) = maps_acc.into_iter().unzip();

    // Relocation records, then CO-RE on each section's own copy of code.
    let arena_map = maps_out
        .iter()
        .position(|m| m.map_type == bpfvet_isa::uapi::MapType::ARENA);
    for c in code.iter_mut() {
        record_relocs(&elf, c, &locs, &ext.list, arena_map)?;
    }
    if let (Some(ext_info), Some(local)) = (&btf_ext, &btf) {
        core_relo::apply_all(local, target.as_deref(), ext_info, &mut code)?;
    }

    let struct_ops = crate::struct_ops::members(&elf, btf.as_ref());
    let mut programs = Vec::new();
    for ci in 0..code.len() {
        for fi in 0..code[ci].funcs.len() {
            if !code[ci].funcs[fi].entry {
                continue;
            }
            let inputs = link::Inputs {
                code: &code,
                btf: btf.as_ref(),
                ext: btf_ext.as_ref(),
                externs: &ext_values,
                kconfig_map,
            };
            // What only this program needs (an extern, a relocation, its
            // exception callback) refuses this program, not the object.
            let linked = exception_callback(btf.as_ref(), &code, &code[ci].funcs[fi].name)
                .map_err(|m| prog_err(&code[ci].name, m))
                .and_then(|cb| link::link(&inputs, ci, fi, cb));
            let f = &code[ci].funcs[fi];
            let info = sec_def::classify(&code[ci].name);
            let (linked, mut refused) = match linked {
                Ok(l) => (l, None),
                Err(e) => (link::Linked::default(), Some(located_text(&e))),
            };
            // libbpf lets one program fill several struct_ops members only
            // when they are the same member of the same type.
            let mut slots = struct_ops.iter().filter(|(func, _)| *func == f.name);
            let member = slots.next().map(|(_, m)| m.clone());
            if let Some(other) = slots.find(|(_, m)| {
                member.as_ref().is_some_and(|first| {
                    (&m.type_name, &m.member) != (&first.type_name, &first.member)
                })
            }) {
                refused.get_or_insert(format!(
                    "struct_ops program stored in two different members ({} and {}.{})",
                    member
                        .as_ref()
                        .map_or(String::new(), |m| format!("{}.{}", m.type_name, m.member)),
                    other.1.type_name,
                    other.1.member
                ));
            }
            programs.push(Program {
                name: f.name.clone(),
                section: code[ci].name.clone(),
                prog_type: info.prog_type,
                expected_attach_type: info.expected_attach_type,
                attach_target: info.attach_target,
                sleepable: info.sleepable,
                prog_flags: info.prog_flags,
                insns: linked.insns,
                func_info: linked.func_info,
                line_info: linked.line_info,
                placement: linked.placement,
                core_unresolved: linked.core_unresolved,
                struct_ops: member,
                refused,
                load: crate::types::LoadAttrs::default(),
            });
        }
    }

    if let Some(shndx) = btf_maps_shndx {
        init_values(
            &elf,
            shndx,
            &pending,
            &locs,
            &mut maps_out,
            &programs,
            &mut warnings,
        )?;
    }

    let (detected, loader_reason) = Loader::detect(elf_map_records, &maps_out);
    let loader = opts.loader.unwrap_or(detected);
    warnings.extend(loader.pin_warnings(&maps_out));
    warnings.extend(loader.type_untyped_programs(&mut programs));

    // The final BTF is what the kernel will see; ids of the object's own
    // types are unchanged by the fix-ups.
    let btf = match &btf_raw {
        Some(raw) => Some(Btf::from_bytes(raw)?),
        None => None,
    };
    Ok(Object {
        path: path.to_owned(),
        license,
        kern_version,
        maps: maps_out,
        programs,
        btf_refused: btf.as_ref().and_then(crate::btf_check::kernel_refusal),
        btf_raw,
        btf,
        unresolved_externs: unresolved,
        warnings,
        loader,
        loader_reason: opts.loader.is_none().then_some(loader_reason).flatten(),
    })
}

/// "section 'x': reason", the way an object error reads without its path.
fn located_text(e: &Located) -> String {
    match &e.section {
        Some(s) => format!("section '{s}': {}", e.kind),
        None => e.kind.to_string(),
    }
}

/// The function named by an `exception_callback:<name>` decl tag on the
/// entry program's BTF FUNC, as (code section, function) indexes.
fn exception_callback(
    btf: Option<&Btf>,
    code: &[CodeSec],
    prog: &str,
) -> Result<Option<(usize, usize)>, String> {
    let Some(btf) = btf else { return Ok(None) };
    let Some(func_id) = btf.find_by_name_kind(prog, crate::btf::Kind::Func) else {
        return Ok(None);
    };
    let tag = btf.ids().find_map(|id| {
        let t = btf.type_by_id(id)?;
        (t.kind == crate::btf::Kind::DeclTag
            && t.size_or_type == func_id
            && t.decl_tag_component() == Some(-1))
        .then(|| btf.name(t).strip_prefix("exception_callback:"))
        .flatten()
    });
    let Some(cb) = tag else { return Ok(None) };
    for (ci, c) in code.iter().enumerate() {
        if let Some(fi) = c.funcs.iter().position(|f| f.name == cb) {
            return Ok(Some((ci, fi)));
        }
    }
    Err(format!("exception callback '{cb}' of '{prog}' not found"))
}

fn prog_err(section: &str, msg: String) -> Located {
    Located {
        section: Some(section.to_owned()),
        kind: ErrorKind::Program(msg),
    }
}

fn code_section(elf: &ElfFile, shndx: usize, is_text: bool) -> LResult<CodeSec> {
    let sec = &elf.sections[shndx];
    let name = sec.name.clone();
    let insns =
        bpfvet_isa::insns_from_bytes(sec.data).map_err(|e| prog_err(&name, e.to_string()))?;
    let n = insns.len() as u64;
    let mut funcs = Vec::new();
    let mut syms: Vec<_> = elf
        .symbols
        .iter()
        .filter(|s| s.shndx as usize == shndx && s.typ == E::STT_FUNC)
        .collect();
    syms.sort_by_key(|s| s.value);
    for (k, s) in syms.iter().enumerate() {
        if s.value % 8 != 0 || s.size % 8 != 0 {
            return Err(prog_err(
                &name,
                format!("function '{}' is not aligned to instructions", s.name),
            ));
        }
        let start = s.value / 8;
        // Very old compilers emit size 0: the function runs to the next one.
        let len = if s.size == 0 {
            syms.get(k + 1)
                .map(|t| t.value / 8)
                .unwrap_or(n)
                .saturating_sub(start)
        } else {
            s.size / 8
        };
        if start.checked_add(len).is_none_or(|end| end > n) || len == 0 {
            return Err(prog_err(
                &name,
                format!(
                    "function '{}' (offset {}, size {}) lies outside the section",
                    s.name, s.value, s.size
                ),
            ));
        }
        let global = s.bind != E::STB_LOCAL;
        // Every function of a program section is a program, static ones
        // too (Cilium's tail calls, cilium/ebpf loads them); `.text`
        // holds subprograms.
        funcs.push(Func {
            name: s.name.clone(),
            start: start as usize,
            len: len as usize,
            entry: !is_text,
            global,
        });
    }
    if funcs.is_empty() {
        // No function symbols (old objects): the section is one program,
        // named by a symbol at its start if there is one.
        let label = elf
            .symbols
            .iter()
            .find(|s| {
                s.shndx as usize == shndx
                    && s.value == 0
                    && !s.name.is_empty()
                    && s.typ != E::STT_SECTION
                    && s.typ != E::STT_FILE
            })
            .map(|s| s.name.clone())
            .unwrap_or_else(|| name.clone());
        funcs.push(Func {
            name: label,
            start: 0,
            len: n as usize,
            entry: !is_text,
            global: true,
        });
    }
    for w in funcs.windows(2) {
        if w[0].start + w[0].len > w[1].start {
            return Err(prog_err(
                &name,
                format!("functions '{}' and '{}' overlap", w[0].name, w[1].name),
            ));
        }
    }
    // An LD_IMM64 needs its second slot inside the same function.
    for f in &funcs {
        let mut i = f.start;
        while i < f.start + f.len {
            if insns[i].is_ld_imm64() {
                if i + 1 >= f.start + f.len {
                    return Err(prog_err(
                        &name,
                        format!(
                            "function '{}': LD_IMM64 at insn {} is truncated",
                            f.name,
                            i - f.start
                        ),
                    ));
                }
                i += 1;
            }
            i += 1;
        }
    }
    Ok(CodeSec {
        shndx,
        name,
        insns,
        funcs,
        relos: Default::default(),
        core_failures: Vec::new(),
    })
}

fn rel_err(section: &str, msg: String) -> Located {
    Located {
        section: Some(section.to_owned()),
        kind: ErrorKind::Relocation(msg),
    }
}

fn is_call(i: &Insn) -> bool {
    i.code == op::BPF_JMP | op::BPF_CALL
}

/// Classifies each ELF relocation of a code section like libbpf's
/// bpf_program__record_reloc, and records implicit same-section calls. A
/// relocation that cannot be applied is kept as `Reloc::Bad`: it refuses
/// only the programs whose code reaches it.
fn record_relocs(
    elf: &ElfFile,
    c: &mut CodeSec,
    locs: &[MapLoc],
    ext: &[Extern],
    arena_map: Option<usize>,
) -> LResult<()> {
    let name = c.name.clone();
    for r in &elf.rels[c.shndx] {
        if r.offset % 8 != 0 || r.offset / 8 >= c.insns.len() as u64 {
            return Err(rel_err(
                &name,
                format!("relocation offset {} outside the code", r.offset),
            ));
        }
        let idx = (r.offset / 8) as usize;
        let relo = classify_reloc(elf, c, r, idx, locs, ext, arena_map).unwrap_or_else(Reloc::Bad);
        if let Reloc::SubprogAddr { .. } = relo {
            // libbpf marks such LD_IMM64 so calls and addresses are handled alike.
            c.insns[idx].src = BPF_PSEUDO_FUNC;
        }
        c.relos.insert(idx, relo);
    }
    Ok(())
}

fn classify_reloc(
    elf: &ElfFile,
    c: &CodeSec,
    r: &crate::elf::Rel,
    idx: usize,
    locs: &[MapLoc],
    ext: &[Extern],
    arena_map: Option<usize>,
) -> Result<Reloc, String> {
    let Some(sym) = elf.symbols.get(r.sym as usize) else {
        return Err(format!("relocation against missing symbol #{}", r.sym));
    };
    let insn = c.insns[idx];
    if !is_call(&insn) && !insn.is_ld_imm64() {
        return Err(format!(
            "relocation against '{}' at insn {idx} with code {:#04x}",
            sym.name, insn.code
        ));
    }
    if insn.is_ld_imm64() && idx + 1 >= c.insns.len() {
        return Err(format!("LD_IMM64 at insn {idx} is truncated"));
    }
    if sym.shndx == SHN_UNDEF && sym.is_extern() {
        let Some(e) = ext.iter().position(|e| e.sym_idx == r.sym as usize) else {
            return Err(format!("no extern found for '{}'", sym.name));
        };
        return Ok(if is_call(&insn) {
            Reloc::ExternCall(e)
        } else {
            Reloc::ExternLd(e)
        });
    }
    if is_call(&insn) {
        if insn.src != BPF_PSEUDO_CALL {
            return Err(format!(
                "relocated call at insn {idx} is not a bpf-to-bpf call"
            ));
        }
        let target_sec = sym.shndx as usize;
        if !elf.sections.get(target_sec).is_some_and(|s| s.is_exec()) {
            return Err(format!("call to '{}' outside any code section", sym.name));
        }
        let byte = sym.value as i64 + r.addend;
        if byte % 8 != 0 {
            return Err(format!("call to '{}' at unaligned offset {byte}", sym.name));
        }
        return Ok(Reloc::Call {
            sec: target_sec,
            insn: byte / 8 + insn.imm as i64 + 1,
        });
    }
    let shndx = sym.shndx;
    if shndx == SHN_UNDEF || shndx >= SHN_LORESERVE {
        return Err(format!(
            "relocation against '{}' in special section {shndx:#x}; uninitialised global?",
            sym.name
        ));
    }
    let target = elf
        .sections
        .get(shndx as usize)
        .ok_or_else(|| format!("relocation against missing section {shndx}"))?;
    if target.is_exec() {
        let byte = sym.value as i64 + r.addend + insn.imm as i64;
        if byte % 8 != 0 {
            return Err(format!("function address of '{}' is unaligned", sym.name));
        }
        return Ok(Reloc::SubprogAddr {
            sec: shndx as usize,
            insn: byte / 8,
        });
    }
    if maps::is_legacy_maps_section(&target.name) || target.name == ".maps" {
        let m = locs.iter().position(|l| {
            l.class == MapClass::User && l.shndx == shndx as usize && l.offset == sym.value
        });
        return m.map(Reloc::Map).ok_or_else(|| {
            format!(
                "no map at offset {} of section '{}'",
                sym.value, target.name
            )
        });
    }
    if target.name == maps::ARENA_SECTION {
        // Arena globals are addresses inside the object's arena map.
        return match arena_map {
            Some(map) => Ok(Reloc::Data {
                map,
                off: sym.value as i64 + r.addend,
            }),
            None => Err(format!(
                "relocation against '{}' in '{}' but the object defines no arena map",
                sym.name, target.name
            )),
        };
    }
    if maps::data_section_class(&target.name, target.sh_type, false).is_some() {
        let m = locs
            .iter()
            .position(|l| l.class != MapClass::User && l.shndx == shndx as usize);
        return match m {
            Some(map) => Ok(Reloc::Data {
                map,
                off: sym.value as i64 + r.addend,
            }),
            None => Err(format!("no map for data section '{}'", target.name)),
        };
    }
    Err(format!(
        "relocation against '{}' in section '{}' which is neither code, maps nor data",
        sym.name, target.name
    ))
}

/// Fills `.values = { ... }` slots of BTF map-in-map and prog arrays from
/// the relocations of the `.maps` section.
fn init_values(
    elf: &ElfFile,
    shndx: usize,
    pending: &[PendingValues],
    locs: &[MapLoc],
    maps_out: &mut [MapDef],
    programs: &[Program],
    warnings: &mut Vec<String>,
) -> LResult<()> {
    for r in &elf.rels[shndx] {
        let sym = &elf.symbols[r.sym as usize];
        let Some(p) = pending
            .iter()
            .find(|p| p.var_offset <= r.offset && r.offset + 8 <= p.var_offset + p.var_size)
        else {
            return err(
                Some(".maps"),
                ErrorKind::Map(format!(
                    "relocation at offset {} is not inside a map with .values",
                    r.offset
                )),
            );
        };
        let rel_in_var = r.offset - p.var_offset;
        if rel_in_var < p.values_offset {
            return err(
                Some(".maps"),
                ErrorKind::Map(format!(
                    "relocation at offset {} is before .values",
                    r.offset
                )),
            );
        }
        let slot = ((rel_in_var - p.values_offset) / 8) as u32;
        let outer = &maps_out[p.map_idx];
        let outer_name = outer.name.clone();
        let is_prog_array = outer.map_type == bpfvet_isa::uapi::MapType::PROG_ARRAY;
        if is_prog_array {
            let Some(pi) = programs.iter().position(|pr| pr.name == sym.name) else {
                // A `.text` function is a subprogram: the slot stays empty.
                warnings.push(format!(
                    "map '{outer_name}': slot {slot} names '{}', which is not a program; the slot stays empty",
                    sym.name
                ));
                continue;
            };
            push_slot(&mut maps_out[p.map_idx].init, slot, pi, true);
        } else {
            let target = locs.iter().enumerate().find(|(i, l)| {
                l.class == MapClass::User
                    && l.shndx == shndx
                    && l.offset == sym.value
                    && *i != p.map_idx
            });
            let Some((mi, _)) = target else {
                return err(
                    Some(".maps"),
                    ErrorKind::Map(format!(
                        "map '{outer_name}': '{}' is not a BTF-defined map",
                        sym.name
                    )),
                );
            };
            push_slot(&mut maps_out[p.map_idx].init, slot, mi, false);
        }
    }
    Ok(())
}

fn push_slot(init: &mut MapInit, slot: u32, idx: usize, progs: bool) {
    match init {
        MapInit::Programs(v) if progs => v.push((slot, idx)),
        MapInit::InnerMaps(v) if !progs => v.push((slot, idx)),
        _ => {
            *init = if progs {
                MapInit::Programs(vec![(slot, idx)])
            } else {
                MapInit::InnerMaps(vec![(slot, idx)])
            }
        }
    }
}
