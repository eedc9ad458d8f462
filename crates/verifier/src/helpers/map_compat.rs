//! Which map types a helper accepts and which helpers a map type allows
//! (`check_map_func_compatibility`): both directions must agree.

use super::ids::id;
use super::proto::helper_display_name;
use super::CallerProg;
use bpfvet_isa::uapi::{AttachType, MapType as M, ProgType};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot pass map_type {} into func {}#{func}", .map_type.0, helper_display_name(*.func))]
pub struct MapFuncError {
    pub map_type: M,
    pub func: u32,
    /// The kernel first logs "cannot update sockmap in this context" (a
    /// sockmap/sockhash update from a program type that may not).
    pub sockmap_update_context: bool,
}

impl MapFuncError {
    /// The log lines the kernel prints, last one last.
    pub fn log_lines(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.sockmap_update_context {
            v.push("cannot update sockmap in this context".to_string());
        }
        v.push(self.to_string());
        v
    }
}

/// Whether a program may update or delete sockmap/sockhash entries with
/// the generic map helpers (`may_update_sockmap`); Some(false) when the
/// kernel also logs "cannot update sockmap in this context", None when the
/// helper is not an update or delete at all.
fn may_update_sockmap(func: u32, prog: &CallerProg) -> Option<bool> {
    if func != id::MAP_UPDATE_ELEM && func != id::MAP_DELETE_ELEM {
        return None;
    }
    let eat = crate::ctx::effective_attach_type(prog.prog_type, prog.expected_attach_type);
    Some(match prog.prog_type {
        ProgType::TRACING => eat == AttachType::TRACE_ITER,
        ProgType::SOCK_OPS => func == id::MAP_DELETE_ELEM,
        ProgType::SOCKET_FILTER
        | ProgType::SCHED_CLS
        | ProgType::SCHED_ACT
        | ProgType::XDP
        | ProgType::SK_REUSEPORT
        | ProgType::FLOW_DISSECTOR
        | ProgType::SK_LOOKUP => true,
        _ => false,
    })
}

/// The map type's side: the helpers it may be passed to (all, for
/// types without a restriction).
fn map_allows(map_type: M, func: u32, sockmap_update: Option<bool>) -> bool {
    let any = |fs: &[u32]| fs.contains(&func);
    match map_type {
        M::PROG_ARRAY => func == id::TAIL_CALL,
        M::PERF_EVENT_ARRAY => any(&[
            id::PERF_EVENT_READ,
            id::PERF_EVENT_OUTPUT,
            id::SKB_OUTPUT,
            id::PERF_EVENT_READ_VALUE,
            id::XDP_OUTPUT,
        ]),
        M::RINGBUF => any(&[
            id::RINGBUF_OUTPUT,
            id::RINGBUF_RESERVE,
            id::RINGBUF_QUERY,
            id::RINGBUF_RESERVE_DYNPTR,
            id::RINGBUF_SUBMIT_DYNPTR,
            id::RINGBUF_DISCARD_DYNPTR,
        ]),
        M::USER_RINGBUF => func == id::USER_RINGBUF_DRAIN,
        M::STACK_TRACE => func == id::GET_STACKID,
        M::CGROUP_ARRAY => any(&[id::SKB_UNDER_CGROUP, id::CURRENT_TASK_UNDER_CGROUP]),
        M::CGROUP_STORAGE | M::PERCPU_CGROUP_STORAGE => func == id::GET_LOCAL_STORAGE,
        M::DEVMAP | M::DEVMAP_HASH | M::XSKMAP => any(&[id::REDIRECT_MAP, id::MAP_LOOKUP_ELEM]),
        M::CPUMAP => func == id::REDIRECT_MAP,
        M::ARRAY_OF_MAPS | M::HASH_OF_MAPS => func == id::MAP_LOOKUP_ELEM,
        M::SOCKMAP => {
            any(&[
                id::SK_REDIRECT_MAP,
                id::SOCK_MAP_UPDATE,
                id::MSG_REDIRECT_MAP,
                id::SK_SELECT_REUSEPORT,
                id::MAP_LOOKUP_ELEM,
            ]) || sockmap_update == Some(true)
        }
        M::SOCKHASH => {
            any(&[
                id::SK_REDIRECT_HASH,
                id::SOCK_HASH_UPDATE,
                id::MSG_REDIRECT_HASH,
                id::SK_SELECT_REUSEPORT,
                id::MAP_LOOKUP_ELEM,
            ]) || sockmap_update == Some(true)
        }
        M::REUSEPORT_SOCKARRAY => func == id::SK_SELECT_REUSEPORT,
        M::QUEUE | M::STACK => any(&[id::MAP_PEEK_ELEM, id::MAP_POP_ELEM, id::MAP_PUSH_ELEM]),
        M::SK_STORAGE => any(&[id::SK_STORAGE_GET, id::SK_STORAGE_DELETE, id::KPTR_XCHG]),
        M::INODE_STORAGE => any(&[
            id::INODE_STORAGE_GET,
            id::INODE_STORAGE_DELETE,
            id::KPTR_XCHG,
        ]),
        M::TASK_STORAGE => any(&[id::TASK_STORAGE_GET, id::TASK_STORAGE_DELETE, id::KPTR_XCHG]),
        M::CGRP_STORAGE => any(&[id::CGRP_STORAGE_GET, id::CGRP_STORAGE_DELETE, id::KPTR_XCHG]),
        M::BLOOM_FILTER => any(&[id::MAP_PEEK_ELEM, id::MAP_PUSH_ELEM]),
        _ => true,
    }
}

