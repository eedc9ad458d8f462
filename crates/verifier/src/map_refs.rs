//! The maps a program's `ld_imm64` instructions name, resolved before
//! exploration as the kernel's `resolve_pseudo_ldimm64` does: each must be
//! a map of the object, and the map must suit the program
//! (`check_map_prog_compatibility`: its special fields, its type).

use crate::error::VerifyError;
use crate::map_record::{self, Field};
use bpfvet_isa::opcode::{
    BPF_PSEUDO_MAP_FD, BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE, BPF_PSEUDO_MAP_VALUE,
};
use bpfvet_isa::uapi::{MapType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_object::{MapDef, Object, Program};

/// Whether the kernel has computed the program's digest when it checks a
/// map: not yet for maps fd_array_cnt binds (the digest is still zeros).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Digest {
    NotYet,
    Computed,
}

/// The kernel's refusal of `map` in a program of `prog`'s type, if any.
pub fn map_prog_incompatibility(
    obj: &Object,
    map: &MapDef,
    prog: &Program,
    digest: Digest,
) -> Option<&'static str> {
    if let Some(hash) = &map.excl_prog_hash {
        let ours = match digest {
            Digest::NotYet => [0; 32],
            Digest::Computed => bpfvet_isa::digest::prog_digest(&prog.insns),
        };
        if *hash != ours {
            return Some("program's hash doesn't match map's excl_prog_hash");
        }
    }
    let fields = map_record::map_fields(obj.btf.as_ref(), map);
    if let Some(msg) = fields_incompatibility(&fields, prog.prog_type) {
        return Some(msg);
    }
    if map.map_type == MapType::STRUCT_OPS {
        return Some("bpf_struct_ops map cannot be used in prog");
    }
    if prog.sleepable && !sleepable_map_type(map.map_type) {
        return Some("Sleepable programs can only use array, hash, ringbuf and local storage maps");
    }
    None
}

/// Program types the kernel counts as tracing for map compatibility
/// (`is_tracing_prog_type`): they may run in any context, where these
/// objects cannot be used safely.
fn is_tracing_prog_type(t: ProgType) -> bool {
    matches!(
        t,
        ProgType::KPROBE
            | ProgType::TRACEPOINT
            | ProgType::PERF_EVENT
            | ProgType::RAW_TRACEPOINT
            | ProgType::RAW_TRACEPOINT_WRITABLE
    )
}

/// The program types that may not use a map whose value holds these
/// special fields.
fn fields_incompatibility(fields: &[Field], prog_type: ProgType) -> Option<&'static str> {
    let tracing = is_tracing_prog_type(prog_type);
    let has = |name: &str| fields.iter().any(|f| f.name == name);
    if (has("bpf_list_head") || has("bpf_rb_root")) && tracing {
        return Some("tracing progs cannot use bpf_{list_head,rb_root} yet");
    }
    if has("bpf_spin_lock") || has("bpf_res_spin_lock") {
        if prog_type == ProgType::SOCKET_FILTER {
            return Some("socket filter progs cannot use bpf_spin_lock yet");
        }
        if tracing {
            return Some("tracing progs cannot use bpf_spin_lock yet");
        }
    }
    if has("bpf_timer") && tracing {
        return Some("tracing progs cannot use bpf_timer yet");
    }
    if has("bpf_wq") && tracing {
        return Some("tracing progs cannot use bpf_wq yet");
    }
    None
}

/// Map types a sleepable program may use: those whose operations are safe
/// outside an RCU read section.
fn sleepable_map_type(t: MapType) -> bool {
    matches!(
        t,
        MapType::HASH
            | MapType::LRU_HASH
            | MapType::ARRAY
            | MapType::PERCPU_HASH
            | MapType::PERCPU_ARRAY
            | MapType::LRU_PERCPU_HASH
            | MapType::ARRAY_OF_MAPS
            | MapType::HASH_OF_MAPS
            | MapType::RINGBUF
            | MapType::USER_RINGBUF
            | MapType::INODE_STORAGE
            | MapType::SK_STORAGE
            | MapType::TASK_STORAGE
            | MapType::CGRP_STORAGE
            | MapType::QUEUE
            | MapType::STACK
            | MapType::ARENA
    )
}

