//! The kernel's numbering of program types, attach types and map types
//! (include/uapi/linux/bpf.h as of Linux 6.18). Names are the lowercase
//! strings libbpf prints (`libbpf_bpf_prog_type_str` and friends), which is
//! also what veristat shows.

macro_rules! uapi_enum {
    ($(#[$doc:meta])* $ty:ident { $($konst:ident = $val:expr => $name:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
        pub struct $ty(pub u32);

        impl $ty {
            $(pub const $konst: $ty = $ty($val);)*

            /// Every value this version knows, in numeric order.
            pub const ALL: &'static [$ty] = &[$($ty($val),)*];

            /// libbpf's name, or None for a number this version does not know.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($val => Some($name),)*
                    _ => None,
                }
            }

            pub fn from_name(name: &str) -> Option<$ty> {
                match name {
                    $($name => Some($ty($val)),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "unknown({})", self.0),
                }
            }
        }
    };
}

uapi_enum! {
    /// `enum bpf_prog_type`.
    ProgType {
        UNSPEC = 0 => "unspec",
        SOCKET_FILTER = 1 => "socket_filter",
        KPROBE = 2 => "kprobe",
        SCHED_CLS = 3 => "sched_cls",
        SCHED_ACT = 4 => "sched_act",
        TRACEPOINT = 5 => "tracepoint",
        XDP = 6 => "xdp",
        PERF_EVENT = 7 => "perf_event",
        CGROUP_SKB = 8 => "cgroup_skb",
        CGROUP_SOCK = 9 => "cgroup_sock",
        LWT_IN = 10 => "lwt_in",
        LWT_OUT = 11 => "lwt_out",
        LWT_XMIT = 12 => "lwt_xmit",
        SOCK_OPS = 13 => "sock_ops",
        SK_SKB = 14 => "sk_skb",
        CGROUP_DEVICE = 15 => "cgroup_device",
        SK_MSG = 16 => "sk_msg",
        RAW_TRACEPOINT = 17 => "raw_tracepoint",
        CGROUP_SOCK_ADDR = 18 => "cgroup_sock_addr",
        LWT_SEG6LOCAL = 19 => "lwt_seg6local",
        LIRC_MODE2 = 20 => "lirc_mode2",
        SK_REUSEPORT = 21 => "sk_reuseport",
        FLOW_DISSECTOR = 22 => "flow_dissector",
        CGROUP_SYSCTL = 23 => "cgroup_sysctl",
        RAW_TRACEPOINT_WRITABLE = 24 => "raw_tracepoint_writable",
        CGROUP_SOCKOPT = 25 => "cgroup_sockopt",
        TRACING = 26 => "tracing",
        STRUCT_OPS = 27 => "struct_ops",
        EXT = 28 => "ext",
        LSM = 29 => "lsm",
        SK_LOOKUP = 30 => "sk_lookup",
        SYSCALL = 31 => "syscall",
        NETFILTER = 32 => "netfilter",
    }
}

