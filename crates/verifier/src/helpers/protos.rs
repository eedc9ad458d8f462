//! Every helper prototype of Linux 6.18, one static per kernel
//! `bpf_func_proto` variable (name = variable minus `_proto`). The data was
//! taken from the kernel's definitions (file named on each) and is checked
//! against the host kernel by tests/tables_helpers.rs.

use super::proto::{
    a, af, r, rf, AllowRule, ArgBase as AB, HelperProto, RetBase as RB, TypeFlags as F,
};

/// `bpf_sock_map_update` in net/core/sock_map.c.
pub static BPF_SOCK_MAP_UPDATE: HelperProto =
    HelperProto::new(53, "bpf_sock_map_update", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            a(AB::ConstMapPtr),
            a(AB::PtrToMapKey),
            a(AB::Anything),
        ])
        .pkt_access();

/// `bpf_sk_redirect_map` in net/core/sock_map.c.
pub static BPF_SK_REDIRECT_MAP: HelperProto =
    HelperProto::new(52, "bpf_sk_redirect_map", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::ConstMapPtr),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_msg_redirect_map` in net/core/sock_map.c.
pub static BPF_MSG_REDIRECT_MAP: HelperProto =
    HelperProto::new(60, "bpf_msg_redirect_map", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::ConstMapPtr),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_sock_hash_update` in net/core/sock_map.c.
pub static BPF_SOCK_HASH_UPDATE: HelperProto =
    HelperProto::new(70, "bpf_sock_hash_update", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            a(AB::ConstMapPtr),
            a(AB::PtrToMapKey),
            a(AB::Anything),
        ])
        .pkt_access();

/// `bpf_sk_redirect_hash` in net/core/sock_map.c.
pub static BPF_SK_REDIRECT_HASH: HelperProto =
    HelperProto::new(72, "bpf_sk_redirect_hash", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::ConstMapPtr),
        a(AB::PtrToMapKey),
        a(AB::Anything),
    ]);

/// `bpf_msg_redirect_hash` in net/core/sock_map.c.
pub static BPF_MSG_REDIRECT_HASH: HelperProto =
    HelperProto::new(71, "bpf_msg_redirect_hash", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::ConstMapPtr),
        a(AB::PtrToMapKey),
        a(AB::Anything),
    ]);

/// `bpf_skb_store_bytes` in net/core/filter.c.
pub static BPF_SKB_STORE_BYTES: HelperProto =
    HelperProto::new(9, "bpf_skb_store_bytes", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
        a(AB::Anything),
    ]);

/// `bpf_skb_load_bytes` in net/core/filter.c.
pub static BPF_SKB_LOAD_BYTES: HelperProto =
    HelperProto::new(26, "bpf_skb_load_bytes", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_flow_dissector_load_bytes` in net/core/filter.c.
pub static BPF_FLOW_DISSECTOR_LOAD_BYTES: HelperProto =
    HelperProto::new(26, "bpf_flow_dissector_load_bytes", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_skb_load_bytes_relative` in net/core/filter.c.
pub static BPF_SKB_LOAD_BYTES_RELATIVE: HelperProto =
    HelperProto::new(68, "bpf_skb_load_bytes_relative", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
        a(AB::Anything),
    ]);

