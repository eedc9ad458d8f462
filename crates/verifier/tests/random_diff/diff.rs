//! One generated program through both verifiers, and the class of their
//! (dis)agreement.

use super::gen::{
    GenProgram, ARRAY_VALUE_SIZE, HASH_KEY_SIZE, HASH_VALUE_SIZE, LOCK_VALUE_SIZE, RINGBUF_SIZE,
    RODATA, RODATA_VALUE_SIZE,
};
use super::oracle::Oracle;
use bpfvet_isa::uapi::{MapType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_kernel::{Kernel, LoadOptions, Refusal, Verdict as KVerdict};
use bpfvet_object::{MapDef, Object, Program};
use bpfvet_verifier::{verify, Limit, Options, Verdict};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// bpfvet's own wall-clock limit per program.
pub const BPFVET_TIMEOUT: Duration = Duration::from_secs(1);
/// How long we wait for `verify` to return before calling it a hang (well
/// above the longest timeout it is given: the machine may be loaded).
const WATCHDOG: Duration = Duration::from_secs(120);

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Class {
    Agree,
    /// bpfvet accepts, the kernel rejects.
    Unsound,
    /// bpfvet rejects, the kernel accepts.
    Overstrict,
    /// Both reject, with different last log lines.
    Message,
    /// Both accept, with different processed insns.
    Insns,
    /// `verify` panicked.
    Panic,
    /// `verify` hit its own wall-clock limit.
    Timeout,
    /// `verify` did not return within the watchdog.
    Hang,
    /// The kernel refused the program before verifying it.
    KernelRefused,
}

impl Class {
    pub const ALL: [Class; 9] = [
        Class::Agree,
        Class::Unsound,
        Class::Overstrict,
        Class::Message,
        Class::Insns,
        Class::Panic,
        Class::Timeout,
        Class::Hang,
        Class::KernelRefused,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Class::Agree => "agree",
            Class::Unsound => "unsound (bpfvet accepts, kernel rejects)",
            Class::Overstrict => "overstrict (bpfvet rejects, kernel accepts)",
            Class::Message => "message mismatch (both reject)",
            Class::Insns => "processed-insns mismatch (both accept)",
            Class::Panic => "bpfvet panic",
            Class::Timeout => "bpfvet timeout",
            Class::Hang => "bpfvet hang (no return)",
            Class::KernelRefused => "kernel refused before verifying",
        }
    }
}

/// What bpfvet said.
#[derive(Clone, Debug)]
pub enum Ours {
    Accepted {
        insns: u64,
    },
    Rejected(String),
    /// Not modelled by bpfvet (never an accept).
    Refused(String),
    Timeout,
    Panic(String),
    Hang,
}

/// What the kernel said.
#[derive(Clone, Debug)]
pub enum Theirs {
    Accepted { insns: Option<u64> },
    Rejected(String),
    Refused(String),
}

#[derive(Clone, Debug)]
pub struct Result {
    pub class: Class,
    pub ours: Ours,
    pub theirs: Theirs,
}

fn map(name: &str, map_type: MapType, key: i32, value: i32) -> MapDef {
    MapDef::new(name, map_type, key as u32, value as u32, 16)
}