uapi_enum! {
    /// `enum bpf_attach_type`.
    AttachType {
        CGROUP_INET_INGRESS = 0 => "cgroup_inet_ingress",
        CGROUP_INET_EGRESS = 1 => "cgroup_inet_egress",
        CGROUP_INET_SOCK_CREATE = 2 => "cgroup_inet_sock_create",
        CGROUP_SOCK_OPS = 3 => "cgroup_sock_ops",
        SK_SKB_STREAM_PARSER = 4 => "sk_skb_stream_parser",
        SK_SKB_STREAM_VERDICT = 5 => "sk_skb_stream_verdict",
        CGROUP_DEVICE = 6 => "cgroup_device",
        SK_MSG_VERDICT = 7 => "sk_msg_verdict",
        CGROUP_INET4_BIND = 8 => "cgroup_inet4_bind",
        CGROUP_INET6_BIND = 9 => "cgroup_inet6_bind",
        CGROUP_INET4_CONNECT = 10 => "cgroup_inet4_connect",
        CGROUP_INET6_CONNECT = 11 => "cgroup_inet6_connect",
        CGROUP_INET4_POST_BIND = 12 => "cgroup_inet4_post_bind",
        CGROUP_INET6_POST_BIND = 13 => "cgroup_inet6_post_bind",
        CGROUP_UDP4_SENDMSG = 14 => "cgroup_udp4_sendmsg",
        CGROUP_UDP6_SENDMSG = 15 => "cgroup_udp6_sendmsg",
        LIRC_MODE2 = 16 => "lirc_mode2",
        FLOW_DISSECTOR = 17 => "flow_dissector",
        CGROUP_SYSCTL = 18 => "cgroup_sysctl",
        CGROUP_UDP4_RECVMSG = 19 => "cgroup_udp4_recvmsg",
        CGROUP_UDP6_RECVMSG = 20 => "cgroup_udp6_recvmsg",
        CGROUP_GETSOCKOPT = 21 => "cgroup_getsockopt",
        CGROUP_SETSOCKOPT = 22 => "cgroup_setsockopt",
        TRACE_RAW_TP = 23 => "trace_raw_tp",
        TRACE_FENTRY = 24 => "trace_fentry",
        TRACE_FEXIT = 25 => "trace_fexit",
        MODIFY_RETURN = 26 => "modify_return",
        LSM_MAC = 27 => "lsm_mac",
        TRACE_ITER = 28 => "trace_iter",
        CGROUP_INET4_GETPEERNAME = 29 => "cgroup_inet4_getpeername",
        CGROUP_INET6_GETPEERNAME = 30 => "cgroup_inet6_getpeername",
        CGROUP_INET4_GETSOCKNAME = 31 => "cgroup_inet4_getsockname",
        CGROUP_INET6_GETSOCKNAME = 32 => "cgroup_inet6_getsockname",
        XDP_DEVMAP = 33 => "xdp_devmap",
        CGROUP_INET_SOCK_RELEASE = 34 => "cgroup_inet_sock_release",
        XDP_CPUMAP = 35 => "xdp_cpumap",
        SK_LOOKUP = 36 => "sk_lookup",
        XDP = 37 => "xdp",
        SK_SKB_VERDICT = 38 => "sk_skb_verdict",
        SK_REUSEPORT_SELECT = 39 => "sk_reuseport_select",
        SK_REUSEPORT_SELECT_OR_MIGRATE = 40 => "sk_reuseport_select_or_migrate",
        PERF_EVENT = 41 => "perf_event",
        TRACE_KPROBE_MULTI = 42 => "trace_kprobe_multi",
        LSM_CGROUP = 43 => "lsm_cgroup",
        STRUCT_OPS = 44 => "struct_ops",
        NETFILTER = 45 => "netfilter",
        TCX_INGRESS = 46 => "tcx_ingress",
        TCX_EGRESS = 47 => "tcx_egress",
        TRACE_UPROBE_MULTI = 48 => "trace_uprobe_multi",
        CGROUP_UNIX_CONNECT = 49 => "cgroup_unix_connect",
        CGROUP_UNIX_SENDMSG = 50 => "cgroup_unix_sendmsg",
        CGROUP_UNIX_RECVMSG = 51 => "cgroup_unix_recvmsg",
        CGROUP_UNIX_GETPEERNAME = 52 => "cgroup_unix_getpeername",
        CGROUP_UNIX_GETSOCKNAME = 53 => "cgroup_unix_getsockname",
        NETKIT_PRIMARY = 54 => "netkit_primary",
        NETKIT_PEER = 55 => "netkit_peer",
        TRACE_KPROBE_SESSION = 56 => "trace_kprobe_session",
        TRACE_UPROBE_SESSION = 57 => "trace_uprobe_session",
    }
}

uapi_enum! {
    /// `enum bpf_map_type`. RHASH is not in Linux 6.18; bpfvet gives it the
    /// next free number so it can be named in objects and on the CLI.
    MapType {
        UNSPEC = 0 => "unspec",
        HASH = 1 => "hash",
        ARRAY = 2 => "array",
        PROG_ARRAY = 3 => "prog_array",
        PERF_EVENT_ARRAY = 4 => "perf_event_array",
        PERCPU_HASH = 5 => "percpu_hash",
        PERCPU_ARRAY = 6 => "percpu_array",
        STACK_TRACE = 7 => "stack_trace",
        CGROUP_ARRAY = 8 => "cgroup_array",
        LRU_HASH = 9 => "lru_hash",
        LRU_PERCPU_HASH = 10 => "lru_percpu_hash",
        LPM_TRIE = 11 => "lpm_trie",
        ARRAY_OF_MAPS = 12 => "array_of_maps",
        HASH_OF_MAPS = 13 => "hash_of_maps",
        DEVMAP = 14 => "devmap",
        SOCKMAP = 15 => "sockmap",
        CPUMAP = 16 => "cpumap",
        XSKMAP = 17 => "xskmap",
        SOCKHASH = 18 => "sockhash",
        CGROUP_STORAGE = 19 => "cgroup_storage",
        REUSEPORT_SOCKARRAY = 20 => "reuseport_sockarray",
        PERCPU_CGROUP_STORAGE = 21 => "percpu_cgroup_storage",
        QUEUE = 22 => "queue",
        STACK = 23 => "stack",
        SK_STORAGE = 24 => "sk_storage",
        DEVMAP_HASH = 25 => "devmap_hash",
        STRUCT_OPS = 26 => "struct_ops",
        RINGBUF = 27 => "ringbuf",
        INODE_STORAGE = 28 => "inode_storage",
        TASK_STORAGE = 29 => "task_storage",
        BLOOM_FILTER = 30 => "bloom_filter",
        USER_RINGBUF = 31 => "user_ringbuf",
        CGRP_STORAGE = 32 => "cgrp_storage",
        ARENA = 33 => "arena",
        RHASH = 34 => "rhash",
    }
}

