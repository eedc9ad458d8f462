//! Offsets and sizes of the user-visible context structs (UAPI
//! include/uapi/linux/bpf.h, checked against the host's vmlinux BTF).
//! Each field is (offset, length in bytes).

pub type Field = (u32, u32);

// struct __sk_buff
pub const SK_BUFF_SIZE: u32 = 192;
pub const SKB_MARK: Field = (8, 4);
pub const SKB_QUEUE_MAPPING: Field = (12, 4);
pub const SKB_PRIORITY: Field = (32, 4);
pub const SKB_TC_INDEX: Field = (44, 4);
pub const SKB_CB: Field = (48, 20);
pub const SKB_TC_CLASSID: Field = (72, 4);
pub const SKB_DATA: Field = (76, 4);
pub const SKB_DATA_END: Field = (80, 4);
/// `family` up to and including `local_port`.
pub const SKB_FAMILY_TO_LOCAL_PORT: Field = (88, 52);
pub const SKB_REMOTE_IP4: Field = (92, 4);
pub const SKB_LOCAL_IP4: Field = (96, 4);
pub const SKB_REMOTE_IP6: Field = (100, 16);
pub const SKB_LOCAL_IP6: Field = (116, 16);
pub const SKB_DATA_META: Field = (140, 4);
pub const SKB_FLOW_KEYS: Field = (144, 8);
pub const SKB_TSTAMP: Field = (152, 8);
pub const SKB_WIRE_LEN: Field = (160, 4);
pub const SKB_SK: Field = (168, 8);
pub const SKB_TSTAMP_TYPE: u32 = 180;
/// Padding between `tstamp_type` and `hwtstamp`.
pub const SKB_PAD_AFTER_TSTAMP_TYPE: Field = (181, 3);
pub const SKB_HWTSTAMP: Field = (184, 8);

// struct xdp_md
pub const XDP_MD_SIZE: u32 = 24;
pub const XDP_DATA: u32 = 0;
pub const XDP_DATA_END: u32 = 4;
pub const XDP_DATA_META: u32 = 8;
pub const XDP_EGRESS_IFINDEX: u32 = 20;

// struct bpf_sock
pub const BPF_SOCK_SIZE: u32 = 80;
pub const SOCK_BOUND_DEV_IF: u32 = 0;
pub const SOCK_FAMILY: u32 = 4;
pub const SOCK_TYPE: u32 = 8;
pub const SOCK_PROTOCOL: u32 = 12;
pub const SOCK_MARK: u32 = 16;
pub const SOCK_PRIORITY: u32 = 20;
pub const SOCK_SRC_IP4: Field = (24, 4);
pub const SOCK_SRC_IP6: Field = (28, 16);
pub const SOCK_SRC_PORT: Field = (44, 4);
pub const SOCK_DST_PORT: Field = (48, 2);
/// Padding after the 2-byte `dst_port`.
pub const SOCK_DST_PORT_PAD: Field = (50, 2);
pub const SOCK_DST_IP4: Field = (52, 4);
pub const SOCK_DST_IP6: Field = (56, 16);
pub const SOCK_STATE: u32 = 72;
pub const SOCK_RX_QUEUE_MAPPING: u32 = 76;

// struct bpf_tcp_sock (reached through bpf_tcp_sock(), never a ctx)
/// offsetofend(icsk_retransmits): the last field the kernel lets programs read.
pub const TCP_SOCK_END: u32 = 112;
pub const TCP_SOCK_BYTES_RECEIVED: u32 = 80;
pub const TCP_SOCK_BYTES_ACKED: u32 = 88;

// struct bpf_sock_addr
pub const SOCK_ADDR_SIZE: u32 = 72;
pub const SA_USER_FAMILY: Field = (0, 4);
pub const SA_USER_IP4: Field = (4, 4);
pub const SA_USER_IP6: Field = (8, 16);
pub const SA_USER_PORT: Field = (24, 4);
pub const SA_FAMILY: Field = (28, 4);
pub const SA_TYPE: Field = (32, 4);
pub const SA_PROTOCOL: Field = (36, 4);
pub const SA_MSG_SRC_IP4: Field = (40, 4);
pub const SA_MSG_SRC_IP6: Field = (44, 16);
pub const SA_SK: Field = (64, 8);

