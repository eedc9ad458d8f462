//! Whole-program shapes with their own func_info (feature `program`):
//! exception callbacks named by a decl tag on main (found, missing, static,
//! two of them, main itself, without a func_info record, with a tail call
//! below), global subprograms returning what a global function may not,
//! `void` subprograms with a tail call or LD_ABS, addr_space_cast with and
//! without an arena, sign-extending arena loads, a kfunc call left with BTF
//! id 0. Applied to a generated program after its layout: a prefix at
//! insn 0 (every jump and call is relative, so the body keeps its
//! targets) and functions appended at the end.
//!
//! Caution: an exception callback after a subprogram no path enters
//! makes the host kernel oops in jit_subprogs (dead-code removal leaves
//! env->exception_callback_subprog stale; bpfvet refuses such programs):
//! the exception callback shape is only applied to single-function
//! programs.

use super::btf_objects::{
    T_EXC, T_EXC_STATIC, T_GLOBAL, T_MAIN_EXC, T_MAIN_MISSING, T_MAIN_STATIC, T_MAIN_TWO, T_SELF,
    T_VOID,
};
use super::kfunc_blocks::kfunc_id;
use super::{Rng, ARENA_MAP, PROG_ARRAY_MAP};
use bpfvet_isa::opcode::{BPF_PSEUDO_CALL, BPF_PSEUDO_KFUNC_CALL, BPF_PSEUDO_MAP_IDX};
use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;
use bpfvet_object::btf::Kind as BtfKind;
use std::sync::OnceLock;

/// `f`, the static `int f(void)` of the object BTF.
const T_F: u32 = 3;

/// Changes a quarter of the programs; returns their func_info records
/// (none: the default).
pub fn reshape(rng: &mut Rng, prog_type: ProgType, insns: &mut Vec<Insn>) -> Vec<(usize, u32)> {
    // Not on the loader's programs of about 256 functions: one more
    // function there, with callbacks the kernel never explores, made the
    // host's JIT step (jit_subprogs) fault on a stale subprogram index.
    if super::super::diff::func_starts(insns).len() > 64 {
        return Vec::new();
    }
    match rng.below(100) {
        0..=7 => exception_callback(rng, insns),
        8..=11 => global_subprog(rng, insns),
        12..=15 => void_subprog(rng, prog_type, insns),
        16..=21 => arena(rng, insns),
        22..=23 => {
            // A kfunc call with BTF id 0 is left for dead-code removal.
            insert_prefix(insns, &[Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, 0)]);
            Vec::new()
        }
        24 => {
            if let Some(many) = many_kfuncs(rng) {
                *insns = many;
            }
            Vec::new()
        }
        25 => {
            *insns = many_tail_calls(rng);
            Vec::new()
        }
        26 => {
            *insns = many_maps(rng);
            Vec::new()
        }
        _ => Vec::new(),
    }
}

fn insert_prefix(insns: &mut Vec<Insn>, prefix: &[Insn]) {
    insns.splice(0..0, prefix.iter().copied());
}

/// `call` (bpf-to-bpf) at `at` to the insn `target`.
fn call_to(at: usize, target: usize) -> Insn {
    Insn::new(
        0x85,
        0,
        BPF_PSEUDO_CALL,
        0,
        (target as i64 - at as i64 - 1) as i32,
    )
}

/// Records for every function start of `insns` (calls and callback
/// addresses) and `extra` starts: `f` unless `types` names one.
fn records(insns: &[Insn], extra: &[usize], types: &[(usize, u32)]) -> Vec<(usize, u32)> {
    let mut starts = super::super::diff::func_starts(insns);
    starts.extend_from_slice(extra);
    starts.sort_unstable();
    starts.dedup();
    starts
        .into_iter()
        .map(|s| {
            let t = types.iter().find(|(at, _)| *at == s).map_or(T_F, |t| t.1);
            (s, t)
        })
        .collect()
}

/// `r0 = 0; if r0 != 0 goto +1; exit; call bpf_tail_call; exit`: a tail
/// call the verifier never reaches (the kernel's function facts still count
/// it).
fn dead_tail_call() -> Vec<Insn> {
    vec![
        Insn::new(0xb7, 0, 0, 0, 0),
        Insn::new(0x55, 0, 0, 1, 0),
        Insn::new(0x95, 0, 0, 0, 0),
        Insn::new(0x85, 0, 0, 0, 12),
        Insn::new(0x95, 0, 0, 0, 0),
    ]
}