impl MapType {
    /// Maps built by array_map_alloc: the kernel records at creation
    /// whether the creating thread may bypass Spectre v1
    /// (map->bypass_spec_v1, from CAP_PERFMON); other map types leave it
    /// false whoever creates them.
    pub fn records_creator_spec_v1_bypass(self) -> bool {
        matches!(
            self,
            MapType::ARRAY
                | MapType::PERCPU_ARRAY
                | MapType::PROG_ARRAY
                | MapType::PERF_EVENT_ARRAY
                | MapType::CGROUP_ARRAY
                | MapType::ARRAY_OF_MAPS
        )
    }
}

uapi_enum! {
    /// `enum bpf_func_id`: the helper functions of Linux 6.18, ids 0..=211
    /// (helpers are frozen upstream; newer kernel functions are kfuncs). Names
    /// are the ones the verifier log prints (`bpf_` + the enum suffix).
    HelperId {
        UNSPEC = 0 => "bpf_unspec",
        MAP_LOOKUP_ELEM = 1 => "bpf_map_lookup_elem",
        MAP_UPDATE_ELEM = 2 => "bpf_map_update_elem",
        MAP_DELETE_ELEM = 3 => "bpf_map_delete_elem",
        PROBE_READ = 4 => "bpf_probe_read",
        KTIME_GET_NS = 5 => "bpf_ktime_get_ns",
        TRACE_PRINTK = 6 => "bpf_trace_printk",
        GET_PRANDOM_U32 = 7 => "bpf_get_prandom_u32",
        GET_SMP_PROCESSOR_ID = 8 => "bpf_get_smp_processor_id",
        SKB_STORE_BYTES = 9 => "bpf_skb_store_bytes",
        L3_CSUM_REPLACE = 10 => "bpf_l3_csum_replace",
        L4_CSUM_REPLACE = 11 => "bpf_l4_csum_replace",
        TAIL_CALL = 12 => "bpf_tail_call",
        CLONE_REDIRECT = 13 => "bpf_clone_redirect",
        GET_CURRENT_PID_TGID = 14 => "bpf_get_current_pid_tgid",
        GET_CURRENT_UID_GID = 15 => "bpf_get_current_uid_gid",
        GET_CURRENT_COMM = 16 => "bpf_get_current_comm",
        GET_CGROUP_CLASSID = 17 => "bpf_get_cgroup_classid",
        SKB_VLAN_PUSH = 18 => "bpf_skb_vlan_push",
        SKB_VLAN_POP = 19 => "bpf_skb_vlan_pop",
        SKB_GET_TUNNEL_KEY = 20 => "bpf_skb_get_tunnel_key",
        SKB_SET_TUNNEL_KEY = 21 => "bpf_skb_set_tunnel_key",
        PERF_EVENT_READ = 22 => "bpf_perf_event_read",
        REDIRECT = 23 => "bpf_redirect",
        GET_ROUTE_REALM = 24 => "bpf_get_route_realm",
        PERF_EVENT_OUTPUT = 25 => "bpf_perf_event_output",
        SKB_LOAD_BYTES = 26 => "bpf_skb_load_bytes",
        GET_STACKID = 27 => "bpf_get_stackid",
        CSUM_DIFF = 28 => "bpf_csum_diff",
        SKB_GET_TUNNEL_OPT = 29 => "bpf_skb_get_tunnel_opt",
        SKB_SET_TUNNEL_OPT = 30 => "bpf_skb_set_tunnel_opt",
        SKB_CHANGE_PROTO = 31 => "bpf_skb_change_proto",
        SKB_CHANGE_TYPE = 32 => "bpf_skb_change_type",
        SKB_UNDER_CGROUP = 33 => "bpf_skb_under_cgroup",
        GET_HASH_RECALC = 34 => "bpf_get_hash_recalc",
        GET_CURRENT_TASK = 35 => "bpf_get_current_task",
        PROBE_WRITE_USER = 36 => "bpf_probe_write_user",
        CURRENT_TASK_UNDER_CGROUP = 37 => "bpf_current_task_under_cgroup",
        SKB_CHANGE_TAIL = 38 => "bpf_skb_change_tail",
        SKB_PULL_DATA = 39 => "bpf_skb_pull_data",
        CSUM_UPDATE = 40 => "bpf_csum_update",
        SET_HASH_INVALID = 41 => "bpf_set_hash_invalid",
        GET_NUMA_NODE_ID = 42 => "bpf_get_numa_node_id",
        SKB_CHANGE_HEAD = 43 => "bpf_skb_change_head",
        XDP_ADJUST_HEAD = 44 => "bpf_xdp_adjust_head",
        PROBE_READ_STR = 45 => "bpf_probe_read_str",
        GET_SOCKET_COOKIE = 46 => "bpf_get_socket_cookie",
        GET_SOCKET_UID = 47 => "bpf_get_socket_uid",
        SET_HASH = 48 => "bpf_set_hash",
        SETSOCKOPT = 49 => "bpf_setsockopt",
        SKB_ADJUST_ROOM = 50 => "bpf_skb_adjust_room",
        REDIRECT_MAP = 51 => "bpf_redirect_map",
        SK_REDIRECT_MAP = 52 => "bpf_sk_redirect_map",
        SOCK_MAP_UPDATE = 53 => "bpf_sock_map_update",
        XDP_ADJUST_META = 54 => "bpf_xdp_adjust_meta",
        PERF_EVENT_READ_VALUE = 55 => "bpf_perf_event_read_value",
        PERF_PROG_READ_VALUE = 56 => "bpf_perf_prog_read_value",
        GETSOCKOPT = 57 => "bpf_getsockopt",
        OVERRIDE_RETURN = 58 => "bpf_override_return",
        SOCK_OPS_CB_FLAGS_SET = 59 => "bpf_sock_ops_cb_flags_set",
        MSG_REDIRECT_MAP = 60 => "bpf_msg_redirect_map",
        MSG_APPLY_BYTES = 61 => "bpf_msg_apply_bytes",
        MSG_CORK_BYTES = 62 => "bpf_msg_cork_bytes",
        MSG_PULL_DATA = 63 => "bpf_msg_pull_data",
        BIND = 64 => "bpf_bind",
        XDP_ADJUST_TAIL = 65 => "bpf_xdp_adjust_tail",
        SKB_GET_XFRM_STATE = 66 => "bpf_skb_get_xfrm_state",
        GET_STACK = 67 => "bpf_get_stack",
        SKB_LOAD_BYTES_RELATIVE = 68 => "bpf_skb_load_bytes_relative",
        FIB_LOOKUP = 69 => "bpf_fib_lookup",
        SOCK_HASH_UPDATE = 70 => "bpf_sock_hash_update",
        MSG_REDIRECT_HASH = 71 => "bpf_msg_redirect_hash",
        SK_REDIRECT_HASH = 72 => "bpf_sk_redirect_hash",
        LWT_PUSH_ENCAP = 73 => "bpf_lwt_push_encap",
        LWT_SEG6_STORE_BYTES = 74 => "bpf_lwt_seg6_store_bytes",
        LWT_SEG6_ADJUST_SRH = 75 => "bpf_lwt_seg6_adjust_srh",
        LWT_SEG6_ACTION = 76 => "bpf_lwt_seg6_action",
        RC_REPEAT = 77 => "bpf_rc_repeat",
        RC_KEYDOWN = 78 => "bpf_rc_keydown",
        SKB_CGROUP_ID = 79 => "bpf_skb_cgroup_id",
        GET_CURRENT_CGROUP_ID = 80 => "bpf_get_current_cgroup_id",
        GET_LOCAL_STORAGE = 81 => "bpf_get_local_storage",
        SK_SELECT_REUSEPORT = 82 => "bpf_sk_select_reuseport",
        SKB_ANCESTOR_CGROUP_ID = 83 => "bpf_skb_ancestor_cgroup_id",
        SK_LOOKUP_TCP = 84 => "bpf_sk_lookup_tcp",
        SK_LOOKUP_UDP = 85 => "bpf_sk_lookup_udp",
        SK_RELEASE = 86 => "bpf_sk_release",
        MAP_PUSH_ELEM = 87 => "bpf_map_push_elem",
        MAP_POP_ELEM = 88 => "bpf_map_pop_elem",
        MAP_PEEK_ELEM = 89 => "bpf_map_peek_elem",
        MSG_PUSH_DATA = 90 => "bpf_msg_push_data",
        MSG_POP_DATA = 91 => "bpf_msg_pop_data",
        RC_POINTER_REL = 92 => "bpf_rc_pointer_rel",
        SPIN_LOCK = 93 => "bpf_spin_lock",
        SPIN_UNLOCK = 94 => "bpf_spin_unlock",
        SK_FULLSOCK = 95 => "bpf_sk_fullsock",
        TCP_SOCK = 96 => "bpf_tcp_sock",
        SKB_ECN_SET_CE = 97 => "bpf_skb_ecn_set_ce",
        GET_LISTENER_SOCK = 98 => "bpf_get_listener_sock",
        SKC_LOOKUP_TCP = 99 => "bpf_skc_lookup_tcp",
        TCP_CHECK_SYNCOOKIE = 100 => "bpf_tcp_check_syncookie",
        SYSCTL_GET_NAME = 101 => "bpf_sysctl_get_name",
        SYSCTL_GET_CURRENT_VALUE = 102 => "bpf_sysctl_get_current_value",
        SYSCTL_GET_NEW_VALUE = 103 => "bpf_sysctl_get_new_value",
        SYSCTL_SET_NEW_VALUE = 104 => "bpf_sysctl_set_new_value",
        STRTOL = 105 => "bpf_strtol",
        STRTOUL = 106 => "bpf_strtoul",
        SK_STORAGE_GET = 107 => "bpf_sk_storage_get",
        SK_STORAGE_DELETE = 108 => "bpf_sk_storage_delete",
        SEND_SIGNAL = 109 => "bpf_send_signal",
        TCP_GEN_SYNCOOKIE = 110 => "bpf_tcp_gen_syncookie",
        SKB_OUTPUT = 111 => "bpf_skb_output",
        PROBE_READ_USER = 112 => "bpf_probe_read_user",
        PROBE_READ_KERNEL = 113 => "bpf_probe_read_kernel",
        PROBE_READ_USER_STR = 114 => "bpf_probe_read_user_str",
        PROBE_READ_KERNEL_STR = 115 => "bpf_probe_read_kernel_str",
        TCP_SEND_ACK = 116 => "bpf_tcp_send_ack",
        SEND_SIGNAL_THREAD = 117 => "bpf_send_signal_thread",
        JIFFIES64 = 118 => "bpf_jiffies64",
        READ_BRANCH_RECORDS = 119 => "bpf_read_branch_records",
        GET_NS_CURRENT_PID_TGID = 120 => "bpf_get_ns_current_pid_tgid",
        XDP_OUTPUT = 121 => "bpf_xdp_output",
        GET_NETNS_COOKIE = 122 => "bpf_get_netns_cookie",
        GET_CURRENT_ANCESTOR_CGROUP_ID = 123 => "bpf_get_current_ancestor_cgroup_id",
        SK_ASSIGN = 124 => "bpf_sk_assign",
        KTIME_GET_BOOT_NS = 125 => "bpf_ktime_get_boot_ns",
        SEQ_PRINTF = 126 => "bpf_seq_printf",
        SEQ_WRITE = 127 => "bpf_seq_write",
        SK_CGROUP_ID = 128 => "bpf_sk_cgroup_id",
        SK_ANCESTOR_CGROUP_ID = 129 => "bpf_sk_ancestor_cgroup_id",
        RINGBUF_OUTPUT = 130 => "bpf_ringbuf_output",
        RINGBUF_RESERVE = 131 => "bpf_ringbuf_reserve",
        RINGBUF_SUBMIT = 132 => "bpf_ringbuf_submit",
        RINGBUF_DISCARD = 133 => "bpf_ringbuf_discard",
        RINGBUF_QUERY = 134 => "bpf_ringbuf_query",
        CSUM_LEVEL = 135 => "bpf_csum_level",
        SKC_TO_TCP6_SOCK = 136 => "bpf_skc_to_tcp6_sock",
        SKC_TO_TCP_SOCK = 137 => "bpf_skc_to_tcp_sock",
        SKC_TO_TCP_TIMEWAIT_SOCK = 138 => "bpf_skc_to_tcp_timewait_sock",
        SKC_TO_TCP_REQUEST_SOCK = 139 => "bpf_skc_to_tcp_request_sock",
        SKC_TO_UDP6_SOCK = 140 => "bpf_skc_to_udp6_sock",
        GET_TASK_STACK = 141 => "bpf_get_task_stack",
        LOAD_HDR_OPT = 142 => "bpf_load_hdr_opt",
        STORE_HDR_OPT = 143 => "bpf_store_hdr_opt",
        RESERVE_HDR_OPT = 144 => "bpf_reserve_hdr_opt",
        INODE_STORAGE_GET = 145 => "bpf_inode_storage_get",
        INODE_STORAGE_DELETE = 146 => "bpf_inode_storage_delete",
        D_PATH = 147 => "bpf_d_path",
        COPY_FROM_USER = 148 => "bpf_copy_from_user",
        SNPRINTF_BTF = 149 => "bpf_snprintf_btf",
        SEQ_PRINTF_BTF = 150 => "bpf_seq_printf_btf",
        SKB_CGROUP_CLASSID = 151 => "bpf_skb_cgroup_classid",
        REDIRECT_NEIGH = 152 => "bpf_redirect_neigh",
        PER_CPU_PTR = 153 => "bpf_per_cpu_ptr",
        THIS_CPU_PTR = 154 => "bpf_this_cpu_ptr",
        REDIRECT_PEER = 155 => "bpf_redirect_peer",
        TASK_STORAGE_GET = 156 => "bpf_task_storage_get",
        TASK_STORAGE_DELETE = 157 => "bpf_task_storage_delete",
        GET_CURRENT_TASK_BTF = 158 => "bpf_get_current_task_btf",
        BPRM_OPTS_SET = 159 => "bpf_bprm_opts_set",
        KTIME_GET_COARSE_NS = 160 => "bpf_ktime_get_coarse_ns",
        IMA_INODE_HASH = 161 => "bpf_ima_inode_hash",
        SOCK_FROM_FILE = 162 => "bpf_sock_from_file",
        CHECK_MTU = 163 => "bpf_check_mtu",
        FOR_EACH_MAP_ELEM = 164 => "bpf_for_each_map_elem",
        SNPRINTF = 165 => "bpf_snprintf",
        SYS_BPF = 166 => "bpf_sys_bpf",
        BTF_FIND_BY_NAME_KIND = 167 => "bpf_btf_find_by_name_kind",
        SYS_CLOSE = 168 => "bpf_sys_close",
        TIMER_INIT = 169 => "bpf_timer_init",
        TIMER_SET_CALLBACK = 170 => "bpf_timer_set_callback",
        TIMER_START = 171 => "bpf_timer_start",
        TIMER_CANCEL = 172 => "bpf_timer_cancel",
        GET_FUNC_IP = 173 => "bpf_get_func_ip",
        GET_ATTACH_COOKIE = 174 => "bpf_get_attach_cookie",
        TASK_PT_REGS = 175 => "bpf_task_pt_regs",
        GET_BRANCH_SNAPSHOT = 176 => "bpf_get_branch_snapshot",
        TRACE_VPRINTK = 177 => "bpf_trace_vprintk",
        SKC_TO_UNIX_SOCK = 178 => "bpf_skc_to_unix_sock",
        KALLSYMS_LOOKUP_NAME = 179 => "bpf_kallsyms_lookup_name",
        FIND_VMA = 180 => "bpf_find_vma",
        LOOP = 181 => "bpf_loop",
        STRNCMP = 182 => "bpf_strncmp",
        GET_FUNC_ARG = 183 => "bpf_get_func_arg",
        GET_FUNC_RET = 184 => "bpf_get_func_ret",
        GET_FUNC_ARG_CNT = 185 => "bpf_get_func_arg_cnt",
        GET_RETVAL = 186 => "bpf_get_retval",
        SET_RETVAL = 187 => "bpf_set_retval",
        XDP_GET_BUFF_LEN = 188 => "bpf_xdp_get_buff_len",
        XDP_LOAD_BYTES = 189 => "bpf_xdp_load_bytes",
        XDP_STORE_BYTES = 190 => "bpf_xdp_store_bytes",
        COPY_FROM_USER_TASK = 191 => "bpf_copy_from_user_task",
        SKB_SET_TSTAMP = 192 => "bpf_skb_set_tstamp",
        IMA_FILE_HASH = 193 => "bpf_ima_file_hash",
        KPTR_XCHG = 194 => "bpf_kptr_xchg",
        MAP_LOOKUP_PERCPU_ELEM = 195 => "bpf_map_lookup_percpu_elem",
        SKC_TO_MPTCP_SOCK = 196 => "bpf_skc_to_mptcp_sock",
        DYNPTR_FROM_MEM = 197 => "bpf_dynptr_from_mem",
        RINGBUF_RESERVE_DYNPTR = 198 => "bpf_ringbuf_reserve_dynptr",
        RINGBUF_SUBMIT_DYNPTR = 199 => "bpf_ringbuf_submit_dynptr",
        RINGBUF_DISCARD_DYNPTR = 200 => "bpf_ringbuf_discard_dynptr",
        DYNPTR_READ = 201 => "bpf_dynptr_read",
        DYNPTR_WRITE = 202 => "bpf_dynptr_write",
        DYNPTR_DATA = 203 => "bpf_dynptr_data",
        TCP_RAW_GEN_SYNCOOKIE_IPV4 = 204 => "bpf_tcp_raw_gen_syncookie_ipv4",
        TCP_RAW_GEN_SYNCOOKIE_IPV6 = 205 => "bpf_tcp_raw_gen_syncookie_ipv6",
        TCP_RAW_CHECK_SYNCOOKIE_IPV4 = 206 => "bpf_tcp_raw_check_syncookie_ipv4",
        TCP_RAW_CHECK_SYNCOOKIE_IPV6 = 207 => "bpf_tcp_raw_check_syncookie_ipv6",
        KTIME_GET_TAI_NS = 208 => "bpf_ktime_get_tai_ns",
        USER_RINGBUF_DRAIN = 209 => "bpf_user_ringbuf_drain",
        CGRP_STORAGE_GET = 210 => "bpf_cgrp_storage_get",
        CGRP_STORAGE_DELETE = 211 => "bpf_cgrp_storage_delete",
    }
}

