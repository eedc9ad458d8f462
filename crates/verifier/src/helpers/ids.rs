//! Helper numbers (`enum bpf_func_id`, include/uapi/linux/bpf.h): the id is
//! the index into [`HELPER_NAMES`]. The kernel prints a helper as `bpf_<name>`.

/// Names without the `bpf_` prefix, indexed by helper id. Id 0 is `unspec`,
/// which the kernel rejects like any unknown id.
pub const HELPER_NAMES: [&str; 212] = [
    "unspec",
    "map_lookup_elem",
    "map_update_elem",
    "map_delete_elem",
    "probe_read",
    "ktime_get_ns",
    "trace_printk",
    "get_prandom_u32",
    "get_smp_processor_id",
    "skb_store_bytes",
    "l3_csum_replace",
    "l4_csum_replace",
    "tail_call",
    "clone_redirect",
    "get_current_pid_tgid",
    "get_current_uid_gid",
    "get_current_comm",
    "get_cgroup_classid",
    "skb_vlan_push",
    "skb_vlan_pop",
    "skb_get_tunnel_key",
    "skb_set_tunnel_key",
    "perf_event_read",
    "redirect",
    "get_route_realm",
    "perf_event_output",
    "skb_load_bytes",
    "get_stackid",
    "csum_diff",
    "skb_get_tunnel_opt",
    "skb_set_tunnel_opt",
    "skb_change_proto",
    "skb_change_type",
    "skb_under_cgroup",
    "get_hash_recalc",
    "get_current_task",
    "probe_write_user",
    "current_task_under_cgroup",
    "skb_change_tail",
    "skb_pull_data",
    "csum_update",
    "set_hash_invalid",
    "get_numa_node_id",
    "skb_change_head",
    "xdp_adjust_head",
    "probe_read_str",
    "get_socket_cookie",
    "get_socket_uid",
    "set_hash",
    "setsockopt",
    "skb_adjust_room",
    "redirect_map",
    "sk_redirect_map",
    "sock_map_update",
    "xdp_adjust_meta",
    "perf_event_read_value",
    "perf_prog_read_value",
    "getsockopt",
    "override_return",
    "sock_ops_cb_flags_set",
    "msg_redirect_map",
    "msg_apply_bytes",
    "msg_cork_bytes",
    "msg_pull_data",
    "bind",
    "xdp_adjust_tail",
    "skb_get_xfrm_state",
    "get_stack",
    "skb_load_bytes_relative",
    "fib_lookup",
    "sock_hash_update",
    "msg_redirect_hash",
    "sk_redirect_hash",
    "lwt_push_encap",
    "lwt_seg6_store_bytes",
    "lwt_seg6_adjust_srh",
    "lwt_seg6_action",
    "rc_repeat",
    "rc_keydown",
    "skb_cgroup_id",
    "get_current_cgroup_id",
    "get_local_storage",
    "sk_select_reuseport",
    "skb_ancestor_cgroup_id",
    "sk_lookup_tcp",
    "sk_lookup_udp",
    "sk_release",
    "map_push_elem",
    "map_pop_elem",
    "map_peek_elem",
    "msg_push_data",
    "msg_pop_data",
    "rc_pointer_rel",
    "spin_lock",
    "spin_unlock",
    "sk_fullsock",
    "tcp_sock",
    "skb_ecn_set_ce",
    "get_listener_sock",
    "skc_lookup_tcp",
    "tcp_check_syncookie",
    "sysctl_get_name",
    "sysctl_get_current_value",
    "sysctl_get_new_value",
    "sysctl_set_new_value",
    "strtol",
    "strtoul",
    "sk_storage_get",
    "sk_storage_delete",
    "send_signal",
    "tcp_gen_syncookie",
    "skb_output",
    "probe_read_user",
    "probe_read_kernel",
    "probe_read_user_str",
    "probe_read_kernel_str",
    "tcp_send_ack",
    "send_signal_thread",
    "jiffies64",
    "read_branch_records",
    "get_ns_current_pid_tgid",
    "xdp_output",
    "get_netns_cookie",
    "get_current_ancestor_cgroup_id",
    "sk_assign",
    "ktime_get_boot_ns",
    "seq_printf",
    "seq_write",
    "sk_cgroup_id",
    "sk_ancestor_cgroup_id",
    "ringbuf_output",
    "ringbuf_reserve",
    "ringbuf_submit",
    "ringbuf_discard",
    "ringbuf_query",
    "csum_level",
    "skc_to_tcp6_sock",
    "skc_to_tcp_sock",
    "skc_to_tcp_timewait_sock",
    "skc_to_tcp_request_sock",
    "skc_to_udp6_sock",
    "get_task_stack",
    "load_hdr_opt",
    "store_hdr_opt",
    "reserve_hdr_opt",
    "inode_storage_get",
    "inode_storage_delete",
    "d_path",
    "copy_from_user",
    "snprintf_btf",
    "seq_printf_btf",
    "skb_cgroup_classid",
    "redirect_neigh",
    "per_cpu_ptr",
    "this_cpu_ptr",
    "redirect_peer",
    "task_storage_get",
    "task_storage_delete",
    "get_current_task_btf",
    "bprm_opts_set",
    "ktime_get_coarse_ns",
    "ima_inode_hash",
    "sock_from_file",
    "check_mtu",
    "for_each_map_elem",
    "snprintf",
    "sys_bpf",
    "btf_find_by_name_kind",
    "sys_close",
    "timer_init",
    "timer_set_callback",
    "timer_start",
    "timer_cancel",
    "get_func_ip",
    "get_attach_cookie",
    "task_pt_regs",
    "get_branch_snapshot",
    "trace_vprintk",
    "skc_to_unix_sock",
    "kallsyms_lookup_name",
    "find_vma",
    "loop",
    "strncmp",
    "get_func_arg",
    "get_func_ret",
    "get_func_arg_cnt",
    "get_retval",
    "set_retval",
    "xdp_get_buff_len",
    "xdp_load_bytes",
    "xdp_store_bytes",
    "copy_from_user_task",
    "skb_set_tstamp",
    "ima_file_hash",
    "kptr_xchg",
    "map_lookup_percpu_elem",
    "skc_to_mptcp_sock",
    "dynptr_from_mem",
    "ringbuf_reserve_dynptr",
    "ringbuf_submit_dynptr",
    "ringbuf_discard_dynptr",
    "dynptr_read",
    "dynptr_write",
    "dynptr_data",
    "tcp_raw_gen_syncookie_ipv4",
    "tcp_raw_gen_syncookie_ipv6",
    "tcp_raw_check_syncookie_ipv4",
    "tcp_raw_check_syncookie_ipv6",
    "ktime_get_tai_ns",
    "user_ringbuf_drain",
    "cgrp_storage_get",
    "cgrp_storage_delete",
];