/// Where each function of a program starts: 0 and the targets of
/// bpf-to-bpf calls and callback addresses, in order.
pub fn func_starts(insns: &[bpfvet_isa::Insn]) -> Vec<usize> {
    use bpfvet_isa::opcode::{BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC};
    let mut starts = vec![0];
    for (j, i) in insns.iter().enumerate() {
        let second_slot = j > 0 && insns[j - 1].is_ld_imm64();
        let call = i.code == 0x85 && i.src == BPF_PSEUDO_CALL;
        let func = i.is_ld_imm64() && i.src == BPF_PSEUDO_FUNC && !second_slot;
        if call || func {
            let t = j as i64 + 1 + i64::from(i.imm);
            if t > 0 && (t as usize) < insns.len() {
                starts.push(t as usize);
            }
        }
    }
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// The object's BTF (func_info's `f`, the lock map's value, the BTF
/// objects): `btf_objects::object_btf`.
fn func_btf() -> Vec<u8> {
    super::gen::btf_objects::object_btf()
}

/// The array whose value holds a bpf_spin_lock at 0 (BTF types 1 and 5).
fn lock_map() -> MapDef {
    let mut m = map("locked", MapType::ARRAY, 4, LOCK_VALUE_SIZE);
    m.btf_key_type_id = 1;
    m.btf_value_type_id = 5;
    m
}

/// An array whose value is a bpf_wq (BTF types 1 and `T_WQ_VALUE`).
fn wq_map() -> MapDef {
    let mut m = map("wq", MapType::ARRAY, 4, 16);
    m.btf_key_type_id = 1;
    m.btf_value_type_id = super::gen::btf_objects::T_WQ_VALUE as u32;
    m
}

/// An arena of one page (the kernel session maps it, which sets its user
/// address).
fn arena_map(name: &str) -> MapDef {
    let mut m = MapDef::new(name, MapType::ARENA, 0, 0, 1);
    m.map_flags = bpfvet_isa::uapi::BPF_F_MMAPABLE;
    m
}

/// A read-only, frozen array of `entries` holding `RODATA`.
fn rodata_map(name: &str, entries: u32) -> MapDef {
    let mut m = MapDef::new(name, MapType::ARRAY, 4, RODATA_VALUE_SIZE as u32, entries);
    m.map_flags = bpfvet_isa::uapi::BPF_F_RDONLY_PROG;
    m.frozen = true;
    m.init = bpfvet_object::MapInit::Data(RODATA.to_vec());
    m
}

/// The `# map:` lines of the generator's maps, in `object`'s order. With
/// `fuzz_btf` (a case written `# btf: fuzz`) the lock and wq maps name
/// their value types in the generator's BTF, and the BTF objects' maps
/// follow.
pub fn map_directives(fuzz_btf: bool) -> Vec<String> {
    use super::gen::btf_objects::{case_maps, T_LOCK_VALUE, T_WQ_VALUE};
    let hex: String = RODATA.iter().map(|b| format!("{b:02x}")).collect();
    let (lock, wq) = if fuzz_btf {
        (format!("btf={T_LOCK_VALUE}"), format!("btf={T_WQ_VALUE}"))
    } else {
        ("lock@0".to_string(), "wq@0".to_string())
    };
    let mut maps = vec![
        format!("array 4 {ARRAY_VALUE_SIZE}"),
        format!("hash {HASH_KEY_SIZE} {HASH_VALUE_SIZE}"),
        "prog_array 4 4".into(),
        format!("array 4 {LOCK_VALUE_SIZE} 16 {lock}"),
        format!("ringbuf 0 0 {RINGBUF_SIZE}"),
        format!("array 4 {RODATA_VALUE_SIZE} 1 rdonly_prog,frozen,data={hex}"),
        format!("array 4 {RODATA_VALUE_SIZE} 2 rdonly_prog,frozen,data={hex}"),
        "sockmap 4 4".into(),
        "cgroup_storage 8 8 0".into(),
        "cgroup_storage 8 8 0".into(),
        "arena 0 0 1 mmapable".into(),
        "arena 0 0 1 mmapable".into(),
        format!("array 4 16 16 {wq}"),
    ];
    if fuzz_btf {
        maps.extend(case_maps());
    }
    maps
}

/// The `# license:`, `# fd_array:`, `# fd_array_cnt:`,
/// `# func_info_rec_size:`, `# core_relo:` and `# prog_flags:` lines of
/// a program's own load attributes (none for libbpf's load).
pub fn load_directives(p: &GenProgram) -> String {
    use bpfvet_object::FdEntry;
    use std::fmt::Write as _;
    let mut out = String::new();
    if p.license != "GPL" {
        let _ = writeln!(out, "# license: {}", p.license);
    }
    if let Some(list) = &p.load.fd_array {
        let words: Vec<String> = list
            .iter()
            .map(|e| match e {
                FdEntry::Map(i) => format!("map{i}"),
                FdEntry::Btf => "btf".into(),
                FdEntry::Invalid(fd) => format!("fd={fd}"),
            })
            .collect();
        let words = if words.is_empty() {
            "none".to_string()
        } else {
            words.join(" ")
        };
        let _ = writeln!(out, "# fd_array: {words}");
    }
    if p.load.fd_array_cnt != 0 {
        let _ = writeln!(out, "# fd_array_cnt: {}", p.load.fd_array_cnt);
    }
    if let Some(size) = p.load.func_info_rec_size {
        let _ = writeln!(out, "# func_info_rec_size: {size}");
    }
    for r in &p.load.core_relos {
        let _ = writeln!(
            out,
            "# core_relo: {} {} {} {}",
            r.insn_off, r.type_id, r.access_str_off, r.kind
        );
    }
    if p.prog_flags != 0 {
        let names: Vec<&str> = bpfvet_isa::uapi::PROG_FLAGS
            .iter()
            .filter(|(_, bit)| p.prog_flags & bit != 0)
            .map(|(name, _)| *name)
            .collect();
        let _ = writeln!(out, "# prog_flags: {}", names.join("|"));
    }
    out
}

/// func_info for a program with subprograms or one using the program
/// BTF's types (none for other single functions, so plain programs load as
/// before).
pub fn func_info(insns: &[bpfvet_isa::Insn], prog_btf: bool) -> Vec<bpfvet_object::FuncInfo> {
    let starts = func_starts(insns);
    if starts.len() < 2 && !prog_btf {
        return Vec::new();
    }
    starts
        .into_iter()
        .map(|s| bpfvet_object::FuncInfo {
            insn_off: s as u32,
            type_id: 3,
            name: "f".into(),
            linkage: 0,
        })
        .collect()
}

/// A generated program's func_info: its blocks' records (named after
/// their FUNC in the object BTF) or [`func_info`].
pub fn program_func_info(p: &GenProgram) -> Vec<bpfvet_object::FuncInfo> {
    if p.funcs.is_empty() {
        return func_info(&p.insns, p.prog_btf);
    }
    let btf = bpfvet_object::btf::Btf::from_bytes(&func_btf()).ok();
    p.funcs
        .iter()
        .map(|&(at, type_id)| {
            let t = btf.as_ref().and_then(|b| b.type_by_id(type_id));
            bpfvet_object::FuncInfo {
                insn_off: at as u32,
                type_id,
                name: t
                    .zip(btf.as_ref())
                    .map_or_else(String::new, |(t, b)| b.name(t).to_string()),
                linkage: t.map_or(0, |t| t.linkage()),
            }
        })
        .collect()
}

/// The object's maps for programs `progs`, in fd_array order: the fixed
/// ones, then each block's at its fixed indices, padded from the maps
/// before it, when some program names one.
pub fn object_maps(progs: &[&[Insn]]) -> Vec<MapDef> {
    let btf_maps = super::gen::btf_objects::maps(progs.iter().copied());
    let many_maps = super::gen::prog_blocks::maps(progs.iter().copied(), btf_maps.len());
    let mut maps: Vec<MapDef> = vec![
        map("array", MapType::ARRAY, 4, ARRAY_VALUE_SIZE),
        map("hash", MapType::HASH, HASH_KEY_SIZE, HASH_VALUE_SIZE),
        map("progs", MapType::PROG_ARRAY, 4, 4),
        lock_map(),
        MapDef::new("ringbuf", MapType::RINGBUF, 0, 0, RINGBUF_SIZE as u32),
        rodata_map("rodata", 1),
        rodata_map("rodata2", 2),
        map("sockmap", MapType::SOCKMAP, 4, 4),
        MapDef::new("cgstore", MapType::CGROUP_STORAGE, 8, 8, 0),
        MapDef::new("cgstore2", MapType::CGROUP_STORAGE, 8, 8, 0),
        arena_map("arena"),
        arena_map("arena2"),
        wq_map(),
    ]
    .into_iter()
    .chain(btf_maps)
    .chain(many_maps)
    .collect();
    // Each block's maps sit at its fixed indices, padded from the maps
    // before it.
    let insns = || progs.iter().copied();
    maps.extend(super::gen::load_blocks::maps(insns(), maps.len()));
    maps.extend(super::gen::graph_shape_blocks::maps(insns(), maps.len()));
    maps.extend(super::gen::structops_blocks::maps(insns(), maps.len()));
    maps.extend(super::gen::tailmap_blocks::maps(insns(), maps.len()));
    maps
}

/// An object with the generator's maps and the given programs.
pub fn object(progs: &[GenProgram]) -> Object {
    let insns: Vec<&[Insn]> = progs.iter().map(|p| p.insns.as_slice()).collect();
    let maps = object_maps(&insns);
    let programs = progs
        .iter()
        .enumerate()
        .map(|(i, p)| Program {
            name: format!("fuzz{i}"),
            section: p
                .attach
                .map_or_else(String::new, |(_, sec)| sec.to_string()),
            prog_type: p.prog_type,
            expected_attach_type: p.attach.map(|(a, _)| a),
            attach_target: p
                .attach
                .and_then(|(_, sec)| sec.split_once('/'))
                .map(|(_, target)| target.to_string()),
            sleepable: p.sleepable,
            prog_flags: p.prog_flags,
            insns: p.insns.clone(),
            func_info: program_func_info(p),
            line_info: Vec::new(),
            placement: Vec::new(),
            core_unresolved: Vec::new(),
            struct_ops: p.struct_ops.clone(),
            refused: None,
            load: bpfvet_object::LoadAttrs {
                license: (p.license != "GPL").then(|| p.license.to_string()),
                ..p.load.clone()
            },
        })
        .collect::<Vec<_>>();
    Object {
        path: PathBuf::from("random_kernel_diff"),
        license: "GPL".into(),
        kern_version: None,
        maps,
        btf_raw: Some(func_btf()),
        btf: bpfvet_object::btf::Btf::from_bytes(&func_btf()).ok(),
        programs,
        btf_refused: None,
        unresolved_externs: Vec::new(),
        warnings: Vec::new(),
        loader: bpfvet_object::Loader::Libbpf,
        loader_reason: None,
    }
}

pub fn prog_type_name(t: ProgType) -> &'static str {
    t.name().unwrap_or("?")
}

