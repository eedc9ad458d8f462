//! The maps a program's `ld_imm64` instructions name, resolved before
//! exploration as the kernel's `resolve_pseudo_ldimm64` does: each must be
//! a map of the object, and the map's special fields must suit the program
//! type (`check_map_prog_compatibility`).

use crate::error::VerifyError;
use bpfvet_isa::opcode::{
    BPF_PSEUDO_MAP_FD, BPF_PSEUDO_MAP_IDX, BPF_PSEUDO_MAP_IDX_VALUE, BPF_PSEUDO_MAP_VALUE,
};
use bpfvet_isa::uapi::{MapType, ProgType};
use bpfvet_object::btf::{Btf, Kind};
use bpfvet_object::{MapDef, Object, Program};

/// The special kernel objects a map value holds (the kinds of the kernel's
/// `btf_record` fields that decide program compatibility).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct ValueFields {
    pub spin_lock: bool,
    pub timer: bool,
    pub workqueue: bool,
    /// `bpf_list_head` or `bpf_rb_root`.
    pub graph_root: bool,
}

/// Nesting the kernel follows into structs inside a map value.
const MAX_FIELD_NESTING: u32 = 32;

impl ValueFields {
    /// The special fields of `map`'s value, read from its BTF (none for a
    /// map without BTF, which the kernel also gives no record).
    pub fn of(obj: &Object, map: &MapDef) -> ValueFields {
        let mut f = ValueFields::default();
        if let Some(btf) = obj.btf.as_ref().filter(|_| map.btf_value_type_id != 0) {
            f.walk(btf, map.btf_value_type_id, 0);
        }
        f
    }

