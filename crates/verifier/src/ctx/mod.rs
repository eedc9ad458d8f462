//! Context access rules per program type: which (offset, size) loads and
//! stores through the ctx pointer the Linux 6.18 verifier accepts, and what
//! a load yields (the `is_valid_access` callbacks of net/core/filter.c,
//! kernel/trace/bpf_trace.c, kernel/bpf/cgroup.c, ...). Also the ctx size
//! per type and the return-value rule of `check_return_code`.
//!
//! Entry points: [`check_ctx_access`] / [`check_ctx_access_with`],
//! [`ctx_size`], [`retval::return_range`], [`packet`] for direct packet
//! access, and [`btf_args::btf_ctx_access`] for BTF-typed contexts (tp_btf,
//! iterators, fentry/fexit, LSM) once the attach target is known.

pub mod btf_args;
mod cgroup;
mod layout;
pub mod packet;
pub mod retval;
mod skb;
mod sock;
mod tracing;

pub use retval::{return_range, return_rule, ReturnRule};
pub use sock::{sock_ptr_load_ok, SockPtr};

use bpfvet_isa::uapi::{AttachType, ProgType};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Access {
    Read,
    Write,
}

/// What a ctx load puts in the destination register.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CtxValue {
    /// An unknown scalar (a narrow load of a wider field is still a scalar).
    Scalar,
    PacketStart,
    PacketEnd,
    PacketMeta,
    FlowKeys,
    /// `PTR_TO_SOCKET`.
    Sock,
    /// `PTR_TO_SOCKET_OR_NULL`: gets a fresh id for null checks.
    SockOrNull,
    /// `PTR_TO_SOCK_COMMON_OR_NULL`.
    SockCommonOrNull,
    /// `PTR_TO_TP_BUFFER` (raw_tracepoint_writable's first argument).
    TpBuffer,
    /// Tracing/LSM/iter/struct_ops context: argument `off / 8` of the
    /// attach target; [`btf_args::btf_ctx_access`] types it from BTF.
    BtfArg {
        arg: u32,
    },
    /// A trusted `PTR_TO_BTF_ID` of this vmlinux struct (netfilter ctx).
    BtfStruct(&'static str),
}

impl CtxValue {
    pub fn is_pointer(self) -> bool {
        !matches!(self, CtxValue::Scalar)
    }
}

/// The verdict on an accepted ctx access.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CtxAccess {
    pub value: CtxValue,
    /// The real size of the field when the kernel allows narrower loads of
    /// it (`ctx_field_size`), 0 when only the access size itself is valid.
    pub ctx_field_size: u32,
}