/// `bpf_skb_pull_data` in net/core/filter.c.
pub static BPF_SKB_PULL_DATA: HelperProto =
    HelperProto::new(39, "bpf_skb_pull_data", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_sk_fullsock` in net/core/filter.c.
pub static BPF_SK_FULLSOCK: HelperProto =
    HelperProto::new(95, "bpf_sk_fullsock", rf(RB::PtrToSocket, F::MAYBE_NULL))
        .args(&[a(AB::PtrToSockCommon)]);

/// `sk_skb_pull_data` in net/core/filter.c.
pub static SK_SKB_PULL_DATA: HelperProto = HelperProto::new(39, "sk_skb_pull_data", r(RB::Integer))
    .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_l3_csum_replace` in net/core/filter.c.
pub static BPF_L3_CSUM_REPLACE: HelperProto =
    HelperProto::new(10, "bpf_l3_csum_replace", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_l4_csum_replace` in net/core/filter.c.
pub static BPF_L4_CSUM_REPLACE: HelperProto =
    HelperProto::new(11, "bpf_l4_csum_replace", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_csum_diff` in net/core/filter.c.
pub static BPF_CSUM_DIFF: HelperProto = HelperProto::new(28, "bpf_csum_diff", r(RB::Integer))
    .args(&[
        af(AB::PtrToMem, F::MAYBE_NULL.or(F::MEM_RDONLY)),
        a(AB::ConstSizeOrZero),
        af(AB::PtrToMem, F::MAYBE_NULL.or(F::MEM_RDONLY)),
        a(AB::ConstSizeOrZero),
        a(AB::Anything),
    ])
    .pkt_access();

/// `bpf_csum_update` in net/core/filter.c.
pub static BPF_CSUM_UPDATE: HelperProto = HelperProto::new(40, "bpf_csum_update", r(RB::Integer))
    .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_csum_level` in net/core/filter.c.
pub static BPF_CSUM_LEVEL: HelperProto = HelperProto::new(135, "bpf_csum_level", r(RB::Integer))
    .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_clone_redirect` in net/core/filter.c.
pub static BPF_CLONE_REDIRECT: HelperProto =
    HelperProto::new(13, "bpf_clone_redirect", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_redirect` in net/core/filter.c.
pub static BPF_REDIRECT: HelperProto =
    HelperProto::new(23, "bpf_redirect", r(RB::Integer)).args(&[a(AB::Anything), a(AB::Anything)]);

/// `bpf_redirect_peer` in net/core/filter.c.
pub static BPF_REDIRECT_PEER: HelperProto =
    HelperProto::new(155, "bpf_redirect_peer", r(RB::Integer))
        .args(&[a(AB::Anything), a(AB::Anything)]);

/// `bpf_redirect_neigh` in net/core/filter.c.
pub static BPF_REDIRECT_NEIGH: HelperProto =
    HelperProto::new(152, "bpf_redirect_neigh", r(RB::Integer)).args(&[
        a(AB::Anything),
        af(AB::PtrToMem, F::MAYBE_NULL.or(F::MEM_RDONLY)),
        a(AB::ConstSizeOrZero),
        a(AB::Anything),
    ]);

/// `bpf_msg_apply_bytes` in net/core/filter.c.
pub static BPF_MSG_APPLY_BYTES: HelperProto =
    HelperProto::new(61, "bpf_msg_apply_bytes", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_msg_cork_bytes` in net/core/filter.c.
pub static BPF_MSG_CORK_BYTES: HelperProto =
    HelperProto::new(62, "bpf_msg_cork_bytes", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_msg_pull_data` in net/core/filter.c.
pub static BPF_MSG_PULL_DATA: HelperProto =
    HelperProto::new(63, "bpf_msg_pull_data", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_msg_push_data` in net/core/filter.c.
pub static BPF_MSG_PUSH_DATA: HelperProto =
    HelperProto::new(90, "bpf_msg_push_data", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_msg_pop_data` in net/core/filter.c.
pub static BPF_MSG_POP_DATA: HelperProto = HelperProto::new(91, "bpf_msg_pop_data", r(RB::Integer))
    .args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_get_cgroup_classid_curr` in net/core/filter.c.
pub static BPF_GET_CGROUP_CLASSID_CURR: HelperProto =
    HelperProto::new(17, "bpf_get_cgroup_classid_curr", r(RB::Integer));

/// `bpf_skb_cgroup_classid` in net/core/filter.c.
pub static BPF_SKB_CGROUP_CLASSID: HelperProto =
    HelperProto::new(151, "bpf_skb_cgroup_classid", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_get_cgroup_classid` in net/core/filter.c.
pub static BPF_GET_CGROUP_CLASSID: HelperProto =
    HelperProto::new(17, "bpf_get_cgroup_classid", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_get_route_realm` in net/core/filter.c.
pub static BPF_GET_ROUTE_REALM: HelperProto =
    HelperProto::new(24, "bpf_get_route_realm", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_get_hash_recalc` in net/core/filter.c.
pub static BPF_GET_HASH_RECALC: HelperProto =
    HelperProto::new(34, "bpf_get_hash_recalc", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_set_hash_invalid` in net/core/filter.c.
pub static BPF_SET_HASH_INVALID: HelperProto =
    HelperProto::new(41, "bpf_set_hash_invalid", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_set_hash` in net/core/filter.c.
pub static BPF_SET_HASH: HelperProto =
    HelperProto::new(48, "bpf_set_hash", r(RB::Integer)).args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_skb_vlan_push` in net/core/filter.c.
pub static BPF_SKB_VLAN_PUSH: HelperProto =
    HelperProto::new(18, "bpf_skb_vlan_push", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_skb_vlan_pop` in net/core/filter.c.
pub static BPF_SKB_VLAN_POP: HelperProto =
    HelperProto::new(19, "bpf_skb_vlan_pop", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_skb_change_proto` in net/core/filter.c.
pub static BPF_SKB_CHANGE: HelperProto =
    HelperProto::new(31, "bpf_skb_change_proto", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_skb_change_type` in net/core/filter.c.
pub static BPF_SKB_CHANGE_TYPE: HelperProto =
    HelperProto::new(32, "bpf_skb_change_type", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `sk_skb_adjust_room` in net/core/filter.c.
pub static SK_SKB_ADJUST_ROOM: HelperProto =
    HelperProto::new(50, "sk_skb_adjust_room", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_skb_adjust_room` in net/core/filter.c.
pub static BPF_SKB_ADJUST_ROOM: HelperProto =
    HelperProto::new(50, "bpf_skb_adjust_room", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_skb_change_tail` in net/core/filter.c.
pub static BPF_SKB_CHANGE_TAIL: HelperProto =
    HelperProto::new(38, "bpf_skb_change_tail", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `sk_skb_change_tail` in net/core/filter.c.
pub static SK_SKB_CHANGE_TAIL: HelperProto =
    HelperProto::new(38, "sk_skb_change_tail", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_skb_change_head` in net/core/filter.c.
pub static BPF_SKB_CHANGE_HEAD: HelperProto =
    HelperProto::new(43, "bpf_skb_change_head", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `sk_skb_change_head` in net/core/filter.c.
pub static SK_SKB_CHANGE_HEAD: HelperProto =
    HelperProto::new(43, "sk_skb_change_head", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_xdp_get_buff_len` in net/core/filter.c.
pub static BPF_XDP_GET_BUFF_LEN: HelperProto =
    HelperProto::new(188, "bpf_xdp_get_buff_len", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_xdp_get_buff_len` in net/core/filter.c.
pub static BPF_XDP_GET_BUFF_LEN_TRACE: HelperProto =
    HelperProto::new(188, "bpf_xdp_get_buff_len_trace", r(RB::Integer))
        .args(&[a(AB::PtrToBtfId)])
        .arg_btf(0, "xdp_buff");

/// `bpf_xdp_adjust_head` in net/core/filter.c.
pub static BPF_XDP_ADJUST_HEAD: HelperProto =
    HelperProto::new(44, "bpf_xdp_adjust_head", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_xdp_load_bytes` in net/core/filter.c.
pub static BPF_XDP_LOAD_BYTES: HelperProto =
    HelperProto::new(189, "bpf_xdp_load_bytes", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_xdp_store_bytes` in net/core/filter.c.
pub static BPF_XDP_STORE_BYTES: HelperProto =
    HelperProto::new(190, "bpf_xdp_store_bytes", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ]);

/// `bpf_xdp_adjust_tail` in net/core/filter.c.
pub static BPF_XDP_ADJUST_TAIL: HelperProto =
    HelperProto::new(65, "bpf_xdp_adjust_tail", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_xdp_adjust_meta` in net/core/filter.c.
pub static BPF_XDP_ADJUST_META: HelperProto =
    HelperProto::new(54, "bpf_xdp_adjust_meta", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_xdp_redirect` in net/core/filter.c.
pub static BPF_XDP_REDIRECT: HelperProto = HelperProto::new(23, "bpf_xdp_redirect", r(RB::Integer))
    .args(&[a(AB::Anything), a(AB::Anything)]);

/// `bpf_xdp_redirect_map` in net/core/filter.c.
pub static BPF_XDP_REDIRECT_MAP: HelperProto =
    HelperProto::new(51, "bpf_xdp_redirect_map", r(RB::Integer)).args(&[
        a(AB::ConstMapPtr),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_skb_event_output` in net/core/filter.c.
pub static BPF_SKB_EVENT_OUTPUT: HelperProto =
    HelperProto::new(25, "bpf_skb_event_output", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            a(AB::ConstMapPtr),
            a(AB::Anything),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
        ])
        .gpl_only();

/// `bpf_skb_event_output` in net/core/filter.c.
pub static BPF_SKB_OUTPUT: HelperProto = HelperProto::new(111, "bpf_skb_output", r(RB::Integer))
    .args(&[
        a(AB::PtrToBtfId),
        a(AB::ConstMapPtr),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSizeOrZero),
    ])
    .arg_btf(0, "sk_buff")
    .gpl_only();

/// `bpf_skb_get_tunnel_key` in net/core/filter.c.
pub static BPF_SKB_GET_TUNNEL_KEY: HelperProto =
    HelperProto::new(20, "bpf_skb_get_tunnel_key", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
        a(AB::Anything),
    ]);

/// `bpf_skb_get_tunnel_opt` in net/core/filter.c.
pub static BPF_SKB_GET_TUNNEL_OPT: HelperProto =
    HelperProto::new(29, "bpf_skb_get_tunnel_opt", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_skb_set_tunnel_key` in net/core/filter.c.
pub static BPF_SKB_SET_TUNNEL_KEY: HelperProto =
    HelperProto::new(21, "bpf_skb_set_tunnel_key", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
        a(AB::Anything),
    ]);

/// `bpf_skb_set_tunnel_opt` in net/core/filter.c.
pub static BPF_SKB_SET_TUNNEL_OPT: HelperProto =
    HelperProto::new(30, "bpf_skb_set_tunnel_opt", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ]);

/// `bpf_skb_under_cgroup` in net/core/filter.c.
pub static BPF_SKB_UNDER_CGROUP: HelperProto =
    HelperProto::new(33, "bpf_skb_under_cgroup", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::ConstMapPtr),
        a(AB::Anything),
    ]);

/// `bpf_skb_cgroup_id` in net/core/filter.c.
pub static BPF_SKB_CGROUP_ID: HelperProto =
    HelperProto::new(79, "bpf_skb_cgroup_id", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_skb_ancestor_cgroup_id` in net/core/filter.c.
pub static BPF_SKB_ANCESTOR_CGROUP_ID: HelperProto =
    HelperProto::new(83, "bpf_skb_ancestor_cgroup_id", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_sk_cgroup_id` in net/core/filter.c.
pub static BPF_SK_CGROUP_ID: HelperProto =
    HelperProto::new(128, "bpf_sk_cgroup_id", r(RB::Integer)).args(&[a(AB::PtrToBtfIdSockCommon)]);

/// `bpf_sk_ancestor_cgroup_id` in net/core/filter.c.
pub static BPF_SK_ANCESTOR_CGROUP_ID: HelperProto =
    HelperProto::new(129, "bpf_sk_ancestor_cgroup_id", r(RB::Integer))
        .args(&[a(AB::PtrToBtfIdSockCommon), a(AB::Anything)]);

/// `bpf_xdp_event_output` in net/core/filter.c.
pub static BPF_XDP_EVENT_OUTPUT: HelperProto =
    HelperProto::new(25, "bpf_xdp_event_output", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            a(AB::ConstMapPtr),
            a(AB::Anything),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
        ])
        .gpl_only();

/// `bpf_xdp_event_output` in net/core/filter.c.
pub static BPF_XDP_OUTPUT: HelperProto = HelperProto::new(121, "bpf_xdp_output", r(RB::Integer))
    .args(&[
        a(AB::PtrToBtfId),
        a(AB::ConstMapPtr),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSizeOrZero),
    ])
    .arg_btf(0, "xdp_buff")
    .gpl_only();

/// `bpf_get_socket_cookie` in net/core/filter.c.
pub static BPF_GET_SOCKET_COOKIE: HelperProto =
    HelperProto::new(46, "bpf_get_socket_cookie", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_get_socket_cookie_sock_addr` in net/core/filter.c.
pub static BPF_GET_SOCKET_COOKIE_SOCK_ADDR: HelperProto =
    HelperProto::new(46, "bpf_get_socket_cookie_sock_addr", r(RB::Integer))
        .args(&[a(AB::PtrToCtx)]);

/// `bpf_get_socket_cookie_sock` in net/core/filter.c.
pub static BPF_GET_SOCKET_COOKIE_SOCK: HelperProto =
    HelperProto::new(46, "bpf_get_socket_cookie_sock", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_get_socket_ptr_cookie` in net/core/filter.c.
pub static BPF_GET_SOCKET_PTR_COOKIE: HelperProto =
    HelperProto::new(46, "bpf_get_socket_ptr_cookie", r(RB::Integer))
        .args(&[af(AB::PtrToBtfIdSockCommon, F::MAYBE_NULL)]);

/// `bpf_get_socket_cookie_sock_ops` in net/core/filter.c.
pub static BPF_GET_SOCKET_COOKIE_SOCK_OPS: HelperProto =
    HelperProto::new(46, "bpf_get_socket_cookie_sock_ops", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_get_netns_cookie_sock` in net/core/filter.c.
pub static BPF_GET_NETNS_COOKIE_SOCK: HelperProto =
    HelperProto::new(122, "bpf_get_netns_cookie_sock", r(RB::Integer))
        .args(&[af(AB::PtrToCtx, F::MAYBE_NULL)]);

/// `bpf_get_netns_cookie_sock_addr` in net/core/filter.c.
pub static BPF_GET_NETNS_COOKIE_SOCK_ADDR: HelperProto =
    HelperProto::new(122, "bpf_get_netns_cookie_sock_addr", r(RB::Integer))
        .args(&[af(AB::PtrToCtx, F::MAYBE_NULL)]);

/// `bpf_get_netns_cookie_sock_ops` in net/core/filter.c.
pub static BPF_GET_NETNS_COOKIE_SOCK_OPS: HelperProto =
    HelperProto::new(122, "bpf_get_netns_cookie_sock_ops", r(RB::Integer))
        .args(&[af(AB::PtrToCtx, F::MAYBE_NULL)]);

/// `bpf_get_netns_cookie_sk_msg` in net/core/filter.c.
pub static BPF_GET_NETNS_COOKIE_SK_MSG: HelperProto =
    HelperProto::new(122, "bpf_get_netns_cookie_sk_msg", r(RB::Integer))
        .args(&[af(AB::PtrToCtx, F::MAYBE_NULL)]);

/// `bpf_get_socket_uid` in net/core/filter.c.
pub static BPF_GET_SOCKET_UID: HelperProto =
    HelperProto::new(47, "bpf_get_socket_uid", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_sk_setsockopt` in net/core/filter.c.
pub static BPF_SK_SETSOCKOPT: HelperProto =
    HelperProto::new(49, "bpf_sk_setsockopt", r(RB::Integer)).args(&[
        a(AB::PtrToBtfIdSockCommon),
        a(AB::Anything),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ]);

/// `bpf_sk_getsockopt` in net/core/filter.c.
pub static BPF_SK_GETSOCKOPT: HelperProto =
    HelperProto::new(57, "bpf_sk_getsockopt", r(RB::Integer)).args(&[
        a(AB::PtrToBtfIdSockCommon),
        a(AB::Anything),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_unlocked_sk_setsockopt` in net/core/filter.c.
pub static BPF_UNLOCKED_SK_SETSOCKOPT: HelperProto =
    HelperProto::new(49, "bpf_unlocked_sk_setsockopt", r(RB::Integer)).args(&[
        a(AB::PtrToBtfIdSockCommon),
        a(AB::Anything),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ]);

/// `bpf_unlocked_sk_getsockopt` in net/core/filter.c.
pub static BPF_UNLOCKED_SK_GETSOCKOPT: HelperProto =
    HelperProto::new(57, "bpf_unlocked_sk_getsockopt", r(RB::Integer)).args(&[
        a(AB::PtrToBtfIdSockCommon),
        a(AB::Anything),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_sock_addr_setsockopt` in net/core/filter.c.
pub static BPF_SOCK_ADDR_SETSOCKOPT: HelperProto =
    HelperProto::new(49, "bpf_sock_addr_setsockopt", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ]);

/// `bpf_sock_addr_getsockopt` in net/core/filter.c.
pub static BPF_SOCK_ADDR_GETSOCKOPT: HelperProto =
    HelperProto::new(57, "bpf_sock_addr_getsockopt", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_sock_ops_setsockopt` in net/core/filter.c.
pub static BPF_SOCK_OPS_SETSOCKOPT: HelperProto =
    HelperProto::new(49, "bpf_sock_ops_setsockopt", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ]);

/// `bpf_sock_ops_getsockopt` in net/core/filter.c.
pub static BPF_SOCK_OPS_GETSOCKOPT: HelperProto =
    HelperProto::new(57, "bpf_sock_ops_getsockopt", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_sock_ops_cb_flags_set` in net/core/filter.c.
pub static BPF_SOCK_OPS_CB_FLAGS_SET: HelperProto =
    HelperProto::new(59, "bpf_sock_ops_cb_flags_set", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::Anything)]);

/// `bpf_bind` in net/core/filter.c.
pub static BPF_BIND: HelperProto = HelperProto::new(64, "bpf_bind", r(RB::Integer)).args(&[
    a(AB::PtrToCtx),
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSize),
]);

/// `bpf_skb_get_xfrm_state` in net/core/filter.c.
pub static BPF_SKB_GET_XFRM_STATE: HelperProto =
    HelperProto::new(66, "bpf_skb_get_xfrm_state", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
        a(AB::Anything),
    ]);

/// `bpf_xdp_fib_lookup` in net/core/filter.c.
pub static BPF_XDP_FIB_LOOKUP: HelperProto =
    HelperProto::new(69, "bpf_xdp_fib_lookup", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            af(AB::PtrToMem, F::MEM_WRITE),
            a(AB::ConstSize),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_skb_fib_lookup` in net/core/filter.c.
pub static BPF_SKB_FIB_LOOKUP: HelperProto =
    HelperProto::new(69, "bpf_skb_fib_lookup", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            af(AB::PtrToMem, F::MEM_WRITE),
            a(AB::ConstSize),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_skb_check_mtu` in net/core/filter.c.
pub static BPF_SKB_CHECK_MTU: HelperProto =
    HelperProto::new(163, "bpf_skb_check_mtu", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            a(AB::Anything),
            af(
                AB::PtrToMem,
                F::MEM_FIXED_SIZE.or(F::MEM_WRITE).or(F::MEM_ALIGNED),
            ),
            a(AB::Anything),
            a(AB::Anything),
        ])
        .arg_size(2, 4)
        .gpl_only();

/// `bpf_xdp_check_mtu` in net/core/filter.c.
pub static BPF_XDP_CHECK_MTU: HelperProto =
    HelperProto::new(163, "bpf_xdp_check_mtu", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            a(AB::Anything),
            af(
                AB::PtrToMem,
                F::MEM_FIXED_SIZE.or(F::MEM_WRITE).or(F::MEM_ALIGNED),
            ),
            a(AB::Anything),
            a(AB::Anything),
        ])
        .arg_size(2, 4)
        .gpl_only();

/// `bpf_lwt_in_push_encap` in net/core/filter.c.
pub static BPF_LWT_IN_PUSH_ENCAP: HelperProto =
    HelperProto::new(73, "bpf_lwt_in_push_encap", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ]);

/// `bpf_lwt_xmit_push_encap` in net/core/filter.c.
pub static BPF_LWT_XMIT_PUSH_ENCAP: HelperProto =
    HelperProto::new(73, "bpf_lwt_xmit_push_encap", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ]);

/// `bpf_lwt_seg6_store_bytes` in net/core/filter.c.
pub static BPF_LWT_SEG6_STORE_BYTES: HelperProto =
    HelperProto::new(74, "bpf_lwt_seg6_store_bytes", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ]);

/// `bpf_lwt_seg6_action` in net/core/filter.c.
pub static BPF_LWT_SEG6_ACTION: HelperProto =
    HelperProto::new(76, "bpf_lwt_seg6_action", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ]);

/// `bpf_lwt_seg6_adjust_srh` in net/core/filter.c.
pub static BPF_LWT_SEG6_ADJUST_SRH: HelperProto =
    HelperProto::new(75, "bpf_lwt_seg6_adjust_srh", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_skc_lookup_tcp` in net/core/filter.c.
pub static BPF_SKC_LOOKUP_TCP: HelperProto = HelperProto::new(
    99,
    "bpf_skc_lookup_tcp",
    rf(RB::PtrToSockCommon, F::MAYBE_NULL),
)
.args(&[
    a(AB::PtrToCtx),
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSizeOrZero),
    a(AB::Anything),
    a(AB::Anything),
])
.pkt_access();

/// `bpf_sk_lookup_tcp` in net/core/filter.c.
pub static BPF_SK_LOOKUP_TCP: HelperProto =
    HelperProto::new(84, "bpf_sk_lookup_tcp", rf(RB::PtrToSocket, F::MAYBE_NULL))
        .args(&[
            a(AB::PtrToCtx),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
            a(AB::Anything),
        ])
        .pkt_access();

/// `bpf_sk_lookup_udp` in net/core/filter.c.
pub static BPF_SK_LOOKUP_UDP: HelperProto =
    HelperProto::new(85, "bpf_sk_lookup_udp", rf(RB::PtrToSocket, F::MAYBE_NULL))
        .args(&[
            a(AB::PtrToCtx),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
            a(AB::Anything),
        ])
        .pkt_access();

/// `bpf_tc_skc_lookup_tcp` in net/core/filter.c.
pub static BPF_TC_SKC_LOOKUP_TCP: HelperProto = HelperProto::new(
    99,
    "bpf_tc_skc_lookup_tcp",
    rf(RB::PtrToSockCommon, F::MAYBE_NULL),
)
.args(&[
    a(AB::PtrToCtx),
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSizeOrZero),
    a(AB::Anything),
    a(AB::Anything),
])
.pkt_access();

/// `bpf_tc_sk_lookup_tcp` in net/core/filter.c.
pub static BPF_TC_SK_LOOKUP_TCP: HelperProto = HelperProto::new(
    84,
    "bpf_tc_sk_lookup_tcp",
    rf(RB::PtrToSocket, F::MAYBE_NULL),
)
.args(&[
    a(AB::PtrToCtx),
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSizeOrZero),
    a(AB::Anything),
    a(AB::Anything),
])
.pkt_access();

/// `bpf_tc_sk_lookup_udp` in net/core/filter.c.
pub static BPF_TC_SK_LOOKUP_UDP: HelperProto = HelperProto::new(
    85,
    "bpf_tc_sk_lookup_udp",
    rf(RB::PtrToSocket, F::MAYBE_NULL),
)
.args(&[
    a(AB::PtrToCtx),
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSizeOrZero),
    a(AB::Anything),
    a(AB::Anything),
])
.pkt_access();

/// `bpf_sk_release` in net/core/filter.c.
pub static BPF_SK_RELEASE: HelperProto = HelperProto::new(86, "bpf_sk_release", r(RB::Integer))
    .args(&[af(AB::PtrToBtfIdSockCommon, F::OBJ_RELEASE)]);

/// `bpf_xdp_sk_lookup_udp` in net/core/filter.c.
pub static BPF_XDP_SK_LOOKUP_UDP: HelperProto = HelperProto::new(
    85,
    "bpf_xdp_sk_lookup_udp",
    rf(RB::PtrToSocket, F::MAYBE_NULL),
)
.args(&[
    a(AB::PtrToCtx),
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSizeOrZero),
    a(AB::Anything),
    a(AB::Anything),
])
.pkt_access();

/// `bpf_xdp_skc_lookup_tcp` in net/core/filter.c.
pub static BPF_XDP_SKC_LOOKUP_TCP: HelperProto = HelperProto::new(
    99,
    "bpf_xdp_skc_lookup_tcp",
    rf(RB::PtrToSockCommon, F::MAYBE_NULL),
)
.args(&[
    a(AB::PtrToCtx),
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSizeOrZero),
    a(AB::Anything),
    a(AB::Anything),
])
.pkt_access();

/// `bpf_xdp_sk_lookup_tcp` in net/core/filter.c.
pub static BPF_XDP_SK_LOOKUP_TCP: HelperProto = HelperProto::new(
    84,
    "bpf_xdp_sk_lookup_tcp",
    rf(RB::PtrToSocket, F::MAYBE_NULL),
)
.args(&[
    a(AB::PtrToCtx),
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSizeOrZero),
    a(AB::Anything),
    a(AB::Anything),
])
.pkt_access();

/// `bpf_sock_addr_skc_lookup_tcp` in net/core/filter.c.
pub static BPF_SOCK_ADDR_SKC_LOOKUP_TCP: HelperProto = HelperProto::new(
    99,
    "bpf_sock_addr_skc_lookup_tcp",
    rf(RB::PtrToSockCommon, F::MAYBE_NULL),
)
.args(&[
    a(AB::PtrToCtx),
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSizeOrZero),
    a(AB::Anything),
    a(AB::Anything),
]);

/// `bpf_sock_addr_sk_lookup_tcp` in net/core/filter.c.
pub static BPF_SOCK_ADDR_SK_LOOKUP_TCP: HelperProto = HelperProto::new(
    84,
    "bpf_sock_addr_sk_lookup_tcp",
    rf(RB::PtrToSocket, F::MAYBE_NULL),
)
.args(&[
    a(AB::PtrToCtx),
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSizeOrZero),
    a(AB::Anything),
    a(AB::Anything),
]);

/// `bpf_sock_addr_sk_lookup_udp` in net/core/filter.c.
pub static BPF_SOCK_ADDR_SK_LOOKUP_UDP: HelperProto = HelperProto::new(
    85,
    "bpf_sock_addr_sk_lookup_udp",
    rf(RB::PtrToSocket, F::MAYBE_NULL),
)
.args(&[
    a(AB::PtrToCtx),
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSizeOrZero),
    a(AB::Anything),
    a(AB::Anything),
]);

/// `bpf_tcp_sock` in net/core/filter.c.
pub static BPF_TCP_SOCK: HelperProto =
    HelperProto::new(96, "bpf_tcp_sock", rf(RB::PtrToTcpSock, F::MAYBE_NULL))
        .args(&[a(AB::PtrToSockCommon)]);

/// `bpf_get_listener_sock` in net/core/filter.c.
pub static BPF_GET_LISTENER_SOCK: HelperProto = HelperProto::new(
    98,
    "bpf_get_listener_sock",
    rf(RB::PtrToSocket, F::MAYBE_NULL),
)
.args(&[a(AB::PtrToSockCommon)]);

/// `bpf_skb_ecn_set_ce` in net/core/filter.c.
pub static BPF_SKB_ECN_SET_CE: HelperProto =
    HelperProto::new(97, "bpf_skb_ecn_set_ce", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_tcp_check_syncookie` in net/core/filter.c.
pub static BPF_TCP_CHECK_SYNCOOKIE: HelperProto =
    HelperProto::new(100, "bpf_tcp_check_syncookie", r(RB::Integer))
        .args(&[
            a(AB::PtrToBtfIdSockCommon),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSize),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSize),
        ])
        .gpl_only()
        .pkt_access();

/// `bpf_tcp_gen_syncookie` in net/core/filter.c.
pub static BPF_TCP_GEN_SYNCOOKIE: HelperProto =
    HelperProto::new(110, "bpf_tcp_gen_syncookie", r(RB::Integer))
        .args(&[
            a(AB::PtrToBtfIdSockCommon),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSize),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSize),
        ])
        .gpl_only()
        .pkt_access();

/// `bpf_sk_assign` in net/core/filter.c.
pub static BPF_SK_ASSIGN: HelperProto = HelperProto::new(124, "bpf_sk_assign", r(RB::Integer))
    .args(&[
        a(AB::PtrToCtx),
        a(AB::PtrToBtfIdSockCommon),
        a(AB::Anything),
    ]);

/// `bpf_sock_ops_load_hdr_opt` in net/core/filter.c.
pub static BPF_SOCK_OPS_LOAD_HDR_OPT: HelperProto =
    HelperProto::new(142, "bpf_sock_ops_load_hdr_opt", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToMem, F::MEM_WRITE),
        a(AB::ConstSize),
        a(AB::Anything),
    ]);

/// `bpf_sock_ops_store_hdr_opt` in net/core/filter.c.
pub static BPF_SOCK_OPS_STORE_HDR_OPT: HelperProto =
    HelperProto::new(143, "bpf_sock_ops_store_hdr_opt", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
        a(AB::Anything),
    ]);

