//! BPF_PROG_LOAD attributes other than the instructions (feature
//! `load_attrs`): the license (GPL-only helpers and kfuncs, kernel struct
//! reads of tracing programs), fd_array (absent, entries that are no map,
//! BTF objects of their own), fd_array_cnt (entries bound up front, too
//! many BTFs, a count that overflows), func_info_rec_size and CO-RE
//! relocation records with instruction offsets outside the program.

use super::{GenProgram, Rng};
use bpfvet_isa::opcode::BPF_PSEUDO_MAP_IDX;
use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_object::{CoreRelo, FdEntry};

/// Licenses to load under: GPL-compatible spellings and others.
const LICENSES: [&str; 7] = [
    "GPL",
    "GPL v2",
    "Dual MIT/GPL",
    "MIT",
    "Proprietary",
    "",
    "BSD",
];

/// The harness maps a program's object holds (`diff::object`'s order).
fn object_maps(insns: &[Insn]) -> usize {
    super::super::diff::object_maps(&[insns]).len()
}

/// An fd that names nothing open in the loader.
fn invalid_fd(rng: &mut Rng) -> FdEntry {
    FdEntry::Invalid(rng.pick(&[-1, -9, 1 << 20, i32::MIN]))
}

/// Gives the program one or more load attributes of its own, or replaces
/// it by a tracing program reading kernel structs under some license.
pub fn choose(rng: &mut Rng, p: &mut GenProgram) {
    if rng.chance(25) {
        p.license = rng.pick(&LICENSES);
    }
    match rng.below(100) {
        0..=9 => kernel_struct_reader(rng, p),
        10..=19 => p.load.fd_array = Some(Vec::new()),
        20..=34 => {
            let (list, _) = fd_list(rng, &p.insns);
            p.load.fd_array = Some(list);
        }
        35..=59 => fd_array_cnt(rng, p),
        60..=69 => {
            // Only sent with func_info: give a single function one.
            p.prog_btf = true;
            p.load.func_info_rec_size =
                Some(rng.pick(&[0, 4, 6, 7, 9, 10, 12, 16, 252, 253, 256, 1024]));
        }
        75..=84 => {
            p.prog_btf = true;
            core_relos(rng, p);
        }
        85..=92 => own_map_user(rng, p),
        _ => {}
    }
}

/// The object's maps at their indexes, with some that the program does
/// not reference replaced by an fd that names nothing or by a BTF object;
/// the cgroup storage and arena pairs (which no program may hold both of)
/// mostly so. The second value: whether a referenced arena stays.
fn fd_list(rng: &mut Rng, insns: &[Insn]) -> (Vec<FdEntry>, bool) {
    let used = bpfvet_kernel::session::referenced_maps(insns);
    let n = object_maps(insns);
    let mut list: Vec<FdEntry> = (0..n).map(FdEntry::Map).collect();
    let pairs = [
        super::CGROUP_STORAGE2_MAP,
        super::ARENA_MAP,
        super::ARENA2_MAP,
        UNMAPPED_ARENA_MAP,
    ];
    for (i, e) in list.iter_mut().enumerate() {
        if used.contains(&i) {
            continue;
        }
        let odd = pairs.contains(&(i as i32));
        if (odd && rng.chance(90)) || rng.chance(8) {
            *e = if rng.chance(80) {
                FdEntry::Btf
            } else {
                invalid_fd(rng)
            };
        }
    }
    // A reference to an entry that is no map (read as an fd).
    if !used.is_empty() && rng.chance(10) {
        let k = rng.pick(&used);
        list[k] = invalid_fd(rng);
    }
    let arena_kept = list.iter().any(|e| {
        matches!(e, FdEntry::Map(i) if [super::ARENA_MAP, super::ARENA2_MAP, UNMAPPED_ARENA_MAP].contains(&(*i as i32)))
    });
    (list, arena_kept)
}