// Program flags (BPF_PROG_LOAD prog_flags).
pub const BPF_F_STRICT_ALIGNMENT: u32 = 1 << 0;
pub const BPF_F_ANY_ALIGNMENT: u32 = 1 << 1;
pub const BPF_F_TEST_RND_HI32: u32 = 1 << 2;
pub const BPF_F_TEST_STATE_FREQ: u32 = 1 << 3;
pub const BPF_F_SLEEPABLE: u32 = 1 << 4;
pub const BPF_F_XDP_HAS_FRAGS: u32 = 1 << 5;
pub const BPF_F_XDP_DEV_BOUND_ONLY: u32 = 1 << 6;
pub const BPF_F_TEST_REG_INVARIANTS: u32 = 1 << 7;

/// Every program flag by its UAPI name.
pub const PROG_FLAGS: &[(&str, u32)] = &[
    ("BPF_F_STRICT_ALIGNMENT", BPF_F_STRICT_ALIGNMENT),
    ("BPF_F_ANY_ALIGNMENT", BPF_F_ANY_ALIGNMENT),
    ("BPF_F_TEST_RND_HI32", BPF_F_TEST_RND_HI32),
    ("BPF_F_TEST_STATE_FREQ", BPF_F_TEST_STATE_FREQ),
    ("BPF_F_SLEEPABLE", BPF_F_SLEEPABLE),
    ("BPF_F_XDP_HAS_FRAGS", BPF_F_XDP_HAS_FRAGS),
    ("BPF_F_XDP_DEV_BOUND_ONLY", BPF_F_XDP_DEV_BOUND_ONLY),
    ("BPF_F_TEST_REG_INVARIANTS", BPF_F_TEST_REG_INVARIANTS),
];