/// `bpf_sock_ops_reserve_hdr_opt` in net/core/filter.c.
pub static BPF_SOCK_OPS_RESERVE_HDR_OPT: HelperProto =
    HelperProto::new(144, "bpf_sock_ops_reserve_hdr_opt", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_skb_set_tstamp` in net/core/filter.c.
pub static BPF_SKB_SET_TSTAMP: HelperProto =
    HelperProto::new(192, "bpf_skb_set_tstamp", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_tcp_raw_gen_syncookie_ipv4` in net/core/filter.c.
pub static BPF_TCP_RAW_GEN_SYNCOOKIE_IPV4: HelperProto =
    HelperProto::new(204, "bpf_tcp_raw_gen_syncookie_ipv4", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_FIXED_SIZE.or(F::MEM_RDONLY)),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
        ])
        .arg_size(0, 20)
        .gpl_only()
        .pkt_access();

/// `bpf_tcp_raw_gen_syncookie_ipv6` in net/core/filter.c.
pub static BPF_TCP_RAW_GEN_SYNCOOKIE_IPV6: HelperProto =
    HelperProto::new(205, "bpf_tcp_raw_gen_syncookie_ipv6", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_FIXED_SIZE.or(F::MEM_RDONLY)),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
        ])
        .arg_size(0, 40)
        .gpl_only()
        .pkt_access();