    /// Structs (not unions) are searched member by member, arrays by their
    /// element type; a global-data section by its variables.
    fn walk(&mut self, btf: &Btf, id: u32, depth: u32) {
        if depth > MAX_FIELD_NESTING {
            return;
        }
        let Some((id, t)) = btf.skip_mods_and_typedefs(id) else {
            return;
        };
        match t.kind {
            Kind::Struct => match btf.name_of(id) {
                "bpf_spin_lock" => self.spin_lock = true,
                "bpf_timer" => self.timer = true,
                "bpf_wq" => self.workqueue = true,
                "bpf_list_head" | "bpf_rb_root" => self.graph_root = true,
                _ => {
                    for m in btf.members(t) {
                        self.walk(btf, m.type_id, depth + 1);
                    }
                }
            },
            Kind::Array => {
                if let Some((elem, _, _)) = t.array_info() {
                    self.walk(btf, elem, depth + 1);
                }
            }
            Kind::Var => self.walk(btf, t.size_or_type, depth + 1),
            Kind::Datasec => {
                for v in btf.datasec_vars(t) {
                    self.walk(btf, v.type_id, depth + 1);
                }
            }
            _ => {}
        }
    }
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

/// The kernel's refusal of `map` in a program of `prog`'s type, if any.
pub fn map_prog_incompatibility(
    obj: &Object,
    map: &MapDef,
    prog: &Program,
) -> Option<&'static str> {
    let f = ValueFields::of(obj, map);
    let tracing = is_tracing_prog_type(prog.prog_type);
    if f.graph_root && tracing {
        return Some("tracing progs cannot use bpf_{list_head,rb_root} yet");
    }
    if f.spin_lock {
        if prog.prog_type == ProgType::SOCKET_FILTER {
            return Some("socket filter progs cannot use bpf_spin_lock yet");
        }
        if tracing {
            return Some("tracing progs cannot use bpf_spin_lock yet");
        }
    }
    if f.timer && tracing {
        return Some("tracing progs cannot use bpf_timer yet");
    }
    if f.workqueue && tracing {
        return Some("tracing progs cannot use bpf_wq yet");
    }
    if map.map_type == MapType::STRUCT_OPS {
        return Some("bpf_struct_ops map cannot be used in prog");
    }
    if prog.sleepable && !sleepable_map_type(map.map_type) {
        return Some("Sleepable programs can only use array, hash, ringbuf and local storage maps");
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

/// Every map reference of `prog`, in instruction order. A reference by fd
/// (`BPF_PSEUDO_MAP_FD`/`_VALUE`, left by a program that was not linked
/// against its maps) names no map the loader created.
pub fn resolve_map_refs(obj: &Object, prog: &Program) -> Result<(), VerifyError> {
    let insns = &prog.insns;
    let mut i = 0;
    while i < insns.len() {
        let ins = insns[i];
        if !ins.is_ld_imm64() {
            i += 1;
            continue;
        }
        let err = |msg: String| Err(VerifyError::new(Some(i), msg));
        match ins.src {
            BPF_PSEUDO_MAP_FD | BPF_PSEUDO_MAP_VALUE => {
                return err(format!("fd {} is not pointing to valid bpf_map", ins.imm));
            }
            BPF_PSEUDO_MAP_IDX | BPF_PSEUDO_MAP_IDX_VALUE => {
                // A missing index is reported where the load is explored.
                if let Some(map) = obj.maps.get(ins.imm as u32 as usize) {
                    if let Some(msg) = map_prog_incompatibility(obj, map, prog) {
                        return err(msg.to_string());
                    }
                }
            }
            _ => {}
        }
        i += 2;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raw BTF: [1] struct bpf_timer {}, [2] struct outer { [1] t; },
    /// [3] int, [4] [3] array of [2], [5] var v: [4], [6] datasec .bss {[5]}.
    fn btf_with_nested_timer() -> Btf {
        let mut strings = b"\0bpf_timer\0outer\0t\0int\0v\0.bss\0".to_vec();
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
            3,
            s("v", &strings),
            info(14, 0),
            4,
            1,
            s(".bss", &strings),
            info(15, 1),
            48,
            5,
            0,
            48,
        ];
        let types: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut raw = Vec::new();
        raw.extend_from_slice(&0xeb9fu16.to_le_bytes());
        raw.extend_from_slice(&[1, 0]);
        for w in [
            24u32,
            0,
            types.len() as u32,
            types.len() as u32,
            strings.len() as u32,
        ] {
            raw.extend_from_slice(&w.to_le_bytes());
        }
        raw.extend_from_slice(&types);
        raw.append(&mut strings);
        Btf::from_bytes(&raw).expect("valid BTF")
    }

    #[test]
    fn timer_nested_in_global_data_array_is_found() {
        let mut obj = Object::single_program("p", ProgType::KPROBE, Vec::new());
        obj.btf = Some(btf_with_nested_timer());
        let mut map = MapDef::new(".bss", MapType::ARRAY, 4, 48, 1);
        assert_eq!(ValueFields::of(&obj, &map), ValueFields::default());
        map.btf_value_type_id = 6;
        let f = ValueFields::of(&obj, &map);
        assert!(f.timer && !f.spin_lock && !f.graph_root);
        let prog = obj.programs[0].clone();
        assert_eq!(
            map_prog_incompatibility(&obj, &map, &prog),
            Some("tracing progs cannot use bpf_timer yet")
        );
        let mut tc = prog.clone();
        tc.prog_type = ProgType::SCHED_CLS;
        assert_eq!(map_prog_incompatibility(&obj, &map, &tc), None);
    }

    #[test]
    fn sleepable_programs_take_only_some_map_types() {
        let obj = Object::single_program("p", ProgType::TRACING, Vec::new());
        let mut prog = obj.programs[0].clone();
        prog.sleepable = true;
        let hash = MapDef::new("h", MapType::HASH, 4, 8, 4);
        assert_eq!(map_prog_incompatibility(&obj, &hash, &prog), None);
        let perf = MapDef::new("p", MapType::PERF_EVENT_ARRAY, 4, 4, 4);
        assert_eq!(
            map_prog_incompatibility(&obj, &perf, &prog),
            Some("Sleepable programs can only use array, hash, ringbuf and local storage maps")
        );
        prog.sleepable = false;
        assert_eq!(map_prog_incompatibility(&obj, &perf, &prog), None);
    }
}
