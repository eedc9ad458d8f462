//! Loading an [`Object`] into the running kernel the way libbpf does: the
//! object's BTF, every map (inner templates for map-in-map, global data
//! with its initial bytes, `.rodata` frozen), then each program with its
//! map fds passed through `fd_array` (the object's LD_IMM64 carry
//! BPF_PSEUDO_MAP_IDX / BPF_PSEUDO_MAP_IDX_VALUE with imm = map index, which
//! the kernel resolves through `fd_array`, so the instruction stream is the
//! one the bpfvet verifier sees, byte for byte).

use crate::log_stats::parse_log_stats;
use crate::map::{KernelMap, MapCreateError};
use crate::mem_peak::MemPeakCgroup;
use crate::report::{ProgramReport, Refusal, Verdict};
use crate::sys::{self, bpf_fd, BtfLoadAttr, Cmd, Errno, Fd, MapCreateAttr, ProgLoadAttr};
use crate::LoadedProgram;
use bpfvet_isa::opcode::{BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE};
use bpfvet_isa::uapi::{AttachType, MapType, ProgType, BPF_ANY, BPF_F_SLEEPABLE};
use bpfvet_isa::{insns_to_bytes, Privileges};
use bpfvet_object::btf::{Btf, Kind};
use bpfvet_object::{FdEntry, MapDef, MapInit, Object, Program};
use std::cell::OnceCell;
use std::time::Instant;

/// The verifier's stats log level, always added: it costs little and gives
/// the figures veristat reports.
pub const LOG_LEVEL_STATS: u32 = 4;
/// The kernel's upper bound on log_size (UINT_MAX >> 2).
pub const MAX_LOG_SIZE: u32 = u32::MAX >> 2;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kernel backend unavailable: {0}")]
    Unavailable(String),
}

/// How to load programs.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Verifier log level beyond stats: 0, 1 or 2 (4 is always added).
    pub log_level: u32,
    /// Initial log buffer size in bytes.
    pub log_size: u32,
    /// The buffer grows on ENOSPC up to this many bytes.
    pub log_size_cap: u32,
    /// The capabilities the loading thread holds (maps and BTF are created
    /// with the process's own).
    pub privileges: Privileges,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            log_level: 0,
            log_size: 64 * 1024,
            log_size_cap: MAX_LOG_SIZE,
            privileges: Privileges::Root,
        }
    }
}

/// A handle on the host kernel's bpf() syscall.
pub struct Kernel {
    vmlinux: OnceCell<Result<Btf, String>>,
    mem_peak: Option<MemPeakCgroup>,
}

impl Kernel {
    /// Checks that bpf() works here by creating a one-entry array map.
    pub fn open() -> Result<Kernel, Error> {
        if !cfg!(target_os = "linux") {
            return Err(Error::Unavailable("not a Linux host".into()));
        }
        let mut attr = MapCreateAttr {
            map_type: MapType::ARRAY.0,
            key_size: 4,
            value_size: 4,
            max_entries: 1,
            ..Default::default()
        };
        match bpf_fd(Cmd::MapCreate, &mut attr) {
            Ok(_) => Ok(Kernel {
                vmlinux: OnceCell::new(),
                mem_peak: None,
            }),
            Err(Errno::EPERM) => Err(Error::Unavailable(
                "bpf() returned EPERM: run as root or with CAP_BPF + CAP_PERFMON".into(),
            )),
            Err(Errno::ENOSYS) => Err(Error::Unavailable(
                "the bpf() syscall is not available".into(),
            )),
            Err(e) => Err(Error::Unavailable(format!(
                "bpf(BPF_MAP_CREATE) probe failed: {e}"
            ))),
        }
    }

    /// Starts measuring memory.peak per load (moves this process into a
    /// cgroup v2 of its own). Errors name why it is not possible here.
    pub fn enable_mem_peak(&mut self) -> Result<(), String> {
        if self.mem_peak.is_none() {
            self.mem_peak = Some(MemPeakCgroup::create()?);
        }
        Ok(())
    }