/// `bpf_tcp_raw_check_syncookie_ipv4` in net/core/filter.c.
pub static BPF_TCP_RAW_CHECK_SYNCOOKIE_IPV4: HelperProto =
    HelperProto::new(206, "bpf_tcp_raw_check_syncookie_ipv4", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_FIXED_SIZE.or(F::MEM_RDONLY)),
            af(AB::PtrToMem, F::MEM_FIXED_SIZE.or(F::MEM_RDONLY)),
        ])
        .arg_size(0, 20)
        .arg_size(1, 20)
        .gpl_only()
        .pkt_access();

/// `bpf_tcp_raw_check_syncookie_ipv6` in net/core/filter.c.
pub static BPF_TCP_RAW_CHECK_SYNCOOKIE_IPV6: HelperProto =
    HelperProto::new(207, "bpf_tcp_raw_check_syncookie_ipv6", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_FIXED_SIZE.or(F::MEM_RDONLY)),
            af(AB::PtrToMem, F::MEM_FIXED_SIZE.or(F::MEM_RDONLY)),
        ])
        .arg_size(0, 40)
        .arg_size(1, 20)
        .gpl_only()
        .pkt_access();

/// `sk_select_reuseport` in net/core/filter.c.
pub static SK_SELECT_REUSEPORT: HelperProto =
    HelperProto::new(82, "sk_select_reuseport", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::ConstMapPtr),
        a(AB::PtrToMapKey),
        a(AB::Anything),
    ]);

/// `sk_reuseport_load_bytes` in net/core/filter.c.
pub static SK_REUSEPORT_LOAD_BYTES: HelperProto =
    HelperProto::new(26, "sk_reuseport_load_bytes", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `sk_reuseport_load_bytes_relative` in net/core/filter.c.
pub static SK_REUSEPORT_LOAD_BYTES_RELATIVE: HelperProto =
    HelperProto::new(68, "sk_reuseport_load_bytes_relative", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
        a(AB::Anything),
    ]);

/// `bpf_sk_lookup_assign` in net/core/filter.c.
pub static BPF_SK_LOOKUP_ASSIGN: HelperProto =
    HelperProto::new(124, "bpf_sk_lookup_assign", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToSocket, F::MAYBE_NULL),
        a(AB::Anything),
    ]);

/// `bpf_skc_to_tcp6_sock` in net/core/filter.c.
pub static BPF_SKC_TO_TCP6_SOCK: HelperProto = HelperProto::new(
    136,
    "bpf_skc_to_tcp6_sock",
    rf(RB::PtrToBtfId, F::MAYBE_NULL),
)
.args(&[a(AB::PtrToBtfIdSockCommon)])
.ret_btf("tcp6_sock");

/// `bpf_skc_to_tcp_sock` in net/core/filter.c.
pub static BPF_SKC_TO_TCP_SOCK: HelperProto = HelperProto::new(
    137,
    "bpf_skc_to_tcp_sock",
    rf(RB::PtrToBtfId, F::MAYBE_NULL),
)
.args(&[a(AB::PtrToBtfIdSockCommon)])
.ret_btf("tcp_sock");

/// `bpf_skc_to_tcp_timewait_sock` in net/core/filter.c.
pub static BPF_SKC_TO_TCP_TIMEWAIT_SOCK: HelperProto = HelperProto::new(
    138,
    "bpf_skc_to_tcp_timewait_sock",
    rf(RB::PtrToBtfId, F::MAYBE_NULL),
)
.args(&[a(AB::PtrToBtfIdSockCommon)])
.ret_btf("tcp_timewait_sock");

/// `bpf_skc_to_tcp_request_sock` in net/core/filter.c.
pub static BPF_SKC_TO_TCP_REQUEST_SOCK: HelperProto = HelperProto::new(
    139,
    "bpf_skc_to_tcp_request_sock",
    rf(RB::PtrToBtfId, F::MAYBE_NULL),
)
.args(&[a(AB::PtrToBtfIdSockCommon)])
.ret_btf("tcp_request_sock");

/// `bpf_skc_to_udp6_sock` in net/core/filter.c.
pub static BPF_SKC_TO_UDP6_SOCK: HelperProto = HelperProto::new(
    140,
    "bpf_skc_to_udp6_sock",
    rf(RB::PtrToBtfId, F::MAYBE_NULL),
)
.args(&[a(AB::PtrToBtfIdSockCommon)])
.ret_btf("udp6_sock");

/// `bpf_skc_to_unix_sock` in net/core/filter.c.
pub static BPF_SKC_TO_UNIX_SOCK: HelperProto = HelperProto::new(
    178,
    "bpf_skc_to_unix_sock",
    rf(RB::PtrToBtfId, F::MAYBE_NULL),
)
.args(&[a(AB::PtrToBtfIdSockCommon)])
.ret_btf("unix_sock");

/// `bpf_skc_to_mptcp_sock` in net/core/filter.c.
pub static BPF_SKC_TO_MPTCP_SOCK: HelperProto = HelperProto::new(
    196,
    "bpf_skc_to_mptcp_sock",
    rf(RB::PtrToBtfId, F::MAYBE_NULL),
)
.args(&[a(AB::PtrToSockCommon)])
.ret_btf("mptcp_sock");

/// `bpf_sock_from_file` in net/core/filter.c.
pub static BPF_SOCK_FROM_FILE: HelperProto =
    HelperProto::new(162, "bpf_sock_from_file", rf(RB::PtrToBtfId, F::MAYBE_NULL))
        .args(&[a(AB::PtrToBtfId)])
        .arg_btf(0, "file")
        .ret_btf("socket");

/// `bpf_sk_storage_get` in net/core/bpf_sk_storage.c.
pub static BPF_SK_STORAGE_GET: HelperProto = HelperProto::new(
    107,
    "bpf_sk_storage_get",
    rf(RB::PtrToMapValue, F::MAYBE_NULL),
)
.args(&[
    a(AB::ConstMapPtr),
    a(AB::PtrToBtfIdSockCommon),
    af(AB::PtrToMapValue, F::MAYBE_NULL),
    a(AB::Anything),
]);

/// `bpf_sk_storage_get` in net/core/bpf_sk_storage.c.
pub static BPF_SK_STORAGE_GET_CG_SOCK: HelperProto = HelperProto::new(
    107,
    "bpf_sk_storage_get_cg_sock",
    rf(RB::PtrToMapValue, F::MAYBE_NULL),
)
.args(&[
    a(AB::ConstMapPtr),
    a(AB::PtrToCtx),
    af(AB::PtrToMapValue, F::MAYBE_NULL),
    a(AB::Anything),
]);

/// `bpf_sk_storage_delete` in net/core/bpf_sk_storage.c.
pub static BPF_SK_STORAGE_DELETE: HelperProto =
    HelperProto::new(108, "bpf_sk_storage_delete", r(RB::Integer))
        .args(&[a(AB::ConstMapPtr), a(AB::PtrToBtfIdSockCommon)]);

/// `bpf_sk_storage_get_tracing` in net/core/bpf_sk_storage.c.
pub static BPF_SK_STORAGE_GET_TRACING: HelperProto = HelperProto::new(
    107,
    "bpf_sk_storage_get_tracing",
    rf(RB::PtrToMapValue, F::MAYBE_NULL),
)
.args(&[
    a(AB::ConstMapPtr),
    af(AB::PtrToBtfId, F::MAYBE_NULL),
    af(AB::PtrToMapValue, F::MAYBE_NULL),
    a(AB::Anything),
])
.arg_btf(1, "sock_common")
.allowed(AllowRule::SkStorageTracing);

/// `bpf_sk_storage_delete_tracing` in net/core/bpf_sk_storage.c.
pub static BPF_SK_STORAGE_DELETE_TRACING: HelperProto =
    HelperProto::new(108, "bpf_sk_storage_delete_tracing", r(RB::Integer))
        .args(&[a(AB::ConstMapPtr), af(AB::PtrToBtfId, F::MAYBE_NULL)])
        .arg_btf(1, "sock_common")
        .allowed(AllowRule::SkStorageTracing);

/// `bpf_tcp_send_ack` in net/ipv4/bpf_tcp_ca.c.
pub static BPF_TCP_SEND_ACK: HelperProto =
    HelperProto::new(116, "bpf_tcp_send_ack", r(RB::Integer))
        .args(&[a(AB::PtrToBtfId), a(AB::Anything)])
        .arg_btf(0, "tcp_sock");

/// `bpf_override_return` in kernel/trace/bpf_trace.c.
pub static BPF_OVERRIDE_RETURN: HelperProto =
    HelperProto::new(58, "bpf_override_return", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::Anything)])
        .gpl_only();

/// `bpf_probe_read_user` in kernel/trace/bpf_trace.c.
pub static BPF_PROBE_READ_USER: HelperProto =
    HelperProto::new(112, "bpf_probe_read_user", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_probe_read_user_str` in kernel/trace/bpf_trace.c.
pub static BPF_PROBE_READ_USER_STR: HelperProto =
    HelperProto::new(114, "bpf_probe_read_user_str", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_probe_read_kernel` in kernel/trace/bpf_trace.c.
pub static BPF_PROBE_READ_KERNEL: HelperProto =
    HelperProto::new(113, "bpf_probe_read_kernel", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_probe_read_kernel_str` in kernel/trace/bpf_trace.c.
pub static BPF_PROBE_READ_KERNEL_STR: HelperProto =
    HelperProto::new(115, "bpf_probe_read_kernel_str", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_probe_read_compat` in kernel/trace/bpf_trace.c.
pub static BPF_PROBE_READ_COMPAT: HelperProto =
    HelperProto::new(4, "bpf_probe_read_compat", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_probe_read_compat_str` in kernel/trace/bpf_trace.c.
pub static BPF_PROBE_READ_COMPAT_STR: HelperProto =
    HelperProto::new(45, "bpf_probe_read_compat_str", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_probe_write_user` in kernel/trace/bpf_trace.c.
pub static BPF_PROBE_WRITE_USER: HelperProto =
    HelperProto::new(36, "bpf_probe_write_user", r(RB::Integer))
        .args(&[
            a(AB::Anything),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSize),
        ])
        .gpl_only();

/// `bpf_trace_printk` in kernel/trace/bpf_trace.c.
pub static BPF_TRACE_PRINTK: HelperProto = HelperProto::new(6, "bpf_trace_printk", r(RB::Integer))
    .args(&[af(AB::PtrToMem, F::MEM_RDONLY), a(AB::ConstSize)])
    .gpl_only();

/// `bpf_trace_vprintk` in kernel/trace/bpf_trace.c.
pub static BPF_TRACE_VPRINTK: HelperProto =
    HelperProto::new(177, "bpf_trace_vprintk", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSize),
            af(AB::PtrToMem, F::MAYBE_NULL.or(F::MEM_RDONLY)),
            a(AB::ConstSizeOrZero),
        ])
        .gpl_only();

