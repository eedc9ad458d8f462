//! XDP and the socket-level contexts: xdp_md, bpf_sock, bpf_sock_addr,
//! bpf_sock_ops, sk_msg_md, sk_reuseport_md, bpf_sk_lookup.

use super::layout::*;
use super::{narrow, pointer, scalar, CtxValue, Grant, Q};
use bpfvet_isa::uapi::AttachType as At;

fn at(q: &Q, f: Field) -> bool {
    q.within(f.0, f.1)
}

fn bounded(q: &Q, size: u32) -> bool {
    q.off >= 0 && q.off < size as i64 && q.aligned()
}

pub fn xdp(q: &Q) -> Grant {
    if q.eat != At::XDP_DEVMAP && q.off == XDP_EGRESS_IFINDEX as i64 {
        return None;
    }
    // Writes exist only for offloaded programs, which bpfvet does not model.
    if q.write {
        return None;
    }
    let value = match q.off {
        o if o == XDP_DATA as i64 => CtxValue::PacketStart,
        o if o == XDP_DATA_END as i64 => CtxValue::PacketEnd,
        o if o == XDP_DATA_META as i64 => CtxValue::PacketMeta,
        _ => CtxValue::Scalar,
    };
    if value.is_pointer() && q.ldsx {
        return None;
    }
    (bounded(q, XDP_MD_SIZE) && q.size == 4)
        .then(|| pointer(value))
        .flatten()
}

/// `bpf_sock_is_valid_access`: also used for sockets reached through
/// pointers, so it knows nothing of attach types.
fn bpf_sock(q: &Q) -> Grant {
    if !bounded(q, BPF_SOCK_SIZE) {
        return None;
    }
    let exact = [
        SOCK_FAMILY,
        SOCK_TYPE,
        SOCK_PROTOCOL,
        SOCK_SRC_PORT.0,
        SOCK_STATE,
        SOCK_RX_QUEUE_MAPPING,
    ];
    if exact.iter().any(|&o| q.off == o as i64)
        || [SOCK_SRC_IP4, SOCK_SRC_IP6, SOCK_DST_IP4, SOCK_DST_IP6]
            .iter()
            .any(|&f| at(q, f))
    {
        return narrow(q, 4);
    }
    if at(q, SOCK_DST_PORT) {
        // A 4-byte load of the 2-byte port is kept for old programs.
        return narrow(q, if q.size == 4 { 4 } else { 2 });
    }
    if at(q, SOCK_DST_PORT_PAD) {
        return None;
    }
    (q.size == 4).then(scalar).flatten()
}

/// The socket a `PTR_TO_SOCKET`, `PTR_TO_SOCK_COMMON` or `PTR_TO_TCP_SOCK`
/// register points to (check_sock_access).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SockPtr {
    Sock,
    SockCommon,
    TcpSock,
}

/// Whether a load of `size` bytes at `off` through a socket pointer is valid
/// (`bpf_sock_is_valid_access` and its sock_common and tcp_sock variants).
pub fn sock_ptr_load_ok(kind: SockPtr, off: i32, size: u32) -> bool {
    if !matches!(size, 1 | 2 | 4 | 8) {
        return false;
    }
    let q = Q {
        off: off as i64,
        size: size as i64,
        write: false,
        eat: At(0),
        ldsx: false,
        bpf_capable: true,
    };
    match kind {
        SockPtr::Sock => bpf_sock(&q).is_some(),
        // type, protocol, mark and priority live only in a full socket.
        SockPtr::SockCommon => {
            !(q.off >= SOCK_TYPE as i64 && q.off < (SOCK_PRIORITY + 4) as i64)
                && bpf_sock(&q).is_some()
        }
        SockPtr::TcpSock => {
            if !bounded(&q, TCP_SOCK_END) {
                return false;
            }
            let wide =
                q.off == TCP_SOCK_BYTES_RECEIVED as i64 || q.off == TCP_SOCK_BYTES_ACKED as i64;
            q.size == if wide { 8 } else { 4 }
        }
    }
}

/// cgroup/sock: the hook decides which fields exist and which are writable.
pub fn cgroup_sock(q: &Q) -> Grant {
    let grant = bpf_sock(q)?;
    let create_or_release = matches!(
        q.eat,
        At::CGROUP_INET_SOCK_CREATE | At::CGROUP_INET_SOCK_RELEASE
    );
    let v4 = q.eat == At::CGROUP_INET4_POST_BIND;
    let v6 = q.eat == At::CGROUP_INET6_POST_BIND;
    let ok = if [SOCK_BOUND_DEV_IF, SOCK_MARK, SOCK_PRIORITY]
        .iter()
        .any(|&o| q.off == o as i64)
    {
        create_or_release
    } else if at(q, SOCK_SRC_IP4) {
        v4 && !q.write
    } else if at(q, SOCK_SRC_IP6) {
        v6 && !q.write
    } else if at(q, SOCK_SRC_PORT) {
        (v4 || v6) && !q.write
    } else {
        !q.write
    };
    ok.then_some(grant)
}