/// `r1 = ctx; r2 = &progs; r3 = 0; bpf_tail_call; r0 = 0; exit` with the
/// ctx in r6.
fn live_tail_call() -> Vec<Insn> {
    vec![
        Insn::new(0xbf, 1, 6, 0, 0),
        Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, PROG_ARRAY_MAP),
        Insn::new(0, 0, 0, 0, 0),
        Insn::new(0xb7, 3, 0, 0, 0),
        Insn::new(0x85, 0, 0, 0, 12),
        Insn::new(0xb7, 0, 0, 0, 0),
        Insn::new(0x95, 0, 0, 0, 0),
    ]
}

/// Main names an exception callback: it is appended (not called), main
/// may throw first.
fn exception_callback(rng: &mut Rng, insns: &mut Vec<Insn>) -> Vec<(usize, u32)> {
    // Only beside main alone: a subprogram before the callback that no
    // path enters is dropped as dead code while the kernel keeps the
    // callback's stale subprogram index (its JIT step faults).
    if super::super::diff::func_starts(insns).len() > 1 {
        return Vec::new();
    }
    if rng.chance(40) {
        if let Some(throw) = kfunc_id("bpf_throw") {
            // ctx compared with 0 decides nothing: both paths go on.
            let cookie = rng.pick(&[0, 1, 7, -1]);
            insert_prefix(
                insns,
                &[
                    Insn::new(0x55, 1, 0, 2, 0),
                    Insn::new(0xb7, 1, 0, 0, cookie),
                    Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, throw),
                ],
            );
        }
    }
    let main_type = match rng.below(20) {
        0 => T_MAIN_MISSING,
        1 => T_MAIN_STATIC,
        2 => T_MAIN_TWO,
        3 => T_SELF,
        _ => T_MAIN_EXC,
    };
    let cb = insns.len();
    let mut extra = vec![cb];
    match rng.below(6) {
        0 => insns.extend([Insn::new(0xbf, 0, 1, 0, 0), Insn::new(0x95, 0, 0, 0, 0)]),
        1 => insns.extend([Insn::new(0xbf, 0, 10, 0, 0), Insn::new(0x95, 0, 0, 0, 0)]),
        2 => {
            // A subprogram below the callback holds a tail call.
            let sub = cb + 3;
            insns.push(call_to(cb, sub));
            insns.extend([Insn::new(0xb7, 0, 0, 0, 0), Insn::new(0x95, 0, 0, 0, 0)]);
            insns.extend(dead_tail_call());
            extra.push(sub);
        }
        3 => insns.extend(dead_tail_call()),
        _ => {
            let ret = rng.pick(&[0, 1, 2, -1]);
            insns.extend([Insn::new(0xb7, 0, 0, 0, ret), Insn::new(0x95, 0, 0, 0, 0)]);
        }
    }
    let cb_type = match rng.below(10) {
        0 => T_F,
        1 => T_EXC_STATIC,
        _ => T_EXC,
    };
    let mut recs = records(insns, &extra, &[(0, main_type), (cb, cb_type)]);
    if rng.chance(5) {
        // No record for the callback.
        recs.retain(|r| r.0 != cb);
    }
    recs
}

/// `r9 = r1; call g; r1 = r9` in front of main, `g` appended: a global
/// `int (void)` (or sometimes static) function returning a scalar, a
/// stack or map pointer, or nothing.
fn global_subprog(rng: &mut Rng, insns: &mut Vec<Insn>) -> Vec<(usize, u32)> {
    let g = insns.len() + 3;
    insert_prefix(
        insns,
        &[
            Insn::new(0xbf, 9, 1, 0, 0),
            call_to(1, g),
            Insn::new(0xbf, 1, 9, 0, 0),
        ],
    );
    match rng.below(5) {
        0 => insns.push(Insn::new(0xbf, 0, 10, 0, 0)),
        1 => insns.extend([
            Insn::new(0x18, 0, BPF_PSEUDO_MAP_IDX, 0, rng.pick(&[0, 1, 2])),
            Insn::new(0, 0, 0, 0, 0),
        ]),
        2 => {}
        3 => insns.extend([
            Insn::new(0xbf, 0, 10, 0, 0),
            Insn::new(0x07, 0, 0, 0, -8),
            Insn::new(0x7a, 10, 0, -8, 0),
        ]),
        _ => insns.push(Insn::new(0xb7, 0, 0, 0, rng.pick(&[0, 1, -3]))),
    }
    insns.push(Insn::new(0x95, 0, 0, 0, 0));
    let ty = if rng.chance(80) { T_GLOBAL } else { T_F };
    records(insns, &[], &[(g, ty)])
}