/// One past the last helper id Linux 6.18 knows (`__BPF_FUNC_MAX_ID`).
pub const HELPER_MAX_ID: u32 = HELPER_NAMES.len() as u32;

/// The id of helper `name` (with or without the `bpf_` prefix).
pub fn helper_id(name: &str) -> Option<u32> {
    let bare = name.strip_prefix("bpf_").unwrap_or(name);
    HELPER_NAMES
        .iter()
        .position(|n| *n == bare)
        .filter(|&i| i != 0)
        .map(|i| i as u32)
}

/// Helper ids by name, for readable tables.
pub mod id {
    pub const MAP_LOOKUP_ELEM: u32 = 1;
    pub const MAP_UPDATE_ELEM: u32 = 2;
    pub const MAP_DELETE_ELEM: u32 = 3;
    pub const PROBE_READ: u32 = 4;
    pub const KTIME_GET_NS: u32 = 5;
    pub const TRACE_PRINTK: u32 = 6;
    pub const GET_PRANDOM_U32: u32 = 7;
    pub const GET_SMP_PROCESSOR_ID: u32 = 8;
    pub const SKB_STORE_BYTES: u32 = 9;
    pub const L3_CSUM_REPLACE: u32 = 10;
    pub const L4_CSUM_REPLACE: u32 = 11;
    pub const TAIL_CALL: u32 = 12;
    pub const CLONE_REDIRECT: u32 = 13;
    pub const GET_CURRENT_PID_TGID: u32 = 14;
    pub const GET_CURRENT_UID_GID: u32 = 15;
    pub const GET_CURRENT_COMM: u32 = 16;
    pub const GET_CGROUP_CLASSID: u32 = 17;
    pub const SKB_VLAN_PUSH: u32 = 18;
    pub const SKB_VLAN_POP: u32 = 19;
    pub const SKB_GET_TUNNEL_KEY: u32 = 20;
    pub const SKB_SET_TUNNEL_KEY: u32 = 21;
    pub const PERF_EVENT_READ: u32 = 22;
    pub const REDIRECT: u32 = 23;
    pub const GET_ROUTE_REALM: u32 = 24;
    pub const PERF_EVENT_OUTPUT: u32 = 25;
    pub const SKB_LOAD_BYTES: u32 = 26;
    pub const GET_STACKID: u32 = 27;
    pub const CSUM_DIFF: u32 = 28;
    pub const SKB_GET_TUNNEL_OPT: u32 = 29;
    pub const SKB_SET_TUNNEL_OPT: u32 = 30;
    pub const SKB_CHANGE_PROTO: u32 = 31;
    pub const SKB_CHANGE_TYPE: u32 = 32;
    pub const SKB_UNDER_CGROUP: u32 = 33;
    pub const GET_HASH_RECALC: u32 = 34;
    pub const GET_CURRENT_TASK: u32 = 35;
    pub const PROBE_WRITE_USER: u32 = 36;
    pub const CURRENT_TASK_UNDER_CGROUP: u32 = 37;
    pub const SKB_CHANGE_TAIL: u32 = 38;
    pub const SKB_PULL_DATA: u32 = 39;
    pub const CSUM_UPDATE: u32 = 40;
    pub const SET_HASH_INVALID: u32 = 41;
    pub const GET_NUMA_NODE_ID: u32 = 42;
    pub const SKB_CHANGE_HEAD: u32 = 43;
    pub const XDP_ADJUST_HEAD: u32 = 44;
    pub const PROBE_READ_STR: u32 = 45;
    pub const GET_SOCKET_COOKIE: u32 = 46;
    pub const GET_SOCKET_UID: u32 = 47;
    pub const SET_HASH: u32 = 48;
    pub const SETSOCKOPT: u32 = 49;
    pub const SKB_ADJUST_ROOM: u32 = 50;
    pub const REDIRECT_MAP: u32 = 51;
    pub const SK_REDIRECT_MAP: u32 = 52;
    pub const SOCK_MAP_UPDATE: u32 = 53;
    pub const XDP_ADJUST_META: u32 = 54;
    pub const PERF_EVENT_READ_VALUE: u32 = 55;
    pub const PERF_PROG_READ_VALUE: u32 = 56;
    pub const GETSOCKOPT: u32 = 57;
    pub const OVERRIDE_RETURN: u32 = 58;
    pub const SOCK_OPS_CB_FLAGS_SET: u32 = 59;
    pub const MSG_REDIRECT_MAP: u32 = 60;
    pub const MSG_APPLY_BYTES: u32 = 61;
    pub const MSG_CORK_BYTES: u32 = 62;
    pub const MSG_PULL_DATA: u32 = 63;
    pub const BIND: u32 = 64;
    pub const XDP_ADJUST_TAIL: u32 = 65;
    pub const SKB_GET_XFRM_STATE: u32 = 66;
    pub const GET_STACK: u32 = 67;
    pub const SKB_LOAD_BYTES_RELATIVE: u32 = 68;
    pub const FIB_LOOKUP: u32 = 69;
    pub const SOCK_HASH_UPDATE: u32 = 70;
    pub const MSG_REDIRECT_HASH: u32 = 71;
    pub const SK_REDIRECT_HASH: u32 = 72;
    pub const LWT_PUSH_ENCAP: u32 = 73;
    pub const LWT_SEG6_STORE_BYTES: u32 = 74;
    pub const LWT_SEG6_ADJUST_SRH: u32 = 75;
    pub const LWT_SEG6_ACTION: u32 = 76;
    pub const RC_REPEAT: u32 = 77;
    pub const RC_KEYDOWN: u32 = 78;
    pub const SKB_CGROUP_ID: u32 = 79;
    pub const GET_CURRENT_CGROUP_ID: u32 = 80;
    pub const GET_LOCAL_STORAGE: u32 = 81;
    pub const SK_SELECT_REUSEPORT: u32 = 82;
    pub const SKB_ANCESTOR_CGROUP_ID: u32 = 83;
    pub const SK_LOOKUP_TCP: u32 = 84;
    pub const SK_LOOKUP_UDP: u32 = 85;
    pub const SK_RELEASE: u32 = 86;
    pub const MAP_PUSH_ELEM: u32 = 87;
    pub const MAP_POP_ELEM: u32 = 88;
    pub const MAP_PEEK_ELEM: u32 = 89;
    pub const MSG_PUSH_DATA: u32 = 90;
    pub const MSG_POP_DATA: u32 = 91;
    pub const RC_POINTER_REL: u32 = 92;
    pub const SPIN_LOCK: u32 = 93;
    pub const SPIN_UNLOCK: u32 = 94;
    pub const SK_FULLSOCK: u32 = 95;
    pub const TCP_SOCK: u32 = 96;
    pub const SKB_ECN_SET_CE: u32 = 97;
    pub const GET_LISTENER_SOCK: u32 = 98;
    pub const SKC_LOOKUP_TCP: u32 = 99;
    pub const TCP_CHECK_SYNCOOKIE: u32 = 100;
    pub const SYSCTL_GET_NAME: u32 = 101;
    pub const SYSCTL_GET_CURRENT_VALUE: u32 = 102;
    pub const SYSCTL_GET_NEW_VALUE: u32 = 103;
    pub const SYSCTL_SET_NEW_VALUE: u32 = 104;
    pub const STRTOL: u32 = 105;
    pub const STRTOUL: u32 = 106;
    pub const SK_STORAGE_GET: u32 = 107;
    pub const SK_STORAGE_DELETE: u32 = 108;
    pub const SEND_SIGNAL: u32 = 109;
    pub const TCP_GEN_SYNCOOKIE: u32 = 110;
    pub const SKB_OUTPUT: u32 = 111;
    pub const PROBE_READ_USER: u32 = 112;
    pub const PROBE_READ_KERNEL: u32 = 113;
    pub const PROBE_READ_USER_STR: u32 = 114;
    pub const PROBE_READ_KERNEL_STR: u32 = 115;
    pub const TCP_SEND_ACK: u32 = 116;
    pub const SEND_SIGNAL_THREAD: u32 = 117;
    pub const JIFFIES64: u32 = 118;
    pub const READ_BRANCH_RECORDS: u32 = 119;
    pub const GET_NS_CURRENT_PID_TGID: u32 = 120;
    pub const XDP_OUTPUT: u32 = 121;
    pub const GET_NETNS_COOKIE: u32 = 122;
    pub const GET_CURRENT_ANCESTOR_CGROUP_ID: u32 = 123;
    pub const SK_ASSIGN: u32 = 124;
    pub const KTIME_GET_BOOT_NS: u32 = 125;
    pub const SEQ_PRINTF: u32 = 126;
    pub const SEQ_WRITE: u32 = 127;
    pub const SK_CGROUP_ID: u32 = 128;
    pub const SK_ANCESTOR_CGROUP_ID: u32 = 129;
    pub const RINGBUF_OUTPUT: u32 = 130;
    pub const RINGBUF_RESERVE: u32 = 131;
    pub const RINGBUF_SUBMIT: u32 = 132;
    pub const RINGBUF_DISCARD: u32 = 133;
    pub const RINGBUF_QUERY: u32 = 134;
    pub const CSUM_LEVEL: u32 = 135;
    pub const SKC_TO_TCP6_SOCK: u32 = 136;
    pub const SKC_TO_TCP_SOCK: u32 = 137;
    pub const SKC_TO_TCP_TIMEWAIT_SOCK: u32 = 138;
    pub const SKC_TO_TCP_REQUEST_SOCK: u32 = 139;
    pub const SKC_TO_UDP6_SOCK: u32 = 140;
    pub const GET_TASK_STACK: u32 = 141;
    pub const LOAD_HDR_OPT: u32 = 142;
    pub const STORE_HDR_OPT: u32 = 143;
    pub const RESERVE_HDR_OPT: u32 = 144;
    pub const INODE_STORAGE_GET: u32 = 145;
    pub const INODE_STORAGE_DELETE: u32 = 146;
    pub const D_PATH: u32 = 147;
    pub const COPY_FROM_USER: u32 = 148;
    pub const SNPRINTF_BTF: u32 = 149;
    pub const SEQ_PRINTF_BTF: u32 = 150;
    pub const SKB_CGROUP_CLASSID: u32 = 151;
    pub const REDIRECT_NEIGH: u32 = 152;
    pub const PER_CPU_PTR: u32 = 153;
    pub const THIS_CPU_PTR: u32 = 154;
    pub const REDIRECT_PEER: u32 = 155;
    pub const TASK_STORAGE_GET: u32 = 156;
    pub const TASK_STORAGE_DELETE: u32 = 157;
    pub const GET_CURRENT_TASK_BTF: u32 = 158;
    pub const BPRM_OPTS_SET: u32 = 159;
    pub const KTIME_GET_COARSE_NS: u32 = 160;
    pub const IMA_INODE_HASH: u32 = 161;
    pub const SOCK_FROM_FILE: u32 = 162;
    pub const CHECK_MTU: u32 = 163;
    pub const FOR_EACH_MAP_ELEM: u32 = 164;
    pub const SNPRINTF: u32 = 165;
    pub const SYS_BPF: u32 = 166;
    pub const BTF_FIND_BY_NAME_KIND: u32 = 167;
    pub const SYS_CLOSE: u32 = 168;
    pub const TIMER_INIT: u32 = 169;
    pub const TIMER_SET_CALLBACK: u32 = 170;
    pub const TIMER_START: u32 = 171;
    pub const TIMER_CANCEL: u32 = 172;
    pub const GET_FUNC_IP: u32 = 173;
    pub const GET_ATTACH_COOKIE: u32 = 174;
    pub const TASK_PT_REGS: u32 = 175;
    pub const GET_BRANCH_SNAPSHOT: u32 = 176;
    pub const TRACE_VPRINTK: u32 = 177;
    pub const SKC_TO_UNIX_SOCK: u32 = 178;
    pub const KALLSYMS_LOOKUP_NAME: u32 = 179;
    pub const FIND_VMA: u32 = 180;
    pub const LOOP: u32 = 181;
    pub const STRNCMP: u32 = 182;
    pub const GET_FUNC_ARG: u32 = 183;
    pub const GET_FUNC_RET: u32 = 184;
    pub const GET_FUNC_ARG_CNT: u32 = 185;
    pub const GET_RETVAL: u32 = 186;
    pub const SET_RETVAL: u32 = 187;
    pub const XDP_GET_BUFF_LEN: u32 = 188;
    pub const XDP_LOAD_BYTES: u32 = 189;
    pub const XDP_STORE_BYTES: u32 = 190;
    pub const COPY_FROM_USER_TASK: u32 = 191;
    pub const SKB_SET_TSTAMP: u32 = 192;
    pub const IMA_FILE_HASH: u32 = 193;
    pub const KPTR_XCHG: u32 = 194;
    pub const MAP_LOOKUP_PERCPU_ELEM: u32 = 195;
    pub const SKC_TO_MPTCP_SOCK: u32 = 196;
    pub const DYNPTR_FROM_MEM: u32 = 197;
    pub const RINGBUF_RESERVE_DYNPTR: u32 = 198;
    pub const RINGBUF_SUBMIT_DYNPTR: u32 = 199;
    pub const RINGBUF_DISCARD_DYNPTR: u32 = 200;
    pub const DYNPTR_READ: u32 = 201;
    pub const DYNPTR_WRITE: u32 = 202;
    pub const DYNPTR_DATA: u32 = 203;
    pub const TCP_RAW_GEN_SYNCOOKIE_IPV4: u32 = 204;
    pub const TCP_RAW_GEN_SYNCOOKIE_IPV6: u32 = 205;
    pub const TCP_RAW_CHECK_SYNCOOKIE_IPV4: u32 = 206;
    pub const TCP_RAW_CHECK_SYNCOOKIE_IPV6: u32 = 207;
    pub const KTIME_GET_TAI_NS: u32 = 208;
    pub const USER_RINGBUF_DRAIN: u32 = 209;
    pub const CGRP_STORAGE_GET: u32 = 210;
    pub const CGRP_STORAGE_DELETE: u32 = 211;
}
