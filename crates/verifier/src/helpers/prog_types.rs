//! Which helpers each program type may call, and which prototype variant it
//! gets: the kernel's per-type `get_func_proto` callbacks (net/core/filter.c,
//! kernel/trace/bpf_trace.c, kernel/bpf/{helpers,cgroup,syscall,bpf_lsm}.c),
//! as tables of plain entries plus code for the entries that depend on the
//! attach type, sleepability, lockdown or the loader's capabilities (the
//! tiers of `bpf_base_func_proto`: plain, CAP_BPF, CAP_PERFMON).

use super::ids::id;
use super::proto::HelperProto;
use super::protos::*;
use super::CallerProg;
use bpfvet_isa::privileges::cap;
use bpfvet_isa::uapi::{AttachType as At, ProgType as Pt};

type Proto = Option<&'static HelperProto>;
type Table = &'static [(u32, &'static HelperProto)];

fn find(table: Table, func: u32) -> Proto {
    table.iter().find(|(f, _)| *f == func).map(|(_, p)| *p)
}

/// The capability bpf_prog_load asks of a loader of program type `pt`
/// besides CAP_BPF (is_net_admin_prog_type, is_perfmon_prog_type), and
/// whether a loader without CAP_BPF may load it at all.
pub fn load_capabilities(pt: Pt) -> (bool, &'static [u32]) {
    use bpfvet_isa::privileges::cap;
    let unprivileged = matches!(pt, Pt::SOCKET_FILTER | Pt::CGROUP_SKB);
    let needs: &'static [u32] = match pt {
        Pt::SCHED_CLS
        | Pt::SCHED_ACT
        | Pt::XDP
        | Pt::LWT_IN
        | Pt::LWT_OUT
        | Pt::LWT_XMIT
        | Pt::LWT_SEG6LOCAL
        | Pt::SK_SKB
        | Pt::SK_MSG
        | Pt::FLOW_DISSECTOR
        | Pt::CGROUP_DEVICE
        | Pt::CGROUP_SOCK
        | Pt::CGROUP_SOCK_ADDR
        | Pt::CGROUP_SOCKOPT
        | Pt::CGROUP_SYSCTL
        | Pt::SOCK_OPS
        | Pt::NETFILTER => &[cap::NET_ADMIN],
        Pt::EXT => &[cap::NET_ADMIN, cap::PERFMON],
        Pt::KPROBE
        | Pt::TRACEPOINT
        | Pt::PERF_EVENT
        | Pt::RAW_TRACEPOINT
        | Pt::RAW_TRACEPOINT_WRITABLE
        | Pt::TRACING
        | Pt::LSM
        | Pt::STRUCT_OPS => &[cap::PERFMON],
        _ => &[],
    };
    (unprivileged, needs)
}

/// The plain entries of `sock_filter_func_proto`.
const SOCK_FILTER: Table = &[
    (id::GET_SOCKET_COOKIE, &BPF_GET_SOCKET_COOKIE_SOCK),
    (id::GET_NETNS_COOKIE, &BPF_GET_NETNS_COOKIE_SOCK),
    (id::PERF_EVENT_OUTPUT, &BPF_EVENT_OUTPUT_DATA),
    (id::SK_STORAGE_GET, &BPF_SK_STORAGE_GET_CG_SOCK),
    (id::KTIME_GET_COARSE_NS, &BPF_KTIME_GET_COARSE_NS),
];

/// The plain entries of `sock_addr_func_proto`.
const SOCK_ADDR: Table = &[
    (id::GET_SOCKET_COOKIE, &BPF_GET_SOCKET_COOKIE_SOCK_ADDR),
    (id::GET_NETNS_COOKIE, &BPF_GET_NETNS_COOKIE_SOCK_ADDR),
    (id::PERF_EVENT_OUTPUT, &BPF_EVENT_OUTPUT_DATA),
    (id::SK_LOOKUP_TCP, &BPF_SOCK_ADDR_SK_LOOKUP_TCP),
    (id::SK_LOOKUP_UDP, &BPF_SOCK_ADDR_SK_LOOKUP_UDP),
    (id::SK_RELEASE, &BPF_SK_RELEASE),
    (id::SKC_LOOKUP_TCP, &BPF_SOCK_ADDR_SKC_LOOKUP_TCP),
    (id::SK_STORAGE_GET, &BPF_SK_STORAGE_GET),
    (id::SK_STORAGE_DELETE, &BPF_SK_STORAGE_DELETE),
];

/// The plain entries of `sk_filter_func_proto`.
const SK_FILTER: Table = &[
    (id::GET_NETNS_COOKIE, &BPF_GET_NETNS_COOKIE),
    (id::SKB_LOAD_BYTES, &BPF_SKB_LOAD_BYTES),
    (id::SKB_LOAD_BYTES_RELATIVE, &BPF_SKB_LOAD_BYTES_RELATIVE),
    (id::GET_SOCKET_COOKIE, &BPF_GET_SOCKET_COOKIE),
    (id::GET_SOCKET_UID, &BPF_GET_SOCKET_UID),
    (id::PERF_EVENT_OUTPUT, &BPF_SKB_EVENT_OUTPUT),
];

/// The plain entries of `cg_skb_func_proto`.
const CG_SKB: Table = &[
    (id::SK_FULLSOCK, &BPF_SK_FULLSOCK),
    (id::SK_STORAGE_GET, &BPF_SK_STORAGE_GET),
    (id::SK_STORAGE_DELETE, &BPF_SK_STORAGE_DELETE),
    (id::PERF_EVENT_OUTPUT, &BPF_SKB_EVENT_OUTPUT),
    (id::SKB_CGROUP_ID, &BPF_SKB_CGROUP_ID),
    (id::SKB_ANCESTOR_CGROUP_ID, &BPF_SKB_ANCESTOR_CGROUP_ID),
    (id::SK_CGROUP_ID, &BPF_SK_CGROUP_ID),
    (id::SK_ANCESTOR_CGROUP_ID, &BPF_SK_ANCESTOR_CGROUP_ID),
    (id::SK_LOOKUP_TCP, &BPF_SK_LOOKUP_TCP),
    (id::SK_LOOKUP_UDP, &BPF_SK_LOOKUP_UDP),
    (id::SK_RELEASE, &BPF_SK_RELEASE),
    (id::SKC_LOOKUP_TCP, &BPF_SKC_LOOKUP_TCP),
    (id::TCP_SOCK, &BPF_TCP_SOCK),
    (id::GET_LISTENER_SOCK, &BPF_GET_LISTENER_SOCK),
    (id::SKB_ECN_SET_CE, &BPF_SKB_ECN_SET_CE),
];