/// `bpf_seq_printf` in kernel/trace/bpf_trace.c.
pub static BPF_SEQ_PRINTF: HelperProto = HelperProto::new(126, "bpf_seq_printf", r(RB::Integer))
    .args(&[
        a(AB::PtrToBtfId),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
        af(AB::PtrToMem, F::MAYBE_NULL.or(F::MEM_RDONLY)),
        a(AB::ConstSizeOrZero),
    ])
    .arg_btf(0, "seq_file")
    .gpl_only();

/// `bpf_seq_write` in kernel/trace/bpf_trace.c.
pub static BPF_SEQ_WRITE: HelperProto = HelperProto::new(127, "bpf_seq_write", r(RB::Integer))
    .args(&[
        a(AB::PtrToBtfId),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSizeOrZero),
    ])
    .arg_btf(0, "seq_file")
    .gpl_only();

/// `bpf_seq_printf_btf` in kernel/trace/bpf_trace.c.
pub static BPF_SEQ_PRINTF_BTF: HelperProto =
    HelperProto::new(150, "bpf_seq_printf_btf", r(RB::Integer))
        .args(&[
            a(AB::PtrToBtfId),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .arg_btf(0, "seq_file")
        .gpl_only();

/// `bpf_perf_event_read` in kernel/trace/bpf_trace.c.
pub static BPF_PERF_EVENT_READ: HelperProto =
    HelperProto::new(22, "bpf_perf_event_read", r(RB::Integer))
        .args(&[a(AB::ConstMapPtr), a(AB::Anything)])
        .gpl_only();

/// `bpf_perf_event_read_value` in kernel/trace/bpf_trace.c.
pub static BPF_PERF_EVENT_READ_VALUE: HelperProto =
    HelperProto::new(55, "bpf_perf_event_read_value", r(RB::Integer))
        .args(&[
            a(AB::ConstMapPtr),
            a(AB::Anything),
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSize),
        ])
        .gpl_only();

/// `bpf_perf_event_output` in kernel/trace/bpf_trace.c.
pub static BPF_PERF_EVENT_OUTPUT: HelperProto =
    HelperProto::new(25, "bpf_perf_event_output", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            a(AB::ConstMapPtr),
            a(AB::Anything),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
        ])
        .gpl_only();

/// `bpf_get_current_task` in kernel/trace/bpf_trace.c.
pub static BPF_GET_CURRENT_TASK: HelperProto =
    HelperProto::new(35, "bpf_get_current_task", r(RB::Integer)).gpl_only();

/// `bpf_get_current_task_btf` in kernel/trace/bpf_trace.c.
pub static BPF_GET_CURRENT_TASK_BTF: HelperProto = HelperProto::new(
    158,
    "bpf_get_current_task_btf",
    rf(RB::PtrToBtfId, F::PTR_TRUSTED),
)
.ret_btf("task_struct")
.gpl_only();

/// `bpf_task_pt_regs` in kernel/trace/bpf_trace.c.
pub static BPF_TASK_PT_REGS: HelperProto =
    HelperProto::new(175, "bpf_task_pt_regs", r(RB::PtrToBtfId))
        .args(&[a(AB::PtrToBtfId)])
        .arg_btf(0, "task_struct")
        .ret_btf("pt_regs")
        .gpl_only();

/// `bpf_send_signal` in kernel/trace/bpf_trace.c.
pub static BPF_SEND_SIGNAL: HelperProto =
    HelperProto::new(109, "bpf_send_signal", r(RB::Integer)).args(&[a(AB::Anything)]);

/// `bpf_send_signal_thread` in kernel/trace/bpf_trace.c.
pub static BPF_SEND_SIGNAL_THREAD: HelperProto =
    HelperProto::new(117, "bpf_send_signal_thread", r(RB::Integer)).args(&[a(AB::Anything)]);

/// `bpf_d_path` in kernel/trace/bpf_trace.c.
pub static BPF_D_PATH: HelperProto = HelperProto::new(147, "bpf_d_path", r(RB::Integer))
    .args(&[
        a(AB::PtrToBtfId),
        af(AB::PtrToMem, F::MEM_WRITE),
        a(AB::ConstSizeOrZero),
    ])
    .arg_btf(0, "path")
    .allowed(AllowRule::DPath);

/// `bpf_snprintf_btf` in kernel/trace/bpf_trace.c.
pub static BPF_SNPRINTF_BTF: HelperProto =
    HelperProto::new(149, "bpf_snprintf_btf", r(RB::Integer)).args(&[
        af(AB::PtrToMem, F::MEM_WRITE),
        a(AB::ConstSize),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
        a(AB::Anything),
    ]);

/// `bpf_get_func_ip_tracing` in kernel/trace/bpf_trace.c.
pub static BPF_GET_FUNC_IP_TRACING: HelperProto =
    HelperProto::new(173, "bpf_get_func_ip_proto_tracing", r(RB::Integer))
        .args(&[a(AB::PtrToCtx)])
        .gpl_only();

/// `bpf_get_func_ip_kprobe` in kernel/trace/bpf_trace.c.
pub static BPF_GET_FUNC_IP_KPROBE: HelperProto =
    HelperProto::new(173, "bpf_get_func_ip_proto_kprobe", r(RB::Integer))
        .args(&[a(AB::PtrToCtx)])
        .gpl_only();

/// `bpf_get_func_ip_kprobe_multi` in kernel/trace/bpf_trace.c.
pub static BPF_GET_FUNC_IP_KPROBE_MULTI: HelperProto =
    HelperProto::new(173, "bpf_get_func_ip_proto_kprobe_multi", r(RB::Integer))
        .args(&[a(AB::PtrToCtx)]);

/// `bpf_get_attach_cookie_kprobe_multi` in kernel/trace/bpf_trace.c.
pub static BPF_GET_ATTACH_COOKIE_KMULTI: HelperProto =
    HelperProto::new(174, "bpf_get_attach_cookie_proto_kmulti", r(RB::Integer))
        .args(&[a(AB::PtrToCtx)]);

/// `bpf_get_func_ip_uprobe_multi` in kernel/trace/bpf_trace.c.
pub static BPF_GET_FUNC_IP_UPROBE_MULTI: HelperProto =
    HelperProto::new(173, "bpf_get_func_ip_proto_uprobe_multi", r(RB::Integer))
        .args(&[a(AB::PtrToCtx)]);

/// `bpf_get_attach_cookie_uprobe_multi` in kernel/trace/bpf_trace.c.
pub static BPF_GET_ATTACH_COOKIE_UMULTI: HelperProto =
    HelperProto::new(174, "bpf_get_attach_cookie_proto_umulti", r(RB::Integer))
        .args(&[a(AB::PtrToCtx)]);

/// `bpf_get_attach_cookie_trace` in kernel/trace/bpf_trace.c.
pub static BPF_GET_ATTACH_COOKIE_TRACE: HelperProto =
    HelperProto::new(174, "bpf_get_attach_cookie_proto_trace", r(RB::Integer))
        .args(&[a(AB::PtrToCtx)]);

/// `bpf_get_attach_cookie_pe` in kernel/trace/bpf_trace.c.
pub static BPF_GET_ATTACH_COOKIE_PE: HelperProto =
    HelperProto::new(174, "bpf_get_attach_cookie_proto_pe", r(RB::Integer))
        .args(&[a(AB::PtrToCtx)]);

/// `bpf_get_attach_cookie_tracing` in kernel/trace/bpf_trace.c.
pub static BPF_GET_ATTACH_COOKIE_TRACING: HelperProto =
    HelperProto::new(174, "bpf_get_attach_cookie_proto_tracing", r(RB::Integer))
        .args(&[a(AB::PtrToCtx)]);

/// `bpf_get_branch_snapshot` in kernel/trace/bpf_trace.c.
pub static BPF_GET_BRANCH_SNAPSHOT: HelperProto =
    HelperProto::new(176, "bpf_get_branch_snapshot", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
        ])
        .gpl_only();

/// `get_func_arg` in kernel/trace/bpf_trace.c.
pub static BPF_GET_FUNC_ARG: HelperProto =
    HelperProto::new(183, "bpf_get_func_arg", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            a(AB::Anything),
            af(
                AB::PtrToMem,
                F::MEM_FIXED_SIZE
                    .or(F::MEM_UNINIT)
                    .or(F::MEM_WRITE)
                    .or(F::MEM_ALIGNED),
            ),
        ])
        .arg_size(2, 8);

/// `get_func_ret` in kernel/trace/bpf_trace.c.
pub static BPF_GET_FUNC_RET: HelperProto =
    HelperProto::new(184, "bpf_get_func_ret", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            af(
                AB::PtrToMem,
                F::MEM_FIXED_SIZE
                    .or(F::MEM_UNINIT)
                    .or(F::MEM_WRITE)
                    .or(F::MEM_ALIGNED),
            ),
        ])
        .arg_size(1, 8);

/// `get_func_arg_cnt` in kernel/trace/bpf_trace.c.
pub static BPF_GET_FUNC_ARG_CNT: HelperProto =
    HelperProto::new(185, "bpf_get_func_arg_cnt", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_perf_event_output_tp` in kernel/trace/bpf_trace.c.
pub static BPF_PERF_EVENT_OUTPUT_TP: HelperProto =
    HelperProto::new(25, "bpf_perf_event_output_proto_tp", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            a(AB::ConstMapPtr),
            a(AB::Anything),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
        ])
        .gpl_only();

/// `bpf_get_stackid_tp` in kernel/trace/bpf_trace.c.
pub static BPF_GET_STACKID_TP: HelperProto =
    HelperProto::new(27, "bpf_get_stackid_proto_tp", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::ConstMapPtr), a(AB::Anything)])
        .gpl_only();

/// `bpf_get_stack_tp` in kernel/trace/bpf_trace.c.
pub static BPF_GET_STACK_TP: HelperProto =
    HelperProto::new(67, "bpf_get_stack_proto_tp", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_perf_prog_read_value` in kernel/trace/bpf_trace.c.
pub static BPF_PERF_PROG_READ_VALUE: HelperProto =
    HelperProto::new(56, "bpf_perf_prog_read_value", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSize),
        ])
        .gpl_only();