/// Distinct maps one program may use (MAX_USED_MAPS).
pub const MAX_USED_MAPS: usize = 64;

pub fn too_many_maps() -> String {
    format!("The total number of maps per program has reached the limit of {MAX_USED_MAPS}")
}

/// Checks the map the `ld_imm64` at `i` references, if any. A reference
/// by fd (`BPF_PSEUDO_MAP_FD`/`_VALUE`, left by a program that was not
/// linked against its maps) names no map the loader created.
pub fn check_map_ref(
    obj: &Object,
    prog: &Program,
    i: usize,
    ins: &Insn,
    next: &Insn,
    used: &mut Vec<u32>,
) -> Result<(), VerifyError> {
    let err = |msg: String| Err(VerifyError::new(Some(i), msg));
    // Plain map references carry nothing in the second half.
    let by_value = matches!(ins.src, BPF_PSEUDO_MAP_VALUE | BPF_PSEUDO_MAP_IDX_VALUE);
    if !by_value && next.imm != 0 {
        return err("unrecognized bpf_ld_imm64 insn".into());
    }
    let map = match ins.src {
        BPF_PSEUDO_MAP_FD | BPF_PSEUDO_MAP_VALUE => {
            return err(format!("fd {} is not pointing to valid bpf_map", ins.imm))
        }
        _ => match crate::load_attrs::map_at_index(obj, prog, i, ins.imm as u32)? {
            Some(map) => map,
            None => return Ok(()),
        },
    };
    // A map the program names for the first time takes a slot of its
    // used maps, then is checked against the program.
    let idx = ins.imm as u32;
    if !used.contains(&idx) {
        if used.len() >= MAX_USED_MAPS {
            return err(too_many_maps());
        }
        if let Some(msg) = map_prog_incompatibility(obj, map, prog, Digest::Computed) {
            return err(msg.to_string());
        }
        used.push(idx);
    }
    if by_value {
        let off = next.imm as u32;
        if off >= MAX_VAR_OFF {
            return err(format!("direct value offset of {off} is not allowed"));
        }
        match map.map_type {
            // Only a single-element array gives its value's address.
            MapType::ARRAY if map.max_entries != 1 || off >= map.value_size => {
                return err(format!(
                    "invalid access to map value pointer, value_size={} off={off}",
                    map.value_size
                ))
            }
            // An arena global lies within the arena's pages.
            MapType::ARENA if u64::from(off) > u64::from(map.max_entries) * ARENA_PAGE_SIZE => {
                return err(format!(
                    "invalid access to map value pointer, value_size={} off={off}",
                    map.value_size
                ))
            }
            MapType::ARRAY | MapType::ARENA => {}
            _ => return err("no direct value access support for this map type".into()),
        }
    }
    Ok(())
}

/// The kernel's BPF_MAX_VAR_OFF: direct value offsets stay below it.
const MAX_VAR_OFF: u32 = 1 << 29;

/// An arena spans `max_entries` pages of this size (x86-64).
const ARENA_PAGE_SIZE: u64 = 4096;

/// The arena map the program's `ld_imm64`s reference, if any (the kernel
/// associates it with the program when it resolves them).
pub fn arena_map(obj: &Object, prog: &Program) -> Option<usize> {
    arena_refs(obj, prog).next().map(|(_, m)| m)
}

/// The `ld_imm64`s referencing an arena map: (insn, map index).
/// Records the cgroup storage map an `ld_imm64` names (one slot per
/// storage kind, shared and per-CPU); true when the program already uses
/// another map of that kind (a program holds one of each).
pub fn second_cgroup_storage(obj: &Object, slots: &mut [Option<usize>; 2], ins: &Insn) -> bool {
    if !matches!(ins.src, BPF_PSEUDO_MAP_IDX | BPF_PSEUDO_MAP_IDX_VALUE) {
        return false;
    }
    let map = ins.imm as u32 as usize;
    let kind = match obj.maps.get(map).map(|m| m.map_type) {
        Some(MapType::CGROUP_STORAGE) => 0,
        Some(MapType::PERCPU_CGROUP_STORAGE) => 1,
        _ => return false,
    };
    match slots[kind] {
        Some(m) => m != map,
        None => {
            slots[kind] = Some(map);
            false
        }
    }
}

