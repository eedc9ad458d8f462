//! Verifier behaviour tests written as small programs in the kernel-log
//! syntax (tests/cases/*.case), one behaviour per file. Directives at the
//! top say what must happen:
//!
//! ```text
//! # prog_type: xdp                 (libbpf's name; default socket_filter)
//! # attach_type: trace_uprobe_session (optional: expected attach type)
//! # section: iter/bpf_map_elem      (optional: the ELF section, naming the
//!                                   BTF target of iter/, tp_btf/ ...)
//! # verdict: reject                (accept | reject | refuse: bpfvet says
//!                                   "not modelled", the kernel rejects)
//! # error: R2 !read_ok             (for reject, a limit included: the
//!                                   kernel's error line;
//!                                   for refuse: the kernel's only)
//! # processed: 3                   (optional: processed insns)
//! # states: 0                      (optional: total_states)
//! # map: ringbuf 0 0 4096          (optional, repeatable: a map the program
//!                                   loads as `map_idx[N]`, N counting from 0:
//!                                   libbpf's type name, key, value, entries
//!                                   (default 16), then optional words: map
//!                                   flags rdonly_prog, wronly_prog, mmapable,
//!                                   no_prealloc,
//!                                   `frozen` (frozen after creation),
//!                                   `unmapped` (an arena left unmapped),
//!                                   `extra=0xN` (map_extra), `excl=HEX`
//!                                   (excl_prog_hash),
//!                                   `fill=N` (the value's bytes all N),
//!                                   `data=HEX` (its first bytes, the rest
//!                                   zero), and
//!                                   `lock@OFF` (`timer@OFF`, `wq@OFF`,
//!                                   `task_work@OFF`, `res_lock@OFF`,
//!                                   `kptr@OFF`, `local_kptr@OFF`,
//!                                   `plain_kptr@OFF`), which
//!                                   gives the value BTF with a `struct
//!                                   bpf_spin_lock` (`bpf_timer`, `bpf_wq`,
//!                                   `bpf_task_work`, `bpf_res_spin_lock`,
//!                                   `struct task_struct __kptr *`, a kptr to
//!                                   a refcounted rbtree node of the
//!                                   program's, a kptr to a program struct
//!                                   without refcount) at OFF)
//! # peak: 0                        (optional: peak_states)
//! # sleepable: yes                 (optional: loaded with BPF_F_SLEEPABLE)
//! # prog_flags: BPF_F_STRICT_ALIGNMENT (optional: BPF_PROG_LOAD prog_flags,
//!                                   names joined by `|` or a number)
//! # privileges: unprivileged       (optional: root (default), bpf (CAP_BPF
//!                                   alone) or unprivileged; both verifiers
//!                                   load at that level, and the array
//!                                   maps are made at it; a rejection by
//!                                   bpf_prog_load itself reads
//!                                   `bpf_prog_load: EPERM`)
//! # func: 0 main global int int*    (optional, repeatable, one per function
//!                                   in order: start insn, name, static |
//!                                   global, return int | void, arguments
//!                                   int | int* | ctx (struct __sk_buff *) |
//!                                   void* | task* (struct task_struct *),
//!                                   each optionally with `@TAG`s for
//!                                   `arg:TAG` decl tags, e.g. void*@ctx;
//!                                   gives the program BTF and func_info)
//! # line: 0 [1 1]                   (optional, repeatable, with `# func:`:
//!                                   a line_info record at an insn, with
//!                                   its line and file name string offsets,
//!                                   default 1, the string "int")
//! # struct_ops: tcp_congestion_ops ssthresh (optional: the struct_ops
//!                                   member a struct_ops program implements,
//!                                   a vmlinux struct and a member name or
//!                                   index, passed as attach_btf_id and
//!                                   expected_attach_type as they are, valid
//!                                   or not)
//! # btf: fuzz                      (optional: the program BTF of the
//!                                   differential fuzzer's objects,
//!                                   random_diff/gen/btf_objects.rs; maps
//!                                   then name their value type with
//!                                   `btf=ID` and `# func:` lines give
//!                                   func_info of its FUNC of that name,
//!                                   else of its `static int f(void)`)
//!                                   (an expected error may name a kernel
//!                                   function's id as `btf_func[name]`)
//! .rept N / .endr                   (around instruction lines: them N times)
//! # license: MIT                    (optional: the object's license, default GPL)
//! # fd_array: map0 btf fd=-1        (optional: an explicit fd_array, `none`
//!                                   for none: the map of that index, a BTF
//!                                   object of its own, a raw number)
//! # fd_array_cnt: 3                 (optional: BPF_PROG_LOAD's fd_array_cnt)
//! # func_info_rec_size: 12          (optional, with `# func:`)
//! # core_relo: 9 1 0 0              (optional, repeatable, with `# func:`: a
//!                                   CO-RE record: insn_off type_id
//!                                   access_str_off kind)
//! # any other text                  (a comment)
//! ```
//!
//! Each case is checked against bpfvet and, when the host kernel can load
//! programs (root and a working bpf(2)), replayed against the kernel too,
//! so every expectation is also checked against the oracle.