/// The plain entries of `tc_cls_act_func_proto`.
const TC_CLS_ACT: Table = &[
    (id::GET_NETNS_COOKIE, &BPF_GET_NETNS_COOKIE),
    (id::SKB_STORE_BYTES, &BPF_SKB_STORE_BYTES),
    (id::SKB_LOAD_BYTES, &BPF_SKB_LOAD_BYTES),
    (id::SKB_LOAD_BYTES_RELATIVE, &BPF_SKB_LOAD_BYTES_RELATIVE),
    (id::SKB_PULL_DATA, &BPF_SKB_PULL_DATA),
    (id::CSUM_DIFF, &BPF_CSUM_DIFF),
    (id::CSUM_UPDATE, &BPF_CSUM_UPDATE),
    (id::CSUM_LEVEL, &BPF_CSUM_LEVEL),
    (id::L3_CSUM_REPLACE, &BPF_L3_CSUM_REPLACE),
    (id::L4_CSUM_REPLACE, &BPF_L4_CSUM_REPLACE),
    (id::CLONE_REDIRECT, &BPF_CLONE_REDIRECT),
    (id::GET_CGROUP_CLASSID, &BPF_GET_CGROUP_CLASSID),
    (id::SKB_VLAN_PUSH, &BPF_SKB_VLAN_PUSH),
    (id::SKB_VLAN_POP, &BPF_SKB_VLAN_POP),
    (id::SKB_CHANGE_PROTO, &BPF_SKB_CHANGE),
    (id::SKB_CHANGE_TYPE, &BPF_SKB_CHANGE_TYPE),
    (id::SKB_ADJUST_ROOM, &BPF_SKB_ADJUST_ROOM),
    (id::SKB_CHANGE_TAIL, &BPF_SKB_CHANGE_TAIL),
    (id::SKB_CHANGE_HEAD, &BPF_SKB_CHANGE_HEAD),
    (id::SKB_GET_TUNNEL_KEY, &BPF_SKB_GET_TUNNEL_KEY),
    (id::SKB_GET_TUNNEL_OPT, &BPF_SKB_GET_TUNNEL_OPT),
    (id::REDIRECT, &BPF_REDIRECT),
    (id::REDIRECT_NEIGH, &BPF_REDIRECT_NEIGH),
    (id::REDIRECT_PEER, &BPF_REDIRECT_PEER),
    (id::GET_ROUTE_REALM, &BPF_GET_ROUTE_REALM),
    (id::GET_HASH_RECALC, &BPF_GET_HASH_RECALC),
    (id::SET_HASH_INVALID, &BPF_SET_HASH_INVALID),
    (id::SET_HASH, &BPF_SET_HASH),
    (id::PERF_EVENT_OUTPUT, &BPF_SKB_EVENT_OUTPUT),
    (id::GET_SMP_PROCESSOR_ID, &BPF_GET_SMP_PROCESSOR_ID),
    (id::SKB_UNDER_CGROUP, &BPF_SKB_UNDER_CGROUP),
    (id::GET_SOCKET_COOKIE, &BPF_GET_SOCKET_COOKIE),
    (id::GET_SOCKET_UID, &BPF_GET_SOCKET_UID),
    (id::FIB_LOOKUP, &BPF_SKB_FIB_LOOKUP),
    (id::CHECK_MTU, &BPF_SKB_CHECK_MTU),
    (id::SK_FULLSOCK, &BPF_SK_FULLSOCK),
    (id::SK_STORAGE_GET, &BPF_SK_STORAGE_GET),
    (id::SK_STORAGE_DELETE, &BPF_SK_STORAGE_DELETE),
    (id::SKB_GET_XFRM_STATE, &BPF_SKB_GET_XFRM_STATE),
    (id::SKB_CGROUP_CLASSID, &BPF_SKB_CGROUP_CLASSID),
    (id::SKB_CGROUP_ID, &BPF_SKB_CGROUP_ID),
    (id::SKB_ANCESTOR_CGROUP_ID, &BPF_SKB_ANCESTOR_CGROUP_ID),
    (id::SK_LOOKUP_TCP, &BPF_TC_SK_LOOKUP_TCP),
    (id::SK_LOOKUP_UDP, &BPF_TC_SK_LOOKUP_UDP),
    (id::SK_RELEASE, &BPF_SK_RELEASE),
    (id::TCP_SOCK, &BPF_TCP_SOCK),
    (id::GET_LISTENER_SOCK, &BPF_GET_LISTENER_SOCK),
    (id::SKC_LOOKUP_TCP, &BPF_TC_SKC_LOOKUP_TCP),
    (id::TCP_CHECK_SYNCOOKIE, &BPF_TCP_CHECK_SYNCOOKIE),
    (id::SKB_ECN_SET_CE, &BPF_SKB_ECN_SET_CE),
    (id::TCP_GEN_SYNCOOKIE, &BPF_TCP_GEN_SYNCOOKIE),
    (id::SK_ASSIGN, &BPF_SK_ASSIGN),
    (id::SKB_SET_TSTAMP, &BPF_SKB_SET_TSTAMP),
    (
        id::TCP_RAW_GEN_SYNCOOKIE_IPV4,
        &BPF_TCP_RAW_GEN_SYNCOOKIE_IPV4,
    ),
    (
        id::TCP_RAW_GEN_SYNCOOKIE_IPV6,
        &BPF_TCP_RAW_GEN_SYNCOOKIE_IPV6,
    ),
    (
        id::TCP_RAW_CHECK_SYNCOOKIE_IPV4,
        &BPF_TCP_RAW_CHECK_SYNCOOKIE_IPV4,
    ),
    (
        id::TCP_RAW_CHECK_SYNCOOKIE_IPV6,
        &BPF_TCP_RAW_CHECK_SYNCOOKIE_IPV6,
    ),
];

/// The plain entries of `xdp_func_proto`.
const XDP: Table = &[
    (id::PERF_EVENT_OUTPUT, &BPF_XDP_EVENT_OUTPUT),
    (id::GET_SMP_PROCESSOR_ID, &BPF_GET_SMP_PROCESSOR_ID),
    (id::CSUM_DIFF, &BPF_CSUM_DIFF),
    (id::XDP_ADJUST_HEAD, &BPF_XDP_ADJUST_HEAD),
    (id::XDP_ADJUST_META, &BPF_XDP_ADJUST_META),
    (id::REDIRECT, &BPF_XDP_REDIRECT),
    (id::REDIRECT_MAP, &BPF_XDP_REDIRECT_MAP),
    (id::XDP_ADJUST_TAIL, &BPF_XDP_ADJUST_TAIL),
    (id::XDP_GET_BUFF_LEN, &BPF_XDP_GET_BUFF_LEN),
    (id::XDP_LOAD_BYTES, &BPF_XDP_LOAD_BYTES),
    (id::XDP_STORE_BYTES, &BPF_XDP_STORE_BYTES),
    (id::FIB_LOOKUP, &BPF_XDP_FIB_LOOKUP),
    (id::CHECK_MTU, &BPF_XDP_CHECK_MTU),
    (id::SK_LOOKUP_UDP, &BPF_XDP_SK_LOOKUP_UDP),
    (id::SK_LOOKUP_TCP, &BPF_XDP_SK_LOOKUP_TCP),
    (id::SK_RELEASE, &BPF_SK_RELEASE),
    (id::SKC_LOOKUP_TCP, &BPF_XDP_SKC_LOOKUP_TCP),
    (id::TCP_CHECK_SYNCOOKIE, &BPF_TCP_CHECK_SYNCOOKIE),
    (id::TCP_GEN_SYNCOOKIE, &BPF_TCP_GEN_SYNCOOKIE),
    (
        id::TCP_RAW_GEN_SYNCOOKIE_IPV4,
        &BPF_TCP_RAW_GEN_SYNCOOKIE_IPV4,
    ),
    (
        id::TCP_RAW_GEN_SYNCOOKIE_IPV6,
        &BPF_TCP_RAW_GEN_SYNCOOKIE_IPV6,
    ),
    (
        id::TCP_RAW_CHECK_SYNCOOKIE_IPV4,
        &BPF_TCP_RAW_CHECK_SYNCOOKIE_IPV4,
    ),
    (
        id::TCP_RAW_CHECK_SYNCOOKIE_IPV6,
        &BPF_TCP_RAW_CHECK_SYNCOOKIE_IPV6,
    ),
];

