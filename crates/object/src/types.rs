//! The loaded object. Plain data: every consumer (verifier, kernel backend,
//! vm, CLI) reads these and nothing else from the ELF file.

use bpfvet_isa::uapi::{AttachType, MapType, ProgType};
use bpfvet_isa::Insn;
use std::path::PathBuf;

#[derive(Clone, Debug)]
pub struct Object {
    pub path: PathBuf,
    /// From the `license` section; "" if absent.
    pub license: String,
    /// From the `version` section (legacy kprobes need it).
    pub kern_version: Option<u32>,
    pub maps: Vec<MapDef>,
    pub programs: Vec<Program>,
    /// The object's raw `.BTF` section, after libbpf-style fix-ups
    /// (DATASEC sizes/offsets, VAR linkage), ready to hand to BPF_BTF_LOAD.
    pub btf_raw: Option<Vec<u8>>,
    /// The parsed form of `btf_raw` (type ids in `MapDef` and `FuncInfo`
    /// refer to it).
    pub btf: Option<crate::btf::Btf>,
    /// Why the kernel would refuse `btf_raw` (its BTF log's last line, see
    /// `btf_check`): libbpf then loads the programs without BTF, and bpfvet
    /// verifies them without it too.
    pub btf_refused: Option<String>,
    /// Externs (`.kconfig`, `.ksyms`, kfuncs) that could not be resolved,
    /// as "name: reason". Their instructions hold zeros / poisoned calls.
    pub unresolved_externs: Vec<String>,
    /// What the loader accepted although a strict libbpf would not (e.g. a
    /// map pin flag of another loader), one sentence each.
    pub warnings: Vec<String>,
    /// The loader whose conventions were applied.
    pub loader: crate::loader::Loader,
    /// What in the object named that loader, when it was detected rather
    /// than given.
    pub loader_reason: Option<String>,
}

impl Object {
    /// What libbpf loads when the kernel refuses the object's BTF: the
    /// same programs and maps, without BTF, func_info, line_info or the
    /// maps' key and value types.
    pub fn without_btf(&self) -> Object {
        let mut obj = self.clone();
        obj.btf_raw = None;
        obj.btf = None;
        obj.btf_refused = None;
        for p in &mut obj.programs {
            p.func_info.clear();
            p.line_info.clear();
        }
        for m in &mut obj.maps {
            m.btf_key_type_id = 0;
            m.btf_value_type_id = 0;
            if let Some(inner) = &mut m.inner {
                inner.btf_key_type_id = 0;
                inner.btf_value_type_id = 0;
            }
        }
        obj
    }

    /// The license BPF_PROG_LOAD sends for `prog`: its own or the object's.
    pub fn license_of<'a>(&'a self, prog: &'a Program) -> &'a str {
        prog.load.license.as_deref().unwrap_or(&self.license)
    }

    /// An object holding one GPL program and no maps, BTF or line info: what
    /// tests, fuzzers and embedders need to verify or run bare instructions.
    pub fn single_program(name: &str, prog_type: ProgType, insns: Vec<Insn>) -> Object {
        Object {
            path: PathBuf::from(name),
            license: "GPL".into(),
            kern_version: None,
            maps: Vec::new(),
            programs: vec![Program {
                name: name.into(),
                section: String::new(),
                prog_type,
                expected_attach_type: None,
                attach_target: None,
                sleepable: false,
                prog_flags: 0,
                insns,
                func_info: Vec::new(),
                line_info: Vec::new(),
                placement: Vec::new(),
                core_unresolved: Vec::new(),
                struct_ops: None,
                refused: None,
                load: LoadAttrs::default(),
            }],
            btf_raw: None,
            btf: None,
            btf_refused: None,
            unresolved_externs: Vec::new(),
            warnings: Vec::new(),
            loader: crate::loader::Loader::Libbpf,
            loader_reason: None,
        }
    }
}

/// Where a map definition came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MapOrigin {
    /// A BTF-defined map in `.maps`.
    BtfMaps,
    /// A `struct bpf_map_def` record in the legacy `maps` section.
    Legacy,
    /// A global data section (`.data`, `.rodata`, `.bss`, `.data.*`,
    /// `.rodata.*`) turned into a one-entry array, as libbpf does.
    GlobalData,
    /// `.kconfig` externs, a one-entry array filled by the loader.
    Kconfig,
}

