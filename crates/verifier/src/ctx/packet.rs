//! Direct packet access per program type (`may_access_direct_pkt_data`):
//! every type that gets packet pointers may read through them; writing and
//! passing them to helpers depend on the type.

use bpfvet_isa::uapi::ProgType as P;
use bpfvet_isa::uapi::ProgType;

/// The kernel's message for a refused packet store.
pub const CANNOT_WRITE_INTO_PACKET: &str = "cannot write into packet";
/// The kernel's message for a packet pointer passed to a helper that may
/// not take one.
pub const HELPER_PACKET_ACCESS_NOT_ALLOWED: &str = "helper access to the packet is not allowed";

fn read_only(t: ProgType) -> bool {
    matches!(
        t,
        P::LWT_IN
            | P::LWT_OUT
            | P::LWT_SEG6LOCAL
            | P::SK_REUSEPORT
            | P::FLOW_DISSECTOR
            | P::CGROUP_SKB
    )
}

fn read_write(t: ProgType) -> bool {
    matches!(
        t,
        P::SCHED_CLS | P::SCHED_ACT | P::XDP | P::LWT_XMIT | P::SK_SKB | P::SK_MSG
    )
}

/// May a program of this type store through a packet pointer?
pub fn direct_write_allowed(t: ProgType) -> bool {
    read_write(t) || t == P::CGROUP_SOCKOPT
}

/// May a packet pointer be passed to a helper whose prototype has
/// `pkt_access` as given?
pub fn helper_packet_arg_allowed(t: ProgType, pkt_access: bool) -> bool {
    if read_only(t) || read_write(t) {
        pkt_access
    } else {
        t == P::CGROUP_SOCKOPT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert!(direct_write_allowed(P::XDP));
        assert!(!direct_write_allowed(P::CGROUP_SKB));
        assert!(helper_packet_arg_allowed(P::CGROUP_SKB, true));
        assert!(!helper_packet_arg_allowed(P::SCHED_CLS, false));
        assert!(helper_packet_arg_allowed(P::CGROUP_SOCKOPT, false));
        assert!(!helper_packet_arg_allowed(P::SOCK_OPS, true));
    }
}