/// The plain entries of `sock_ops_func_proto`.
const SOCK_OPS: Table = &[
    (id::SETSOCKOPT, &BPF_SOCK_OPS_SETSOCKOPT),
    (id::GETSOCKOPT, &BPF_SOCK_OPS_GETSOCKOPT),
    (id::SOCK_OPS_CB_FLAGS_SET, &BPF_SOCK_OPS_CB_FLAGS_SET),
    (id::SOCK_MAP_UPDATE, &BPF_SOCK_MAP_UPDATE),
    (id::SOCK_HASH_UPDATE, &BPF_SOCK_HASH_UPDATE),
    (id::GET_SOCKET_COOKIE, &BPF_GET_SOCKET_COOKIE_SOCK_OPS),
    (id::PERF_EVENT_OUTPUT, &BPF_EVENT_OUTPUT_DATA),
    (id::SK_STORAGE_GET, &BPF_SK_STORAGE_GET),
    (id::SK_STORAGE_DELETE, &BPF_SK_STORAGE_DELETE),
    (id::GET_NETNS_COOKIE, &BPF_GET_NETNS_COOKIE_SOCK_OPS),
    (id::LOAD_HDR_OPT, &BPF_SOCK_OPS_LOAD_HDR_OPT),
    (id::STORE_HDR_OPT, &BPF_SOCK_OPS_STORE_HDR_OPT),
    (id::RESERVE_HDR_OPT, &BPF_SOCK_OPS_RESERVE_HDR_OPT),
    (id::TCP_SOCK, &BPF_TCP_SOCK),
];

/// The plain entries of `sk_msg_func_proto`.
const SK_MSG: Table = &[
    (id::MSG_REDIRECT_MAP, &BPF_MSG_REDIRECT_MAP),
    (id::MSG_REDIRECT_HASH, &BPF_MSG_REDIRECT_HASH),
    (id::MSG_APPLY_BYTES, &BPF_MSG_APPLY_BYTES),
    (id::MSG_CORK_BYTES, &BPF_MSG_CORK_BYTES),
    (id::MSG_PULL_DATA, &BPF_MSG_PULL_DATA),
    (id::MSG_PUSH_DATA, &BPF_MSG_PUSH_DATA),
    (id::MSG_POP_DATA, &BPF_MSG_POP_DATA),
    (id::PERF_EVENT_OUTPUT, &BPF_EVENT_OUTPUT_DATA),
    (id::GET_CURRENT_UID_GID, &BPF_GET_CURRENT_UID_GID),
    (id::SK_STORAGE_GET, &BPF_SK_STORAGE_GET),
    (id::SK_STORAGE_DELETE, &BPF_SK_STORAGE_DELETE),
    (id::GET_NETNS_COOKIE, &BPF_GET_NETNS_COOKIE_SK_MSG),
    (id::GET_CGROUP_CLASSID, &BPF_GET_CGROUP_CLASSID_CURR),
];

/// The plain entries of `sk_skb_func_proto`.
const SK_SKB: Table = &[
    (id::SKB_STORE_BYTES, &BPF_SKB_STORE_BYTES),
    (id::SKB_LOAD_BYTES, &BPF_SKB_LOAD_BYTES),
    (id::SKB_PULL_DATA, &SK_SKB_PULL_DATA),
    (id::SKB_CHANGE_TAIL, &SK_SKB_CHANGE_TAIL),
    (id::SKB_CHANGE_HEAD, &SK_SKB_CHANGE_HEAD),
    (id::SKB_ADJUST_ROOM, &SK_SKB_ADJUST_ROOM),
    (id::GET_SOCKET_COOKIE, &BPF_GET_SOCKET_COOKIE),
    (id::GET_SOCKET_UID, &BPF_GET_SOCKET_UID),
    (id::SK_REDIRECT_MAP, &BPF_SK_REDIRECT_MAP),
    (id::SK_REDIRECT_HASH, &BPF_SK_REDIRECT_HASH),
    (id::PERF_EVENT_OUTPUT, &BPF_SKB_EVENT_OUTPUT),
    (id::SK_LOOKUP_TCP, &BPF_SK_LOOKUP_TCP),
    (id::SK_LOOKUP_UDP, &BPF_SK_LOOKUP_UDP),
    (id::SK_RELEASE, &BPF_SK_RELEASE),
    (id::SKC_LOOKUP_TCP, &BPF_SKC_LOOKUP_TCP),
];

/// The plain entries of `flow_dissector_func_proto`.
const FLOW_DISSECTOR: Table = &[(id::SKB_LOAD_BYTES, &BPF_FLOW_DISSECTOR_LOAD_BYTES)];

/// The plain entries of `lwt_out_func_proto`.
const LWT_OUT: Table = &[
    (id::SKB_LOAD_BYTES, &BPF_SKB_LOAD_BYTES),
    (id::SKB_PULL_DATA, &BPF_SKB_PULL_DATA),
    (id::CSUM_DIFF, &BPF_CSUM_DIFF),
    (id::GET_CGROUP_CLASSID, &BPF_GET_CGROUP_CLASSID),
    (id::GET_ROUTE_REALM, &BPF_GET_ROUTE_REALM),
    (id::GET_HASH_RECALC, &BPF_GET_HASH_RECALC),
    (id::PERF_EVENT_OUTPUT, &BPF_SKB_EVENT_OUTPUT),
    (id::GET_SMP_PROCESSOR_ID, &BPF_GET_SMP_PROCESSOR_ID),
    (id::SKB_UNDER_CGROUP, &BPF_SKB_UNDER_CGROUP),
];

/// The plain entries of `lwt_in_func_proto`.
const LWT_IN: Table = &[(id::LWT_PUSH_ENCAP, &BPF_LWT_IN_PUSH_ENCAP)];

/// The plain entries of `lwt_xmit_func_proto`.
const LWT_XMIT: Table = &[
    (id::SKB_GET_TUNNEL_KEY, &BPF_SKB_GET_TUNNEL_KEY),
    (id::SKB_GET_TUNNEL_OPT, &BPF_SKB_GET_TUNNEL_OPT),
    (id::REDIRECT, &BPF_REDIRECT),
    (id::CLONE_REDIRECT, &BPF_CLONE_REDIRECT),
    (id::SKB_CHANGE_TAIL, &BPF_SKB_CHANGE_TAIL),
    (id::SKB_CHANGE_HEAD, &BPF_SKB_CHANGE_HEAD),
    (id::SKB_STORE_BYTES, &BPF_SKB_STORE_BYTES),
    (id::CSUM_UPDATE, &BPF_CSUM_UPDATE),
    (id::CSUM_LEVEL, &BPF_CSUM_LEVEL),
    (id::L3_CSUM_REPLACE, &BPF_L3_CSUM_REPLACE),
    (id::L4_CSUM_REPLACE, &BPF_L4_CSUM_REPLACE),
    (id::SET_HASH_INVALID, &BPF_SET_HASH_INVALID),
    (id::LWT_PUSH_ENCAP, &BPF_LWT_XMIT_PUSH_ENCAP),
];

/// The plain entries of `lwt_seg6local_func_proto`.
const LWT_SEG6LOCAL: Table = &[
    (id::LWT_SEG6_STORE_BYTES, &BPF_LWT_SEG6_STORE_BYTES),
    (id::LWT_SEG6_ACTION, &BPF_LWT_SEG6_ACTION),
    (id::LWT_SEG6_ADJUST_SRH, &BPF_LWT_SEG6_ADJUST_SRH),
];

/// The plain entries of `sk_reuseport_func_proto`.
const SK_REUSEPORT: Table = &[
    (id::SK_SELECT_REUSEPORT, &SK_SELECT_REUSEPORT),
    (id::SKB_LOAD_BYTES, &SK_REUSEPORT_LOAD_BYTES),
    (
        id::SKB_LOAD_BYTES_RELATIVE,
        &SK_REUSEPORT_LOAD_BYTES_RELATIVE,
    ),
    (id::GET_SOCKET_COOKIE, &BPF_GET_SOCKET_PTR_COOKIE),
    (id::KTIME_GET_COARSE_NS, &BPF_KTIME_GET_COARSE_NS),
];

/// The plain entries of `sk_lookup_func_proto`.
const SK_LOOKUP: Table = &[
    (id::PERF_EVENT_OUTPUT, &BPF_EVENT_OUTPUT_DATA),
    (id::SK_ASSIGN, &BPF_SK_LOOKUP_ASSIGN),
    (id::SK_RELEASE, &BPF_SK_RELEASE),
];