/// The level both sides load at: BPFVET_FUZZ_PRIVILEGES (root, bpf or
/// unprivileged; default root).
pub fn fuzz_privileges() -> bpfvet_verifier::Privileges {
    std::env::var("BPFVET_FUZZ_PRIVILEGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_default()
}

/// The `# privileges:` line of a case found at a reduced level (else none).
pub fn privileges_directive() -> String {
    match fuzz_privileges() {
        bpfvet_verifier::Privileges::Root => String::new(),
        p => format!("# privileges: {p}\n"),
    }
}

/// The limit of a second run of a program that ran out of
/// `BPFVET_TIMEOUT`: on a loaded machine a program the kernel explores to
/// its 1M-insn limit (about a second of bpfvet's CPU time) overruns a
/// wall-clock second without being slow (a mutant of iters_num took 1 s of
/// CPU in 50 s at a load average of 300 on the 2-core host).
const RETRY_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs bpfvet on its own thread so a panic or a hang is caught; a
/// timeout is run again once with a longer limit.
pub fn run_ours(obj: &Arc<Object>, index: usize) -> Ours {
    match run_ours_within(obj, index, BPFVET_TIMEOUT) {
        Ours::Timeout => run_ours_within(obj, index, RETRY_TIMEOUT),
        other => other,
    }
}

fn run_ours_within(obj: &Arc<Object>, index: usize, timeout: Duration) -> Ours {
    let (tx, rx) = mpsc::channel();
    let obj = Arc::clone(obj);
    let spawned = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let opts = Options {
                log_level: 1,
                timeout: Some(timeout),
                privileges: fuzz_privileges(),
                ..Options::default()
            };
            let _ = tx.send(verify(&obj, index, &opts));
        });
    if let Err(e) = spawned {
        return Ours::Panic(format!("could not spawn the verifier thread: {e}"));
    }
    match rx.recv_timeout(WATCHDOG) {
        Ok(out) => match out.verdict {
            Verdict::Accepted => Ours::Accepted {
                insns: out.stats.processed_insns,
            },
            Verdict::Rejected { error, .. } => Ours::Rejected(error),
            Verdict::LimitExceeded {
                limit: Limit::Timeout,
                ..
            } => Ours::Timeout,
            Verdict::LimitExceeded { error, .. } => Ours::Rejected(error),
            Verdict::Unsupported { what, .. } => Ours::Refused(what),
        },
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Ours::Panic("verify panicked (see the panic message above)".into())
        }
        // The thread is left running: Rust cannot stop it.
        Err(mpsc::RecvTimeoutError::Timeout) => Ours::Hang,
    }
}