/// fd_array_cnt over libbpf's or an explicit fd_array: maps bound before
/// verification, many BTF objects, entries that are no fd, a count that
/// overflows.
fn fd_array_cnt(rng: &mut Rng, p: &mut GenProgram) {
    if rng.chance(10) {
        p.load.fd_array_cnt = rng.pick(&[u32::MAX, u32::MAX / 4, u32::MAX / 4 - 1, 1 << 31]);
        if p.load.fd_array_cnt == u32::MAX / 4 - 1 {
            // Not too big: it must not read past the array.
            p.load.fd_array_cnt = 1;
        }
        return;
    }
    let many_btfs = rng.chance(30);
    if many_btfs && rng.chance(30) {
        // A typed ksym (a kernel function's address) takes vmlinux's BTF
        // too.
        if let Some(id) = super::kfunc_blocks::kfunc_id("bpf_map_lookup_elem") {
            p.insns = vec![
                Insn::new(0x18, 1, bpfvet_isa::opcode::BPF_PSEUDO_BTF_ID, 0, id),
                Insn::new(0, 0, 0, 0, 0),
                Insn::new(0xb7, 0, 0, 0, 0),
                Insn::new(0x95, 0, 0, 0, 0),
            ];
            p.funcs.clear();
        }
    }
    let (mut list, arena_kept) = fd_list(rng, &p.insns);
    if many_btfs {
        // Around the limit of 64 BTF objects per program.
        let have = list.iter().filter(|e| **e == FdEntry::Btf).count();
        let want = rng.pick(&[62usize, 63, 64, 65, 66]);
        list.extend(std::iter::repeat_n(FdEntry::Btf, want.saturating_sub(have)));
    }
    if rng.chance(15) {
        list.push(invalid_fd(rng));
    }
    // A kept arena is bound only by a count that stops before it.
    let limit = if arena_kept {
        super::ARENA_MAP as usize
    } else {
        list.len()
    };
    p.load.fd_array_cnt = if rng.chance(60) {
        limit as u32
    } else {
        1 + rng.below(limit.max(1) as u64) as u32
    };
    if rng.chance(20) && !arena_kept {
        // libbpf's fd_array (maps only) with a count.
        p.load.fd_array = None;
        p.load.fd_array_cnt = p.load.fd_array_cnt.min(super::CGROUP_STORAGE2_MAP as u32);
        return;
    }
    p.load.fd_array = Some(list);
}

/// CO-RE relocation records the kernel is asked to apply, the first one
/// with an instruction offset outside the program or inside an
/// instruction.
fn core_relos(rng: &mut Rng, p: &mut GenProgram) {
    let len = p.insns.len() as u32;
    for _ in 0..1 + rng.below(3) {
        let insn_off = match rng.below(4) {
            0 => len * 8,
            1 => (len + rng.below(100) as u32) * 8,
            2 => 8 * rng.below(u64::from(len.max(1))) as u32 + 1 + rng.below(7) as u32,
            _ => rng.next() as u32,
        };
        p.load.core_relos.push(CoreRelo {
            insn_off,
            type_id: 1 + rng.below(10) as u32,
            access_str_off: rng.pick(&[0, 1, 4]),
            kind: rng.below(13) as u32,
        });
    }
}

/// A tracing program reading kernel structs through its context: a
/// non-GPL one may not (`Cannot access kernel 'struct ...'`).
fn kernel_struct_reader(rng: &mut Rng, p: &mut GenProgram) {
    let mut insns = vec![Insn::new(0xbf, 6, 1, 0, 0)];
    let (attach, arg_off) = if rng.chance(60) {
        // sys_enter: struct pt_regs *regs, long id.
        ((AttachType::TRACE_RAW_TP, "tp_btf/sys_enter"), 0)
    } else {
        // bpf_iter__bpf_map_elem: struct bpf_iter_meta *meta, struct bpf_map *map.
        (
            (AttachType::TRACE_ITER, "iter/bpf_map_elem"),
            rng.pick(&[0i16, 8]),
        )
    };
    insns.push(Insn::new(0x79, 7, 6, arg_off, 0));
    if rng.chance(70) {
        // Iterator pointers may be NULL.
        insns.push(Insn::new(0x15, 7, 0, 1, 0));
    }
    let off = rng.pick(&[0i16, 8, 16, 24]);
    insns.push(Insn::new(0x79, 0, 7, off, 0));
    insns.push(Insn::new(0xb7, 0, 0, 0, 0));
    insns.push(Insn::new(0x95, 0, 0, 0, 0));
    if rng.chance(50) {
        p.license = rng.pick(&["MIT", "Proprietary", "", "GPL"]);
    }
    p.prog_type = ProgType::TRACING;
    p.attach = Some(attach);
    p.insns = insns;
    p.sleepable = false;
    p.funcs.clear();
}