#[derive(Clone, Debug)]
pub struct MapDef {
    /// The symbol name (`.maps`/`maps`), or libbpf's internal name for
    /// global data (`<obj prefix>.data`, `.rodata`, `.bss`, ...).
    pub name: String,
    /// The ELF section the definition came from.
    pub section: String,
    pub origin: MapOrigin,
    pub map_type: MapType,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub map_flags: u32,
    pub map_extra: u64,
    pub numa_node: u32,
    /// LIBBPF_PIN_NONE = 0, LIBBPF_PIN_BY_NAME = 1; other values are other
    /// loaders' pin flags (iproute2's PIN_GLOBAL_NS = 2, Cilium's replace
    /// flag 16), kept as found.
    pub pinning: u32,
    /// BTF type ids of key and value in `Object::btf_raw`, 0 if unknown.
    pub btf_key_type_id: u32,
    pub btf_value_type_id: u32,
    /// Template of the inner map for ARRAY_OF_MAPS / HASH_OF_MAPS.
    pub inner: Option<Box<MapDef>>,
    /// Initial contents: the section bytes for global data (value_size long),
    /// or, for map-in-map / prog arrays with `.values = {...}`, the slot
    /// initialisers (key index -> index into `Object::maps` or program index).
    pub init: MapInit,
    /// `.rodata` and `.kconfig` are frozen after creation (read-only for
    /// programs: the verifier may treat loads from them as constants).
    pub frozen: bool,
    /// 6.18's excl_prog_hash: only the program of this digest may use the
    /// map.
    pub excl_prog_hash: Option<[u8; 32]>,
    /// An arena the loader leaves unmapped (libbpf maps every arena right
    /// after creating it, which sets its user address).
    pub arena_unmapped: bool,
}

impl MapDef {
    /// max_entries as libbpf and veristat adjust it before creation: perf
    /// event arrays default to one slot per possible CPU, ring buffers are
    /// rounded up to a power-of-two number of pages, other zero sizes become
    /// 1 (veristat's fixup) except for local-storage maps, which must have 0.
    pub fn created_max_entries(&self, possible_cpus: u32) -> u32 {
        match self.map_type {
            MapType::PERF_EVENT_ARRAY if self.max_entries == 0 => possible_cpus,
            MapType::RINGBUF | MapType::USER_RINGBUF => {
                let want = self.max_entries.max(4096);
                want.checked_next_power_of_two().unwrap_or(want)
            }
            MapType::SK_STORAGE
            | MapType::INODE_STORAGE
            | MapType::TASK_STORAGE
            | MapType::CGRP_STORAGE
            | MapType::CGROUP_STORAGE
            | MapType::PERCPU_CGROUP_STORAGE => self.max_entries,
            _ if self.max_entries == 0 => 1,
            _ => self.max_entries,
        }
    }