impl CtxAccess {
    /// True for a load narrower than the field it reads.
    pub fn is_narrow(&self, size: u32) -> bool {
        self.ctx_field_size != 0 && size < self.ctx_field_size
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CtxError {
    #[error("invalid bpf_context access off={off} size={size}")]
    Invalid { off: i32, size: u32 },
    /// The rules for this program type depend on something not modelled
    /// here (struct_ops and ext take their target's rules).
    #[error("ctx access rules of program type {0} are not modelled")]
    Unmodelled(ProgType),
}

/// Every input the kernel's `is_valid_access` callbacks look at.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CtxQuery {
    pub prog_type: ProgType,
    pub expected_attach_type: Option<AttachType>,
    /// Offset from the ctx pointer (instruction offset plus the register's
    /// fixed offset).
    pub off: i32,
    /// Access size in bytes: 1, 2, 4 or 8.
    pub size: u32,
    pub access: Access,
    /// A sign-extending load (BPF_MEMSX).
    pub ldsx: bool,
    /// The loader has CAP_BPF (some fields are hidden without it).
    pub bpf_capable: bool,
}

/// [`check_ctx_access_with`] for a plain (not sign-extending) access.
pub fn check_ctx_access(
    prog_type: ProgType,
    expected_attach_type: Option<AttachType>,
    off: i32,
    size: u32,
    access: Access,
) -> Result<CtxAccess, CtxError> {
    check_ctx_access_with(&CtxQuery {
        prog_type,
        expected_attach_type,
        off,
        size,
        access,
        ldsx: false,
        bpf_capable: true,
    })
}

/// Whether the kernel accepts this ctx access, and what a load yields; the
/// error is the kernel's message for a rejected one.
pub fn check_ctx_access_with(q: &CtxQuery) -> Result<CtxAccess, CtxError> {
    if !matches!(q.size, 1 | 2 | 4 | 8) {
        return Err(invalid(q));
    }
    let a = Q {
        off: q.off as i64,
        size: q.size as i64,
        write: q.access == Access::Write,
        eat: effective_attach_type(q.prog_type, q.expected_attach_type),
        ldsx: q.ldsx,
        bpf_capable: q.bpf_capable,
    };
    use ProgType as P;
    let grant = match q.prog_type {
        P::SOCKET_FILTER => skb::socket_filter(&a),
        P::SCHED_CLS | P::SCHED_ACT => skb::tc(&a),
        P::CGROUP_SKB => skb::cgroup_skb(&a),
        P::LWT_IN | P::LWT_OUT | P::LWT_XMIT | P::LWT_SEG6LOCAL => skb::lwt(&a),
        P::SK_SKB => skb::sk_skb(&a),
        P::FLOW_DISSECTOR => skb::flow_dissector(&a),
        P::XDP => sock::xdp(&a),
        P::CGROUP_SOCK => sock::cgroup_sock(&a),
        P::CGROUP_SOCK_ADDR => sock::sock_addr(&a),
        P::SOCK_OPS => sock::sock_ops(&a),
        P::SK_MSG => sock::sk_msg(&a),
        P::SK_REUSEPORT => sock::sk_reuseport(&a),
        P::SK_LOOKUP => sock::sk_lookup(&a),
        P::CGROUP_DEVICE => cgroup::device(&a),
        P::CGROUP_SYSCTL => cgroup::sysctl(&a),
        P::CGROUP_SOCKOPT => cgroup::sockopt(&a),
        P::KPROBE => tracing::kprobe(&a),
        P::TRACEPOINT => tracing::tracepoint(&a),
        P::PERF_EVENT => tracing::perf_event(&a),
        P::RAW_TRACEPOINT => tracing::raw_tp(&a),
        P::RAW_TRACEPOINT_WRITABLE => tracing::raw_tp_writable(&a),
        P::TRACING | P::STRUCT_OPS => tracing::btf_args(&a),
        P::LSM => tracing::lsm_args(&a),
        P::LIRC_MODE2 => tracing::lirc_mode2(&a),
        P::SYSCALL => tracing::syscall(&a),
        P::NETFILTER => tracing::netfilter(&a),
        other => return Err(CtxError::Unmodelled(other)),
    };
    grant.ok_or_else(|| invalid(q))
}

fn invalid(q: &CtxQuery) -> CtxError {
    CtxError::Invalid {
        off: q.off,
        size: q.size,
    }
}

/// The attach type the kernel stores for a program: user space passing 0
/// gets the type's default for CGROUP_SOCK and SK_REUSEPORT
/// (`bpf_prog_load_fixup_attach_type`), and 0 stays 0 elsewhere.
pub fn effective_attach_type(prog_type: ProgType, eat: Option<AttachType>) -> AttachType {
    match (prog_type, eat) {
        (ProgType::CGROUP_SOCK, None | Some(AttachType(0))) => AttachType::CGROUP_INET_SOCK_CREATE,
        (ProgType::SK_REUSEPORT, None | Some(AttachType(0))) => AttachType::SK_REUSEPORT_SELECT,
        (_, e) => e.unwrap_or(AttachType(0)),
    }
}

/// Whether the kernel rewrites this type's ctx loads and stores into
/// accesses of the real kernel object (the type has `convert_ctx_access`).
/// Helpers may not take memory from such a ctx; the others' ctx is checked
/// like a load at its last byte.
pub fn ctx_access_rewritten(prog_type: ProgType) -> bool {
    use ProgType as P;
    matches!(
        prog_type,
        P::SOCKET_FILTER
            | P::SCHED_CLS
            | P::SCHED_ACT
            | P::XDP
            | P::CGROUP_SKB
            | P::LWT_IN
            | P::LWT_OUT
            | P::LWT_XMIT
            | P::LWT_SEG6LOCAL
            | P::CGROUP_SOCK
            | P::CGROUP_SOCK_ADDR
            | P::SOCK_OPS
            | P::SK_SKB
            | P::SK_MSG
            | P::FLOW_DISSECTOR
            | P::SK_REUSEPORT
            | P::SK_LOOKUP
            | P::PERF_EVENT
            | P::CGROUP_SYSCTL
            | P::CGROUP_SOCKOPT
    )
}

/// Size in bytes of the ctx object a program of this type receives (the
/// user-visible struct), None where it is not a fixed struct (tracepoint
/// records, BTF-typed contexts, syscall programs).
pub fn ctx_size(prog_type: ProgType) -> Option<u32> {
    use layout::*;
    use ProgType as P;
    Some(match prog_type {
        P::SOCKET_FILTER
        | P::SCHED_CLS
        | P::SCHED_ACT
        | P::CGROUP_SKB
        | P::LWT_IN
        | P::LWT_OUT
        | P::LWT_XMIT
        | P::LWT_SEG6LOCAL
        | P::SK_SKB
        | P::FLOW_DISSECTOR => SK_BUFF_SIZE,
        P::XDP => XDP_MD_SIZE,
        P::CGROUP_SOCK => BPF_SOCK_SIZE,
        P::CGROUP_SOCK_ADDR => SOCK_ADDR_SIZE,
        P::SOCK_OPS => SOCK_OPS_SIZE,
        P::SK_MSG => SK_MSG_MD_SIZE,
        P::SK_REUSEPORT => SK_REUSEPORT_MD_SIZE,
        P::SK_LOOKUP => SK_LOOKUP_SIZE,
        P::CGROUP_DEVICE => CGROUP_DEV_CTX_SIZE,
        P::CGROUP_SYSCTL => SYSCTL_SIZE,
        P::CGROUP_SOCKOPT => SOCKOPT_SIZE,
        P::KPROBE => PT_REGS_SIZE,
        P::PERF_EVENT => PERF_EVENT_DATA_SIZE,
        P::RAW_TRACEPOINT | P::RAW_TRACEPOINT_WRITABLE => RAW_TP_ARGS_SIZE,
        P::LIRC_MODE2 => 4,
        P::NETFILTER => NF_CTX_SIZE,
        _ => return None,
    })
}

/// One access as the checkers see it (i64 so range arithmetic cannot
/// overflow on hostile offsets).
pub(crate) struct Q {
    pub off: i64,
    pub size: i64,
    pub write: bool,
    pub eat: AttachType,
    pub ldsx: bool,
    pub bpf_capable: bool,
}

impl Q {
    /// `off` lies in the field at `start` of `len` bytes.
    pub fn within(&self, start: u32, len: u32) -> bool {
        self.off >= start as i64 && self.off < (start + len) as i64
    }