pub fn sock_addr(q: &Q) -> Grant {
    if !bounded(q, SOCK_ADDR_SIZE) {
        return None;
    }
    let e = q.eat;
    let family_ok = if at(q, SA_USER_IP4) {
        matches!(
            e,
            At::CGROUP_INET4_BIND
                | At::CGROUP_INET4_CONNECT
                | At::CGROUP_INET4_GETPEERNAME
                | At::CGROUP_INET4_GETSOCKNAME
                | At::CGROUP_UDP4_SENDMSG
                | At::CGROUP_UDP4_RECVMSG
        )
    } else if at(q, SA_USER_IP6) {
        matches!(
            e,
            At::CGROUP_INET6_BIND
                | At::CGROUP_INET6_CONNECT
                | At::CGROUP_INET6_GETPEERNAME
                | At::CGROUP_INET6_GETSOCKNAME
                | At::CGROUP_UDP6_SENDMSG
                | At::CGROUP_UDP6_RECVMSG
        )
    } else if at(q, SA_MSG_SRC_IP4) {
        e == At::CGROUP_UDP4_SENDMSG
    } else if at(q, SA_MSG_SRC_IP6) {
        e == At::CGROUP_UDP6_SENDMSG
    } else {
        true
    };
    if !family_ok {
        return None;
    }
    let addresses = [
        SA_USER_IP4,
        SA_USER_IP6,
        SA_MSG_SRC_IP4,
        SA_MSG_SRC_IP6,
        SA_USER_PORT,
    ];
    if addresses.iter().any(|&f| at(q, f)) {
        let wide = q.wide_ok(SA_USER_IP6.0, SA_USER_IP6.1)
            || q.wide_ok(SA_MSG_SRC_IP6.0, SA_MSG_SRC_IP6.1);
        if wide {
            return scalar();
        }
        return if q.write {
            (q.size == 4).then(scalar).flatten()
        } else {
            narrow(q, 4)
        };
    }
    if at(q, SA_SK) {
        return (!q.write && q.size == 8)
            .then(|| pointer(CtxValue::Sock))
            .flatten();
    }
    if [SA_USER_FAMILY, SA_FAMILY, SA_TYPE, SA_PROTOCOL]
        .iter()
        .any(|&f| at(q, f))
    {
        return (!q.write && q.size == 4).then(scalar).flatten();
    }
    None
}

pub fn sock_ops(q: &Q) -> Grant {
    if !bounded(q, SOCK_OPS_SIZE) {
        return None;
    }
    if q.write {
        let writable = q.off == SO_REPLY as i64 || q.off == SO_SK_TXHASH as i64;
        return (writable && q.size == 4).then(scalar).flatten();
    }
    let eight = |v: CtxValue| (q.size == 8).then(|| pointer(v)).flatten();
    if at(q, SO_BYTES) || at(q, SO_SKB_HWTSTAMP) {
        return eight(CtxValue::Scalar);
    }
    if at(q, SO_SK) {
        return eight(CtxValue::SockOrNull);
    }
    if at(q, SO_SKB_DATA) {
        return eight(CtxValue::PacketStart);
    }
    if at(q, SO_SKB_DATA_END) {
        return eight(CtxValue::PacketEnd);
    }
    if q.off == SO_SKB_TCP_FLAGS as i64 {
        return narrow(q, 4);
    }
    (q.size == 4).then(scalar).flatten()
}

pub fn sk_msg(q: &Q) -> Grant {
    // No upper bound check of its own: offsets past the struct fall to the
    // final "no such field" case.
    if q.write || !q.aligned() {
        return None;
    }
    let eight = |v: CtxValue| (q.size == 8).then(|| pointer(v)).flatten();
    if at(q, MSG_DATA) {
        return eight(CtxValue::PacketStart);
    }
    if at(q, MSG_DATA_END) {
        return eight(CtxValue::PacketEnd);
    }
    if at(q, MSG_SK) {
        return eight(CtxValue::Sock);
    }
    if at(q, MSG_SCALARS) {
        return (q.size == 4).then(scalar).flatten();
    }
    None
}

pub fn sk_reuseport(q: &Q) -> Grant {
    if !bounded(q, SK_REUSEPORT_MD_SIZE) || q.write {
        return None;
    }
    let eight = |v: CtxValue| (q.size == 8).then(|| pointer(v)).flatten();
    match q.off {
        o if o == RP_DATA as i64 => return eight(CtxValue::PacketStart),
        o if o == RP_DATA_END as i64 => return eight(CtxValue::PacketEnd),
        o if o == RP_HASH as i64 => return (q.size == 4).then(scalar).flatten(),
        o if o == RP_SK as i64 => return eight(CtxValue::Sock),
        o if o == RP_MIGRATING_SK as i64 => return eight(CtxValue::SockCommonOrNull),
        _ => {}
    }
    if at(q, RP_ETH_PROTOCOL) {
        // The underlying skb->protocol is 2 bytes: no byte loads.
        return if q.size < 2 { None } else { narrow(q, 4) };
    }
    if at(q, RP_IP_PROTOCOL) || at(q, RP_BIND_INANY) || at(q, RP_LEN) {
        return narrow(q, 4);
    }
    None
}

pub fn sk_lookup(q: &Q) -> Grant {
    if !bounded(q, SK_LOOKUP_SIZE) || q.write {
        return None;
    }
    if at(q, SL_SK) {
        return (q.size == 8)
            .then(|| pointer(CtxValue::SockOrNull))
            .flatten();
    }
    let u32_fields = [
        SL_FAMILY,
        SL_PROTOCOL,
        SL_REMOTE_IP4,
        SL_LOCAL_IP4,
        SL_REMOTE_IP6,
        SL_LOCAL_IP6,
        SL_LOCAL_PORT,
        SL_INGRESS_IFINDEX,
    ];
    if u32_fields.iter().any(|&f| at(q, f)) {
        return narrow(q, 4);
    }
    if at(q, SL_REMOTE_PORT) {
        // A 4-byte load of the 2-byte port is kept for old programs.
        return if q.size == 4 { scalar() } else { narrow(q, 2) };
    }
    if at(q, SL_REMOTE_PORT_PAD) {
        return narrow(q, 2);
    }
    None
}