#[allow(dead_code)]
#[path = "random_diff/gen/btf_objects.rs"]
mod fuzz_btf;

use bpfvet_isa::uapi::{AttachType, MapType, ProgType};
use bpfvet_kernel::{oracle, Errno};
use bpfvet_object::{MapDef, Object};
use bpfvet_verifier::{verify, Options, Privileges, Verdict};
use std::path::PathBuf;

struct Case {
    name: String,
    prog_type: ProgType,
    attach_type: Option<AttachType>,
    /// ELF section, for programs attached to a BTF target (`iter/NAME`).
    section: Option<String>,
    accept: bool,
    /// bpfvet must refuse (not modelled); the kernel must reject.
    refuse: bool,
    error: Option<String>,
    processed: Option<u64>,
    states: Option<u64>,
    maps: Vec<MapDef>,
    peak: Option<u64>,
    funcs: Vec<String>,
    lines: Vec<String>,
    sleepable: bool,
    prog_flags: u32,
    struct_ops: Option<String>,
    fuzz_btf: bool,
    privileges: Privileges,
    license: Option<String>,
    load: bpfvet_object::LoadAttrs,
    text: String,
}

fn parse(name: &str, src: &str) -> Case {
    let mut c = Case {
        name: name.to_string(),
        prog_type: ProgType::SOCKET_FILTER,
        attach_type: None,
        section: None,
        accept: true,
        refuse: false,
        error: None,
        processed: None,
        states: None,
        maps: Vec::new(),
        peak: None,
        funcs: Vec::new(),
        lines: Vec::new(),
        sleepable: false,
        prog_flags: 0,
        struct_ops: None,
        fuzz_btf: false,
        privileges: Privileges::Root,
        license: None,
        load: Default::default(),
        text: String::new(),
    };
    for line in src.lines() {
        if let Some(d) = line.strip_prefix('#') {
            // A directive, or a comment saying what the case pins and why.
            if let Some((k, v)) = d.trim_start().split_once(':') {
                let v = v.trim();
                match k.trim() {
                    "prog_type" => c.prog_type = ProgType::from_name(v).expect("known prog type"),
                    "attach_type" => {
                        c.attach_type = Some(AttachType::from_name(v).expect("known attach type"))
                    }
                    "section" => c.section = Some(v.to_string()),
                    "verdict" => {
                        c.accept = v == "accept";
                        c.refuse = v == "refuse";
                    }
                    "error" => c.error = Some(resolve_func_ids(v)),
                    "processed" => c.processed = Some(v.parse().expect("number")),
                    "states" => c.states = Some(v.parse().expect("number")),
                    "map" => c.maps.push(map_def(c.maps.len(), v)),
                    "peak" => c.peak = Some(v.parse().expect("number")),
                    "func" => c.funcs.push(v.to_string()),
                    "line" => c.lines.push(v.to_string()),
                    "sleepable" => c.sleepable = v == "yes",
                    "prog_flags" => {
                        c.prog_flags = bpfvet_isa::uapi::parse_prog_flags(v).expect("prog flags")
                    }
                    "struct_ops" => c.struct_ops = Some(v.to_string()),
                    "btf" => c.fuzz_btf = v == "fuzz",
                    "privileges" => c.privileges = v.parse().expect("privilege level"),
                    "license" => c.license = Some(v.to_string()),
                    "fd_array" => c.load.fd_array = Some(fd_array(v)),
                    "fd_array_cnt" => c.load.fd_array_cnt = v.parse().expect("number"),
                    "func_info_rec_size" => {
                        c.load.func_info_rec_size = Some(v.parse().expect("number"))
                    }
                    "core_relo" => {
                        let w: Vec<u32> = v
                            .split_whitespace()
                            .map(|n| n.parse().expect("core_relo: 4 numbers"))
                            .collect();
                        assert_eq!(
                            w.len(),
                            4,
                            "core_relo: insn_off type_id access_str_off kind"
                        );
                        c.load.core_relos.push(bpfvet_object::CoreRelo {
                            insn_off: w[0],
                            type_id: w[1],
                            access_str_off: w[2],
                            kind: w[3],
                        });
                    }
                    _ => {}
                }
            }
            continue;
        }
        c.text.push_str(line);
        c.text.push('\n');
    }
    c
}

/// The entries of a `# fd_array:` directive.
fn fd_array(spec: &str) -> Vec<bpfvet_object::FdEntry> {
    use bpfvet_object::FdEntry;
    if spec == "none" {
        return Vec::new();
    }
    spec.split_whitespace()
        .map(|w| {
            if w == "btf" {
                FdEntry::Btf
            } else if let Some(i) = w.strip_prefix("map") {
                FdEntry::Map(i.parse().expect("mapN"))
            } else if let Some(fd) = w.strip_prefix("fd=") {
                FdEntry::Invalid(fd.parse().expect("fd=N"))
            } else {
                panic!("fd_array: mapN | btf | fd=N, got {w:?}")
            }
        })
        .collect()
}