/// The socket casts of `bpf_sk_base_func_proto`, for a loader with
/// CAP_PERFMON.
const SK_BASE_CAP_PERFMON: Table = &[
    (id::SKC_TO_TCP6_SOCK, &BPF_SKC_TO_TCP6_SOCK),
    (id::SKC_TO_TCP_SOCK, &BPF_SKC_TO_TCP_SOCK),
    (id::SKC_TO_TCP_TIMEWAIT_SOCK, &BPF_SKC_TO_TCP_TIMEWAIT_SOCK),
    (id::SKC_TO_TCP_REQUEST_SOCK, &BPF_SKC_TO_TCP_REQUEST_SOCK),
    (id::SKC_TO_UDP6_SOCK, &BPF_SKC_TO_UDP6_SOCK),
    (id::SKC_TO_UNIX_SOCK, &BPF_SKC_TO_UNIX_SOCK),
    (id::SKC_TO_MPTCP_SOCK, &BPF_SKC_TO_MPTCP_SOCK),
];

/// The plain entries of `bpf_tracing_func_proto`.
const TRACING: Table = &[
    (id::MAP_LOOKUP_ELEM, &BPF_MAP_LOOKUP_ELEM),
    (id::MAP_UPDATE_ELEM, &BPF_MAP_UPDATE_ELEM),
    (id::MAP_DELETE_ELEM, &BPF_MAP_DELETE_ELEM),
    (id::MAP_PUSH_ELEM, &BPF_MAP_PUSH_ELEM),
    (id::MAP_POP_ELEM, &BPF_MAP_POP_ELEM),
    (id::MAP_PEEK_ELEM, &BPF_MAP_PEEK_ELEM),
    (id::MAP_LOOKUP_PERCPU_ELEM, &BPF_MAP_LOOKUP_PERCPU_ELEM),
    (id::KTIME_GET_NS, &BPF_KTIME_GET_NS),
    (id::KTIME_GET_BOOT_NS, &BPF_KTIME_GET_BOOT_NS),
    (id::TAIL_CALL, &BPF_TAIL_CALL),
    (id::GET_CURRENT_TASK, &BPF_GET_CURRENT_TASK),
    (id::GET_CURRENT_TASK_BTF, &BPF_GET_CURRENT_TASK_BTF),
    (id::TASK_PT_REGS, &BPF_TASK_PT_REGS),
    (id::GET_CURRENT_UID_GID, &BPF_GET_CURRENT_UID_GID),
    (id::GET_CURRENT_COMM, &BPF_GET_CURRENT_COMM),
    (id::TRACE_PRINTK, &BPF_TRACE_PRINTK),
    (id::GET_SMP_PROCESSOR_ID, &BPF_GET_SMP_PROCESSOR_ID),
    (id::GET_NUMA_NODE_ID, &BPF_GET_NUMA_NODE_ID),
    (id::PERF_EVENT_READ, &BPF_PERF_EVENT_READ),
    (id::GET_PRANDOM_U32, &BPF_GET_PRANDOM_U32),
    (id::PROBE_READ_USER, &BPF_PROBE_READ_USER),
    (id::PROBE_READ_USER_STR, &BPF_PROBE_READ_USER_STR),
    (id::CGRP_STORAGE_GET, &BPF_CGRP_STORAGE_GET),
    (id::CGRP_STORAGE_DELETE, &BPF_CGRP_STORAGE_DELETE),
    (
        id::CURRENT_TASK_UNDER_CGROUP,
        &BPF_CURRENT_TASK_UNDER_CGROUP,
    ),
    (id::SEND_SIGNAL, &BPF_SEND_SIGNAL),
    (id::SEND_SIGNAL_THREAD, &BPF_SEND_SIGNAL_THREAD),
    (id::PERF_EVENT_READ_VALUE, &BPF_PERF_EVENT_READ_VALUE),
    (id::RINGBUF_OUTPUT, &BPF_RINGBUF_OUTPUT),
    (id::RINGBUF_RESERVE, &BPF_RINGBUF_RESERVE),
    (id::RINGBUF_SUBMIT, &BPF_RINGBUF_SUBMIT),
    (id::RINGBUF_DISCARD, &BPF_RINGBUF_DISCARD),
    (id::RINGBUF_QUERY, &BPF_RINGBUF_QUERY),
    (id::JIFFIES64, &BPF_JIFFIES64),
    (id::COPY_FROM_USER, &BPF_COPY_FROM_USER),
    (id::COPY_FROM_USER_TASK, &BPF_COPY_FROM_USER_TASK),
    (id::SNPRINTF_BTF, &BPF_SNPRINTF_BTF),
    (id::PER_CPU_PTR, &BPF_PER_CPU_PTR),
    (id::THIS_CPU_PTR, &BPF_THIS_CPU_PTR),
    (id::FOR_EACH_MAP_ELEM, &BPF_FOR_EACH_MAP_ELEM),
    (id::SNPRINTF, &BPF_SNPRINTF),
    (id::GET_FUNC_IP, &BPF_GET_FUNC_IP_TRACING),
    (id::GET_BRANCH_SNAPSHOT, &BPF_GET_BRANCH_SNAPSHOT),
    (id::FIND_VMA, &BPF_FIND_VMA),
    (id::TRACE_VPRINTK, &BPF_TRACE_VPRINTK),
];

/// The plain entries of `kprobe_prog_func_proto`.
const KPROBE_PROG: Table = &[
    (id::PERF_EVENT_OUTPUT, &BPF_PERF_EVENT_OUTPUT),
    (id::GET_STACKID, &BPF_GET_STACKID),
    (id::OVERRIDE_RETURN, &BPF_OVERRIDE_RETURN),
];

/// The plain entries of `tp_prog_func_proto`.
const TP_PROG: Table = &[
    (id::PERF_EVENT_OUTPUT, &BPF_PERF_EVENT_OUTPUT_TP),
    (id::GET_STACKID, &BPF_GET_STACKID_TP),
    (id::GET_STACK, &BPF_GET_STACK_TP),
    (id::GET_ATTACH_COOKIE, &BPF_GET_ATTACH_COOKIE_TRACE),
];

/// The plain entries of `pe_prog_func_proto`.
const PE_PROG: Table = &[
    (id::PERF_EVENT_OUTPUT, &BPF_PERF_EVENT_OUTPUT_TP),
    (id::GET_STACKID, &BPF_GET_STACKID_PE),
    (id::GET_STACK, &BPF_GET_STACK_PE),
    (id::PERF_PROG_READ_VALUE, &BPF_PERF_PROG_READ_VALUE),
    (id::READ_BRANCH_RECORDS, &BPF_READ_BRANCH_RECORDS),
    (id::GET_ATTACH_COOKIE, &BPF_GET_ATTACH_COOKIE_PE),
];

/// The plain entries of `raw_tp_prog_func_proto`.
const RAW_TP_PROG: Table = &[
    (id::PERF_EVENT_OUTPUT, &BPF_PERF_EVENT_OUTPUT_RAW_TP),
    (id::GET_STACKID, &BPF_GET_STACKID_RAW_TP),
    (id::GET_STACK, &BPF_GET_STACK_RAW_TP),
    (id::GET_ATTACH_COOKIE, &BPF_GET_ATTACH_COOKIE_TRACING),
];