pub fn arena_refs<'a>(
    obj: &'a Object,
    prog: &'a Program,
) -> impl Iterator<Item = (usize, usize)> + 'a {
    prog.insns.iter().enumerate().filter_map(|(i, ins)| {
        let by_idx =
            ins.is_ld_imm64() && matches!(ins.src, BPF_PSEUDO_MAP_IDX | BPF_PSEUDO_MAP_IDX_VALUE);
        let map = ins.imm as u32 as usize;
        (by_idx && obj.maps.get(map)?.map_type == MapType::ARENA).then_some((i, map))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpfvet_object::btf::Btf;

    /// Raw BTF: [1] struct bpf_timer {}, [2] struct outer { [1] t; },
    /// [3] int, [4] [1] array of [2], [5] var v: [4], [6] datasec .bss {[5]}.
    fn btf_with_nested_timer() -> Btf {
        let strings = b"\0bpf_timer\0outer\0t\0int\0v\0.bss\0".to_vec();
        let s = |name: &str, strings: &[u8]| {
            strings
                .windows(name.len() + 2)
                .position(|w| {
                    w[0] == 0 && &w[1..=name.len()] == name.as_bytes() && w[name.len() + 1] == 0
                })
                .map_or(0, |p| p as u32 + 1)
        };
        let info = |kind: u32, vlen: u32| (kind << 24) | vlen;
        let words: Vec<u32> = vec![
            s("bpf_timer", &strings),
            info(4, 0),
            16,
            s("outer", &strings),
            info(4, 1),
            16,
            s("t", &strings),
            1,
            0,
            s("int", &strings),
            info(1, 0),
            4,
            32,
            0,
            info(3, 0),
            0,
            2,
            3,
            1,
            s("v", &strings),
            info(14, 0),
            4,
            1,
            s(".bss", &strings),
            info(15, 1),
            16,
            5,
            0,
            16,
        ];
        let types: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let raw = bpfvet_object::btf::encode(&types, &strings);
        Btf::from_bytes(&raw).expect("valid BTF")
    }

    #[test]
    fn timer_nested_in_global_data_is_found() {
        let mut obj = Object::single_program("p", ProgType::KPROBE, Vec::new());
        obj.btf = Some(btf_with_nested_timer());
        let mut map = MapDef::new(".bss", MapType::ARRAY, 4, 16, 1);
        let prog = obj.programs[0].clone();
        assert_eq!(
            map_prog_incompatibility(&obj, &map, &prog, Digest::Computed),
            None
        );
        map.btf_value_type_id = 6;
        let fields = map_record::map_fields(obj.btf.as_ref(), &map);
        assert_eq!(fields.len(), 1);
        assert_eq!(fields[0].name, "bpf_timer");
        let prog = obj.programs[0].clone();
        assert_eq!(
            map_prog_incompatibility(&obj, &map, &prog, Digest::Computed),
            Some("tracing progs cannot use bpf_timer yet")
        );
        let mut tc = prog.clone();
        tc.prog_type = ProgType::SCHED_CLS;
        assert_eq!(
            map_prog_incompatibility(&obj, &map, &tc, Digest::Computed),
            None
        );
    }

    #[test]
    fn sleepable_programs_take_only_some_map_types() {
        let obj = Object::single_program("p", ProgType::TRACING, Vec::new());
        let mut prog = obj.programs[0].clone();
        prog.sleepable = true;
        let hash = MapDef::new("h", MapType::HASH, 4, 8, 4);
        assert_eq!(
            map_prog_incompatibility(&obj, &hash, &prog, Digest::Computed),
            None
        );
        let perf = MapDef::new("p", MapType::PERF_EVENT_ARRAY, 4, 4, 4);
        assert_eq!(
            map_prog_incompatibility(&obj, &perf, &prog, Digest::Computed),
            Some("Sleepable programs can only use array, hash, ringbuf and local storage maps")
        );
        prog.sleepable = false;
        assert_eq!(
            map_prog_incompatibility(&obj, &perf, &prog, Digest::Computed),
            None
        );
    }
}