/// `<type> <key size> <value size> [<max entries> [<flag> | lock@OFF]...]`
/// of a `# map:` directive.
/// In a map's placeholder value type id: the special field is a bpf_timer
/// (else a bpf_spin_lock); the low bits are its offset.
const TIMER_MARK: u32 = 1 << 16;
/// Likewise for a bpf_wq.
const WQ_MARK: u32 = 1 << 17;
/// Likewise for a bpf_task_work.
const TASK_WORK_MARK: u32 = 1 << 18;
/// Likewise for a bpf_res_spin_lock.
const RES_LOCK_MARK: u32 = 1 << 19;
/// Likewise for a `struct task_struct __kptr *`.
const KPTR_MARK: u32 = 1 << 20;
/// Likewise for a `struct bpfvet_node __kptr *` to a program type, `struct bpfvet_node
/// { int data; struct bpf_rb_node rb; struct bpf_refcount ref; }`.
const LOCAL_KPTR_MARK: u32 = 1 << 21;
/// Likewise for a `struct bpfvet_plain __kptr *` to a program type without
/// a refcount (not RCU-protected), `struct bpfvet_plain { int data; }`.
const PLAIN_KPTR_MARK: u32 = 1 << 22;

fn map_def(index: usize, spec: &str) -> MapDef {
    let f: Vec<&str> = spec.split_whitespace().collect();
    assert!(
        f.len() >= 3,
        "map: <type> <key> <value> [<entries>, default 16] [<flag> | lock@OFF]..., got {spec:?}"
    );
    let num = |s: &str| s.parse::<u32>().expect("map size");
    let mut m = MapDef::new(
        &format!("map{index}"),
        MapType::from_name(f[0]).expect("known map type"),
        num(f[1]),
        num(f[2]),
        f.get(3).map_or(16, |n| num(n)),
    );
    for word in f.iter().skip(4).flat_map(|s| s.split(',')) {
        if let Some(id) = word.strip_prefix("btf=") {
            // A value type of the fuzzer's BTF (`# btf: fuzz`).
            m.btf_key_type_id = 1;
            m.btf_value_type_id = num(id);
            continue;
        }
        if let Some(off) = word.strip_prefix("lock@") {
            // Marks the map for `case_btf`, which assigns the type ids.
            m.btf_value_type_id = u32::MAX - num(off);
            continue;
        }
        if let Some(off) = word.strip_prefix("timer@") {
            m.btf_value_type_id = u32::MAX - (num(off) | TIMER_MARK);
            continue;
        }
        if let Some(off) = word.strip_prefix("wq@") {
            m.btf_value_type_id = u32::MAX - (num(off) | WQ_MARK);
            continue;
        }
        if let Some(off) = word.strip_prefix("plain_kptr@") {
            m.btf_value_type_id = u32::MAX - (num(off) | PLAIN_KPTR_MARK);
            continue;
        }
        if let Some(off) = word.strip_prefix("local_kptr@") {
            m.btf_value_type_id = u32::MAX - (num(off) | LOCAL_KPTR_MARK);
            continue;
        }
        if let Some(off) = word.strip_prefix("kptr@") {
            m.btf_value_type_id = u32::MAX - (num(off) | KPTR_MARK);
            continue;
        }
        if let Some(off) = word.strip_prefix("res_lock@") {
            m.btf_value_type_id = u32::MAX - (num(off) | RES_LOCK_MARK);
            continue;
        }
        if let Some(off) = word.strip_prefix("task_work@") {
            m.btf_value_type_id = u32::MAX - (num(off) | TASK_WORK_MARK);
            continue;
        }
        if word == "frozen" {
            // Frozen after creation, as libbpf does `.rodata`.
            m.frozen = true;
            continue;
        }
        if let Some(n) = word.strip_prefix("extra=0x") {
            m.map_extra = u64::from_str_radix(n, 16).expect("extra=0xHEX");
            continue;
        }
        if word == "unmapped" {
            // An arena the loader does not mmap.
            m.arena_unmapped = true;
            continue;
        }
        if let Some(hex) = word.strip_prefix("excl=") {
            // excl_prog_hash: 64 hex digits.
            let bytes: Vec<u8> = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
                .collect();
            m.excl_prog_hash = Some(bytes.try_into().expect("excl=<32 bytes in hex>"));
            continue;
        }
        if let Some(hex) = word.strip_prefix("data=") {
            // The single value's initial bytes in hex, zero-padded.
            let mut bytes: Vec<u8> = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex data"))
                .collect();
            bytes.resize(m.value_size as usize, 0);
            m.init = bpfvet_object::MapInit::Data(bytes);
            continue;
        }
        if let Some(byte) = word.strip_prefix("fill=") {
            // The single value's initial bytes, all `byte`.
            m.init = bpfvet_object::MapInit::Data(vec![num(byte) as u8; m.value_size as usize]);
            continue;
        }
        m.map_flags |= match word {
            "rdonly_prog" => bpfvet_isa::uapi::BPF_F_RDONLY_PROG,
            "wronly_prog" => bpfvet_isa::uapi::BPF_F_WRONLY_PROG,
            "mmapable" => bpfvet_isa::uapi::BPF_F_MMAPABLE,
            "no_prealloc" => bpfvet_isa::uapi::BPF_F_NO_PREALLOC,
            other => panic!("unknown map flag {other:?}"),
        };
    }
    m
}