/// The kernel's error: the last log line that is not statistics.
pub fn last_error_line(log: &str) -> String {
    bpfvet_kernel::report::last_error_line(log)
        .unwrap_or("")
        .to_string()
}

/// Cap on the kernel's level-1 log: programs that run into the complexity
/// limit print hundreds of megabytes and take the kernel seconds to write.
const KERNEL_LOG_CAP: u32 = 1 << 20;

pub fn run_theirs(kernel: &Oracle, obj: &Object, index: usize) -> Theirs {
    match kernel {
        Oracle::Host(k) => host_theirs(k, obj, index),
        Oracle::Guest(g) => match obj.programs.get(index) {
            Some(p) => {
                let mut g = g.lock().unwrap_or_else(|e| e.into_inner());
                g.theirs(p)
            }
            None => Theirs::Refused(format!("no program {index}")),
        },
    }
}

fn host_theirs(kernel: &Kernel, obj: &Object, index: usize) -> Theirs {
    let session = kernel.open_object_as(obj, fuzz_privileges());
    let opts = LoadOptions {
        log_level: 1,
        log_size: KERNEL_LOG_CAP,
        log_size_cap: KERNEL_LOG_CAP,
        privileges: fuzz_privileges(),
    };
    let Some(rep) = session.load_program(index, &opts) else {
        return Theirs::Refused(format!("no program {index}"));
    };
    match &rep.verdict {
        KVerdict::Accepted => Theirs::Accepted {
            insns: rep.processed_insns(),
        },
        KVerdict::Rejected => Theirs::Rejected(rep.error_line().unwrap_or("").to_string()),
        // The log rotated (it keeps its tail, so its last line is still the
        // error) but a truncated log fails the load: ask again without it
        // for the verdict.
        KVerdict::Refused(Refusal::LogTruncated { .. }) => {
            let quiet = LoadOptions {
                log_level: 0,
                ..opts
            };
            // An accepted program's count still comes from
            // bpf_prog_info.verified_insns, without the log.
            let quiet_rep = session.load_program(index, &quiet);
            match quiet_rep.as_ref().map(|r| &r.verdict) {
                Some(KVerdict::Accepted) => Theirs::Accepted {
                    insns: quiet_rep.as_ref().and_then(|r| r.processed_insns()),
                },
                Some(KVerdict::Rejected) => Theirs::Rejected(last_error_line(&rep.log)),
                other => Theirs::Refused(format!("{other:?}")),
            }
        }
        KVerdict::Refused(r) => Theirs::Refused(r.to_string()),
    }
}