// struct bpf_sock_ops
pub const SOCK_OPS_SIZE: u32 = 224;
pub const SO_REPLY: u32 = 4;
pub const SO_SK_TXHASH: u32 = 164;
/// `bytes_received` and `bytes_acked`, both u64.
pub const SO_BYTES: Field = (168, 16);
pub const SO_SK: Field = (184, 8);
pub const SO_SKB_DATA: Field = (192, 8);
pub const SO_SKB_DATA_END: Field = (200, 8);
pub const SO_SKB_TCP_FLAGS: u32 = 212;
pub const SO_SKB_HWTSTAMP: Field = (216, 8);

// struct sk_msg_md
pub const SK_MSG_MD_SIZE: u32 = 80;
pub const MSG_DATA: Field = (0, 8);
pub const MSG_DATA_END: Field = (8, 8);
/// `family` through `size`: all u32 fields.
pub const MSG_SCALARS: Field = (16, 56);
pub const MSG_SK: Field = (72, 8);

// struct sk_reuseport_md
pub const SK_REUSEPORT_MD_SIZE: u32 = 56;
pub const RP_DATA: u32 = 0;
pub const RP_DATA_END: u32 = 8;
pub const RP_LEN: Field = (16, 4);
pub const RP_ETH_PROTOCOL: Field = (20, 4);
pub const RP_IP_PROTOCOL: Field = (24, 4);
pub const RP_BIND_INANY: Field = (28, 4);
pub const RP_HASH: u32 = 32;
pub const RP_SK: u32 = 40;
pub const RP_MIGRATING_SK: u32 = 48;

// struct bpf_sk_lookup
pub const SK_LOOKUP_SIZE: u32 = 72;
pub const SL_SK: Field = (0, 8);
pub const SL_FAMILY: Field = (8, 4);
pub const SL_PROTOCOL: Field = (12, 4);
pub const SL_REMOTE_IP4: Field = (16, 4);
pub const SL_REMOTE_IP6: Field = (20, 16);
pub const SL_REMOTE_PORT: Field = (36, 2);
/// Zero padding after the 2-byte `remote_port`.
pub const SL_REMOTE_PORT_PAD: Field = (38, 2);
pub const SL_LOCAL_IP4: Field = (40, 4);
pub const SL_LOCAL_IP6: Field = (44, 16);
pub const SL_LOCAL_PORT: Field = (60, 4);
pub const SL_INGRESS_IFINDEX: Field = (64, 4);

// struct bpf_cgroup_dev_ctx, bpf_sysctl, bpf_sockopt
pub const CGROUP_DEV_CTX_SIZE: u32 = 12;
pub const DEV_ACCESS_TYPE: Field = (0, 4);
pub const SYSCTL_SIZE: u32 = 8;
pub const SYSCTL_WRITE: Field = (0, 4);
pub const SYSCTL_FILE_POS: Field = (4, 4);
pub const SOCKOPT_SIZE: u32 = 40;
pub const SOCKOPT_SK: Field = (0, 8);
pub const SOCKOPT_OPTVAL: Field = (8, 8);
pub const SOCKOPT_OPTVAL_END: Field = (16, 8);
pub const SOCKOPT_LEVEL: u32 = 24;
pub const SOCKOPT_OPTNAME: u32 = 28;
pub const SOCKOPT_OPTLEN: u32 = 32;
pub const SOCKOPT_RETVAL: Field = (36, 4);

// Tracing contexts.
/// x86-64 `struct pt_regs`.
pub const PT_REGS_SIZE: u32 = 168;
/// `struct bpf_perf_event_data`: pt_regs, then two u64.
pub const PERF_EVENT_DATA_SIZE: u32 = 184;
pub const PE_SAMPLE_PERIOD: Field = (168, 8);
pub const PE_ADDR: Field = (176, 8);
/// Tracepoint records: the first 8 bytes hold a hidden pointer, and a
/// record is at most PERF_MAX_TRACE_SIZE.
pub const TP_HIDDEN: u32 = 8;
pub const PERF_MAX_TRACE_SIZE: u32 = 8192;
/// MAX_BPF_FUNC_ARGS u64 arguments.
pub const RAW_TP_ARGS_SIZE: u32 = 8 * 12;
/// `struct bpf_nf_ctx`: two pointers.
pub const NF_CTX_SIZE: u32 = 16;
pub const NF_STATE: Field = (0, 8);
pub const NF_SKB: Field = (8, 8);
/// Syscall programs take any ctx up to U16_MAX (exclusive) bytes.
pub const SYSCALL_CTX_MAX: u32 = 65535;
