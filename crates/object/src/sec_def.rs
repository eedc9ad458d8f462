//! Program type, expected attach type, attach target and flags from an ELF
//! section name, by libbpf's SEC() rules (libbpf 1.5+ table, restricted to
//! what Linux 6.18 knows), with the prefix matching of pre-1.0 libbpf as a
//! fallback for legacy objects (`socket1`, `xdp_prog`, `classifier_x`).
//! A name that matches nothing gives `ProgType::UNSPEC`: libbpf 1.x would
//! refuse to load it, but `dump` can still list it.

use bpfvet_isa::uapi::{AttachType as A, ProgType as P};

use bpfvet_isa::uapi::{BPF_F_SLEEPABLE, BPF_F_XDP_HAS_FRAGS};

const NONE: u8 = 0;
const SLEEPABLE: u8 = 1;
const ATTACH_BTF: u8 = 2;
const XDP_FRAGS: u8 = 4;

/// `sec` ending in '+' matches exactly or with a "/extra" suffix; ending in
/// '/' requires the suffix; otherwise the match is exact.
struct SecDef {
    sec: &'static str,
    prog_type: P,
    attach: Option<A>,
    flags: u8,
}

const fn d(sec: &'static str, prog_type: P, attach: Option<A>, flags: u8) -> SecDef {
    SecDef {
        sec,
        prog_type,
        attach,
        flags,
    }
}