/// The plain entries of `tracing_prog_func_proto`.
const TRACING_PROG: Table = &[
    (id::SKB_OUTPUT, &BPF_SKB_OUTPUT),
    (id::XDP_OUTPUT, &BPF_XDP_OUTPUT),
    (id::SKC_TO_TCP6_SOCK, &BPF_SKC_TO_TCP6_SOCK),
    (id::SKC_TO_TCP_SOCK, &BPF_SKC_TO_TCP_SOCK),
    (id::SKC_TO_TCP_TIMEWAIT_SOCK, &BPF_SKC_TO_TCP_TIMEWAIT_SOCK),
    (id::SKC_TO_TCP_REQUEST_SOCK, &BPF_SKC_TO_TCP_REQUEST_SOCK),
    (id::SKC_TO_UDP6_SOCK, &BPF_SKC_TO_UDP6_SOCK),
    (id::SKC_TO_UNIX_SOCK, &BPF_SKC_TO_UNIX_SOCK),
    (id::SKC_TO_MPTCP_SOCK, &BPF_SKC_TO_MPTCP_SOCK),
    (id::SK_STORAGE_GET, &BPF_SK_STORAGE_GET_TRACING),
    (id::SK_STORAGE_DELETE, &BPF_SK_STORAGE_DELETE_TRACING),
    (id::SOCK_FROM_FILE, &BPF_SOCK_FROM_FILE),
    (id::GET_SOCKET_COOKIE, &BPF_GET_SOCKET_PTR_COOKIE),
    (id::XDP_GET_BUFF_LEN, &BPF_XDP_GET_BUFF_LEN_TRACE),
    (id::D_PATH, &BPF_D_PATH),
];

/// The plain entries of `cgroup_dev_func_proto`.
const CGROUP_DEV: Table = &[(id::PERF_EVENT_OUTPUT, &BPF_EVENT_OUTPUT_DATA)];

/// The plain entries of `sysctl_func_proto`.
const SYSCTL: Table = &[
    (id::SYSCTL_GET_NAME, &BPF_SYSCTL_GET_NAME),
    (id::SYSCTL_GET_CURRENT_VALUE, &BPF_SYSCTL_GET_CURRENT_VALUE),
    (id::SYSCTL_GET_NEW_VALUE, &BPF_SYSCTL_GET_NEW_VALUE),
    (id::SYSCTL_SET_NEW_VALUE, &BPF_SYSCTL_SET_NEW_VALUE),
    (id::KTIME_GET_COARSE_NS, &BPF_KTIME_GET_COARSE_NS),
    (id::PERF_EVENT_OUTPUT, &BPF_EVENT_OUTPUT_DATA),
];

/// The plain entries of `cg_sockopt_func_proto`.
const CG_SOCKOPT: Table = &[
    (id::GET_NETNS_COOKIE, &BPF_GET_NETNS_COOKIE_SOCKOPT),
    (id::SK_STORAGE_GET, &BPF_SK_STORAGE_GET),
    (id::SK_STORAGE_DELETE, &BPF_SK_STORAGE_DELETE),
    (id::TCP_SOCK, &BPF_TCP_SOCK),
    (id::PERF_EVENT_OUTPUT, &BPF_EVENT_OUTPUT_DATA),
];

/// The plain entries of `cgroup_current_func_proto`.
const CGROUP_CURRENT: Table = &[
    (id::GET_CURRENT_UID_GID, &BPF_GET_CURRENT_UID_GID),
    (id::GET_CURRENT_COMM, &BPF_GET_CURRENT_COMM),
    (id::GET_CGROUP_CLASSID, &BPF_GET_CGROUP_CLASSID_CURR),
    (
        id::CURRENT_TASK_UNDER_CGROUP,
        &BPF_CURRENT_TASK_UNDER_CGROUP,
    ),
];

/// The plain entries of `bpf_base_func_proto`: any loader.
const BASE: Table = &[
    (id::MAP_LOOKUP_ELEM, &BPF_MAP_LOOKUP_ELEM),
    (id::MAP_UPDATE_ELEM, &BPF_MAP_UPDATE_ELEM),
    (id::MAP_DELETE_ELEM, &BPF_MAP_DELETE_ELEM),
    (id::MAP_PUSH_ELEM, &BPF_MAP_PUSH_ELEM),
    (id::MAP_POP_ELEM, &BPF_MAP_POP_ELEM),
    (id::MAP_PEEK_ELEM, &BPF_MAP_PEEK_ELEM),
    (id::MAP_LOOKUP_PERCPU_ELEM, &BPF_MAP_LOOKUP_PERCPU_ELEM),
    (id::GET_PRANDOM_U32, &BPF_GET_PRANDOM_U32),
    (id::GET_SMP_PROCESSOR_ID, &BPF_GET_RAW_SMP_PROCESSOR_ID),
    (id::GET_NUMA_NODE_ID, &BPF_GET_NUMA_NODE_ID),
    (id::TAIL_CALL, &BPF_TAIL_CALL),
    (id::KTIME_GET_NS, &BPF_KTIME_GET_NS),
    (id::KTIME_GET_BOOT_NS, &BPF_KTIME_GET_BOOT_NS),
    (id::KTIME_GET_TAI_NS, &BPF_KTIME_GET_TAI_NS),
    (id::RINGBUF_OUTPUT, &BPF_RINGBUF_OUTPUT),
    (id::RINGBUF_RESERVE, &BPF_RINGBUF_RESERVE),
    (id::RINGBUF_SUBMIT, &BPF_RINGBUF_SUBMIT),
    (id::RINGBUF_DISCARD, &BPF_RINGBUF_DISCARD),
    (id::RINGBUF_QUERY, &BPF_RINGBUF_QUERY),
    (id::STRNCMP, &BPF_STRNCMP),
    (id::STRTOL, &BPF_STRTOL),
    (id::STRTOUL, &BPF_STRTOUL),
    (id::GET_CURRENT_PID_TGID, &BPF_GET_CURRENT_PID_TGID),
    (id::GET_NS_CURRENT_PID_TGID, &BPF_GET_NS_CURRENT_PID_TGID),
    (id::GET_CURRENT_UID_GID, &BPF_GET_CURRENT_UID_GID),
];

/// The entries of `bpf_base_func_proto` for a loader with CAP_BPF.
const BASE_CAP_BPF: Table = &[
    (id::SPIN_LOCK, &BPF_SPIN_LOCK),
    (id::SPIN_UNLOCK, &BPF_SPIN_UNLOCK),
    (id::JIFFIES64, &BPF_JIFFIES64),
    (id::PER_CPU_PTR, &BPF_PER_CPU_PTR),
    (id::THIS_CPU_PTR, &BPF_THIS_CPU_PTR),
    (id::TIMER_INIT, &BPF_TIMER_INIT),
    (id::TIMER_SET_CALLBACK, &BPF_TIMER_SET_CALLBACK),
    (id::TIMER_START, &BPF_TIMER_START),
    (id::TIMER_CANCEL, &BPF_TIMER_CANCEL),
    (id::KPTR_XCHG, &BPF_KPTR_XCHG),
    (id::FOR_EACH_MAP_ELEM, &BPF_FOR_EACH_MAP_ELEM),
    (id::LOOP, &BPF_LOOP),
    (id::USER_RINGBUF_DRAIN, &BPF_USER_RINGBUF_DRAIN),
    (id::RINGBUF_RESERVE_DYNPTR, &BPF_RINGBUF_RESERVE_DYNPTR),
    (id::RINGBUF_SUBMIT_DYNPTR, &BPF_RINGBUF_SUBMIT_DYNPTR),
    (id::RINGBUF_DISCARD_DYNPTR, &BPF_RINGBUF_DISCARD_DYNPTR),
    (id::DYNPTR_FROM_MEM, &BPF_DYNPTR_FROM_MEM),
    (id::DYNPTR_READ, &BPF_DYNPTR_READ),
    (id::DYNPTR_WRITE, &BPF_DYNPTR_WRITE),
    (id::DYNPTR_DATA, &BPF_DYNPTR_DATA),
    (id::CGRP_STORAGE_GET, &BPF_CGRP_STORAGE_GET),
    (id::CGRP_STORAGE_DELETE, &BPF_CGRP_STORAGE_DELETE),
    (id::GET_CURRENT_CGROUP_ID, &BPF_GET_CURRENT_CGROUP_ID),
    (
        id::GET_CURRENT_ANCESTOR_CGROUP_ID,
        &BPF_GET_CURRENT_ANCESTOR_CGROUP_ID,
    ),
    (id::GET_CGROUP_CLASSID, &BPF_GET_CGROUP_CLASSID_CURR),
    (
        id::CURRENT_TASK_UNDER_CGROUP,
        &BPF_CURRENT_TASK_UNDER_CGROUP,
    ),
];