    /// The vmlinux id and size of a struct_ops map's value, found as libbpf
    /// finds it: the map's value type in the object BTF names the kernel
    /// struct, whose `bpf_struct_ops_` wrapper is the value.
    fn struct_ops_value(&self, obj: &Object, def: &MapDef) -> Result<(u32, u32), MapCreateError> {
        let unsupported = || MapCreateError::Unsupported(def.map_type);
        let name = obj
            .btf
            .as_ref()
            .and_then(|b| b.type_by_id(def.btf_value_type_id).map(|t| b.name(t)))
            .map(bpfvet_object::btf::essential_name)
            .ok_or_else(unsupported)?;
        let vmlinux = self.vmlinux().map_err(|_| unsupported())?;
        let id = vmlinux
            .find_by_name_kind(&format!("bpf_struct_ops_{name}"), Kind::Struct)
            .ok_or_else(unsupported)?;
        let size = vmlinux
            .resolve_size(id)
            .ok()
            .and_then(|s| u32::try_from(s).ok())
            .ok_or_else(unsupported)?;
        Ok((id, size))
    }

    fn vmlinux(&self) -> Result<&Btf, &str> {
        self.vmlinux
            .get_or_init(|| {
                let data = std::fs::read("/sys/kernel/btf/vmlinux")
                    .map_err(|e| format!("/sys/kernel/btf/vmlinux: {e}"))?;
                Btf::from_bytes(&data).map_err(|e| format!("/sys/kernel/btf/vmlinux: {e}"))
            })
            .as_ref()
            .map_err(|e| e.as_str())
    }

    /// Loads the object's BTF and creates its maps. Failures are kept per
    /// map, so programs that do not use a failed map still load.
    pub fn open_object<'a>(&'a self, obj: &'a Object) -> ObjectSession<'a> {
        self.open_object_as(obj, Privileges::Root)
    }

    /// [`Kernel::open_object`] for a loader at `creator`'s level: the maps
    /// whose kernel record depends on who creates them (the Spectre v1
    /// bypass of array_map_alloc's maps) are created at that level, as the
    /// loader itself would; the others are created as root, which changes
    /// nothing the verifier sees.
    pub fn open_object_as<'a>(&'a self, obj: &'a Object, creator: Privileges) -> ObjectSession<'a> {
        let (btf, btf_error) = match obj.btf_raw.as_deref() {
            Some(raw) => match load_btf(raw) {
                Ok(fd) => (Some(fd), None),
                Err(e) => (None, Some(e)),
            },
            None => (None, None),
        };
        let mut maps: Vec<Result<KernelMap, MapCreateError>> = Vec::with_capacity(obj.maps.len());
        for def in &obj.maps {
            let inner = match &def.inner {
                Some(t) => match create_as(creator, t, || KernelMap::create(t, btf.as_ref(), None))
                {
                    Ok(m) => Some(m),
                    Err(e) => {
                        maps.push(Err(e));
                        continue;
                    }
                },
                None => None,
            };
            if def.map_type == MapType::STRUCT_OPS {
                let created = self
                    .struct_ops_value(obj, def)
                    .and_then(|v| KernelMap::create_struct_ops(def, btf.as_ref(), v));
                maps.push(created);
                continue;
            }
            maps.push(create_as(creator, def, || {
                KernelMap::create(def, btf.as_ref(), inner.as_ref())
            }));
        }
        let mut session = ObjectSession {
            kernel: self,
            obj,
            btf,
            btf_error,
            maps,
        };
        session.initialise_maps();
        session
    }
}

