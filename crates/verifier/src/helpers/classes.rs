//! Helper classes the verifier treats specially (the `is_*_function`
//! predicates of kernel/bpf/verifier.c and `bpf_helper_changes_pkt_data`).

use super::ids::id;
use crate::scalar::Scalar;
use bpfvet_isa::uapi::MapType;

/// Returns a new reference the program must release (or hand back).
/// `map_type` is the type of the map argument, if the call has one.
pub fn is_acquire_function(func: u32, map_type: Option<MapType>) -> bool {
    match func {
        id::SK_LOOKUP_TCP
        | id::SK_LOOKUP_UDP
        | id::SKC_LOOKUP_TCP
        | id::RINGBUF_RESERVE
        | id::KPTR_XCHG => true,
        id::MAP_LOOKUP_ELEM => matches!(map_type, Some(MapType::SOCKMAP | MapType::SOCKHASH)),
        _ => false,
    }
}

/// Casts a socket pointer to another socket type; the result shares the
/// argument's reference.
pub fn is_ptr_cast_function(func: u32) -> bool {
    matches!(
        func,
        id::TCP_SOCK
            | id::SK_FULLSOCK
            | id::SKC_TO_TCP_SOCK
            | id::SKC_TO_TCP6_SOCK
            | id::SKC_TO_UDP6_SOCK
            | id::SKC_TO_MPTCP_SOCK
            | id::SKC_TO_TCP_TIMEWAIT_SOCK
            | id::SKC_TO_TCP_REQUEST_SOCK
    )
}

/// Returns memory that lives as long as the dynptr's reference.
pub fn is_dynptr_ref_function(func: u32) -> bool {
    func == id::DYNPTR_DATA
}

/// Calls its callback before returning (verified like a loop body).
pub fn is_sync_callback_calling_function(func: u32) -> bool {
    matches!(
        func,
        id::FOR_EACH_MAP_ELEM | id::FIND_VMA | id::LOOP | id::USER_RINGBUF_DRAIN
    )
}

/// Registers a callback that runs later (must return 0).
pub fn is_async_callback_calling_function(func: u32) -> bool {
    func == id::TIMER_SET_CALLBACK
}

pub fn is_callback_calling_function(func: u32) -> bool {
    is_sync_callback_calling_function(func) || is_async_callback_calling_function(func)
}

/// Local storage getters (their map value may be created on demand).
pub fn is_storage_get_function(func: u32) -> bool {
    matches!(
        func,
        id::SK_STORAGE_GET | id::INODE_STORAGE_GET | id::TASK_STORAGE_GET | id::CGRP_STORAGE_GET
    )
}

/// More than one of acquire / cast / dynptr-ref applies: the kernel
/// refuses such a prototype.
pub fn helper_multiple_ref_obj_use(func: u32, map_type: Option<MapType>) -> bool {
    [
        is_ptr_cast_function(func),
        is_acquire_function(func, map_type),
        is_dynptr_ref_function(func),
    ]
    .iter()
    .filter(|&&b| b)
    .count()
        > 1
}

/// May move or resize packet data, so every packet pointer is invalid after
/// the call (a tail call may run any of them).
pub fn changes_pkt_data(func: u32) -> bool {
    matches!(
        func,
        id::CLONE_REDIRECT
            | id::L3_CSUM_REPLACE
            | id::L4_CSUM_REPLACE
            | id::LWT_PUSH_ENCAP
            | id::LWT_SEG6_ACTION
            | id::LWT_SEG6_ADJUST_SRH
            | id::LWT_SEG6_STORE_BYTES
            | id::MSG_POP_DATA
            | id::MSG_PULL_DATA
            | id::MSG_PUSH_DATA
            | id::SKB_ADJUST_ROOM
            | id::SKB_CHANGE_HEAD
            | id::SKB_CHANGE_PROTO
            | id::SKB_CHANGE_TAIL
            | id::SKB_PULL_DATA
            | id::SKB_STORE_BYTES
            | id::SKB_VLAN_POP
            | id::SKB_VLAN_PUSH
            | id::STORE_HDR_OPT
            | id::XDP_ADJUST_HEAD
            | id::XDP_ADJUST_META
            | id::XDP_ADJUST_TAIL
            | id::TAIL_CALL
    )
}

/// Bounds the kernel puts on an integer return value
/// (`do_refine_retval_range`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RetvalRefinement {
    /// Signed 64- and 32-bit bounds [-MAX_ERRNO (-4095), the size
    /// argument's maximum].
    UpToSizeArg,
    /// [0, nr_cpu_ids - 1] in every domain.
    CpuId,
}