/// The entries of `bpf_base_func_proto` for a loader with CAP_PERFMON.
const BASE_CAP_PERFMON: Table = &[
    (id::TRACE_PRINTK, &BPF_TRACE_PRINTK),
    (id::GET_CURRENT_TASK, &BPF_GET_CURRENT_TASK),
    (id::GET_CURRENT_TASK_BTF, &BPF_GET_CURRENT_TASK_BTF),
    (id::PROBE_READ_USER, &BPF_PROBE_READ_USER),
    (id::PROBE_READ_USER_STR, &BPF_PROBE_READ_USER_STR),
    (id::SNPRINTF_BTF, &BPF_SNPRINTF_BTF),
    (id::SNPRINTF, &BPF_SNPRINTF),
    (id::TASK_PT_REGS, &BPF_TASK_PT_REGS),
    (id::TRACE_VPRINTK, &BPF_TRACE_VPRINTK),
    (id::GET_CURRENT_COMM, &BPF_GET_CURRENT_COMM),
    (id::PERF_EVENT_READ, &BPF_PERF_EVENT_READ),
    (id::PERF_EVENT_READ_VALUE, &BPF_PERF_EVENT_READ_VALUE),
    (id::SEND_SIGNAL, &BPF_SEND_SIGNAL),
    (id::SEND_SIGNAL_THREAD, &BPF_SEND_SIGNAL_THREAD),
    (id::COPY_FROM_USER, &BPF_COPY_FROM_USER),
    (id::COPY_FROM_USER_TASK, &BPF_COPY_FROM_USER_TASK),
    (id::GET_BRANCH_SNAPSHOT, &BPF_GET_BRANCH_SNAPSHOT),
    (id::FIND_VMA, &BPF_FIND_VMA),
];

/// The plain entries of `syscall_prog_func_proto`.
const SYSCALL_PROG: Table = &[
    (id::SYS_BPF, &BPF_SYS_BPF),
    (id::BTF_FIND_BY_NAME_KIND, &BPF_BTF_FIND_BY_NAME_KIND),
    (id::SYS_CLOSE, &BPF_SYS_CLOSE),
    (id::KALLSYMS_LOOKUP_NAME, &BPF_KALLSYMS_LOOKUP_NAME),
];

/// The plain entries of `bpf_lsm_func_proto`.
const LSM: Table = &[
    (id::INODE_STORAGE_GET, &BPF_INODE_STORAGE_GET),
    (id::INODE_STORAGE_DELETE, &BPF_INODE_STORAGE_DELETE),
    (id::SK_STORAGE_GET, &BPF_SK_STORAGE_GET),
    (id::SK_STORAGE_DELETE, &BPF_SK_STORAGE_DELETE),
    (id::SPIN_LOCK, &BPF_SPIN_LOCK),
    (id::SPIN_UNLOCK, &BPF_SPIN_UNLOCK),
    (id::BPRM_OPTS_SET, &BPF_BPRM_OPTS_SET),
    (id::IMA_INODE_HASH, &BPF_IMA_INODE_HASH),
    (id::IMA_FILE_HASH, &BPF_IMA_FILE_HASH),
];

/// The plain entries of `lirc_mode2_func_proto`.
const LIRC_MODE2: Table = &[
    (id::RC_REPEAT, &RC_REPEAT),
    (id::RC_KEYDOWN, &RC_KEYDOWN),
    (id::RC_POINTER_REL, &RC_POINTER_REL),
    (id::MAP_LOOKUP_ELEM, &BPF_MAP_LOOKUP_ELEM),
    (id::MAP_UPDATE_ELEM, &BPF_MAP_UPDATE_ELEM),
    (id::MAP_DELETE_ELEM, &BPF_MAP_DELETE_ELEM),
    (id::MAP_PUSH_ELEM, &BPF_MAP_PUSH_ELEM),
    (id::MAP_POP_ELEM, &BPF_MAP_POP_ELEM),
    (id::MAP_PEEK_ELEM, &BPF_MAP_PEEK_ELEM),
    (id::KTIME_GET_NS, &BPF_KTIME_GET_NS),
    (id::KTIME_GET_BOOT_NS, &BPF_KTIME_GET_BOOT_NS),
    (id::TAIL_CALL, &BPF_TAIL_CALL),
    (id::GET_PRANDOM_U32, &BPF_GET_PRANDOM_U32),
];

/// The prototype program `p` gets for helper `func`, None if its type may
/// not call it.
pub(super) fn resolve(func: u32, p: &CallerProg) -> Proto {
    match p.prog_type {
        Pt::SOCKET_FILTER => sk_filter(func, p),
        Pt::KPROBE => kprobe(func, p),
        Pt::SCHED_CLS | Pt::SCHED_ACT => find(TC_CLS_ACT, func).or_else(|| match func {
            id::SKB_SET_TUNNEL_KEY => Some(&BPF_SKB_SET_TUNNEL_KEY),
            id::SKB_SET_TUNNEL_OPT => Some(&BPF_SKB_SET_TUNNEL_OPT),
            _ => sk_base(func, p),
        }),
        Pt::TRACEPOINT => find(TP_PROG, func).or_else(|| tracing(func, p)),
        Pt::XDP => find(XDP, func).or_else(|| sk_base(func, p)),
        Pt::PERF_EVENT => find(PE_PROG, func).or_else(|| tracing(func, p)),
        Pt::CGROUP_SKB => cgroup_common(func, p)
            .or_else(|| find(CG_SKB, func))
            .or_else(|| sk_filter(func, p)),
        Pt::CGROUP_SOCK => cgroup_common(func, p)
            .or_else(|| cgroup_current(func))
            .or_else(|| find(SOCK_FILTER, func))
            .or_else(|| base(func, p)),
        Pt::LWT_IN => find(LWT_IN, func).or_else(|| lwt_out(func, p)),
        Pt::LWT_OUT => lwt_out(func, p),
        Pt::LWT_XMIT => find(LWT_XMIT, func).or_else(|| match func {
            id::SKB_SET_TUNNEL_KEY => Some(&BPF_SKB_SET_TUNNEL_KEY),
            id::SKB_SET_TUNNEL_OPT => Some(&BPF_SKB_SET_TUNNEL_OPT),
            _ => lwt_out(func, p),
        }),
        Pt::LWT_SEG6LOCAL => find(LWT_SEG6LOCAL, func).or_else(|| lwt_out(func, p)),
        Pt::SOCK_OPS => cgroup_common(func, p)
            .or_else(|| find(SOCK_OPS, func))
            .or_else(|| sk_base(func, p)),
        Pt::SK_SKB => find(SK_SKB, func).or_else(|| sk_base(func, p)),
        Pt::CGROUP_DEVICE => cgroup_common(func, p)
            .or_else(|| cgroup_current(func))
            .or_else(|| find(CGROUP_DEV, func))
            .or_else(|| base(func, p)),
        Pt::SK_MSG => find(SK_MSG, func).or_else(|| sk_base(func, p)),
        Pt::RAW_TRACEPOINT | Pt::RAW_TRACEPOINT_WRITABLE => raw_tp(func, p),
        Pt::CGROUP_SOCK_ADDR => sock_addr(func, p),
        Pt::LIRC_MODE2 => find(LIRC_MODE2, func).or(match func {
            id::TRACE_PRINTK => Some(&BPF_TRACE_PRINTK),
            _ => None,
        }),
        Pt::SK_REUSEPORT => find(SK_REUSEPORT, func).or_else(|| base(func, p)),
        Pt::FLOW_DISSECTOR => find(FLOW_DISSECTOR, func).or_else(|| sk_base(func, p)),
        Pt::CGROUP_SYSCTL => cgroup_common(func, p)
            .or_else(|| cgroup_current(func))
            .or_else(|| find(SYSCTL, func))
            .or_else(|| base(func, p)),
        Pt::CGROUP_SOCKOPT => cg_sockopt(func, p),
        Pt::TRACING => tracing_prog(func, p),
        Pt::LSM => lsm(func, p),
        Pt::SK_LOOKUP => find(SK_LOOKUP, func).or_else(|| sk_base(func, p)),
        Pt::SYSCALL if func == id::SYS_BPF && !p.has(cap::PERFMON) => None,
        Pt::SYSCALL => find(SYSCALL_PROG, func).or_else(|| tracing_prog(func, p)),
        Pt::NETFILTER => base(func, p),
        Pt::STRUCT_OPS => match p.struct_ops {
            super::StructOpsHelpers::TcpCa { release } => tcp_ca(func, release, p),
            super::StructOpsHelpers::Base => base(func, p),
            super::StructOpsHelpers::None => None,
        },
        _ => None,
    }
}