/// `r9 = r1; call v; r1 = r9` in front of main, `v` appended: a `void`
/// (or sometimes `int`) function with a tail call or LD_ABS.
fn void_subprog(rng: &mut Rng, prog_type: ProgType, insns: &mut Vec<Insn>) -> Vec<(usize, u32)> {
    let v = insns.len() + 3;
    insert_prefix(
        insns,
        &[
            Insn::new(0xbf, 9, 1, 0, 0),
            call_to(1, v),
            Insn::new(0xbf, 1, 9, 0, 0),
        ],
    );
    insns.push(Insn::new(0xbf, 6, 1, 0, 0));
    match rng.below(3) {
        0 => insns.extend(dead_tail_call()),
        1 => insns.extend(live_tail_call()),
        _ => {
            // LD_ABS reads the packet through r6 (socket filters, tc).
            let _ = prog_type;
            insns.extend([
                Insn::new(0x30, 0, 0, 0, 0),
                Insn::new(0xb7, 0, 0, 0, 0),
                Insn::new(0x95, 0, 0, 0, 0),
            ]);
        }
    }
    let ty = if rng.chance(80) { T_VOID } else { T_F };
    records(insns, &[], &[(v, ty)])
}

/// addr_space_cast in front of main, with or without an arena named by
/// the program, then maybe a (sign-extending) load through it.
fn arena(rng: &mut Rng, insns: &mut Vec<Insn>) -> Vec<(usize, u32)> {
    let mut prefix = Vec::new();
    if rng.chance(70) {
        prefix.extend([
            Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, ARENA_MAP),
            Insn::new(0, 0, 0, 0, 0),
        ]);
    }
    let base = rng.pick(&[0, 0x1000, 8]);
    prefix.push(Insn::new(0xb7, 2, 0, 0, base));
    // BPF_ADDR_SPACE_CAST: imm 1 casts from the arena (1) to 0, 1 << 16
    // the other way.
    let imm = rng.pick(&[1, 1, 1 << 16, 2, 0x20001]);
    prefix.push(Insn::new(0xbf, 2, 2, 1, imm));
    if rng.chance(70) {
        let size = rng.pick(&[0x00u8, 0x08, 0x10, 0x18]);
        let sign_extend = rng.chance(60) && size != 0x18;
        let mode = if sign_extend { 0x80 } else { 0x60 };
        prefix.push(Insn::new(
            0x01 | mode | size,
            3,
            2,
            rng.pick(&[0, 8, -8]),
            0,
        ));
    }
    insert_prefix(insns, &prefix);
    Vec::new()
}

/// BTF ids of vmlinux functions a program may name as kfuncs at load: in
/// kallsyms, up to five integer or pointer arguments, an integer, pointer
/// or void result (whether they are kfuncs is checked only where a call
/// is explored). The first 300 by id.
fn callable_functions() -> &'static [i32] {
    static IDS: OnceLock<Vec<i32>> = OnceLock::new();
    IDS.get_or_init(|| {
        let Some(btf) = super::kfunc_blocks::vmlinux() else {
            return Vec::new();
        };
        let Ok(kallsyms) = std::fs::read_to_string("/proc/kallsyms") else {
            return Vec::new();
        };
        let text: std::collections::HashSet<&str> = kallsyms
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let (_, kind, name) = (w.next()?, w.next()?, w.next()?);
                (matches!(kind, "t" | "T") && w.next().is_none()).then_some(name)
            })
            .collect();
        let plain = |id: u32| {
            id == 0
                || btf.skip_mods_and_typedefs(id).is_some_and(|(_, t)| {
                    matches!(t.kind, BtfKind::Int | BtfKind::Ptr | BtfKind::Enum)
                })
        };
        btf.ids()
            .filter(|&id| {
                let Some(f) = btf.type_by_id(id).filter(|t| t.kind == BtfKind::Func) else {
                    return false;
                };
                let Some(proto) = btf.type_by_id(f.size_or_type) else {
                    return false;
                };
                let params = btf.params(proto);
                text.contains(btf.name(f))
                    && params.len() <= 5
                    && params.iter().all(|p| p.type_id != 0 && plain(p.type_id))
                    && plain(proto.size_or_type)
            })
            .take(300)
            .map(|id| id as i32)
            .collect()
    })
}

/// Calls of `n` distinct kernel functions, around the kernel's 256
/// kfunc descriptors, behind a branch the verifier proves never taken.
fn many_kfuncs(rng: &mut Rng) -> Option<Vec<Insn>> {
    let n = rng.pick(&[255usize, 256, 257, 300]);
    let repeat = rng.chance(30);
    kfunc_calls(n, repeat)
}

/// `n` distinct kernel functions called on a dead path (and the first
/// once more with `repeat`); none when the host has fewer.
pub fn kfunc_calls(n: usize, repeat: bool) -> Option<Vec<Insn>> {
    let ids = callable_functions();
    if n > ids.len() {
        return None;
    }
    let mut insns = vec![
        Insn::new(0xb7, 0, 0, 0, 0),
        Insn::new(0x15, 0, 0, (n + usize::from(repeat)) as i16, 0),
    ];
    insns.extend(
        ids[..n]
            .iter()
            .map(|&id| Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, id)),
    );
    if repeat {
        // A second call of one function takes no descriptor of its own.
        insns.push(Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, ids[0]));
    }
    insns.push(Insn::new(0x95, 0, 0, 0, 0));
    Some(insns)
}