/// Creates map `def` with `create`, at `creator`'s level where the map
/// records its creator's privileges.
fn create_as(
    creator: Privileges,
    def: &MapDef,
    create: impl FnOnce() -> Result<KernelMap, MapCreateError> + Send,
) -> Result<KernelMap, MapCreateError> {
    if !def.map_type.records_creator_spec_v1_bypass() {
        return create();
    }
    // An unprivileged loader's maps are made with CAP_BPF alone: the same
    // record (no CAP_PERFMON), and maps whose values hold BTF fields (which
    // need CAP_BPF) keep them, as bpfvet verifies the object's maps as
    // they are defined.
    let creator = match creator {
        Privileges::Unprivileged => Privileges::Bpf,
        level => level,
    };
    crate::privileges::run_with(creator, create).unwrap_or_else(|why| {
        Err(MapCreateError::Privileges {
            map: def.name.clone(),
            why,
        })
    })
}

/// Why the kernel refused an object's BTF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BtfError {
    pub errno: Errno,
    /// The last line of the kernel's BTF log (empty if it wrote none).
    pub message: String,
}

impl std::fmt::Display for BtfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.message.is_empty() {
            true => write!(f, "{}", self.errno),
            false => write!(f, "{}: {}", self.errno, self.message),
        }
    }
}

/// BPF_BTF_LOAD of an object's raw BTF; on failure a second load with the
/// BTF log on names the reason.
/// A BTF of one type, `int`: what an fd_array's BTF entry loads when the
/// object has none.
const ONE_INT_BTF: [u8; 45] = [
    0x9f, 0xeb, 1, 0, // magic, version, flags
    24, 0, 0, 0, // hdr_len
    0, 0, 0, 0, 16, 0, 0, 0, // type_off, type_len
    16, 0, 0, 0, 5, 0, 0, 0, // str_off, str_len
    1, 0, 0, 0, 0, 0, 0, 1, 4, 0, 0, 0, // [1] INT "int" size 4
    32, 0, 0, 1, // signed, 32 bits
    0, b'i', b'n', b't', 0,
];

fn load_btf(raw: &[u8]) -> Result<Fd, BtfError> {
    let size = u32::try_from(raw.len()).map_err(|_| BtfError {
        errno: Errno::E2BIG,
        message: String::new(),
    })?;
    let mut attr = BtfLoadAttr {
        btf: sys::ptr(raw.as_ptr()),
        btf_size: size,
        ..Default::default()
    };
    let errno = match bpf_fd(Cmd::BtfLoad, &mut attr) {
        Ok(fd) => return Ok(fd),
        Err(e) => e,
    };
    let mut log = vec![0u8; 64 * 1024];
    let mut attr = BtfLoadAttr {
        btf: sys::ptr(raw.as_ptr()),
        btf_size: size,
        btf_log_buf: sys::ptr(log.as_mut_ptr()),
        btf_log_size: log.len() as u32,
        btf_log_level: 1,
        ..Default::default()
    };
    let _ = bpf_fd(Cmd::BtfLoad, &mut attr);
    let text = log_text(&log);
    let message = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    Err(BtfError { errno, message })
}

/// An object whose BTF and maps live in the kernel.
pub struct ObjectSession<'a> {
    kernel: &'a Kernel,
    obj: &'a Object,
    btf: Option<Fd>,
    /// Why the object's BTF was not accepted (programs load without it).
    pub btf_error: Option<BtfError>,
    maps: Vec<Result<KernelMap, MapCreateError>>,
}

impl<'a> ObjectSession<'a> {
    /// The created map at an index of `Object::maps`, or why it failed.
    pub fn map(&self, index: usize) -> Option<&Result<KernelMap, MapCreateError>> {
        self.maps.get(index)
    }

    /// The created map named `name` (as in `MapDef::name`).
    pub fn map_by_name(&self, name: &str) -> Option<&KernelMap> {
        let i = self.obj.maps.iter().position(|m| m.name == name)?;
        self.maps.get(i)?.as_ref().ok()
    }