/// Kfunc calls are written as the kernel logs them, `call bpf_iter_num_new#64231`;
/// the id is re-resolved by name in the host's vmlinux BTF, so a case stays
/// valid on a kernel build that numbers its types differently; likewise a
/// variable written `btf_id[name]` in an ldimm64, and a struct's type id
/// written `btf_struct[name]` as an immediate.
fn resolve_kfunc_ids(text: &str) -> String {
    let Some(btf) = std::fs::read(bpfvet_object::HOST_VMLINUX)
        .ok()
        .and_then(|b| bpfvet_object::btf::Btf::from_bytes(&b).ok())
    else {
        return text.to_string();
    };
    let mut out = String::new();
    for line in text.lines() {
        let resolved = line
            .trim()
            .strip_prefix("call ")
            .and_then(|rest| rest.split_once('#'))
            .filter(|(name, _)| bpfvet_isa::uapi::HelperId::from_name(name).is_none())
            .and_then(|(name, _)| {
                btf.find_by_name_kind(name, bpfvet_object::btf::Kind::Func)
                    .map(|id| format!("call {name}#{id}"))
            });
        // `btf_id[name]` names a variable (or else a function) of vmlinux BTF.
        let resolved = resolved.or_else(|| {
            let (head, rest) = line.split_once("btf_id[")?;
            let (name, tail) = rest.split_once(']')?;
            let id = btf
                .find_by_name_kind(name, bpfvet_object::btf::Kind::Var)
                .or_else(|| btf.find_by_name_kind(name, bpfvet_object::btf::Kind::Func))?;
            Some(format!("{head}btf_id[{id}]{tail}"))
        });
        // `btf_struct[name]` is the type id of a vmlinux struct, as a number.
        let resolved = resolved.or_else(|| {
            let (head, rest) = line.split_once("btf_struct[")?;
            let (name, tail) = rest.split_once(']')?;
            let id = btf.find_by_name_kind(name, bpfvet_object::btf::Kind::Struct)?;
            Some(format!("{head}{id}{tail}"))
        });
        out.push_str(resolved.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// `.rept N` ... `.endr` (not nested): the lines between, N times.
fn expand_repeats(text: &str) -> String {
    let mut out = String::new();
    let mut block: Option<(usize, String)> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(n) = t.strip_prefix(".rept ") {
            block = Some((n.trim().parse().expect(".rept count"), String::new()));
        } else if t == ".endr" {
            let (n, body) = block.take().expect(".endr without .rept");
            out.push_str(&body.repeat(n));
        } else if let Some((_, body)) = block.as_mut() {
            body.push_str(line);
            body.push('\n');
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// `btf_func[name]` in an expected error is the host's BTF id of that
/// kernel function (messages naming a kfunc give its id).
fn resolve_func_ids(text: &str) -> String {
    let Some((head, rest)) = text.split_once("btf_func[") else {
        return text.to_string();
    };
    let Some((name, tail)) = rest.split_once(']') else {
        return text.to_string();
    };
    let id = std::fs::read(bpfvet_object::HOST_VMLINUX)
        .ok()
        .and_then(|b| bpfvet_object::btf::Btf::from_bytes(&b).ok())
        .and_then(|btf| btf.find_by_name_kind(name, bpfvet_object::btf::Kind::Func));
    match id {
        Some(id) => format!("{head}{id}{}", resolve_func_ids(tail)),
        None => text.to_string(),
    }
}

fn object(c: &Case) -> Object {
    let text = resolve_kfunc_ids(&expand_repeats(&c.text));
    let insns =
        bpfvet_isa::asm::assemble_insns(&text).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    let mut obj = Object::single_program(&c.name, c.prog_type, insns);
    obj.programs[0].expected_attach_type = c.attach_type;
    obj.programs[0].sleepable = c.sleepable;
    obj.programs[0].prog_flags = c.prog_flags;
    if let Some(spec) = &c.struct_ops {
        let (type_name, member) = spec.split_once(' ').expect("struct_ops: <type> <member>");
        obj.programs[0].struct_ops = std::fs::read(bpfvet_object::HOST_VMLINUX)
            .ok()
            .and_then(|b| bpfvet_object::btf::Btf::from_bytes(&b).ok())
            .and_then(|btf| bpfvet_object::StructOpsMember::by_ids(&btf, type_name, member.trim()));
    }
    if let Some(sec) = &c.section {
        obj.programs[0].section = sec.clone();
        obj.programs[0].attach_target = sec.split_once('/').map(|(_, t)| t.to_string());
    }
    obj.maps = c.maps.clone();
    if c.fuzz_btf {
        let raw = fuzz_btf::object_btf();
        let btf = bpfvet_object::btf::Btf::from_bytes(&raw).expect("fuzz BTF");
        // A name of a FUNC of the fuzz BTF picks it, any other `f`.
        obj.programs[0].func_info = c
            .funcs
            .iter()
            .map(|f| {
                let mut w = f.split_whitespace();
                let insn_off = w
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("func: <insn> ...");
                let type_id = w
                    .next()
                    .and_then(|n| btf.find_by_name_kind(n, bpfvet_object::btf::Kind::Func))
                    .unwrap_or(3);
                let t = btf.type_by_id(type_id).expect("fuzz BTF FUNC");
                bpfvet_object::FuncInfo {
                    insn_off,
                    type_id,
                    name: btf.name(t).to_string(),
                    linkage: t.linkage(),
                }
            })
            .collect();
        obj.btf = Some(btf);
        obj.btf_raw = Some(raw);
    } else if let Some((raw, infos)) = case_btf(&c.funcs, &mut obj.maps) {
        obj.btf = Some(bpfvet_object::btf::Btf::from_bytes(&raw).expect("case BTF"));
        obj.btf_raw = Some(raw);
        obj.programs[0].func_info = infos;
    }
    obj.programs[0].line_info = c.lines.iter().map(|l| line_info(l)).collect();
    obj.programs[0].load = c.load.clone();
    obj.programs[0].load.license = c.license.clone();
    obj
}

/// `<insn> [<line_off> <file_name_off>]` of a `# line:` directive.
fn line_info(spec: &str) -> bpfvet_object::LineInfo {
    let w: Vec<u32> = spec
        .split_whitespace()
        .map(|n| {
            n.parse()
                .expect("line: <insn> [<line_off> <file_name_off>]")
        })
        .collect();
    bpfvet_object::LineInfo {
        insn_off: w[0],
        line_off: w.get(1).copied().unwrap_or(1),
        file_name_off: w.get(2).copied().unwrap_or(1),
        file_name: String::new(),
        line_text: String::new(),
        line: 1,
        column: 0,
    }
}

/// BTF for a case, when it needs one: `int` is type 1, `int *` 2, `struct
/// __sk_buff` (opaque) 3 and a pointer to it 4, `struct bpf_spin_lock` 5,
/// `void *` 6, `struct bpf_timer` 7, `struct task_struct` (opaque) 8, a
/// pointer to it 9, `struct bpf_wq` 10 and `struct bpf_task_work` 11;
/// then, for each map `map_def` marked with `lock@OFF`, a value struct of
/// its size holding the lock at OFF (the map gets its type ids; a
/// `res_lock@OFF` map's value is preceded by its lock's struct, a
/// `kptr@OFF` one's by the kptr's tag and pointer, a `local_kptr@OFF`
/// one's by the node struct's types, then those), and a
/// FUNC_PROTO and a FUNC for each `# func:` line (returned as func_info).
fn case_btf(
    funcs: &[String],
    maps: &mut [MapDef],
) -> Option<(Vec<u8>, Vec<bpfvet_object::FuncInfo>)> {
    let locked = |m: &MapDef| m.btf_value_type_id != 0;
    if funcs.is_empty() && !maps.iter().any(locked) {
        return None;
    }
    let mut types: Vec<u32> = Vec::new();
    let mut strings: Vec<u8> = vec![0];
    let name = |strings: &mut Vec<u8>, n: &str| {
        let off = strings.len() as u32;
        strings.extend_from_slice(n.as_bytes());
        strings.push(0);
        off
    };
    let int = name(&mut strings, "int");
    types.extend([int, 1 << 24, 4, (1 << 24) | 32]); // [1] INT int, signed 32 bits
    types.extend([0, 2 << 24, 1]); // [2] PTR -> int
    let skb = name(&mut strings, "__sk_buff");
    types.extend([skb, 4 << 24, 0]); // [3] STRUCT __sk_buff, opaque
    types.extend([0, 2 << 24, 3]); // [4] PTR -> struct __sk_buff
    let lock = name(&mut strings, "bpf_spin_lock");
    let val = name(&mut strings, "val");
    types.extend([lock, (4 << 24) | 1, 4, val, 1, 0]); // [5] STRUCT bpf_spin_lock { int val; }
    types.extend([0, 2 << 24, 0]); // [6] PTR -> void
    let timer = name(&mut strings, "bpf_timer");
    types.extend([timer, 4 << 24, 16]); // [7] STRUCT bpf_timer, 16 opaque bytes
    let task = name(&mut strings, "task_struct");
    types.extend([task, 4 << 24, 0]); // [8] STRUCT task_struct, opaque
    types.extend([0, 2 << 24, 8]); // [9] PTR -> struct task_struct
    let wq = name(&mut strings, "bpf_wq");
    types.extend([wq, 4 << 24, 16]); // [10] STRUCT bpf_wq, 16 opaque bytes
    let task_work = name(&mut strings, "bpf_task_work");
    types.extend([task_work, 4 << 24, 8]); // [11] STRUCT bpf_task_work, 8 opaque bytes
    let mut next_id = 12;
    let value = name(&mut strings, "value");
    let lock_member = name(&mut strings, "lock");
    let timer_member = name(&mut strings, "timer");
    let wq_member = name(&mut strings, "work");
    for m in maps.iter_mut().filter(|m| locked(m)) {
        let mark = u32::MAX - m.btf_value_type_id;
        let (member, field_type, off) = if mark & TIMER_MARK != 0 {
            (timer_member, 7, mark & !TIMER_MARK)
        } else if mark & WQ_MARK != 0 {
            (wq_member, 10, mark & !WQ_MARK)
        } else if mark & TASK_WORK_MARK != 0 {
            (wq_member, 11, mark & !TASK_WORK_MARK)
        } else if mark & LOCAL_KPTR_MARK != 0 {
            // STRUCT bpf_rb_node (32 opaque bytes), bpf_refcount (4), the
            // node struct, TYPE_TAG kptr -> it, a PTR to the tag.
            let (rb, rc) = (
                name(&mut strings, "bpf_rb_node"),
                name(&mut strings, "bpf_refcount"),
            );
            types.extend([rb, 4 << 24, 32]);
            types.extend([rc, 4 << 24, 4]);
            let node = name(&mut strings, "bpfvet_node");
            let (data, rbm, refm) = (
                name(&mut strings, "data"),
                name(&mut strings, "rb"),
                name(&mut strings, "ref"),
            );
            types.extend([node, (4 << 24) | 3, 48, data, 1, 0]);
            types.extend([rbm, next_id, 64, refm, next_id + 1, 320]);
            let kptr = name(&mut strings, "kptr");
            types.extend([kptr, 18 << 24, next_id + 2]);
            types.extend([0, 2 << 24, next_id + 3]);
            next_id += 5;
            (lock_member, next_id - 1, mark & !LOCAL_KPTR_MARK)
        } else if mark & PLAIN_KPTR_MARK != 0 {
            // STRUCT bpfvet_plain { int data; }, TYPE_TAG kptr -> it, a PTR
            // to the tag.
            let plain = name(&mut strings, "bpfvet_plain");
            let data = name(&mut strings, "data");
            types.extend([plain, (4 << 24) | 1, 4, data, 1, 0]);
            let kptr = name(&mut strings, "kptr");
            types.extend([kptr, 18 << 24, next_id]);
            types.extend([0, 2 << 24, next_id + 1]);
            next_id += 3;
            (lock_member, next_id - 1, mark & !PLAIN_KPTR_MARK)
        } else if mark & KPTR_MARK != 0 {
            // TYPE_TAG kptr -> task_struct, then a PTR to it, just before
            // the value.
            let kptr = name(&mut strings, "kptr");
            types.extend([kptr, 18 << 24, 8]);
            types.extend([0, 2 << 24, next_id]);
            next_id += 2;
            (lock_member, next_id - 1, mark & !KPTR_MARK)
        } else if mark & RES_LOCK_MARK != 0 {
            // STRUCT bpf_res_spin_lock { int val; }, just before the value.
            let res_lock = name(&mut strings, "bpf_res_spin_lock");
            types.extend([res_lock, (4 << 24) | 1, 4, val, 1, 0]);
            next_id += 1;
            (lock_member, next_id - 1, mark & !RES_LOCK_MARK)
        } else {
            (lock_member, 5, mark)
        };
        // STRUCT value { struct bpf_spin_lock lock; } (or a bpf_timer) at
        // `off`, value_size bytes
        types.extend([
            value,
            (4 << 24) | 1,
            m.value_size,
            member,
            field_type,
            off * 8,
        ]);
        m.btf_value_type_id = next_id;
        m.btf_key_type_id = if m.key_size == 4 { 1 } else { 0 };
        next_id += 1;
    }
    let mut infos = Vec::new();
    // (tag name offset, FUNC id, argument index), emitted after the FUNCs.
    let mut arg_tags = Vec::new();
    for f in funcs {
        let w: Vec<&str> = f.split_whitespace().collect();
        assert!(
            w.len() >= 4,
            "func: <insn> <name> <static|global> <int|void> [int|int*|ctx|void*[@tag]]..."
        );
        let ret = match w[3] {
            "int" => 1,
            "void" => 0,
            other => panic!("func return {other}"),
        };
        let args = &w[4..];
        types.extend([0, (13 << 24) | args.len() as u32, ret]); // FUNC_PROTO
        for (i, a) in args.iter().enumerate() {
            let arg_name = name(&mut strings, &format!("a{i}"));
            let mut parts = a.split('@');
            let a = parts.next().unwrap_or_default();
            for tag in parts {
                arg_tags.push((name(&mut strings, &format!("arg:{tag}")), next_id + 1, i));
            }
            let ty = match a {
                "int" => 1,
                "int*" => 2,
                "ctx" => 4,
                "void*" => 6,
                "task*" => 9,
                other => panic!("func argument {other}"),
            };
            types.extend([arg_name, ty]);
        }
        let proto = next_id;
        let linkage = u32::from(w[2] == "global");
        let fname = name(&mut strings, w[1]);
        types.extend([fname, (12 << 24) | linkage, proto]); // FUNC
        infos.push(bpfvet_object::FuncInfo {
            insn_off: w[0].parse().expect("func insn"),
            type_id: proto + 1,
            name: w[1].to_string(),
            linkage,
        });
        next_id += 2;
    }
    for (tag, func, arg) in arg_tags {
        types.extend([tag, 17 << 24, func, arg as u32]); // DECL_TAG on an argument
    }
    let type_bytes: Vec<u8> = types.iter().flat_map(|t| t.to_le_bytes()).collect();
    let raw = bpfvet_object::btf::encode(&type_bytes, &strings);
    Some((raw, infos))
}

/// The kernel's error: the log's last line that is not a statistic.
fn last_log_line(text: &str) -> String {
    bpfvet_kernel::report::last_error_line(text)
        .unwrap_or("")
        .to_string()
}

/// [`kernel_load`] for a program with maps: the kernel backend creates
/// them and resolves `map_idx[N]`.
fn kernel_load_with_maps(
    obj: &Object,
    log_level: u32,
    privileges: Privileges,
) -> Option<KernelSays> {
    let kernel = bpfvet_kernel::Kernel::open().ok()?;
    let session = kernel.open_object_as(obj, privileges);
    let opts = bpfvet_kernel::LoadOptions {
        log_level,
        privileges,
        ..Default::default()
    };
    let report = session.load_program(0, &opts)?;
    if matches!(report.verdict, bpfvet_kernel::Verdict::Refused(_)) {
        // Shown: such a case is checked against bpfvet alone.
        println!(
            "SKIP: {}: host kernel replay: load refused ({:?})",
            obj.programs[0].name, report.verdict
        );
        return None;
    }
    Some(KernelSays {
        accepted: report.verdict.is_accepted(),
        last: report
            .error_line()
            .map_or_else(|| last_log_line(&report.log), str::to_string),
        processed: report.stats.processed_insns,
        total_states: report.stats.total_states,
        peak_states: report.stats.peak_states,
        log: report.log,
    })
}

/// What the host kernel says.
struct KernelSays {
    accepted: bool,
    /// The last log line that is not a statistic.
    last: String,
    processed: Option<u64>,
    total_states: Option<u64>,
    peak_states: Option<u64>,
    log: String,
}

/// A number the stats line of the log gives after `key`.
fn log_stat(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("processed "))?;
    let mut words = line.split_whitespace();
    words.find(|w| *w == key)?;
    words.next()?.parse().ok()
}

/// What the host kernel says about the program (no maps), or None where
/// it cannot be asked.
fn kernel_load(obj: &Object, log_level: u32, privileges: Privileges) -> Option<KernelSays> {
    let p = &obj.programs[0];
    let mut raw = oracle::RawProgram::new(p.prog_type.0, &p.insns);
    raw.log_level = log_level.max(raw.log_level);
    raw.privileges = privileges;
    raw.prog_flags = p.prog_flags;
    if p.sleepable {
        raw.prog_flags |= bpfvet_isa::uapi::BPF_F_SLEEPABLE;
    }
    raw.expected_attach_type = p.expected_attach_type.map_or(0, |a| a.0);
    let v = oracle::load(&raw);
    // At a reduced level bpf_prog_load's own refusal (no log) is the
    // answer; as root an EPERM means the kernel cannot be asked.
    let load_refusal = privileges != Privileges::Root
        && v.log.trim().is_empty()
        && matches!(v.errno(), Some(Errno::EPERM | Errno::E2BIG));
    if !load_refusal && matches!(v.errno(), Some(Errno::EPERM | Errno::ENOSYS)) {
        return None;
    }
    Some(KernelSays {
        accepted: v.accepted(),
        last: match v.errno() {
            Some(e) if load_refusal => format!("bpf_prog_load: {e}"),
            _ => v.error_line().to_string(),
        },
        processed: log_stat(&v.log, "processed"),
        total_states: log_stat(&v.log, "total_states"),
        peak_states: log_stat(&v.log, "peak_states"),
        log: v.log,
    })
}

#[test]
fn cases() {
    // BPFVET_CASES_DIR replays another directory (a fuzz run's cases/).
    let dir = std::env::var_os("BPFVET_CASES_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases"),
        PathBuf::from,
    );
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("cases dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "case"))
        .collect();
    // BPFVET_CASES=PREFIX runs only the cases whose name starts with it.
    if let Ok(prefix) = std::env::var("BPFVET_CASES") {
        files.retain(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        });
        println!("BPFVET_CASES={prefix}: {} cases", files.len());
    }
    files.sort();
    assert!(!files.is_empty());
    let mut failures = Vec::new();
    let mut kernel_checked = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let c = parse(&name, &std::fs::read_to_string(f).unwrap());
        let obj = object(&c);
        let opts = Options {
            privileges: c.privileges,
            ..Options::default()
        };
        let out = verify(&obj, 0, &opts);
        match (&out.verdict, c.accept) {
            (Verdict::Accepted, true) => {}
            (Verdict::Unsupported { .. }, false) if c.refuse => {}
            // A limit (processed insns, jump sequence) rejects too.
            (Verdict::Rejected { error, .. } | Verdict::LimitExceeded { error, .. }, false)
                if !c.refuse =>
            {
                if let Some(want) = &c.error {
                    if error != want {
                        failures.push(format!("{name}: error {error:?}, expected {want:?}"));
                    }
                }
            }
            (v, _) => failures.push(format!(
                "{name}: verdict {v:?}, expected accept={}",
                c.accept
            )),
        }
        if let Some(n) = c.processed {
            if out.stats.processed_insns != n {
                failures.push(format!(
                    "{name}: processed {} expected {n}",
                    out.stats.processed_insns
                ));
            }
        }
        if let Some(n) = c.states {
            if out.stats.total_states != n {
                failures.push(format!(
                    "{name}: states {} expected {n}",
                    out.stats.total_states
                ));
            }
        }
        if let Some(n) = c.peak {
            if out.stats.peak_states != n {
                failures.push(format!(
                    "{name}: peak states {} expected {n}",
                    out.stats.peak_states
                ));
            }
        }
        // The same expectations against the oracle.
        // BPFVET_CASE_LOG=NAME prints both verifiers' level-2 logs of that case.
        let show_logs = std::env::var("BPFVET_CASE_LOG").is_ok_and(|n| name.starts_with(&n));
        let log_level = if show_logs { 2 } else { 1 };
        if show_logs {
            let opts = Options {
                log_level: 2,
                privileges: c.privileges,
                ..Options::default()
            };
            println!("--- {name}: bpfvet\n{}", verify(&obj, 0, &opts).log);
        }
        let level_missing = match bpfvet_kernel::privileges::available(c.privileges) {
            Ok(()) => false,
            Err(why) => {
                println!(
                    "SKIP: {name}: host kernel replay at {}: {why}",
                    c.privileges
                );
                true
            }
        };
        let kernel = if level_missing {
            None
        } else if c.maps.is_empty()
            && c.funcs.is_empty()
            && c.section.is_none()
            && c.struct_ops.is_none()
            && c.license.is_none()
            && c.load == bpfvet_object::LoadAttrs::default()
        {
            kernel_load(&obj, log_level, c.privileges)
        } else {
            kernel_load_with_maps(&obj, log_level, c.privileges)
        };
        if let (true, Some(k)) = (show_logs, &kernel) {
            println!("--- {name}: kernel\n{}", k.log);
        }
        if let Some(KernelSays {
            accepted: ok,
            last,
            processed,
            total_states,
            peak_states,
            log,
        }) = kernel
        {
            kernel_checked += 1;
            if ok != c.accept {
                failures.push(format!("{name}: KERNEL verdict accept={ok} ({last})"));
            }
            // The error is the log's last line, except where the kernel
            // prints states after it (infinite loops): then it is a line.
            if let (false, Some(want)) = (ok, &c.error) {
                let loop_report = log.contains("infinite loop detected");
                if &last != want && !(loop_report && log.lines().any(|l| l == want)) {
                    failures.push(format!("{name}: KERNEL error {last:?}, expected {want:?}"));
                }
            }
            if let (Some(n), Some(k)) = (c.processed, processed) {
                if n != k {
                    failures.push(format!("{name}: KERNEL processed {k}, expected {n}"));
                }
            }
            for (what, want, got) in [
                ("states", c.states, total_states),
                ("peak states", c.peak, peak_states),
            ] {
                if let (Some(n), Some(k)) = (want, got) {
                    if n != k {
                        failures.push(format!("{name}: KERNEL {what} {k}, expected {n}"));
                    }
                }
            }
        }
    }
    if kernel_checked == 0 {
        println!("SKIP: host kernel replay (needs root and a working bpf(2) syscall)");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