/// Parses program flags written as UAPI names or numbers joined by `|`
/// or `,` (`BPF_F_ANY_ALIGNMENT|BPF_F_TEST_STATE_FREQ`, `0x8`).
pub fn parse_prog_flags(text: &str) -> Result<u32, String> {
    let mut flags = 0;
    for word in text
        .split(['|', ','])
        .map(str::trim)
        .filter(|w| !w.is_empty())
    {
        flags |= match PROG_FLAGS.iter().find(|(name, _)| *name == word) {
            Some((_, bit)) => *bit,
            None => parse_number(word).ok_or_else(|| {
                format!("unknown program flag '{word}' (a BPF_F_* name or a number)")
            })?,
        };
    }
    Ok(flags)
}

fn parse_number(word: &str) -> Option<u32> {
    match word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => word.parse().ok(),
    }
}

// Map flags (BPF_MAP_CREATE map_flags).
pub const BPF_F_NO_PREALLOC: u32 = 1 << 0;
pub const BPF_F_NO_COMMON_LRU: u32 = 1 << 1;
pub const BPF_F_NUMA_NODE: u32 = 1 << 2;
pub const BPF_F_RDONLY: u32 = 1 << 3;
pub const BPF_F_WRONLY: u32 = 1 << 4;
pub const BPF_F_STACK_BUILD_ID: u32 = 1 << 5;
pub const BPF_F_ZERO_SEED: u32 = 1 << 6;
pub const BPF_F_RDONLY_PROG: u32 = 1 << 7;
pub const BPF_F_WRONLY_PROG: u32 = 1 << 8;
pub const BPF_F_CLONE: u32 = 1 << 9;
pub const BPF_F_MMAPABLE: u32 = 1 << 10;
pub const BPF_F_PRESERVE_ELEMS: u32 = 1 << 11;
pub const BPF_F_INNER_MAP: u32 = 1 << 12;
pub const BPF_F_LINK: u32 = 1 << 13;
pub const BPF_F_PATH_FD: u32 = 1 << 14;
pub const BPF_F_VTYPE_BTF_OBJ_FD: u32 = 1 << 15;
pub const BPF_F_TOKEN_FD: u32 = 1 << 16;
pub const BPF_F_SEGV_ON_FAULT: u32 = 1 << 17;
pub const BPF_F_NO_USER_CONV: u32 = 1 << 18;