/// `bpf_read_branch_records` in kernel/trace/bpf_trace.c.
pub static BPF_READ_BRANCH_RECORDS: HelperProto =
    HelperProto::new(119, "bpf_read_branch_records", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            af(AB::PtrToMem, F::MAYBE_NULL.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_perf_event_output_raw_tp` in kernel/trace/bpf_trace.c.
pub static BPF_PERF_EVENT_OUTPUT_RAW_TP: HelperProto =
    HelperProto::new(25, "bpf_perf_event_output_proto_raw_tp", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            a(AB::ConstMapPtr),
            a(AB::Anything),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
        ])
        .gpl_only();

/// `bpf_get_stackid_raw_tp` in kernel/trace/bpf_trace.c.
pub static BPF_GET_STACKID_RAW_TP: HelperProto =
    HelperProto::new(27, "bpf_get_stackid_proto_raw_tp", r(RB::Integer))
        .args(&[a(AB::PtrToCtx), a(AB::ConstMapPtr), a(AB::Anything)])
        .gpl_only();

/// `bpf_get_stack_raw_tp` in kernel/trace/bpf_trace.c.
pub static BPF_GET_STACK_RAW_TP: HelperProto =
    HelperProto::new(67, "bpf_get_stack_proto_raw_tp", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_inode_storage_get` in kernel/bpf/bpf_inode_storage.c.
pub static BPF_INODE_STORAGE_GET: HelperProto = HelperProto::new(
    145,
    "bpf_inode_storage_get",
    rf(RB::PtrToMapValue, F::MAYBE_NULL),
)
.args(&[
    a(AB::ConstMapPtr),
    af(AB::PtrToBtfId, F::MAYBE_NULL),
    af(AB::PtrToMapValue, F::MAYBE_NULL),
    a(AB::Anything),
])
.arg_btf(1, "inode");

/// `bpf_inode_storage_delete` in kernel/bpf/bpf_inode_storage.c.
pub static BPF_INODE_STORAGE_DELETE: HelperProto =
    HelperProto::new(146, "bpf_inode_storage_delete", r(RB::Integer))
        .args(&[a(AB::ConstMapPtr), af(AB::PtrToBtfId, F::MAYBE_NULL)])
        .arg_btf(1, "inode");

/// `bpf_for_each_map_elem` in kernel/bpf/bpf_iter.c.
pub static BPF_FOR_EACH_MAP_ELEM: HelperProto =
    HelperProto::new(164, "bpf_for_each_map_elem", r(RB::Integer)).args(&[
        a(AB::ConstMapPtr),
        a(AB::PtrToFunc),
        af(AB::PtrToStack, F::MAYBE_NULL),
        a(AB::Anything),
    ]);

/// `bpf_loop` in kernel/bpf/bpf_iter.c.
pub static BPF_LOOP: HelperProto = HelperProto::new(181, "bpf_loop", r(RB::Integer)).args(&[
    a(AB::Anything),
    a(AB::PtrToFunc),
    af(AB::PtrToStack, F::MAYBE_NULL),
    a(AB::Anything),
]);

/// `bpf_get_stackid` in kernel/bpf/stackmap.c.
pub static BPF_GET_STACKID: HelperProto = HelperProto::new(27, "bpf_get_stackid", r(RB::Integer))
    .args(&[a(AB::PtrToCtx), a(AB::ConstMapPtr), a(AB::Anything)])
    .gpl_only();

/// `bpf_get_stackid_pe` in kernel/bpf/stackmap.c.
pub static BPF_GET_STACKID_PE: HelperProto =
    HelperProto::new(27, "bpf_get_stackid_proto_pe", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        a(AB::ConstMapPtr),
        a(AB::Anything),
    ]);

/// `bpf_get_stack` in kernel/bpf/stackmap.c.
pub static BPF_GET_STACK: HelperProto = HelperProto::new(67, "bpf_get_stack", r(RB::Integer))
    .args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSizeOrZero),
        a(AB::Anything),
    ])
    .gpl_only();