    /// Fills global data and map-in-map slots, then freezes what libbpf
    /// freezes. A failure here marks the map as failed.
    fn initialise_maps(&mut self) {
        for (i, def) in self.obj.maps.iter().enumerate() {
            let result = match (&self.maps[i], &def.init) {
                (Err(_), _) => continue,
                (Ok(map), MapInit::Data(bytes)) => {
                    let mut value = bytes.clone();
                    value.resize(map.value_buf_size(), 0);
                    map.update(&0u32.to_le_bytes(), &value, BPF_ANY)
                        .map_err(|e| ("initial value", e))
                }
                (Ok(map), MapInit::InnerMaps(slots)) => {
                    slots.iter().try_for_each(|&(slot, inner)| {
                        let fd = match self.maps.get(inner) {
                            Some(Ok(m)) => m.fd().raw() as u32,
                            _ => return Err(("inner map slot", Errno::EBADF)),
                        };
                        let mut key = slot.to_le_bytes().to_vec();
                        key.resize(map.key_size as usize, 0);
                        map.update(&key, &fd.to_le_bytes(), BPF_ANY)
                            .map_err(|e| ("inner map slot", e))
                    })
                }
                // Prog-array slots need loaded programs: see `load_all`.
                (Ok(_), MapInit::Programs(_)) | (Ok(_), MapInit::None) => Ok(()),
            };
            let result = result.and_then(|()| match &self.maps[i] {
                Ok(map) if def.frozen => map.freeze().map_err(|e| ("BPF_MAP_FREEZE", e)),
                _ => Ok(()),
            });
            if let Err((what, errno)) = result {
                self.maps[i] = Err(MapCreateError::Syscall {
                    map: def.name.clone(),
                    what,
                    errno,
                });
            }
        }
    }

    /// Loads every program, then fills prog-array slots from the object's
    /// `.values` with the loaded programs, as libbpf's object load does.
    /// Slots whose program did not load, or whose update failed, are listed
    /// in the second result.
    pub fn load_all(&self, opts: &LoadOptions) -> (Vec<ProgramReport>, Vec<String>) {
        let reports: Vec<ProgramReport> = (0..self.obj.programs.len())
            .filter_map(|i| self.load_program(i, opts))
            .collect();
        let mut unfilled = Vec::new();
        for (def, map) in self.obj.maps.iter().zip(&self.maps) {
            let (MapInit::Programs(slots), Ok(map)) = (&def.init, map) else {
                continue;
            };
            for &(slot, prog) in slots {
                let fd = match reports.get(prog).and_then(|r| r.loaded.as_ref()) {
                    Some(p) => p.fd().raw() as u32,
                    None => {
                        unfilled.push(format!("{}[{slot}]: program {prog} not loaded", def.name));
                        continue;
                    }
                };
                if let Err(e) = map.update(&slot.to_le_bytes(), &fd.to_le_bytes(), BPF_ANY) {
                    unfilled.push(format!("{}[{slot}]: {e}", def.name));
                }
            }
        }
        (reports, unfilled)
    }

    /// Loads program `index` of the object and collects the kernel's figures.
    pub fn load_program(&self, index: usize, opts: &LoadOptions) -> Option<ProgramReport> {
        let prog = self.obj.programs.get(index)?;
        let mut report = ProgramReport {
            name: prog.name.clone(),
            section: prog.section.clone(),
            verdict: Verdict::Rejected,
            errno: None,
            log: String::new(),
            stats: Default::default(),
            verified_insns: None,
            insn_cnt: prog.insns.len() as u32,
            xlated_size: None,
            jited_size: None,
            mem_peak_bytes: None,
            prog_type: prog.prog_type,
            expected_attach_type: prog.expected_attach_type.unwrap_or(AttachType(0)),
            btf_dropped: self.btf.is_none() && self.obj.btf_raw.is_some(),
            wall_time: Default::default(),
            loaded: None,
            load_refusal: None,
        };
        if let Err(refusal) = self.check_preconditions(prog) {
            report.verdict = Verdict::Refused(refusal);
            return Some(report);
        }
        let attach_btf_id = match self.struct_ops_target(prog) {
            Ok(Some((type_id, member))) => {
                report.expected_attach_type = member;
                Ok(type_id)
            }
            Ok(None) => self.attach_btf_id(prog),
            Err(refusal) => Err(refusal),
        };
        let attach_btf_id = match attach_btf_id {
            Ok(id) => id,
            Err(refusal) => {
                report.verdict = Verdict::Refused(refusal);
                return Some(report);
            }
        };
        self.load_into(prog, attach_btf_id, opts, &mut report);
        Some(report)
    }