/// An array only [`EXCL_PROG`] may use (its excl_prog_hash), and an arena
/// the loader leaves unmapped: harness maps 84 and 85.
pub const EXCL_MAP: i32 = 84;
pub const UNMAPPED_ARENA_MAP: i32 = 85;

/// The one program whose digest [`EXCL_MAP`]'s hash names.
pub fn excl_prog() -> Vec<Insn> {
    vec![
        Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, EXCL_MAP),
        Insn::new(0, 0, 0, 0, 0),
        Insn::new(0xb7, 0, 0, 0, 0),
        Insn::new(0x95, 0, 0, 0, 0),
    ]
}

fn names_own_map(insns: &[Insn]) -> bool {
    bpfvet_kernel::session::referenced_maps(insns)
        .iter()
        .any(|&m| m == EXCL_MAP as usize || m == UNMAPPED_ARENA_MAP as usize)
}

/// Maps [`EXCL_MAP`] and [`UNMAPPED_ARENA_MAP`] when some program names
/// one, after `have` maps (indexes below 84 the others do not fill are
/// padded with the one-entry arrays `prog_blocks::maps` uses).
pub fn maps<'a>(
    mut progs: impl Iterator<Item = &'a [Insn]>,
    have: usize,
) -> Vec<bpfvet_object::MapDef> {
    use bpfvet_isa::uapi::MapType;
    use bpfvet_object::MapDef;
    if !progs.any(names_own_map) {
        return Vec::new();
    }
    let mut out: Vec<MapDef> = (have..EXCL_MAP as usize)
        .map(|k| MapDef::new(&format!("many{k}"), MapType::ARRAY, 4, 8, 1))
        .collect();
    let mut excl = MapDef::new("excl", MapType::ARRAY, 4, 8, 1);
    excl.excl_prog_hash = Some(bpfvet_isa::digest::prog_digest(&excl_prog()));
    let mut arena = MapDef::new("arena_unmapped", MapType::ARENA, 0, 0, 1);
    arena.map_flags = bpfvet_isa::uapi::BPF_F_MMAPABLE;
    arena.arena_unmapped = true;
    out.push(excl);
    out.push(arena);
    out
}

/// `# map:` lines of a case for [`maps`], after `have` lines.
pub fn case_maps(insns: &[Insn], have: usize) -> Vec<String> {
    if !names_own_map(insns) {
        return Vec::new();
    }
    let hex: String = bpfvet_isa::digest::prog_digest(&excl_prog())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut out = vec!["array 4 8 1".to_string(); (EXCL_MAP as usize).saturating_sub(have)];
    out.push(format!("array 4 8 1 excl={hex}"));
    out.push("arena 0 0 1 mmapable unmapped".into());
    out
}

/// A program using the exclusive array (itself, or another), or the
/// unmapped arena.
fn own_map_user(rng: &mut Rng, p: &mut GenProgram) {
    let mut insns = excl_prog();
    match rng.below(4) {
        0 => {}
        1 => insns[2].imm = 1 + rng.below(5) as i32,
        2 => {
            // The arena, cast to a user pointer or not.
            insns[0].imm = UNMAPPED_ARENA_MAP;
            if rng.chance(50) {
                insns.insert(2, Insn::new(0xbf, 2, 1, 1, 1));
            }
        }
        _ => {
            // A lookup in the exclusive array.
            insns.splice(
                2..2,
                [
                    Insn::new(0x62, 10, 0, -4, 0),
                    Insn::new(0xbf, 2, 10, 0, 0),
                    Insn::new(0x07, 2, 0, 0, -4),
                    Insn::new(0x85, 0, 0, 0, 1),
                ],
            );
        }
    }
    p.insns = insns;
    p.funcs.clear();
    p.attach = None;
    if p.prog_type == ProgType::TRACING {
        p.prog_type = ProgType::SOCKET_FILTER;
    }
}