/// `bpf_get_stack_sleepable` in kernel/bpf/stackmap.c.
pub static BPF_GET_STACK_SLEEPABLE: HelperProto =
    HelperProto::new(67, "bpf_get_stack_sleepable", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .gpl_only()
        .might_sleep();

/// `bpf_get_task_stack` in kernel/bpf/stackmap.c.
pub static BPF_GET_TASK_STACK: HelperProto =
    HelperProto::new(141, "bpf_get_task_stack", r(RB::Integer))
        .args(&[
            a(AB::PtrToBtfId),
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .arg_btf(0, "task_struct");

/// `bpf_get_task_stack_sleepable` in kernel/bpf/stackmap.c.
pub static BPF_GET_TASK_STACK_SLEEPABLE: HelperProto =
    HelperProto::new(141, "bpf_get_task_stack_sleepable", r(RB::Integer))
        .args(&[
            a(AB::PtrToBtfId),
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .arg_btf(0, "task_struct")
        .might_sleep();

/// `bpf_get_stack_pe` in kernel/bpf/stackmap.c.
pub static BPF_GET_STACK_PE: HelperProto =
    HelperProto::new(67, "bpf_get_stack_proto_pe", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .gpl_only();

/// `bpf_cgrp_storage_get` in kernel/bpf/bpf_cgrp_storage.c.
pub static BPF_CGRP_STORAGE_GET: HelperProto = HelperProto::new(
    210,
    "bpf_cgrp_storage_get",
    rf(RB::PtrToMapValue, F::MAYBE_NULL),
)
.args(&[
    a(AB::ConstMapPtr),
    af(AB::PtrToBtfId, F::MAYBE_NULL),
    af(AB::PtrToMapValue, F::MAYBE_NULL),
    a(AB::Anything),
])
.arg_btf(1, "cgroup");

/// `bpf_cgrp_storage_delete` in kernel/bpf/bpf_cgrp_storage.c.
pub static BPF_CGRP_STORAGE_DELETE: HelperProto =
    HelperProto::new(211, "bpf_cgrp_storage_delete", r(RB::Integer))
        .args(&[a(AB::ConstMapPtr), af(AB::PtrToBtfId, F::MAYBE_NULL)])
        .arg_btf(1, "cgroup");

/// `bpf_ringbuf_reserve` in kernel/bpf/ringbuf.c.
pub static BPF_RINGBUF_RESERVE: HelperProto = HelperProto::new(
    131,
    "bpf_ringbuf_reserve",
    rf(RB::PtrToMem, F::MAYBE_NULL.or(F::MEM_RINGBUF)),
)
.args(&[
    a(AB::ConstMapPtr),
    a(AB::ConstAllocSizeOrZero),
    a(AB::Anything),
]);

/// `bpf_ringbuf_submit` in kernel/bpf/ringbuf.c.
pub static BPF_RINGBUF_SUBMIT: HelperProto =
    HelperProto::new(132, "bpf_ringbuf_submit", r(RB::Void))
        .args(&[af(AB::PtrToRingbufMem, F::OBJ_RELEASE), a(AB::Anything)]);

/// `bpf_ringbuf_discard` in kernel/bpf/ringbuf.c.
pub static BPF_RINGBUF_DISCARD: HelperProto =
    HelperProto::new(133, "bpf_ringbuf_discard", r(RB::Void))
        .args(&[af(AB::PtrToRingbufMem, F::OBJ_RELEASE), a(AB::Anything)]);

/// `bpf_ringbuf_output` in kernel/bpf/ringbuf.c.
pub static BPF_RINGBUF_OUTPUT: HelperProto =
    HelperProto::new(130, "bpf_ringbuf_output", r(RB::Integer)).args(&[
        a(AB::ConstMapPtr),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSizeOrZero),
        a(AB::Anything),
    ]);

/// `bpf_ringbuf_query` in kernel/bpf/ringbuf.c.
pub static BPF_RINGBUF_QUERY: HelperProto =
    HelperProto::new(134, "bpf_ringbuf_query", r(RB::Integer))
        .args(&[a(AB::ConstMapPtr), a(AB::Anything)]);

/// `bpf_ringbuf_reserve_dynptr` in kernel/bpf/ringbuf.c.
pub static BPF_RINGBUF_RESERVE_DYNPTR: HelperProto =
    HelperProto::new(198, "bpf_ringbuf_reserve_dynptr", r(RB::Integer)).args(&[
        a(AB::ConstMapPtr),
        a(AB::Anything),
        a(AB::Anything),
        af(
            AB::PtrToDynptr,
            F::DYNPTR_TYPE_RINGBUF.or(F::MEM_UNINIT).or(F::MEM_WRITE),
        ),
    ]);

/// `bpf_ringbuf_submit_dynptr` in kernel/bpf/ringbuf.c.
pub static BPF_RINGBUF_SUBMIT_DYNPTR: HelperProto =
    HelperProto::new(199, "bpf_ringbuf_submit_dynptr", r(RB::Void)).args(&[
        af(AB::PtrToDynptr, F::DYNPTR_TYPE_RINGBUF.or(F::OBJ_RELEASE)),
        a(AB::Anything),
    ]);

/// `bpf_ringbuf_discard_dynptr` in kernel/bpf/ringbuf.c.
pub static BPF_RINGBUF_DISCARD_DYNPTR: HelperProto =
    HelperProto::new(200, "bpf_ringbuf_discard_dynptr", r(RB::Void)).args(&[
        af(AB::PtrToDynptr, F::DYNPTR_TYPE_RINGBUF.or(F::OBJ_RELEASE)),
        a(AB::Anything),
    ]);

/// `bpf_user_ringbuf_drain` in kernel/bpf/ringbuf.c.
pub static BPF_USER_RINGBUF_DRAIN: HelperProto =
    HelperProto::new(209, "bpf_user_ringbuf_drain", r(RB::Integer)).args(&[
        a(AB::ConstMapPtr),
        a(AB::PtrToFunc),
        af(AB::PtrToStack, F::MAYBE_NULL),
        a(AB::Anything),
    ]);

/// `BPF_PTR_POISON` in kernel/bpf/core.c.
pub static BPF_TAIL_CALL: HelperProto = HelperProto::new(12, "bpf_tail_call", r(RB::Void)).args(&[
    a(AB::PtrToCtx),
    a(AB::ConstMapPtr),
    a(AB::Anything),
]);

/// `bpf_find_vma` in kernel/bpf/task_iter.c.
pub static BPF_FIND_VMA: HelperProto = HelperProto::new(180, "bpf_find_vma", r(RB::Integer))
    .args(&[
        a(AB::PtrToBtfId),
        a(AB::Anything),
        a(AB::PtrToFunc),
        af(AB::PtrToStack, F::MAYBE_NULL),
        a(AB::Anything),
    ])
    .arg_btf(0, "task_struct");

/// `bpf_bprm_opts_set` in kernel/bpf/bpf_lsm.c.
pub static BPF_BPRM_OPTS_SET: HelperProto =
    HelperProto::new(159, "bpf_bprm_opts_set", r(RB::Integer))
        .args(&[a(AB::PtrToBtfId), a(AB::Anything)])
        .arg_btf(0, "linux_binprm");

/// `bpf_ima_inode_hash` in kernel/bpf/bpf_lsm.c.
pub static BPF_IMA_INODE_HASH: HelperProto =
    HelperProto::new(161, "bpf_ima_inode_hash", r(RB::Integer))
        .args(&[
            a(AB::PtrToBtfId),
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSize),
        ])
        .arg_btf(0, "inode")
        .might_sleep()
        .allowed(AllowRule::SleepableLsmOrIter);

/// `bpf_ima_file_hash` in kernel/bpf/bpf_lsm.c.
pub static BPF_IMA_FILE_HASH: HelperProto =
    HelperProto::new(193, "bpf_ima_file_hash", r(RB::Integer))
        .args(&[
            a(AB::PtrToBtfId),
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSize),
        ])
        .arg_btf(0, "file")
        .might_sleep()
        .allowed(AllowRule::SleepableLsmOrIter);

/// `bpf_get_attach_cookie` in kernel/bpf/bpf_lsm.c.
pub static BPF_GET_ATTACH_COOKIE: HelperProto =
    HelperProto::new(174, "bpf_get_attach_cookie", r(RB::Integer)).args(&[a(AB::PtrToCtx)]);

/// `bpf_map_lookup_elem` in kernel/bpf/helpers.c.
pub static BPF_MAP_LOOKUP_ELEM: HelperProto = HelperProto::new(
    1,
    "bpf_map_lookup_elem",
    rf(RB::PtrToMapValue, F::MAYBE_NULL),
)
.args(&[a(AB::ConstMapPtr), a(AB::PtrToMapKey)])
.pkt_access();

/// `bpf_map_update_elem` in kernel/bpf/helpers.c.
pub static BPF_MAP_UPDATE_ELEM: HelperProto =
    HelperProto::new(2, "bpf_map_update_elem", r(RB::Integer))
        .args(&[
            a(AB::ConstMapPtr),
            a(AB::PtrToMapKey),
            a(AB::PtrToMapValue),
            a(AB::Anything),
        ])
        .pkt_access();

/// `bpf_map_delete_elem` in kernel/bpf/helpers.c.
pub static BPF_MAP_DELETE_ELEM: HelperProto =
    HelperProto::new(3, "bpf_map_delete_elem", r(RB::Integer))
        .args(&[a(AB::ConstMapPtr), a(AB::PtrToMapKey)])
        .pkt_access();

/// `bpf_map_push_elem` in kernel/bpf/helpers.c.
pub static BPF_MAP_PUSH_ELEM: HelperProto =
    HelperProto::new(87, "bpf_map_push_elem", r(RB::Integer))
        .args(&[a(AB::ConstMapPtr), a(AB::PtrToMapValue), a(AB::Anything)])
        .pkt_access();

/// `bpf_map_pop_elem` in kernel/bpf/helpers.c.
pub static BPF_MAP_POP_ELEM: HelperProto = HelperProto::new(88, "bpf_map_pop_elem", r(RB::Integer))
    .args(&[
        a(AB::ConstMapPtr),
        af(AB::PtrToMapValue, F::MEM_UNINIT.or(F::MEM_WRITE)),
    ]);

/// `bpf_map_peek_elem` in kernel/bpf/helpers.c.
pub static BPF_MAP_PEEK_ELEM: HelperProto =
    HelperProto::new(89, "bpf_map_peek_elem", r(RB::Integer)).args(&[
        a(AB::ConstMapPtr),
        af(AB::PtrToMapValue, F::MEM_UNINIT.or(F::MEM_WRITE)),
    ]);

/// `bpf_map_lookup_percpu_elem` in kernel/bpf/helpers.c.
pub static BPF_MAP_LOOKUP_PERCPU_ELEM: HelperProto = HelperProto::new(
    195,
    "bpf_map_lookup_percpu_elem",
    rf(RB::PtrToMapValue, F::MAYBE_NULL),
)
.args(&[a(AB::ConstMapPtr), a(AB::PtrToMapKey), a(AB::Anything)])
.pkt_access();

/// `bpf_user_rnd_u32` in kernel/bpf/helpers.c.
pub static BPF_GET_PRANDOM_U32: HelperProto =
    HelperProto::new(7, "bpf_get_prandom_u32", r(RB::Integer));

/// `bpf_get_smp_processor_id` in kernel/bpf/helpers.c.
pub static BPF_GET_SMP_PROCESSOR_ID: HelperProto =
    HelperProto::new(8, "bpf_get_smp_processor_id", r(RB::Integer)).allow_fastcall();

/// `bpf_get_numa_node_id` in kernel/bpf/helpers.c.
pub static BPF_GET_NUMA_NODE_ID: HelperProto =
    HelperProto::new(42, "bpf_get_numa_node_id", r(RB::Integer));

/// `bpf_ktime_get_ns` in kernel/bpf/helpers.c.
pub static BPF_KTIME_GET_NS: HelperProto = HelperProto::new(5, "bpf_ktime_get_ns", r(RB::Integer));

/// `bpf_ktime_get_boot_ns` in kernel/bpf/helpers.c.
pub static BPF_KTIME_GET_BOOT_NS: HelperProto =
    HelperProto::new(125, "bpf_ktime_get_boot_ns", r(RB::Integer));

/// `bpf_ktime_get_coarse_ns` in kernel/bpf/helpers.c.
pub static BPF_KTIME_GET_COARSE_NS: HelperProto =
    HelperProto::new(160, "bpf_ktime_get_coarse_ns", r(RB::Integer));

/// `bpf_ktime_get_tai_ns` in kernel/bpf/helpers.c.
pub static BPF_KTIME_GET_TAI_NS: HelperProto =
    HelperProto::new(208, "bpf_ktime_get_tai_ns", r(RB::Integer));

/// `bpf_get_current_pid_tgid` in kernel/bpf/helpers.c.
pub static BPF_GET_CURRENT_PID_TGID: HelperProto =
    HelperProto::new(14, "bpf_get_current_pid_tgid", r(RB::Integer));

/// `bpf_get_current_uid_gid` in kernel/bpf/helpers.c.
pub static BPF_GET_CURRENT_UID_GID: HelperProto =
    HelperProto::new(15, "bpf_get_current_uid_gid", r(RB::Integer));

/// `bpf_get_current_comm` in kernel/bpf/helpers.c.
pub static BPF_GET_CURRENT_COMM: HelperProto =
    HelperProto::new(16, "bpf_get_current_comm", r(RB::Integer)).args(&[
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_spin_lock` in kernel/bpf/helpers.c.
pub static BPF_SPIN_LOCK: HelperProto = HelperProto::new(93, "bpf_spin_lock", r(RB::Void))
    .args(&[a(AB::PtrToSpinLock)])
    .arg_btf(0, "POISON");

/// `bpf_spin_unlock` in kernel/bpf/helpers.c.
pub static BPF_SPIN_UNLOCK: HelperProto = HelperProto::new(94, "bpf_spin_unlock", r(RB::Void))
    .args(&[a(AB::PtrToSpinLock)])
    .arg_btf(0, "POISON");

/// `bpf_jiffies64` in kernel/bpf/helpers.c.
pub static BPF_JIFFIES64: HelperProto = HelperProto::new(118, "bpf_jiffies64", r(RB::Integer));

/// `bpf_get_current_cgroup_id` in kernel/bpf/helpers.c.
pub static BPF_GET_CURRENT_CGROUP_ID: HelperProto =
    HelperProto::new(80, "bpf_get_current_cgroup_id", r(RB::Integer));

/// `bpf_get_current_ancestor_cgroup_id` in kernel/bpf/helpers.c.
pub static BPF_GET_CURRENT_ANCESTOR_CGROUP_ID: HelperProto =
    HelperProto::new(123, "bpf_get_current_ancestor_cgroup_id", r(RB::Integer))
        .args(&[a(AB::Anything)]);

/// `bpf_strtol` in kernel/bpf/helpers.c.
pub static BPF_STRTOL: HelperProto = HelperProto::new(105, "bpf_strtol", r(RB::Integer))
    .args(&[
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
        a(AB::Anything),
        af(
            AB::PtrToMem,
            F::MEM_FIXED_SIZE
                .or(F::MEM_UNINIT)
                .or(F::MEM_WRITE)
                .or(F::MEM_ALIGNED),
        ),
    ])
    .arg_size(3, 8);

/// `bpf_strtoul` in kernel/bpf/helpers.c.
pub static BPF_STRTOUL: HelperProto = HelperProto::new(106, "bpf_strtoul", r(RB::Integer))
    .args(&[
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
        a(AB::Anything),
        af(
            AB::PtrToMem,
            F::MEM_FIXED_SIZE
                .or(F::MEM_UNINIT)
                .or(F::MEM_WRITE)
                .or(F::MEM_ALIGNED),
        ),
    ])
    .arg_size(3, 8);

/// `bpf_strncmp` in kernel/bpf/helpers.c.
pub static BPF_STRNCMP: HelperProto = HelperProto::new(182, "bpf_strncmp", r(RB::Integer)).args(&[
    af(AB::PtrToMem, F::MEM_RDONLY),
    a(AB::ConstSize),
    a(AB::PtrToConstStr),
]);

/// `bpf_get_ns_current_pid_tgid` in kernel/bpf/helpers.c.
pub static BPF_GET_NS_CURRENT_PID_TGID: HelperProto =
    HelperProto::new(120, "bpf_get_ns_current_pid_tgid", r(RB::Integer)).args(&[
        a(AB::Anything),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_get_raw_cpu_id` in kernel/bpf/helpers.c.
pub static BPF_GET_RAW_SMP_PROCESSOR_ID: HelperProto =
    HelperProto::new(8, "bpf_get_raw_smp_processor_id", r(RB::Integer));

/// `bpf_event_output_data` in kernel/bpf/helpers.c.
pub static BPF_EVENT_OUTPUT_DATA: HelperProto =
    HelperProto::new(25, "bpf_event_output_data", r(RB::Integer))
        .args(&[
            a(AB::PtrToCtx),
            a(AB::ConstMapPtr),
            a(AB::Anything),
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
        ])
        .gpl_only();

/// `bpf_copy_from_user` in kernel/bpf/helpers.c.
pub static BPF_COPY_FROM_USER: HelperProto =
    HelperProto::new(148, "bpf_copy_from_user", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
        ])
        .might_sleep();

/// `bpf_copy_from_user_task` in kernel/bpf/helpers.c.
pub static BPF_COPY_FROM_USER_TASK: HelperProto =
    HelperProto::new(191, "bpf_copy_from_user_task", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
            a(AB::PtrToBtfId),
            a(AB::Anything),
        ])
        .arg_btf(3, "task_struct")
        .gpl_only()
        .might_sleep();

/// `bpf_per_cpu_ptr` in kernel/bpf/helpers.c.
pub static BPF_PER_CPU_PTR: HelperProto = HelperProto::new(
    153,
    "bpf_per_cpu_ptr",
    rf(RB::PtrToMemOrBtfId, F::MAYBE_NULL.or(F::MEM_RDONLY)),
)
.args(&[a(AB::PtrToPercpuBtfId), a(AB::Anything)]);

/// `bpf_this_cpu_ptr` in kernel/bpf/helpers.c.
pub static BPF_THIS_CPU_PTR: HelperProto = HelperProto::new(
    154,
    "bpf_this_cpu_ptr",
    rf(RB::PtrToMemOrBtfId, F::MEM_RDONLY),
)
.args(&[a(AB::PtrToPercpuBtfId)]);

/// `bpf_snprintf` in kernel/bpf/helpers.c.
pub static BPF_SNPRINTF: HelperProto = HelperProto::new(165, "bpf_snprintf", r(RB::Integer))
    .args(&[
        af(AB::PtrToMem, F::MAYBE_NULL.or(F::MEM_WRITE)),
        a(AB::ConstSizeOrZero),
        a(AB::PtrToConstStr),
        af(AB::PtrToMem, F::MAYBE_NULL.or(F::MEM_RDONLY)),
        a(AB::ConstSizeOrZero),
    ])
    .gpl_only();

/// `bpf_timer_init` in kernel/bpf/helpers.c.
pub static BPF_TIMER_INIT: HelperProto = HelperProto::new(169, "bpf_timer_init", r(RB::Integer))
    .args(&[a(AB::PtrToTimer), a(AB::ConstMapPtr), a(AB::Anything)])
    .gpl_only();

/// `bpf_timer_set_callback` in kernel/bpf/helpers.c.
pub static BPF_TIMER_SET_CALLBACK: HelperProto =
    HelperProto::new(170, "bpf_timer_set_callback", r(RB::Integer))
        .args(&[a(AB::PtrToTimer), a(AB::PtrToFunc)])
        .gpl_only();

/// `bpf_timer_start` in kernel/bpf/helpers.c.
pub static BPF_TIMER_START: HelperProto = HelperProto::new(171, "bpf_timer_start", r(RB::Integer))
    .args(&[a(AB::PtrToTimer), a(AB::Anything), a(AB::Anything)])
    .gpl_only();

/// `bpf_timer_cancel` in kernel/bpf/helpers.c.
pub static BPF_TIMER_CANCEL: HelperProto =
    HelperProto::new(172, "bpf_timer_cancel", r(RB::Integer))
        .args(&[a(AB::PtrToTimer)])
        .gpl_only();

/// `bpf_kptr_xchg` in kernel/bpf/helpers.c.
pub static BPF_KPTR_XCHG: HelperProto =
    HelperProto::new(194, "bpf_kptr_xchg", rf(RB::PtrToBtfId, F::MAYBE_NULL))
        .args(&[
            a(AB::KptrXchgDest),
            af(AB::PtrToBtfId, F::MAYBE_NULL.or(F::OBJ_RELEASE)),
        ])
        .arg_btf(1, "POISON")
        .ret_btf_from_kptr();

/// `bpf_dynptr_from_mem` in kernel/bpf/helpers.c.
pub static BPF_DYNPTR_FROM_MEM: HelperProto =
    HelperProto::new(197, "bpf_dynptr_from_mem", r(RB::Integer)).args(&[
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSizeOrZero),
        a(AB::Anything),
        af(
            AB::PtrToDynptr,
            F::DYNPTR_TYPE_LOCAL.or(F::MEM_UNINIT).or(F::MEM_WRITE),
        ),
    ]);

/// `bpf_dynptr_read` in kernel/bpf/helpers.c.
pub static BPF_DYNPTR_READ: HelperProto = HelperProto::new(201, "bpf_dynptr_read", r(RB::Integer))
    .args(&[
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSizeOrZero),
        af(AB::PtrToDynptr, F::MEM_RDONLY),
        a(AB::Anything),
        a(AB::Anything),
    ]);

/// `bpf_dynptr_write` in kernel/bpf/helpers.c.
pub static BPF_DYNPTR_WRITE: HelperProto =
    HelperProto::new(202, "bpf_dynptr_write", r(RB::Integer)).args(&[
        af(AB::PtrToDynptr, F::MEM_RDONLY),
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSizeOrZero),
        a(AB::Anything),
    ]);