    fn check_preconditions(&self, prog: &Program) -> Result<(), Refusal> {
        if let Some(why) = &prog.refused {
            return Err(Refusal::Loader(why.clone()));
        }
        if prog.prog_type == ProgType::UNSPEC {
            return Err(Refusal::UnknownProgType {
                section: prog.section.clone(),
            });
        }
        for idx in referenced_maps(&prog.insns) {
            // An explicit fd_array decides what the index names.
            let idx = match prog.load.fd_array.as_deref().map(|a| a.get(idx)) {
                None => idx,
                Some(Some(FdEntry::Map(i))) => *i,
                // No fd_array, or an entry that is no map: the kernel says.
                Some(Some(_)) => continue,
                Some(None) if prog.load.fd_array.as_ref().is_some_and(Vec::is_empty) => continue,
                Some(None) => {
                    return Err(Refusal::MapCreation(format!(
                        "instruction refers to fd_array index {idx} past its end"
                    )))
                }
            };
            match self.maps.get(idx) {
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(Refusal::MapCreation(e.to_string())),
                None => {
                    return Err(Refusal::MapCreation(format!(
                        "instruction refers to map index {idx}, the object has {} maps",
                        self.maps.len()
                    )))
                }
            }
        }
        // fd_array_cnt binds its leading maps whether referenced or not:
        // each must have been created.
        let entries: Vec<FdEntry> = match &prog.load.fd_array {
            None => (0..self.maps.len()).map(FdEntry::Map).collect(),
            Some(list) => list.clone(),
        };
        let cnt = (prog.load.fd_array_cnt as usize).min(entries.len());
        for e in &entries[..cnt] {
            if let FdEntry::Map(i) = e {
                if let Some(Err(e)) = self.maps.get(*i) {
                    return Err(Refusal::MapCreation(e.to_string()));
                }
            }
        }
        if prog.prog_type == ProgType::EXT {
            return Err(Refusal::NeedsTarget(
                "freplace programs need a target program to replace".into(),
            ));
        }
        // The kernel verifies a struct_ops program against the member of the
        // struct_ops type it implements (attach_btf_id + member index), which
        // only the struct_ops map that holds it names; libbpf loads no
        // struct_ops program that no map holds.
        if prog.prog_type == ProgType::STRUCT_OPS && prog.struct_ops.is_none() {
            return Err(Refusal::NeedsTarget(
                "a struct_ops program that no struct_ops map holds is not loaded".into(),
            ));
        }
        Ok(())
    }

    /// attach_btf_id and expected_attach_type of a struct_ops program: the
    /// kernel struct it implements and the member's index.
    fn struct_ops_target(&self, prog: &Program) -> Result<Option<(u32, AttachType)>, Refusal> {
        let Some(member) = &prog.struct_ops else {
            return Ok(None);
        };
        let btf = self
            .kernel
            .vmlinux()
            .map_err(|e| Refusal::NeedsTarget(format!("cannot resolve struct_ops: {e}")))?;
        let k = member.resolve(btf).map_err(Refusal::NeedsTarget)?;
        Ok(Some((k.type_id, AttachType(k.member_idx))))
    }

    fn attach_btf_id(&self, prog: &Program) -> Result<u32, Refusal> {
        let needs_btf_id = matches!(prog.prog_type, ProgType::TRACING | ProgType::LSM);
        let Some(target) = prog.attach_target.as_deref().filter(|_| needs_btf_id) else {
            return Ok(0);
        };
        let btf = self
            .kernel
            .vmlinux()
            .map_err(|e| Refusal::NeedsTarget(format!("cannot resolve '{target}': {e}")))?;
        crate::attach_target::attach_target_id(btf, &prog.section, target).ok_or_else(|| {
            Refusal::AttachTargetMissing {
                target: target.to_string(),
            }
        })
    }