    pub fn aligned(&self) -> bool {
        self.off % self.size == 0
    }

    /// `bpf_ctx_narrow_access_ok`: a power-of-two size no wider than the
    /// field.
    pub fn narrow_ok(&self, field: u32) -> bool {
        self.size <= field as i64 && (self.size & (self.size - 1)) == 0
    }

    /// `bpf_ctx_wide_access_ok`: an aligned 8-byte access inside the array
    /// field at `start` of `len` bytes.
    pub fn wide_ok(&self, start: u32, len: u32) -> bool {
        self.size == 8
            && self.off >= start as i64
            && self.off + 8 <= (start + len) as i64
            && self.off % 8 == 0
    }
}

pub(crate) type Grant = Option<CtxAccess>;

pub(crate) fn scalar() -> Grant {
    Some(CtxAccess {
        value: CtxValue::Scalar,
        ctx_field_size: 0,
    })
}

/// A scalar field that may also be read narrower.
pub(crate) fn narrow(q: &Q, field: u32) -> Grant {
    q.narrow_ok(field).then_some(CtxAccess {
        value: CtxValue::Scalar,
        ctx_field_size: field,
    })
}

pub(crate) fn pointer(value: CtxValue) -> Grant {
    Some(CtxAccess {
        value,
        ctx_field_size: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(p: ProgType, off: i32, size: u32) -> Result<CtxAccess, CtxError> {
        check_ctx_access(p, None, off, size, Access::Read)
    }

    #[test]
    fn skb_fields_by_program_type() {
        let tc = ProgType::SCHED_CLS;
        assert_eq!(read(tc, 76, 4).unwrap().value, CtxValue::PacketStart);
        assert_eq!(read(tc, 80, 4).unwrap().value, CtxValue::PacketEnd);
        assert_eq!(read(tc, 140, 4).unwrap().value, CtxValue::PacketMeta);
        // Socket filters may not see packet pointers.
        let e = read(ProgType::SOCKET_FILTER, 76, 4).unwrap_err();
        assert_eq!(e.to_string(), "invalid bpf_context access off=76 size=4");
        // Narrow loads of 4-byte fields are fine, wider ones not.
        let len = read(tc, 0, 1).unwrap();
        assert_eq!(len.ctx_field_size, 4);
        assert!(len.is_narrow(1));
        assert!(read(tc, 0, 8).is_err());
        assert!(read(tc, 2, 4).is_err());
    }

    #[test]
    fn skb_writes() {
        let w = |p, off, size| check_ctx_access(p, None, off, size, Access::Write);
        assert!(w(ProgType::SCHED_CLS, 8, 4).is_ok()); // mark
        assert!(w(ProgType::SOCKET_FILTER, 8, 4).is_err());
        assert!(w(ProgType::SOCKET_FILTER, 48, 4).is_ok()); // cb[0]
        assert!(w(ProgType::SCHED_CLS, 0, 4).is_err()); // len
    }

    #[test]
    fn xdp_and_bad_sizes() {
        assert_eq!(
            read(ProgType::XDP, 0, 4).unwrap().value,
            CtxValue::PacketStart
        );
        assert!(read(ProgType::XDP, 20, 4).is_err()); // egress_ifindex needs devmap
        assert!(check_ctx_access(
            ProgType::XDP,
            Some(AttachType::XDP_DEVMAP),
            20,
            4,
            Access::Read
        )
        .is_ok());
        assert!(read(ProgType::XDP, 0, 3).is_err());
        assert!(read(ProgType::XDP, -4, 4).is_err());
        assert!(read(ProgType::XDP, i32::MAX, 8).is_err());
    }

    #[test]
    fn tracing_contexts() {
        assert!(read(ProgType::KPROBE, 160, 8).is_ok());
        assert!(read(ProgType::KPROBE, 168, 8).is_err());
        assert!(read(ProgType::TRACEPOINT, 0, 8).is_err()); // hidden pt_regs pointer
        assert!(read(ProgType::TRACEPOINT, -8, 8).is_ok()); // as the kernel, sadly
        assert!(read(ProgType::TRACEPOINT, 8, 4).is_ok());
        assert!(read(ProgType::RAW_TRACEPOINT, 88, 8).is_ok());
        assert!(read(ProgType::RAW_TRACEPOINT, 96, 8).is_err());
        assert_eq!(
            read(ProgType::TRACING, 16, 8).unwrap().value,
            CtxValue::BtfArg { arg: 2 }
        );
    }

    #[test]
    fn cgroup_sock_defaults_to_sock_create() {
        // bound_dev_if is writable at socket creation, the default hook.
        assert!(check_ctx_access(ProgType::CGROUP_SOCK, None, 0, 4, Access::Write).is_ok());
        assert!(check_ctx_access(
            ProgType::CGROUP_SOCK,
            Some(AttachType::CGROUP_INET4_POST_BIND),
            0,
            4,
            Access::Write
        )
        .is_err());
    }

    #[test]
    fn socket_pointer_loads() {
        use SockPtr::*;
        assert!(sock_ptr_load_ok(Sock, 48, 2)); // dst_port
        assert!(sock_ptr_load_ok(Sock, 48, 4)); // dst_port, kept for old programs
        assert!(!sock_ptr_load_ok(Sock, 50, 1)); // padding after dst_port
        assert!(!sock_ptr_load_ok(Sock, 80, 4)); // past rx_queue_mapping
        assert!(!sock_ptr_load_ok(Sock, 0, 8));
        assert!(sock_ptr_load_ok(Sock, 8, 4)); // type
        assert!(!sock_ptr_load_ok(SockCommon, 8, 4)); // type needs a full socket
        assert!(sock_ptr_load_ok(SockCommon, 4, 4)); // family
        assert!(sock_ptr_load_ok(TcpSock, 88, 8)); // bytes_acked
        assert!(!sock_ptr_load_ok(TcpSock, 96, 8));
        assert!(sock_ptr_load_ok(TcpSock, 108, 4)); // icsk_retransmits
        assert!(!sock_ptr_load_ok(TcpSock, 112, 4));
        assert!(!sock_ptr_load_ok(TcpSock, 0, 2)); // no narrow loads
    }

    #[test]
    fn ctx_sizes() {
        assert_eq!(ctx_size(ProgType::SCHED_CLS), Some(192));
        assert_eq!(ctx_size(ProgType::XDP), Some(24));
        assert_eq!(ctx_size(ProgType::KPROBE), Some(168));
        assert_eq!(ctx_size(ProgType::TRACING), None);
    }
}
