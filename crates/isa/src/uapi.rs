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
    }

    #[test]
    fn unknown_numbers_display_as_unknown() {
        assert_eq!(ProgType(999).to_string(), "unknown(999)");
        assert_eq!(MapType::HASH.to_string(), "hash");
    }
}