/// `bpf_tcp_ca_get_func_proto`: tcp_congestion_ops programs. The socket
/// options are not for `release`, which runs as the algorithm retires.
fn tcp_ca(func: u32, release: bool, p: &CallerProg) -> Proto {
    match func {
        id::TCP_SEND_ACK => Some(&BPF_TCP_SEND_ACK),
        id::SK_STORAGE_GET => Some(&BPF_SK_STORAGE_GET),
        id::SK_STORAGE_DELETE => Some(&BPF_SK_STORAGE_DELETE),
        id::SETSOCKOPT | id::GETSOCKOPT if release => None,
        id::SETSOCKOPT => Some(&BPF_SK_SETSOCKOPT),
        id::GETSOCKOPT => Some(&BPF_SK_GETSOCKOPT),
        id::KTIME_GET_COARSE_NS => Some(&BPF_KTIME_GET_COARSE_NS),
        _ => base(func, p),
    }
}

/// `bpf_base_func_proto`, all privilege tiers.
fn base(func: u32, p: &CallerProg) -> Proto {
    if let Some(proto) = find(BASE, func) {
        return Some(proto);
    }
    if !p.has(cap::BPF) {
        return None;
    }
    let with_bpf = match func {
        id::TASK_STORAGE_GET if check_recur(p) => Some(&BPF_TASK_STORAGE_GET_RECUR),
        id::TASK_STORAGE_GET => Some(&BPF_TASK_STORAGE_GET),
        id::TASK_STORAGE_DELETE if check_recur(p) => Some(&BPF_TASK_STORAGE_DELETE_RECUR),
        id::TASK_STORAGE_DELETE => Some(&BPF_TASK_STORAGE_DELETE),
        _ => find(BASE_CAP_BPF, func),
    };
    if with_bpf.is_some() || !p.has(cap::PERFMON) {
        return with_bpf;
    }
    match func {
        id::PROBE_READ_KERNEL if p.lockdown.blocks_kernel_reads() => None,
        id::PROBE_READ_KERNEL => Some(&BPF_PROBE_READ_KERNEL),
        id::PROBE_READ_KERNEL_STR if p.lockdown.blocks_kernel_reads() => None,
        id::PROBE_READ_KERNEL_STR => Some(&BPF_PROBE_READ_KERNEL_STR),
        id::GET_TASK_STACK if p.sleepable => Some(&BPF_GET_TASK_STACK_SLEEPABLE),
        id::GET_TASK_STACK => Some(&BPF_GET_TASK_STACK),
        _ => find(BASE_CAP_PERFMON, func),
    }
}

/// `bpf_sk_base_func_proto`: the socket casts on top of the base set.
fn sk_base(func: u32, p: &CallerProg) -> Proto {
    match func {
        id::KTIME_GET_COARSE_NS => Some(&BPF_KTIME_GET_COARSE_NS),
        _ if find(SK_BASE_CAP_PERFMON, func).is_some() && !p.has(cap::PERFMON) => None,
        _ => find(SK_BASE_CAP_PERFMON, func).or_else(|| base(func, p)),
    }
}

fn sk_filter(func: u32, p: &CallerProg) -> Proto {
    find(SK_FILTER, func).or_else(|| sk_base(func, p))
}

fn lwt_out(func: u32, p: &CallerProg) -> Proto {
    find(LWT_OUT, func).or_else(|| sk_base(func, p))
}

fn eat(p: &CallerProg) -> At {
    crate::ctx::effective_attach_type(p.prog_type, p.expected_attach_type)
}

/// `cgroup_common_func_proto`: local storage everywhere, retval helpers
/// only where the hook has a return value to read or set.
fn cgroup_common(func: u32, p: &CallerProg) -> Proto {
    let no_retval = matches!(
        eat(p),
        At::CGROUP_INET_INGRESS
            | At::CGROUP_INET_EGRESS
            | At::CGROUP_SOCK_OPS
            | At::CGROUP_UDP4_RECVMSG
            | At::CGROUP_UDP6_RECVMSG
            | At::CGROUP_UNIX_RECVMSG
            | At::CGROUP_INET4_GETPEERNAME
            | At::CGROUP_INET6_GETPEERNAME
            | At::CGROUP_UNIX_GETPEERNAME
            | At::CGROUP_INET4_GETSOCKNAME
            | At::CGROUP_INET6_GETSOCKNAME
            | At::CGROUP_UNIX_GETSOCKNAME
    );
    match func {
        id::GET_LOCAL_STORAGE => Some(&BPF_GET_LOCAL_STORAGE),
        id::GET_RETVAL if !no_retval => Some(&BPF_GET_RETVAL),
        id::SET_RETVAL if !no_retval => Some(&BPF_SET_RETVAL),
        _ => None,
    }
}

/// `cgroup_current_func_proto`: hooks that run in process context.
fn cgroup_current(func: u32) -> Proto {
    find(CGROUP_CURRENT, func)
}

fn sock_addr(func: u32, p: &CallerProg) -> Proto {
    if let Some(f) = cgroup_common(func, p).or_else(|| cgroup_current(func)) {
        return Some(f);
    }
    let e = eat(p);
    let sockopt_ok = matches!(
        e,
        At::CGROUP_INET4_BIND
            | At::CGROUP_INET6_BIND
            | At::CGROUP_INET4_CONNECT
            | At::CGROUP_INET6_CONNECT
            | At::CGROUP_UNIX_CONNECT
            | At::CGROUP_UDP4_RECVMSG
            | At::CGROUP_UDP6_RECVMSG
            | At::CGROUP_UNIX_RECVMSG
            | At::CGROUP_UDP4_SENDMSG
            | At::CGROUP_UDP6_SENDMSG
            | At::CGROUP_UNIX_SENDMSG
            | At::CGROUP_INET4_GETPEERNAME
            | At::CGROUP_INET6_GETPEERNAME
            | At::CGROUP_INET4_GETSOCKNAME
            | At::CGROUP_INET6_GETSOCKNAME
            | At::CGROUP_UNIX_GETPEERNAME
            | At::CGROUP_UNIX_GETSOCKNAME
    );
    match func {
        id::BIND => {
            matches!(e, At::CGROUP_INET4_CONNECT | At::CGROUP_INET6_CONNECT).then_some(&BPF_BIND)
        }
        id::SETSOCKOPT => sockopt_ok.then_some(&BPF_SOCK_ADDR_SETSOCKOPT),
        id::GETSOCKOPT => sockopt_ok.then_some(&BPF_SOCK_ADDR_GETSOCKOPT),
        _ => find(SOCK_ADDR, func).or_else(|| sk_base(func, p)),
    }
}