pub fn retval_refinement(func: u32) -> Option<RetvalRefinement> {
    match func {
        id::GET_STACK
        | id::GET_TASK_STACK
        | id::PROBE_READ_STR
        | id::PROBE_READ_KERNEL_STR
        | id::PROBE_READ_USER_STR => Some(RetvalRefinement::UpToSizeArg),
        id::GET_SMP_PROCESSOR_ID => Some(RetvalRefinement::CpuId),
        _ => None,
    }
}

/// Where the kernel's nr_cpu_ids comes from: one past the highest possible
/// CPU (`/sys/devices/system/cpu/possible`, e.g. "0-3" or "0,2-5").
const POSSIBLE_CPUS: &str = "/sys/devices/system/cpu/possible";
/// NR_CPUS of distribution kernels (Debian amd64): the widest bound, used
/// when the host's CPU list cannot be read.
const NR_CPUS: u32 = 8192;

/// One past the highest CPU of a `possible` list; None if malformed.
pub fn parse_possible_cpus(list: &str) -> Option<u32> {
    let mut highest = None;
    for part in list.trim().split(',') {
        let last = part.rsplit('-').next()?;
        let n: u32 = last.trim().parse().ok()?;
        highest = highest.max(Some(n));
    }
    highest.and_then(|h: u32| h.checked_add(1))
}

/// The host's nr_cpu_ids (bpf_get_smp_processor_id returns below it), read
/// once.
pub fn nr_cpu_ids() -> u32 {
    static CACHE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *CACHE.get_or_init(|| {
        std::fs::read_to_string(POSSIBLE_CPUS)
            .ok()
            .and_then(|s| parse_possible_cpus(&s))
            .unwrap_or(NR_CPUS)
    })
}

/// R0 after a helper with a refined integer return (do_refine_retval_range);
/// `size_max` is the largest value the size argument could have.
pub fn refined_retval(kind: RetvalRefinement, size_max: u64) -> Scalar {
    let mut s = Scalar::unknown();
    match kind {
        RetvalRefinement::UpToSizeArg => {
            s.smax = size_max as i64;
            s.s32_max = size_max as i32;
            s.smin = -MAX_ERRNO;
            s.s32_min = -MAX_ERRNO as i32;
        }
        RetvalRefinement::CpuId => {
            let max = nr_cpu_ids().saturating_sub(1);
            s.umin = 0;
            s.smin = 0;
            s.u32_min = 0;
            s.s32_min = 0;
            s.umax = max as u64;
            s.smax = max as i64;
            s.u32_max = max;
            s.s32_max = max as i32;
        }
    }
    s.sync();
    s
}

/// Largest errno a helper returns negated.
const MAX_ERRNO: i64 = 4095;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert!(is_acquire_function(id::RINGBUF_RESERVE, None));
        assert!(!is_acquire_function(
            id::MAP_LOOKUP_ELEM,
            Some(MapType::HASH)
        ));
        assert!(is_acquire_function(
            id::MAP_LOOKUP_ELEM,
            Some(MapType::SOCKMAP)
        ));
        assert!(changes_pkt_data(id::TAIL_CALL));
        assert!(!changes_pkt_data(id::SKB_LOAD_BYTES));
        assert!(is_callback_calling_function(id::TIMER_SET_CALLBACK));
        assert!(!helper_multiple_ref_obj_use(id::SK_LOOKUP_TCP, None));
        assert_eq!(
            retval_refinement(id::PROBE_READ_KERNEL_STR),
            Some(RetvalRefinement::UpToSizeArg)
        );
        assert_eq!(retval_refinement(id::PROBE_READ_KERNEL), None);
    }

    #[test]
    fn possible_cpu_lists() {
        assert_eq!(parse_possible_cpus("0-1\n"), Some(2));
        assert_eq!(parse_possible_cpus("0"), Some(1));
        assert_eq!(parse_possible_cpus("0,2-5,7"), Some(8));
        assert_eq!(parse_possible_cpus(""), None);
        assert_eq!(parse_possible_cpus("0-x"), None);
    }

    #[test]
    fn refined_bounds() {
        let s = refined_retval(RetvalRefinement::UpToSizeArg, 64);
        assert_eq!(
            (s.smin, s.smax, s.s32_min, s.s32_max),
            (-4095, 64, -4095, 64)
        );
        let c = refined_retval(RetvalRefinement::CpuId, 0);
        assert_eq!((c.umin, c.umax), (0, nr_cpu_ids() as u64 - 1));
        assert_eq!(c.smax, c.umax as i64);
    }
}