#[rustfmt::skip]
static SEC_DEFS: &[SecDef] = &[
    d("socket", P::SOCKET_FILTER, None, NONE),
    d("sk_reuseport/migrate", P::SK_REUSEPORT, Some(A::SK_REUSEPORT_SELECT_OR_MIGRATE), NONE),
    d("sk_reuseport", P::SK_REUSEPORT, Some(A::SK_REUSEPORT_SELECT), NONE),
    d("kprobe+", P::KPROBE, None, NONE),
    d("uprobe+", P::KPROBE, None, NONE),
    d("uprobe.s+", P::KPROBE, None, SLEEPABLE),
    d("kretprobe+", P::KPROBE, None, NONE),
    d("uretprobe+", P::KPROBE, None, NONE),
    d("uretprobe.s+", P::KPROBE, None, SLEEPABLE),
    d("kprobe.multi+", P::KPROBE, Some(A::TRACE_KPROBE_MULTI), NONE),
    d("kretprobe.multi+", P::KPROBE, Some(A::TRACE_KPROBE_MULTI), NONE),
    d("kprobe.session+", P::KPROBE, Some(A::TRACE_KPROBE_SESSION), NONE),
    d("uprobe.multi+", P::KPROBE, Some(A::TRACE_UPROBE_MULTI), NONE),
    d("uretprobe.multi+", P::KPROBE, Some(A::TRACE_UPROBE_MULTI), NONE),
    d("uprobe.session+", P::KPROBE, Some(A::TRACE_UPROBE_SESSION), NONE),
    d("uprobe.multi.s+", P::KPROBE, Some(A::TRACE_UPROBE_MULTI), SLEEPABLE),
    d("uretprobe.multi.s+", P::KPROBE, Some(A::TRACE_UPROBE_MULTI), SLEEPABLE),
    d("uprobe.session.s+", P::KPROBE, Some(A::TRACE_UPROBE_SESSION), SLEEPABLE),
    d("ksyscall+", P::KPROBE, None, NONE),
    d("kretsyscall+", P::KPROBE, None, NONE),
    d("usdt+", P::KPROBE, None, NONE),
    d("usdt.s+", P::KPROBE, None, SLEEPABLE),
    d("tc/ingress", P::SCHED_CLS, Some(A::TCX_INGRESS), NONE),
    d("tc/egress", P::SCHED_CLS, Some(A::TCX_EGRESS), NONE),
    d("tcx/ingress", P::SCHED_CLS, Some(A::TCX_INGRESS), NONE),
    d("tcx/egress", P::SCHED_CLS, Some(A::TCX_EGRESS), NONE),
    d("tc", P::SCHED_CLS, None, NONE),
    d("classifier", P::SCHED_CLS, None, NONE),
    d("action", P::SCHED_ACT, None, NONE),
    d("netkit/primary", P::SCHED_CLS, Some(A::NETKIT_PRIMARY), NONE),
    d("netkit/peer", P::SCHED_CLS, Some(A::NETKIT_PEER), NONE),
    d("tracepoint+", P::TRACEPOINT, None, NONE),
    d("tp+", P::TRACEPOINT, None, NONE),
    d("tracepoint.s+", P::TRACEPOINT, None, SLEEPABLE),
    d("tp.s+", P::TRACEPOINT, None, SLEEPABLE),
    d("raw_tracepoint+", P::RAW_TRACEPOINT, None, NONE),
    d("raw_tp+", P::RAW_TRACEPOINT, None, NONE),
    d("raw_tracepoint.s+", P::RAW_TRACEPOINT, None, SLEEPABLE),
    d("raw_tp.s+", P::RAW_TRACEPOINT, None, SLEEPABLE),
    d("raw_tracepoint.w+", P::RAW_TRACEPOINT_WRITABLE, None, NONE),
    d("raw_tp.w+", P::RAW_TRACEPOINT_WRITABLE, None, NONE),
    d("tp_btf+", P::TRACING, Some(A::TRACE_RAW_TP), ATTACH_BTF),
    d("tp_btf.s+", P::TRACING, Some(A::TRACE_RAW_TP), ATTACH_BTF | SLEEPABLE),
    d("fentry+", P::TRACING, Some(A::TRACE_FENTRY), ATTACH_BTF),
    d("fmod_ret+", P::TRACING, Some(A::MODIFY_RETURN), ATTACH_BTF),
    d("fexit+", P::TRACING, Some(A::TRACE_FEXIT), ATTACH_BTF),
    d("fentry.s+", P::TRACING, Some(A::TRACE_FENTRY), ATTACH_BTF | SLEEPABLE),
    d("fmod_ret.s+", P::TRACING, Some(A::MODIFY_RETURN), ATTACH_BTF | SLEEPABLE),
    d("fexit.s+", P::TRACING, Some(A::TRACE_FEXIT), ATTACH_BTF | SLEEPABLE),
    d("freplace+", P::EXT, None, ATTACH_BTF),
    d("lsm+", P::LSM, Some(A::LSM_MAC), ATTACH_BTF),
    d("lsm.s+", P::LSM, Some(A::LSM_MAC), ATTACH_BTF | SLEEPABLE),
    d("lsm_cgroup+", P::LSM, Some(A::LSM_CGROUP), ATTACH_BTF),
    d("iter+", P::TRACING, Some(A::TRACE_ITER), ATTACH_BTF),
    d("iter.s+", P::TRACING, Some(A::TRACE_ITER), ATTACH_BTF | SLEEPABLE),
    d("syscall", P::SYSCALL, None, SLEEPABLE),
    d("xdp.frags/devmap", P::XDP, Some(A::XDP_DEVMAP), XDP_FRAGS),
    d("xdp/devmap", P::XDP, Some(A::XDP_DEVMAP), NONE),
    d("xdp.frags/cpumap", P::XDP, Some(A::XDP_CPUMAP), XDP_FRAGS),
    d("xdp/cpumap", P::XDP, Some(A::XDP_CPUMAP), NONE),
    d("xdp.frags", P::XDP, Some(A::XDP), XDP_FRAGS),
    d("xdp", P::XDP, Some(A::XDP), NONE),
    d("perf_event", P::PERF_EVENT, None, NONE),
    d("lwt_in", P::LWT_IN, None, NONE),
    d("lwt_out", P::LWT_OUT, None, NONE),
    d("lwt_xmit", P::LWT_XMIT, None, NONE),
    d("lwt_seg6local", P::LWT_SEG6LOCAL, None, NONE),
    d("sockops", P::SOCK_OPS, Some(A::CGROUP_SOCK_OPS), NONE),
    d("sk_skb/stream_parser", P::SK_SKB, Some(A::SK_SKB_STREAM_PARSER), NONE),
    d("sk_skb/stream_verdict", P::SK_SKB, Some(A::SK_SKB_STREAM_VERDICT), NONE),
    d("sk_skb/verdict", P::SK_SKB, Some(A::SK_SKB_VERDICT), NONE),
    d("sk_skb", P::SK_SKB, None, NONE),
    d("sk_msg", P::SK_MSG, Some(A::SK_MSG_VERDICT), NONE),
    d("lirc_mode2", P::LIRC_MODE2, Some(A::LIRC_MODE2), NONE),
    d("flow_dissector", P::FLOW_DISSECTOR, Some(A::FLOW_DISSECTOR), NONE),
    d("cgroup_skb/ingress", P::CGROUP_SKB, Some(A::CGROUP_INET_INGRESS), NONE),
    d("cgroup_skb/egress", P::CGROUP_SKB, Some(A::CGROUP_INET_EGRESS), NONE),
    d("cgroup/skb", P::CGROUP_SKB, None, NONE),
    d("cgroup/sock_create", P::CGROUP_SOCK, Some(A::CGROUP_INET_SOCK_CREATE), NONE),
    d("cgroup/sock_release", P::CGROUP_SOCK, Some(A::CGROUP_INET_SOCK_RELEASE), NONE),
    d("cgroup/sock", P::CGROUP_SOCK, Some(A::CGROUP_INET_SOCK_CREATE), NONE),
    d("cgroup/post_bind4", P::CGROUP_SOCK, Some(A::CGROUP_INET4_POST_BIND), NONE),
    d("cgroup/post_bind6", P::CGROUP_SOCK, Some(A::CGROUP_INET6_POST_BIND), NONE),
    d("cgroup/bind4", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_INET4_BIND), NONE),
    d("cgroup/bind6", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_INET6_BIND), NONE),
    d("cgroup/connect4", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_INET4_CONNECT), NONE),
    d("cgroup/connect6", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_INET6_CONNECT), NONE),
    d("cgroup/connect_unix", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_UNIX_CONNECT), NONE),
    d("cgroup/sendmsg4", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_UDP4_SENDMSG), NONE),
    d("cgroup/sendmsg6", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_UDP6_SENDMSG), NONE),
    d("cgroup/sendmsg_unix", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_UNIX_SENDMSG), NONE),
    d("cgroup/recvmsg4", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_UDP4_RECVMSG), NONE),
    d("cgroup/recvmsg6", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_UDP6_RECVMSG), NONE),
    d("cgroup/recvmsg_unix", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_UNIX_RECVMSG), NONE),
    d("cgroup/getpeername4", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_INET4_GETPEERNAME), NONE),
    d("cgroup/getpeername6", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_INET6_GETPEERNAME), NONE),
    d("cgroup/getpeername_unix", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_UNIX_GETPEERNAME), NONE),
    d("cgroup/getsockname4", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_INET4_GETSOCKNAME), NONE),
    d("cgroup/getsockname6", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_INET6_GETSOCKNAME), NONE),
    d("cgroup/getsockname_unix", P::CGROUP_SOCK_ADDR, Some(A::CGROUP_UNIX_GETSOCKNAME), NONE),
    d("cgroup/sysctl", P::CGROUP_SYSCTL, Some(A::CGROUP_SYSCTL), NONE),
    d("cgroup/getsockopt", P::CGROUP_SOCKOPT, Some(A::CGROUP_GETSOCKOPT), NONE),
    d("cgroup/setsockopt", P::CGROUP_SOCKOPT, Some(A::CGROUP_SETSOCKOPT), NONE),
    d("cgroup/dev", P::CGROUP_DEVICE, Some(A::CGROUP_DEVICE), NONE),
    d("struct_ops+", P::STRUCT_OPS, None, NONE),
    d("struct_ops.s+", P::STRUCT_OPS, None, SLEEPABLE),
    d("sk_lookup", P::SK_LOOKUP, Some(A::SK_LOOKUP), NONE),
    d("netfilter", P::NETFILTER, Some(A::NETFILTER), NONE),
];

