//! BPF_PROG_LOAD attributes other than the instructions, checked where the
//! kernel's bpf_check takes them: fd_array and fd_array_cnt (bound up front
//! by process_fd_array, and read by map references), func_info's record
//! size (check_btf_func_early) and CO-RE relocation records
//! (check_core_relo).

use crate::error::VerifyError;
use crate::map_refs;
use bpfvet_isa::uapi::MapType;
use bpfvet_object::{FdEntry, MapDef, Object, Program};

use crate::map_refs::MAX_USED_MAPS;

/// Distinct BTF objects one program may hold (MAX_USED_BTFS).
pub const MAX_USED_BTFS: usize = 64;

/// What process_fd_array bound before verification: the object's maps in
/// the order they came, and how many BTF objects.
#[derive(Clone, Debug, Default)]
pub struct Bound {
    pub maps: Vec<u32>,
    pub btfs: usize,
}

/// fd_array as the program sends it: the explicit list, or libbpf's (every
/// map of the object at its index).
fn entries(obj: &Object, prog: &Program) -> Vec<FdEntry> {
    match &prog.load.fd_array {
        Some(list) => list.clone(),
        None => (0..obj.maps.len()).map(FdEntry::Map).collect(),
    }
}

/// process_fd_array: with fd_array_cnt, each leading entry must be a map
/// (taken as used by the program, with its compatibility checks) or a BTF
/// object (counted against the program's BTF limit).
pub fn process_fd_array(obj: &Object, prog: &Program) -> Result<Bound, VerifyError> {
    let cnt = prog.load.fd_array_cnt;
    let mut bound = Bound::default();
    if cnt == 0 {
        return Ok(bound);
    }
    let err = |msg: String| Err(VerifyError::new(None, msg));
    let unsupported = |what: &str| Err(VerifyError::unsupported(None, what.to_string()));
    // The count times sizeof(int) must not overflow a u32.
    if cnt >= u32::MAX / 4 {
        return err(format!("fd_array_cnt is too big ({cnt})"));
    }
    let list = entries(obj, prog);
    if list.is_empty() {
        // Read from a NULL pointer: EFAULT without a message.
        return unsupported("fd_array_cnt without an fd_array (EFAULT)");
    }
    if cnt as usize > list.len() {
        return unsupported(
            "fd_array_cnt past the end of fd_array (the kernel reads what follows)",
        );
    }
    let mut cgroup_storages = [None; 2];
    for entry in &list[..cnt as usize] {
        match *entry {
            FdEntry::Map(i) => {
                let Some(map) = obj.maps.get(i) else {
                    return unsupported("an fd_array entry naming no map of the object");
                };
                if bound.maps.contains(&(i as u32)) {
                    continue;
                }
                if bound.maps.len() >= MAX_USED_MAPS {
                    return err(map_refs::too_many_maps());
                }
                if let Some(msg) =
                    map_refs::map_prog_incompatibility(obj, map, prog, map_refs::Digest::NotYet)
                {
                    return err(msg.to_string());
                }
                if let Some(kind) = cgroup_storage_kind(map) {
                    if cgroup_storages[kind].is_some_and(|m| m != i) {
                        return err("only one cgroup storage of each type is allowed".into());
                    }
                    cgroup_storages[kind] = Some(i);
                }
                if map.map_type == MapType::ARENA {
                    // The program's arena would be set without any
                    // instruction naming it.
                    return unsupported("fd_array_cnt binding an arena");
                }
                bound.maps.push(i as u32);
            }
            FdEntry::Btf => {
                // Each entry is a BTF object of its own.
                if bound.btfs >= MAX_USED_BTFS {
                    return err(too_many_btfs());
                }
                bound.btfs += 1;
            }
            FdEntry::Invalid(fd) => {
                return err(format!("fd {fd} is not pointing to valid bpf_map or btf"));
            }
        }
    }
    Ok(bound)
}

pub fn too_many_btfs() -> String {
    format!("The total number of btfs per program has reached the limit of {MAX_USED_BTFS}")
}

/// The cgroup storage slot a map takes (shared, per-CPU), if any.
pub fn cgroup_storage_kind(map: &MapDef) -> Option<usize> {
    match map.map_type {
        MapType::CGROUP_STORAGE => Some(0),
        MapType::PERCPU_CGROUP_STORAGE => Some(1),
        _ => None,
    }
}

/// What a map reference by fd_array index `idx` (instruction `at`) names:
/// the object's map at that index, or the kernel's error. Only an
/// explicit fd_array that keeps map `idx` at index `idx` is followed
/// further (the rest of the verifier reads maps by index).
pub fn map_at_index<'a>(
    obj: &'a Object,
    prog: &Program,
    at: usize,
    idx: u32,
) -> Result<Option<&'a MapDef>, VerifyError> {
    let err = |msg: String| Err(VerifyError::new(Some(at), msg));
    let Some(list) = &prog.load.fd_array else {
        if obj.maps.is_empty() {
            return err("fd_idx without fd_array is invalid".into());
        }
        // A missing index is reported where the load is explored.
        return Ok(obj.maps.get(idx as usize));
    };
    if list.is_empty() {
        return err("fd_idx without fd_array is invalid".into());
    }
    match list.get(idx as usize) {
        Some(FdEntry::Map(i)) if *i == idx as usize => Ok(obj.maps.get(idx as usize)),
        Some(FdEntry::Invalid(fd)) => err(format!("fd {fd} is not pointing to valid bpf_map")),
        Some(_) => Err(VerifyError::unsupported(
            Some(at),
            format!("fd_array index {idx} naming a BTF or another index's map"),
        )),
        None => Err(VerifyError::unsupported(
            Some(at),
            format!("fd_array index {idx} past its end (the kernel reads what follows)"),
        )),
    }
}

/// The kernel's bounds on func_info_rec_size (check_btf_func_early).
const MIN_FUNC_INFO_REC_SIZE: u32 = 8;
const MAX_FUNC_INFO_REC_SIZE: u32 = 252;

/// check_btf_func_early's record size check; larger valid sizes carry
/// zero tails (the loaders here pad them), read like 8-byte records.
pub fn check_func_info_rec_size(prog: &Program) -> Result<(), VerifyError> {
    let size = prog
        .load
        .func_info_rec_size
        .unwrap_or(MIN_FUNC_INFO_REC_SIZE);
    if !(MIN_FUNC_INFO_REC_SIZE..=MAX_FUNC_INFO_REC_SIZE).contains(&size) || !size.is_multiple_of(4)
    {
        return Err(VerifyError::new(
            None,
            format!("invalid func info rec size {size}"),
        ));
    }
    Ok(())
}

/// check_core_relo (sent with func_info only): records are taken in
/// order, each instruction offset must be a whole instruction inside the
/// program; a first record that is would be relocated, which bpfvet does
/// not model, so only the first record can decide.
pub fn check_core_relos(prog: &Program) -> Result<(), VerifyError> {
    let Some(first) = prog.load.core_relos.first() else {
        return Ok(());
    };
    let len = prog.insns.len();
    if !first.insn_off.is_multiple_of(8) || (first.insn_off / 8) as usize >= len {
        return Err(VerifyError::new(
            None,
            format!(
                "Invalid core_relo[0].insn_off:{} prog->len:{len}",
                first.insn_off
            ),
        ));
    }
    Err(VerifyError::unsupported(
        Some((first.insn_off / 8) as usize),
        "CO-RE relocation records applied by the kernel".into(),
    ))
}