/// `n` tail calls through the prog array, around the JIT's 1024 direct
/// ones: constant keys (some out of range or variable, which take no
/// direct jump).
fn many_tail_calls(rng: &mut Rng) -> Vec<Insn> {
    let n = rng.pick(&[1023usize, 1024, 1025, 1030]);
    let odd = rng.chance(30);
    tail_calls(n, odd)
}

/// `n` tail calls with constant keys; with `odd`, one in a hundred out of
/// range or variable.
pub fn tail_calls(n: usize, odd: bool) -> Vec<Insn> {
    let mut insns = vec![Insn::new(0xbf, 6, 1, 0, 0)];
    for k in 0..n {
        insns.push(Insn::new(0xbf, 1, 6, 0, 0));
        insns.extend([
            Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, PROG_ARRAY_MAP),
            Insn::new(0, 0, 0, 0, 0),
        ]);
        if odd && k % 100 == 7 {
            // Past the map's 16 entries, or not constant.
            if k % 200 == 7 {
                insns.push(Insn::new(0xb7, 3, 0, 0, 16));
            } else {
                insns.push(Insn::new(0x61, 3, 6, 0, 0));
            }
        } else {
            insns.push(Insn::new(0xb7, 3, 0, 0, (k % 16) as i32));
        }
        insns.push(Insn::new(0x85, 0, 0, 0, 12));
    }
    insns.extend([Insn::new(0xb7, 0, 0, 0, 0), Insn::new(0x95, 0, 0, 0, 0)]);
    insns
}

/// The first of the plain arrays [`maps`] adds (after the BTF objects'
/// maps, `btf_objects::OBJS_MAP..=TIMER_MAP`).
pub const MANY_MAPS_BASE: i32 = super::btf_objects::TIMER_MAP + 1;
/// How many maps the BTF objects' are.
const BTF_MAPS: usize = (super::btf_objects::TIMER_MAP - super::btf_objects::OBJS_MAP + 1) as usize;
/// More than the 64 maps one program may use.
const MANY_MAPS: usize = 66;

/// Whether a program names one of [`maps`]' arrays.
fn names_many_maps(insns: &[Insn]) -> bool {
    insns
        .windows(2)
        .any(|w| w[0].is_ld_imm64() && matches!(w[0].src, 5 | 6) && w[0].imm >= MANY_MAPS_BASE)
}

/// Maps from [`MANY_MAPS_BASE`] on, when some program of `progs` names
/// one: plain one-entry arrays (after as many more as stand in for the
/// BTF objects' maps, `btf_maps` of them, when those are not there).
pub fn maps<'a>(
    mut progs: impl Iterator<Item = &'a [Insn]>,
    btf_maps: usize,
) -> Vec<bpfvet_object::MapDef> {
    if !progs.any(names_many_maps) {
        return Vec::new();
    }
    let array = |k: usize| {
        bpfvet_object::MapDef::new(
            &format!("many{k}"),
            bpfvet_isa::uapi::MapType::ARRAY,
            4,
            8,
            1,
        )
    };
    (btf_maps..BTF_MAPS)
        .chain(BTF_MAPS..BTF_MAPS + MANY_MAPS)
        .map(array)
        .collect()
}

/// `# map:` lines of a case for [`maps`] (after `diff::map_directives`).
pub fn case_maps(insns: &[Insn], fuzz_btf: bool) -> Vec<String> {
    if !names_many_maps(insns) {
        return Vec::new();
    }
    let padding = if fuzz_btf { 0 } else { BTF_MAPS };
    vec!["array 4 8 1".to_string(); padding + MANY_MAPS]
}

/// References to `n` distinct maps of [`maps`] (some by value address,
/// some twice), around the limit of 64.
fn many_maps(rng: &mut Rng) -> Vec<Insn> {
    let n = rng.pick(&[63usize, 64, 65, 66]);
    let mut insns = Vec::new();
    for k in 0..n {
        let src = if rng.chance(20) {
            6
        } else {
            BPF_PSEUDO_MAP_IDX
        };
        let again = if rng.chance(10) { 2 } else { 1 };
        for _ in 0..again {
            insns.push(Insn::new(0x18, 1, src, 0, MANY_MAPS_BASE + k as i32));
            insns.push(Insn::new(0, 0, 0, 0, 0));
        }
    }
    insns.extend([Insn::new(0xb7, 0, 0, 0, 0), Insn::new(0x95, 0, 0, 0, 0)]);
    insns
}