/// What a section name says about its programs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecInfo {
    pub prog_type: P,
    pub expected_attach_type: Option<A>,
    /// The part after the first '/' for BTF-attached types (fentry/, lsm/,
    /// iter/, tp_btf/, freplace/); None otherwise.
    pub attach_target: Option<String>,
    pub sleepable: bool,
    /// BPF_F_SLEEPABLE | BPF_F_XDP_HAS_FRAGS as libbpf would set them.
    pub prog_flags: u32,
    /// True when the name matched only by legacy prefix or not at all.
    pub legacy: bool,
}

fn matches(def: &str, name: &str) -> bool {
    if def.ends_with('/') {
        return name.starts_with(def);
    }
    if let Some(base) = def.strip_suffix('+') {
        return match name.strip_prefix(base) {
            Some(rest) => rest.is_empty() || rest.starts_with('/'),
            None => false,
        };
    }
    name == def
}

fn info_from(def: &SecDef, name: &str, legacy: bool) -> SecInfo {
    let sleepable = def.flags & SLEEPABLE != 0;
    let mut prog_flags = 0;
    if sleepable {
        prog_flags |= BPF_F_SLEEPABLE;
    }
    if def.flags & XDP_FRAGS != 0 {
        prog_flags |= BPF_F_XDP_HAS_FRAGS;
    }
    let attach_target = (def.flags & ATTACH_BTF != 0)
        .then(|| name.split_once('/').map(|(_, t)| t.to_owned()))
        .flatten();
    SecInfo {
        prog_type: def.prog_type,
        expected_attach_type: def.attach,
        attach_target,
        sleepable,
        prog_flags,
        legacy,
    }
}