/// The helper's side: map types it accepts.
fn func_allows(func: u32, map_type: M) -> bool {
    let one_of = |ms: &[M]| ms.contains(&map_type);
    match func {
        id::TAIL_CALL => map_type == M::PROG_ARRAY,
        id::PERF_EVENT_READ
        | id::PERF_EVENT_OUTPUT
        | id::PERF_EVENT_READ_VALUE
        | id::SKB_OUTPUT
        | id::XDP_OUTPUT => map_type == M::PERF_EVENT_ARRAY,
        id::RINGBUF_OUTPUT
        | id::RINGBUF_RESERVE
        | id::RINGBUF_QUERY
        | id::RINGBUF_RESERVE_DYNPTR
        | id::RINGBUF_SUBMIT_DYNPTR
        | id::RINGBUF_DISCARD_DYNPTR => map_type == M::RINGBUF,
        id::USER_RINGBUF_DRAIN => map_type == M::USER_RINGBUF,
        id::GET_STACKID => map_type == M::STACK_TRACE,
        id::CURRENT_TASK_UNDER_CGROUP | id::SKB_UNDER_CGROUP => map_type == M::CGROUP_ARRAY,
        id::REDIRECT_MAP => one_of(&[M::DEVMAP, M::DEVMAP_HASH, M::CPUMAP, M::XSKMAP]),
        id::SK_REDIRECT_MAP | id::MSG_REDIRECT_MAP | id::SOCK_MAP_UPDATE => map_type == M::SOCKMAP,
        id::SK_REDIRECT_HASH | id::MSG_REDIRECT_HASH | id::SOCK_HASH_UPDATE => {
            map_type == M::SOCKHASH
        }
        id::GET_LOCAL_STORAGE => one_of(&[M::CGROUP_STORAGE, M::PERCPU_CGROUP_STORAGE]),
        id::SK_SELECT_REUSEPORT => one_of(&[M::REUSEPORT_SOCKARRAY, M::SOCKMAP, M::SOCKHASH]),
        id::MAP_POP_ELEM => one_of(&[M::QUEUE, M::STACK]),
        id::MAP_PEEK_ELEM | id::MAP_PUSH_ELEM => one_of(&[M::QUEUE, M::STACK, M::BLOOM_FILTER]),
        id::MAP_LOOKUP_PERCPU_ELEM => {
            one_of(&[M::PERCPU_ARRAY, M::PERCPU_HASH, M::LRU_PERCPU_HASH])
        }
        id::SK_STORAGE_GET | id::SK_STORAGE_DELETE => map_type == M::SK_STORAGE,
        id::INODE_STORAGE_GET | id::INODE_STORAGE_DELETE => map_type == M::INODE_STORAGE,
        id::TASK_STORAGE_GET | id::TASK_STORAGE_DELETE => map_type == M::TASK_STORAGE,
        id::CGRP_STORAGE_GET | id::CGRP_STORAGE_DELETE => map_type == M::CGRP_STORAGE,
        _ => true,
    }
}

/// Whether helper `func` may be called with a map of `map_type` from
/// `prog`. (The kernel's further rule for tail calls from programs with
/// subprograms depends on the JIT and is left to the caller.)
pub fn check_map_func_compatibility(
    map_type: M,
    func: u32,
    prog: &CallerProg,
) -> Result<(), MapFuncError> {
    let sockmap_update = match map_type {
        M::SOCKMAP | M::SOCKHASH => may_update_sockmap(func, prog),
        _ => None,
    };
    if map_allows(map_type, func, sockmap_update) && func_allows(func, map_type) {
        return Ok(());
    }
    Err(MapFuncError {
        map_type,
        func,
        sockmap_update_context: sockmap_update == Some(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions() {
        let p = CallerProg::new(ProgType::SCHED_CLS, None);
        assert!(check_map_func_compatibility(M::PROG_ARRAY, id::TAIL_CALL, &p).is_ok());
        let e = check_map_func_compatibility(M::ARRAY, id::TAIL_CALL, &p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot pass map_type 2 into func bpf_tail_call#12"
        );
        let e = check_map_func_compatibility(M::PROG_ARRAY, id::MAP_LOOKUP_ELEM, &p);
        assert!(e.is_err());
        assert!(check_map_func_compatibility(M::HASH, id::MAP_LOOKUP_ELEM, &p).is_ok());
    }

    #[test]
    fn sockmap_updates_depend_on_program_type() {
        let tc = CallerProg::new(ProgType::SCHED_CLS, None);
        assert!(check_map_func_compatibility(M::SOCKMAP, id::MAP_UPDATE_ELEM, &tc).is_ok());
        let kp = CallerProg::new(ProgType::KPROBE, None);
        let e = check_map_func_compatibility(M::SOCKMAP, id::MAP_UPDATE_ELEM, &kp).unwrap_err();
        assert_eq!(
            e.log_lines(),
            [
                "cannot update sockmap in this context",
                "cannot pass map_type 15 into func bpf_map_update_elem#2"
            ]
        );
    }
}