pub fn classify(ours: &Ours, theirs: &Theirs) -> Class {
    match (ours, theirs) {
        (Ours::Panic(_), _) => Class::Panic,
        (Ours::Hang, _) => Class::Hang,
        (Ours::Timeout, _) => Class::Timeout,
        (_, Theirs::Refused(_)) => Class::KernelRefused,
        (Ours::Accepted { .. }, Theirs::Rejected(_)) => Class::Unsound,
        (Ours::Rejected(_) | Ours::Refused(_), Theirs::Accepted { .. }) => Class::Overstrict,
        (Ours::Refused(_), Theirs::Rejected(_)) => Class::Message,
        (Ours::Rejected(a), Theirs::Rejected(b)) if a.trim() != b.trim() => Class::Message,
        (Ours::Accepted { insns }, Theirs::Accepted { insns: k }) if Some(*insns) != *k => {
            Class::Insns
        }
        _ => Class::Agree,
    }
}

/// Both verifiers on program `index` of `obj`.
pub fn diff(kernel: &Oracle, obj: &Arc<Object>, index: usize) -> Result {
    let ours = run_ours(obj, index);
    let theirs = run_theirs(kernel, obj, index);
    Result {
        class: classify(&ours, &theirs),
        ours,
        theirs,
    }
}