    fn load_into(
        &self,
        prog: &Program,
        attach_btf_id: u32,
        opts: &LoadOptions,
        report: &mut ProgramReport,
    ) {
        let insns = insns_to_bytes(&prog.insns);
        let license =
            std::ffi::CString::new(self.obj.license_of(prog).replace('\0', "")).unwrap_or_default();
        let map_fd = |i: usize| {
            self.maps
                .get(i)
                .and_then(|m| m.as_ref().ok())
                .map_or(-1, |m| m.fd().raw())
        };
        // BTF objects of their own an explicit fd_array names: held until
        // the load returns.
        let mut btf_copies = Vec::new();
        let fd_array: Vec<i32> = match &prog.load.fd_array {
            None => (0..self.maps.len()).map(map_fd).collect(),
            Some(entries) => entries
                .iter()
                .map(|e| match *e {
                    FdEntry::Map(i) => map_fd(i),
                    FdEntry::Invalid(n) => n,
                    FdEntry::Btf => {
                        match load_btf(self.obj.btf_raw.as_deref().unwrap_or(&ONE_INT_BTF)) {
                            Ok(fd) => {
                                let raw = fd.raw();
                                btf_copies.push(fd);
                                raw
                            }
                            _ => -1,
                        }
                    }
                })
                .collect(),
        };
        // Records at the stride asked for, zero-padded past their 8 bytes.
        let func_info_rec_size = prog.load.func_info_rec_size.unwrap_or(8);
        let stride_words = (func_info_rec_size as usize / 4).max(2);
        let func_info: Vec<u32> = prog
            .func_info
            .iter()
            .flat_map(|f| {
                let mut rec = vec![0u32; stride_words];
                rec[0] = f.insn_off;
                rec[1] = f.type_id;
                rec
            })
            .collect();
        let core_relos: Vec<u32> = prog
            .load
            .core_relos
            .iter()
            .flat_map(|r| [r.insn_off, r.type_id, r.access_str_off, r.kind])
            .collect();
        let line_info: Vec<u32> = prog
            .line_info
            .iter()
            .flat_map(|l| {
                [
                    l.insn_off,
                    l.file_name_off,
                    l.line_off,
                    (l.line << 10) | (l.column & 0x3ff),
                ]
            })
            .collect();
        let with_ext_info = self.btf.is_some() && !func_info.is_empty();
        let cap = opts.log_size_cap.clamp(1024, MAX_LOG_SIZE);
        let mut log_buf = vec![0u8; opts.log_size.clamp(1024, cap) as usize];

        let start = Instant::now();
        let result = loop {
            let mut attr = ProgLoadAttr {
                prog_type: prog.prog_type.0,
                insn_cnt: report.insn_cnt,
                insns: sys::ptr(insns.as_ptr()),
                license: sys::ptr(license.as_ptr()),
                log_level: opts.log_level | LOG_LEVEL_STATS,
                log_size: log_buf.len() as u32,
                log_buf: sys::ptr(log_buf.as_mut_ptr()),
                kern_version: self.obj.kern_version.unwrap_or(0),
                prog_flags: prog.prog_flags | if prog.sleepable { BPF_F_SLEEPABLE } else { 0 },
                prog_name: sys::obj_name(&prog.name),
                expected_attach_type: report.expected_attach_type.0,
                attach_btf_id,
                fd_array: if fd_array.is_empty() {
                    0
                } else {
                    sys::ptr(fd_array.as_ptr())
                },
                fd_array_cnt: prog.load.fd_array_cnt,
                ..Default::default()
            };
            if with_ext_info {
                let btf = self.btf.as_ref().map_or(0, |b| b.raw() as u32);
                attr.prog_btf_fd = btf;
                attr.func_info_rec_size = func_info_rec_size;
                attr.func_info = sys::ptr(func_info.as_ptr());
                attr.func_info_cnt = prog.func_info.len() as u32;
                if !core_relos.is_empty() {
                    attr.core_relo_rec_size = 16;
                    attr.core_relos = sys::ptr(core_relos.as_ptr());
                    attr.core_relo_cnt = prog.load.core_relos.len() as u32;
                }
                if !line_info.is_empty() {
                    attr.line_info_rec_size = 16;
                    attr.line_info = sys::ptr(line_info.as_ptr());
                    attr.line_info_cnt = prog.line_info.len() as u32;
                }
            }
            if let Some(cg) = &self.kernel.mem_peak {
                let _ = cg.reset();
            }
            log_buf.fill(0);
            let r = match crate::privileges::run_with(opts.privileges, || {
                bpf_fd(Cmd::ProgLoad, &mut attr)
            }) {
                Ok(r) => r,
                Err(why) => {
                    report.verdict = Verdict::Refused(Refusal::Privileges(why));
                    return;
                }
            };
            if let Some(cg) = &self.kernel.mem_peak {
                report.mem_peak_bytes = cg.peak_bytes().ok();
            }
            let log = log_text(&log_buf);
            match r {
                // The log did not fit: grow to the size the kernel asks for.
                Err(Errno::ENOSPC)
                    if (log_buf.len() as u32) < cap
                        && attr.log_true_size as usize > log_buf.len() =>
                {
                    let want = attr
                        .log_true_size
                        .min(cap)
                        .max(log_buf.len() as u32 * 2)
                        .min(cap);
                    log_buf = vec![0u8; want as usize];
                }
                Err(Errno::ENOSPC) if attr.log_true_size as usize > log_buf.len() => {
                    break (r, log, Some(attr.log_true_size))
                }
                // The log fits: ENOSPC is the verifier's own answer (a full
                // poke table of tail calls). A refused func_info or
                // line_info is the answer too: libbpf does not load again
                // without them.
                _ => break (r, log, None),
            }
        };
        report.wall_time = start.elapsed();
        let (result, log, truncated_need) = result;
        report.stats = parse_log_stats(&log);
        report.log = log;
        match result {
            Ok(fd) => {
                report.verdict = Verdict::Accepted;
                if let Ok(info) = sys::prog_info(&fd) {
                    report.verified_insns = Some(info.verified_insns);
                    report.xlated_size = Some(info.xlated_prog_len);
                    report.jited_size = Some(info.jited_prog_len);
                }
                report.loaded = Some(LoadedProgram { fd });
            }
            Err(errno) => {
                report.errno = Some(errno);
                report.verdict = classify_failure(errno, &report.log, truncated_need, cap);
                if opts.privileges != Privileges::Root && refused_for_privileges(errno, &report.log)
                {
                    report.verdict = Verdict::Rejected;
                    report.load_refusal = Some(format!("bpf_prog_load: {errno}"));
                }
            }
        }
    }
}