    /// A map as a BTF `.maps` definition of this type and these sizes, with
    /// no flags, BTF ids or initial contents: for objects built by hand.
    pub fn new(
        name: &str,
        map_type: MapType,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
    ) -> MapDef {
        MapDef {
            name: name.to_owned(),
            section: ".maps".to_owned(),
            origin: MapOrigin::BtfMaps,
            map_type,
            key_size,
            value_size,
            max_entries,
            map_flags: 0,
            map_extra: 0,
            numa_node: 0,
            pinning: 0,
            btf_key_type_id: 0,
            btf_value_type_id: 0,
            inner: None,
            init: MapInit::None,
            frozen: false,
            excl_prog_hash: None,
            arena_unmapped: false,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum MapInit {
    #[default]
    None,
    /// Bytes of the single value of a global-data map.
    Data(Vec<u8>),
    /// `.values` slots of a map-in-map: (slot index, index into Object::maps).
    InnerMaps(Vec<(u32, usize)>),
    /// `.values` slots of a prog array: (slot index, index into Object::programs).
    Programs(Vec<(u32, usize)>),
}

#[derive(Clone, Debug)]
pub struct Program {
    /// The function symbol name.
    pub name: String,
    /// The ELF section name, e.g. "xdp", "kprobe/sys_execve", "tc".
    pub section: String,
    pub prog_type: ProgType,
    pub expected_attach_type: Option<AttachType>,
    /// Attach target named by the section for tp_btf/, fentry/, fexit/,
    /// fmod_ret/, lsm/, iter/, freplace/ (resolved to a BTF id by the
    /// kernel backend / verifier against vmlinux).
    pub attach_target: Option<String>,
    /// Whether libbpf would mark it BPF_F_SLEEPABLE (".s" sections).
    pub sleepable: bool,
    /// BPF_PROG_LOAD prog_flags libbpf derives from the section name
    /// (BPF_F_SLEEPABLE, BPF_F_XDP_HAS_FRAGS).
    pub prog_flags: u32,
    /// Final instruction stream: the entry function first, then every
    /// reachable subprogram appended, calls and map references relocated.
    pub insns: Vec<Insn>,
    /// Start instruction and BTF type id of each function in `insns`
    /// (entry first), as BTF.ext func_info rebased onto the final stream.
    pub func_info: Vec<FuncInfo>,
    /// BTF.ext line_info rebased onto the final stream, sorted by insn.
    pub line_info: Vec<LineInfo>,
    /// Where each function of `insns` comes from, in order: for line
    /// tables that name section offsets (DWARF).
    pub placement: Vec<Placement>,
    /// CO-RE relocations that could not be resolved; the loader poisons
    /// those instructions as libbpf does and lists them here.
    pub core_unresolved: Vec<CoreFailure>,
    /// For a struct_ops program: the member of the struct_ops map that
    /// holds it, which decides its arguments, return value and helpers.
    pub struct_ops: Option<StructOpsMember>,
    /// Why the loader could not prepare this program although the rest of
    /// the object loads (an extern or relocation only it needs). A refused
    /// program has no instructions; verifiers must refuse it with this
    /// reason instead of verifying it.
    pub refused: Option<String>,
    /// BPF_PROG_LOAD attributes that differ from libbpf's choice.
    pub load: LoadAttrs,
}

/// BPF_PROG_LOAD attributes a loader may set other than libbpf does (the
/// differential fuzzer tries them); the default is libbpf's load.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadAttrs {
    /// fd_array as sent. None: libbpf's, every map of the object at its
    /// index. Some: this list (empty: no fd_array at all); a map
    /// reference `BPF_PSEUDO_MAP_IDX` k reads entry k.
    pub fd_array: Option<Vec<FdEntry>>,
    /// fd_array_cnt (6.13+): this many leading fd_array entries are taken
    /// as the program's maps and BTFs before verification.
    pub fd_array_cnt: u32,
    /// func_info_rec_size when not sizeof(struct bpf_func_info) (8); records
    /// are laid out at this stride, zero-padded.
    pub func_info_rec_size: Option<u32>,
    /// CO-RE relocation records handed to the kernel to apply (libbpf
    /// applies its own and sends none); sent with func_info only.
    pub core_relos: Vec<CoreRelo>,
    /// The license sent for this program when not the object's.
    pub license: Option<String>,
}

/// One entry of an explicit fd_array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdEntry {
    /// The fd of `Object::maps[i]`.
    Map(usize),
    /// A BTF object of its own (a fresh load of the object's BTF).
    Btf,
    /// A raw number that is no open fd (negative or huge).
    Invalid(i32),
}

/// A `struct bpf_core_relo` as BPF_PROG_LOAD takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreRelo {
    /// Byte offset of the instruction.
    pub insn_off: u32,
    pub type_id: u32,
    pub access_str_off: u32,
    pub kind: u32,
}

/// The struct_ops member a program implements, as its struct_ops map
/// names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructOpsMember {
    /// The struct_ops map (the section variable).
    pub map: String,
    /// The struct type without a `___flavour` suffix: the kernel type of
    /// that name is the one implemented (e.g. tcp_congestion_ops).
    pub type_name: String,
    /// The function-pointer member the program is stored in.
    pub member: String,
    /// attach_btf_id and member index given as they are, for a program
    /// loaded through bpf(2) without libbpf (the differential fuzzer's,
    /// which also tries ids no struct_ops map could name); None: resolved
    /// from the names as libbpf does.
    pub raw: Option<crate::struct_ops::KernelMember>,
}

/// A function of a program's final stream and its place in the object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub section: String,
    /// Its first instruction in the section.
    pub section_insn: usize,
    pub len: usize,
    /// Its first instruction in the program's `insns`.
    pub insn: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncInfo {
    pub insn_off: u32,
    pub type_id: u32,
    /// The function's name from BTF.
    pub name: String,
    /// BTF_FUNC_STATIC = 0, BTF_FUNC_GLOBAL = 1, BTF_FUNC_EXTERN = 2.
    pub linkage: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineInfo {
    pub insn_off: u32,
    /// Offsets into the BTF string section, as the kernel wants them.
    pub file_name_off: u32,
    pub line_off: u32,
    /// Resolved strings for printing.
    pub file_name: String,
    /// The source line's text as recorded by clang.
    pub line_text: String,
    pub line: u32,
    pub column: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreFailure {
    pub insn_off: u32,
    /// e.g. "struct task_struct::pid field_byte_offset: not found in target".
    pub reason: String,
}