pub fn classify(name: &str) -> SecInfo {
    // SEC("?xdp"): same type, but libbpf does not load it by default.
    let name = name.strip_prefix('?').unwrap_or(name);
    if let Some(def) = SEC_DEFS.iter().find(|d| matches(d.sec, name)) {
        return info_from(def, name, false);
    }
    // Pre-1.0 libbpf matched any section starting with the table's name.
    let legacy = SEC_DEFS.iter().find(|d| {
        let base = d.sec.trim_end_matches('+');
        !base.is_empty() && name.starts_with(base)
    });
    match legacy {
        Some(def) => info_from(def, name, true),
        None => SecInfo {
            prog_type: P::UNSPEC,
            expected_attach_type: None,
            attach_target: None,
            sleepable: false,
            prog_flags: 0,
            legacy: true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libbpf_rules() {
        let x = classify("xdp");
        assert_eq!(
            (x.prog_type, x.expected_attach_type),
            (P::XDP, Some(A::XDP))
        );
        let k = classify("kprobe/sys_execve");
        assert_eq!(
            (k.prog_type, k.expected_attach_type, k.legacy),
            (P::KPROBE, None, false)
        );
        let f = classify("fentry.s/tcp_connect");
        assert_eq!(f.prog_type, P::TRACING);
        assert_eq!(f.attach_target.as_deref(), Some("tcp_connect"));
        assert!(f.sleepable);
        assert_eq!(f.prog_flags, BPF_F_SLEEPABLE);
        assert_eq!(classify("xdp.frags").prog_flags, BPF_F_XDP_HAS_FRAGS);
        assert_eq!(
            classify("tc/ingress").expected_attach_type,
            Some(A::TCX_INGRESS)
        );
        assert_eq!(
            classify("cgroup/sock").expected_attach_type,
            Some(A::CGROUP_INET_SOCK_CREATE)
        );
        assert_eq!(
            classify("cgroup_skb/egress").expected_attach_type,
            Some(A::CGROUP_INET_EGRESS)
        );
        // "kprobe+" needs an exact match or a '/' separator.
        assert_eq!(
            classify("kprobe.multi/x").expected_attach_type,
            Some(A::TRACE_KPROBE_MULTI)
        );
        assert_eq!(classify("syscall").prog_flags, BPF_F_SLEEPABLE);
        assert_eq!(classify("?xdp").prog_type, P::XDP);
    }

    #[test]
    fn legacy_prefixes_and_unknown() {
        let s = classify("socket1");
        assert_eq!((s.prog_type, s.legacy), (P::SOCKET_FILTER, true));
        assert_eq!(classify("xdp_prog").prog_type, P::XDP);
        assert_eq!(classify("2/7").prog_type, P::UNSPEC);
        assert_eq!(classify("from-netdev").prog_type, P::UNSPEC);
    }
}