/// Sorts a failed load into verifier rejection or other refusal.
fn classify_failure(errno: Errno, log: &str, truncated_need: Option<u32>, cap: u32) -> Verdict {
    if let Some(needed) = truncated_need {
        return Verdict::Refused(Refusal::LogTruncated {
            needed: needed.into(),
            cap: cap.into(),
        });
    }
    if parse_log_stats(log).has_processed_line() {
        // A rejection's log names the error before the statistics; with
        // none (or only an instruction line: level 2) and an errno the
        // verifier's checks do not use for their rejections, it passed.
        let verified = errno != Errno::EACCES
            && crate::report::last_error_line(log).is_none_or(|l| {
                l.split_once(": ")
                    .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
            });
        if verified {
            return Verdict::Refused(Refusal::AfterVerification { errno });
        }
        return Verdict::Rejected;
    }
    if log.trim().is_empty() && errno == Errno::EPERM {
        return Verdict::Refused(Refusal::PermissionDenied);
    }
    let detail = log
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    Verdict::Refused(Refusal::Other { errno, detail })
}

/// bpf_prog_load's own checks of a reduced-privilege loader (program type,
/// program size) fail before the verifier runs, with no log: at that level
/// they are the kernel's answer, a rejection.
fn refused_for_privileges(errno: Errno, log: &str) -> bool {
    log.trim().is_empty() && (errno == Errno::EPERM || errno == Errno::E2BIG)
}

fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Indexes of `Object::maps` (fd_array) the LD_IMM64 instructions of a
/// program refer to, in order, each once.
pub fn referenced_maps(insns: &[bpfvet_isa::Insn]) -> Vec<usize> {
    let mut out: Vec<usize> = insns
        .iter()
        .filter(|i| {
            i.is_ld_imm64() && (i.src == BPF_PSEUDO_MAP_IDX || i.src == BPF_PSEUDO_MAP_IDX_VALUE)
        })
        .filter_map(|i| usize::try_from(i.imm).ok())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_classified() {
        let stats = "processed 3 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0\n";
        assert_eq!(
            classify_failure(Errno::EACCES, stats, None, 1 << 20),
            Verdict::Rejected
        );
        assert_eq!(
            classify_failure(Errno::EPERM, "", None, 1 << 20),
            Verdict::Refused(Refusal::PermissionDenied)
        );
        assert_eq!(
            classify_failure(Errno::EINVAL, "\nunknown attach type\n", None, 1 << 20),
            Verdict::Refused(Refusal::Other {
                errno: Errno::EINVAL,
                detail: "unknown attach type".into()
            })
        );
        // Verified, then refused (a prog array of another program type).
        assert_eq!(
            classify_failure(Errno::EINVAL, stats, None, 1 << 20),
            Verdict::Refused(Refusal::AfterVerification {
                errno: Errno::EINVAL
            })
        );
        let level2 = format!("0: R1=ctx() R10=fp0\n0: (b7) r0 = 0\n1: (95) exit\n{stats}");
        assert_eq!(
            classify_failure(Errno::EINVAL, &level2, None, 1 << 20),
            Verdict::Refused(Refusal::AfterVerification {
                errno: Errno::EINVAL
            })
        );
        let rejected = format!("0: (95) exit\nR0 !read_ok\n{stats}");
        assert_eq!(
            classify_failure(Errno::EACCES, &rejected, None, 1 << 20),
            Verdict::Rejected
        );
        assert!(matches!(
            classify_failure(Errno::ENOSPC, stats, Some(5000), 4096),
            Verdict::Refused(Refusal::LogTruncated {
                needed: 5000,
                cap: 4096
            })
        ));
    }

    #[test]
    fn error_on_an_instruction_line_is_a_rejection() {
        // A net_admin loader's level-1 log: the infinite-loop check of a
        // popped speculative state prints onto the jump's line, and the
        // kernel returns EINVAL. That is the verifier's rejection, not a
        // refusal after a verification that passed.
        let log = "28: (a5) if r9 < 0x800 goto pc-5\n\
                   31: (a5) if r8 < 0x8 goto pc-2 infinite loop detected at insn 30\n\
                   cur state: R8=scalar() R10=fp0\n\
                   old state: R8=Pscalar() R10=fp0\n\
                   verification time 67336 usec\n\
                   stack depth 8\n\
                   processed 10316 insns (limit 1000000) max_states_per_insn 4 total_states 108 peak_states 108 mark_read 0\n";
        assert_eq!(
            classify_failure(Errno::EINVAL, log, None, 1 << 20),
            Verdict::Rejected
        );
    }

    #[test]
    fn log_text_stops_at_nul() {
        assert_eq!(log_text(b"abc\0def"), "abc");
        assert_eq!(log_text(b"abc"), "abc");
    }
}