// Map update flags.
pub const BPF_ANY: u64 = 0;
pub const BPF_NOEXIST: u64 = 1;
pub const BPF_EXIST: u64 = 2;
pub const BPF_F_LOCK: u64 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for t in ProgType::ALL {
            assert_eq!(ProgType::from_name(t.name().unwrap()), Some(*t));
        }
        for t in AttachType::ALL {
            assert_eq!(AttachType::from_name(t.name().unwrap()), Some(*t));
        }
        for t in MapType::ALL {
            assert_eq!(MapType::from_name(t.name().unwrap()), Some(*t));
        }
        // Numbers are dense from 0 as in the UAPI header.
        for (i, t) in MapType::ALL.iter().enumerate() {
            assert_eq!(t.0 as usize, i);
        }
        for (i, t) in ProgType::ALL.iter().enumerate() {
            assert_eq!(t.0 as usize, i);
        }
        for (i, t) in AttachType::ALL.iter().enumerate() {
            assert_eq!(t.0 as usize, i);
        }
        for (i, t) in HelperId::ALL.iter().enumerate() {
            assert_eq!(t.0 as usize, i);
            assert_eq!(HelperId::from_name(t.name().unwrap()), Some(*t));
        }
    }

    #[test]
    fn helper_table_spans_linux_6_18() {
        assert_eq!(HelperId::ALL.len(), 212);
        assert_eq!(HelperId(1).name(), Some("bpf_map_lookup_elem"));
        assert_eq!(HelperId::CGRP_STORAGE_DELETE.0, 211);
        assert_eq!(HelperId(212).name(), None);
    }

    #[test]
    fn unknown_numbers_display_as_unknown() {
        assert_eq!(ProgType(999).to_string(), "unknown(999)");
        assert_eq!(MapType::HASH.to_string(), "hash");
    }

    #[test]
    fn prog_flags_parse_from_names_and_numbers() {
        assert_eq!(
            parse_prog_flags("BPF_F_ANY_ALIGNMENT|BPF_F_TEST_STATE_FREQ"),
            Ok(BPF_F_ANY_ALIGNMENT | BPF_F_TEST_STATE_FREQ)
        );
        assert_eq!(
            parse_prog_flags("0x80, 1"),
            Ok(BPF_F_TEST_REG_INVARIANTS | 1)
        );
        assert_eq!(parse_prog_flags(""), Ok(0));
        assert!(parse_prog_flags("BPF_F_NOPE").is_err());
    }
}