fn cg_sockopt(func: u32, p: &CallerProg) -> Proto {
    if let Some(f) = cgroup_common(func, p).or_else(|| cgroup_current(func)) {
        return Some(f);
    }
    let set = eat(p) == At::CGROUP_SETSOCKOPT;
    match func {
        id::SETSOCKOPT => set.then_some(&BPF_SK_SETSOCKOPT),
        id::GETSOCKOPT => set.then_some(&BPF_SK_GETSOCKOPT),
        _ => find(CG_SOCKOPT, func).or_else(|| base(func, p)),
    }
}

/// Whether task storage must use the variants that guard against
/// recursion (`bpf_prog_check_recur`).
fn check_recur(p: &CallerProg) -> bool {
    match p.prog_type {
        Pt::TRACING => eat(p) != At::TRACE_ITER,
        Pt::STRUCT_OPS | Pt::LSM => false,
        _ => true,
    }
}

fn has_trampoline(p: &CallerProg) -> bool {
    let e = eat(p);
    (p.prog_type == Pt::TRACING
        && matches!(e, At::TRACE_FENTRY | At::TRACE_FEXIT | At::MODIFY_RETURN))
        || (p.prog_type == Pt::LSM && e == At::LSM_MAC)
}

/// `bpf_tracing_func_proto`: what every tracing-like type shares.
fn tracing(func: u32, p: &CallerProg) -> Proto {
    let reads_ok = !p.lockdown.blocks_kernel_reads();
    if !p.has(cap::SYS_ADMIN) {
        // Past a few entries and the base set, bpf_tracing_func_proto
        // wants CAP_SYS_ADMIN.
        return match func {
            id::PROBE_READ => reads_ok.then_some(&BPF_PROBE_READ_COMPAT),
            id::PROBE_READ_STR => reads_ok.then_some(&BPF_PROBE_READ_COMPAT_STR),
            id::GET_SMP_PROCESSOR_ID | id::GET_FUNC_IP => find(TRACING, func),
            _ => base(func, p),
        };
    }
    match func {
        id::PROBE_WRITE_USER => p
            .lockdown
            .allows_user_writes()
            .then_some(&BPF_PROBE_WRITE_USER),
        id::PROBE_READ_KERNEL => reads_ok.then_some(&BPF_PROBE_READ_KERNEL),
        id::PROBE_READ_KERNEL_STR => reads_ok.then_some(&BPF_PROBE_READ_KERNEL_STR),
        id::PROBE_READ => reads_ok.then_some(&BPF_PROBE_READ_COMPAT),
        id::PROBE_READ_STR => reads_ok.then_some(&BPF_PROBE_READ_COMPAT_STR),
        _ => find(TRACING, func).or_else(|| base(func, p)),
    }
}

fn kprobe(func: u32, p: &CallerProg) -> Proto {
    let e = eat(p);
    let kmulti = matches!(e, At::TRACE_KPROBE_MULTI | At::TRACE_KPROBE_SESSION);
    let umulti = matches!(e, At::TRACE_UPROBE_MULTI | At::TRACE_UPROBE_SESSION);
    match func {
        id::OVERRIDE_RETURN if !p.kprobe_override => None,
        id::GET_STACK if p.sleepable => Some(&BPF_GET_STACK_SLEEPABLE),
        id::GET_STACK => Some(&BPF_GET_STACK),
        id::GET_FUNC_IP if kmulti => Some(&BPF_GET_FUNC_IP_KPROBE_MULTI),
        id::GET_FUNC_IP if umulti => Some(&BPF_GET_FUNC_IP_UPROBE_MULTI),
        id::GET_FUNC_IP => Some(&BPF_GET_FUNC_IP_KPROBE),
        id::GET_ATTACH_COOKIE if kmulti => Some(&BPF_GET_ATTACH_COOKIE_KMULTI),
        id::GET_ATTACH_COOKIE if umulti => Some(&BPF_GET_ATTACH_COOKIE_UMULTI),
        id::GET_ATTACH_COOKIE => Some(&BPF_GET_ATTACH_COOKIE_TRACE),
        _ => find(KPROBE_PROG, func).or_else(|| tracing(func, p)),
    }
}

fn raw_tp(func: u32, p: &CallerProg) -> Proto {
    find(RAW_TP_PROG, func).or_else(|| tracing(func, p))
}

/// `tracing_prog_func_proto`: fentry/fexit/tp_btf/iter (and the tail of
/// LSM and syscall programs).
fn tracing_prog(func: u32, p: &CallerProg) -> Proto {
    let iter = eat(p) == At::TRACE_ITER;
    let tramp = has_trampoline(p);
    match func {
        id::SEQ_PRINTF => iter.then_some(&BPF_SEQ_PRINTF),
        id::SEQ_WRITE => iter.then_some(&BPF_SEQ_WRITE),
        id::SEQ_PRINTF_BTF => iter.then_some(&BPF_SEQ_PRINTF_BTF),
        id::GET_FUNC_ARG => tramp.then_some(&BPF_GET_FUNC_ARG),
        id::GET_FUNC_RET => tramp.then_some(&BPF_GET_FUNC_RET),
        id::GET_FUNC_ARG_CNT => tramp.then_some(&BPF_GET_FUNC_ARG_CNT),
        id::GET_ATTACH_COOKIE => {
            let raw_tp = p.prog_type == Pt::TRACING && eat(p) == At::TRACE_RAW_TP;
            (raw_tp || tramp).then_some(&BPF_GET_ATTACH_COOKIE_TRACING)
        }
        // The tcp and unix iterator targets add the socket option helpers.
        id::SETSOCKOPT if iter && p.iter_sockopt => raw_tp(func, p).or(Some(&BPF_SK_SETSOCKOPT)),
        id::GETSOCKOPT if iter && p.iter_sockopt => raw_tp(func, p).or(Some(&BPF_SK_GETSOCKOPT)),
        _ => find(TRACING_PROG, func).or_else(|| raw_tp(func, p)),
    }
}

fn lsm(func: u32, p: &CallerProg) -> Proto {
    let cgroup = eat(p) == At::LSM_CGROUP;
    if cgroup {
        if let Some(f) = cgroup_common(func, p) {
            return Some(f);
        }
    }
    match func {
        id::GET_ATTACH_COOKIE => has_trampoline(p).then_some(&BPF_GET_ATTACH_COOKIE),
        // Which sockopt variant depends on the hook (attach BTF id); the
        // locked one is the common case.
        id::SETSOCKOPT => cgroup.then_some(&BPF_SK_SETSOCKOPT),
        id::GETSOCKOPT => cgroup.then_some(&BPF_SK_GETSOCKOPT),
        _ => find(LSM, func).or_else(|| tracing_prog(func, p)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: &[Table] = &[
        SOCK_FILTER,
        SOCK_ADDR,
        SK_FILTER,
        CG_SKB,
        TC_CLS_ACT,
        XDP,
        SOCK_OPS,
        SK_MSG,
        SK_SKB,
        FLOW_DISSECTOR,
        LWT_OUT,
        LWT_IN,
        LWT_XMIT,
        LWT_SEG6LOCAL,
        SK_REUSEPORT,
        SK_LOOKUP,
        SK_BASE_CAP_PERFMON,
        TRACING,
        KPROBE_PROG,
        TP_PROG,
        PE_PROG,
        RAW_TP_PROG,
        TRACING_PROG,
        CGROUP_DEV,
        SYSCTL,
        CG_SOCKOPT,
        CGROUP_CURRENT,
        BASE,
        BASE_CAP_BPF,
        BASE_CAP_PERFMON,
        SYSCALL_PROG,
        LSM,
        LIRC_MODE2,
    ];

    #[test]
    fn every_entry_maps_a_helper_to_one_of_its_own_prototypes() {
        for table in ALL {
            for (func, proto) in table.iter() {
                assert_eq!(*func, proto.id, "{}", proto.variant);
            }
        }
    }
}