/// Both verifiers on one program alone.
pub fn diff_one(kernel: &Oracle, p: &GenProgram) -> Result {
    let obj = Arc::new(object(std::slice::from_ref(p)));
    diff(kernel, &obj, 0)
}

/// A message with its numbers and register names blanked, so findings of
/// one cause group together.
pub fn cause_group(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut prev_digit = false;
    for c in msg.chars() {
        if c.is_ascii_digit() {
            if !prev_digit {
                out.push('N');
            }
            prev_digit = true;
        } else {
            out.push(c);
            prev_digit = false;
        }
    }
    out
}

/// The message that names a finding's cause: the rejecting side's error.
pub fn cause(r: &Result) -> String {
    match (&r.ours, &r.theirs) {
        (Ours::Rejected(e), _) if r.class == Class::Overstrict => e.clone(),
        (Ours::Refused(e), _) if r.class == Class::Overstrict => format!("refused: {e}"),
        (_, Theirs::Rejected(e)) if r.class == Class::Unsound => e.clone(),
        (Ours::Rejected(a), Theirs::Rejected(b)) => format!("{b} | {a}"),
        (Ours::Refused(a), Theirs::Rejected(b)) => format!("{b} | refused: {a}"),
        (_, Theirs::Refused(e)) => e.clone(),
        (Ours::Panic(m), _) => m.clone(),
        _ => String::new(),
    }
}

/// A case file's expectation lines: the kernel's verdict (and error or
/// processed insns), then what bpfvet said.
pub fn expectation(r: &Result) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    match &r.theirs {
        Theirs::Accepted { insns } => {
            let _ = writeln!(out, "# verdict: accept");
            if let Some(n) = insns {
                let _ = writeln!(out, "# processed: {n}");
            }
        }
        Theirs::Rejected(e) => {
            let _ = writeln!(out, "# verdict: reject\n# error: {e}");
        }
        Theirs::Refused(e) => {
            let _ = writeln!(out, "# kernel refused: {e}");
        }
    }
    let _ = writeln!(out, "# bpfvet said: {}", ours_text(&r.ours));
    out
}

pub fn ours_text(o: &Ours) -> String {
    match o {
        Ours::Accepted { insns } => format!("accepted ({insns} insns)"),
        Ours::Rejected(e) => format!("rejected: `{e}`"),
        Ours::Refused(e) => format!("refused (not modelled): `{e}`"),
        Ours::Timeout => "timeout".into(),
        Ours::Panic(m) => format!("panic: {m}"),
        Ours::Hang => "no return".into(),
    }
}

pub fn theirs_text(t: &Theirs) -> String {
    match t {
        Theirs::Accepted { insns } => format!(
            "accepted ({} insns)",
            insns.map_or("?".into(), |n| n.to_string())
        ),
        Theirs::Rejected(e) => format!("rejected: `{e}`"),
        Theirs::Refused(e) => format!("refused: {e}"),
    }
}