/// `bpf_dynptr_data` in kernel/bpf/helpers.c.
pub static BPF_DYNPTR_DATA: HelperProto =
    HelperProto::new(203, "bpf_dynptr_data", rf(RB::PtrToMem, F::MAYBE_NULL)).args(&[
        af(AB::PtrToDynptr, F::MEM_RDONLY),
        a(AB::Anything),
        a(AB::ConstAllocSizeOrZero),
    ]);

/// `bpf_current_task_under_cgroup` in kernel/bpf/helpers.c.
pub static BPF_CURRENT_TASK_UNDER_CGROUP: HelperProto =
    HelperProto::new(37, "bpf_current_task_under_cgroup", r(RB::Integer))
        .args(&[a(AB::ConstMapPtr), a(AB::Anything)]);

/// `bpf_sys_bpf` in kernel/bpf/syscall.c.
pub static BPF_SYS_BPF: HelperProto = HelperProto::new(166, "bpf_sys_bpf", r(RB::Integer))
    .args(&[
        a(AB::Anything),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ])
    .might_sleep();

/// `bpf_sys_close` in kernel/bpf/syscall.c.
pub static BPF_SYS_CLOSE: HelperProto = HelperProto::new(168, "bpf_sys_close", r(RB::Integer))
    .args(&[a(AB::Anything)])
    .might_sleep();

/// `bpf_kallsyms_lookup_name` in kernel/bpf/syscall.c.
pub static BPF_KALLSYMS_LOOKUP_NAME: HelperProto =
    HelperProto::new(179, "bpf_kallsyms_lookup_name", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSizeOrZero),
            a(AB::Anything),
            af(
                AB::PtrToMem,
                F::MEM_FIXED_SIZE
                    .or(F::MEM_UNINIT)
                    .or(F::MEM_WRITE)
                    .or(F::MEM_ALIGNED),
            ),
        ])
        .arg_size(3, 8);

/// `bpf_btf_find_by_name_kind` in kernel/bpf/btf.c.
pub static BPF_BTF_FIND_BY_NAME_KIND: HelperProto =
    HelperProto::new(167, "bpf_btf_find_by_name_kind", r(RB::Integer))
        .args(&[
            af(AB::PtrToMem, F::MEM_RDONLY),
            a(AB::ConstSize),
            a(AB::Anything),
            a(AB::Anything),
        ])
        .might_sleep();

/// `bpf_task_storage_get_recur` in kernel/bpf/bpf_task_storage.c.
pub static BPF_TASK_STORAGE_GET_RECUR: HelperProto = HelperProto::new(
    156,
    "bpf_task_storage_get_recur",
    rf(RB::PtrToMapValue, F::MAYBE_NULL),
)
.args(&[
    a(AB::ConstMapPtr),
    af(AB::PtrToBtfId, F::MAYBE_NULL),
    af(AB::PtrToMapValue, F::MAYBE_NULL),
    a(AB::Anything),
])
.arg_btf(1, "task_struct");

/// `bpf_task_storage_get` in kernel/bpf/bpf_task_storage.c.
pub static BPF_TASK_STORAGE_GET: HelperProto = HelperProto::new(
    156,
    "bpf_task_storage_get",
    rf(RB::PtrToMapValue, F::MAYBE_NULL),
)
.args(&[
    a(AB::ConstMapPtr),
    af(AB::PtrToBtfId, F::MAYBE_NULL),
    af(AB::PtrToMapValue, F::MAYBE_NULL),
    a(AB::Anything),
])
.arg_btf(1, "task_struct");

/// `bpf_task_storage_delete_recur` in kernel/bpf/bpf_task_storage.c.
pub static BPF_TASK_STORAGE_DELETE_RECUR: HelperProto =
    HelperProto::new(157, "bpf_task_storage_delete_recur", r(RB::Integer))
        .args(&[a(AB::ConstMapPtr), af(AB::PtrToBtfId, F::MAYBE_NULL)])
        .arg_btf(1, "task_struct");

/// `bpf_task_storage_delete` in kernel/bpf/bpf_task_storage.c.
pub static BPF_TASK_STORAGE_DELETE: HelperProto =
    HelperProto::new(157, "bpf_task_storage_delete", r(RB::Integer))
        .args(&[a(AB::ConstMapPtr), af(AB::PtrToBtfId, F::MAYBE_NULL)])
        .arg_btf(1, "task_struct");

/// `bpf_get_local_storage` in kernel/bpf/cgroup.c.
pub static BPF_GET_LOCAL_STORAGE: HelperProto =
    HelperProto::new(81, "bpf_get_local_storage", r(RB::PtrToMapValue))
        .args(&[a(AB::ConstMapPtr), a(AB::Anything)]);

/// `bpf_get_retval` in kernel/bpf/cgroup.c.
pub static BPF_GET_RETVAL: HelperProto = HelperProto::new(186, "bpf_get_retval", r(RB::Integer));

/// `bpf_set_retval` in kernel/bpf/cgroup.c.
pub static BPF_SET_RETVAL: HelperProto =
    HelperProto::new(187, "bpf_set_retval", r(RB::Integer)).args(&[a(AB::Anything)]);

/// `bpf_sysctl_get_name` in kernel/bpf/cgroup.c.
pub static BPF_SYSCTL_GET_NAME: HelperProto =
    HelperProto::new(101, "bpf_sysctl_get_name", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToMem, F::MEM_WRITE),
        a(AB::ConstSize),
        a(AB::Anything),
    ]);

/// `bpf_sysctl_get_current_value` in kernel/bpf/cgroup.c.
pub static BPF_SYSCTL_GET_CURRENT_VALUE: HelperProto =
    HelperProto::new(102, "bpf_sysctl_get_current_value", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_sysctl_get_new_value` in kernel/bpf/cgroup.c.
pub static BPF_SYSCTL_GET_NEW_VALUE: HelperProto =
    HelperProto::new(103, "bpf_sysctl_get_new_value", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToMem, F::MEM_UNINIT.or(F::MEM_WRITE)),
        a(AB::ConstSize),
    ]);

/// `bpf_sysctl_set_new_value` in kernel/bpf/cgroup.c.
pub static BPF_SYSCTL_SET_NEW_VALUE: HelperProto =
    HelperProto::new(104, "bpf_sysctl_set_new_value", r(RB::Integer)).args(&[
        a(AB::PtrToCtx),
        af(AB::PtrToMem, F::MEM_RDONLY),
        a(AB::ConstSize),
    ]);

/// `bpf_get_netns_cookie_sockopt` in kernel/bpf/cgroup.c.
pub static BPF_GET_NETNS_COOKIE_SOCKOPT: HelperProto =
    HelperProto::new(122, "bpf_get_netns_cookie_sockopt", r(RB::Integer))
        .args(&[af(AB::PtrToCtx, F::MAYBE_NULL)]);

/// `bpf_rc_repeat` in drivers/media/rc/bpf-lirc.c.
pub static RC_REPEAT: HelperProto = HelperProto::new(77, "rc_repeat", r(RB::Integer))
    .args(&[a(AB::PtrToCtx)])
    .gpl_only();

/// `bpf_rc_keydown` in drivers/media/rc/bpf-lirc.c.
pub static RC_KEYDOWN: HelperProto = HelperProto::new(78, "rc_keydown", r(RB::Integer))
    .args(&[
        a(AB::PtrToCtx),
        a(AB::Anything),
        a(AB::Anything),
        a(AB::Anything),
    ])
    .gpl_only();

/// `bpf_rc_pointer_rel` in drivers/media/rc/bpf-lirc.c.
pub static RC_POINTER_REL: HelperProto = HelperProto::new(92, "rc_pointer_rel", r(RB::Integer))
    .args(&[a(AB::PtrToCtx), a(AB::Anything), a(AB::Anything)])
    .gpl_only();

/// `bpf_get_netns_cookie` for skb-based programs, added after 6.12; its
/// shape (ctx or NULL) is taken from the host kernel's behaviour.
pub static BPF_GET_NETNS_COOKIE: HelperProto =
    HelperProto::new(122, "bpf_get_netns_cookie", r(RB::Integer))
        .args(&[af(AB::PtrToCtx, F::MAYBE_NULL)]);
