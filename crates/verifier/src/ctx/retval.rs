//! What R0 may hold at program exit, per program and attach type
//! (`check_return_code`), and the kernel's message when it may not.

use bpfvet_isa::uapi::{AttachType as At, AttachType, ProgType as Pt, ProgType};

/// The exit rule for a main program (subprograms only need a scalar).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ReturnRule {
    /// Any value, pointers excluded ("R0 leaks addr as return value").
    Any,
    /// A scalar whose signed 64-bit bounds lie in `[min, max]` (32-bit
    /// bounds when `subreg`).
    Range { min: i32, max: i32, subreg: bool },
    /// LSM hooks: the range follows from the hook's BTF return type (errno
    /// hooks: [-4095, 0]; void hooks of LSM_CGROUP programs: [1, 1]).
    DependsOnLsmHook,
    /// The attach type is not one the kernel loads for this program type
    /// (it reports ENOTSUPP).
    Unsupported,
}

/// The kernel's `retval_range` for a main program; `attach_btf` tells
/// whether a raw tracepoint program was loaded with an attach BTF id.
pub fn return_rule(
    prog_type: ProgType,
    expected_attach_type: Option<AttachType>,
    attach_btf: bool,
) -> ReturnRule {
    let eat = super::effective_attach_type(prog_type, expected_attach_type);
    let range = |min, max| ReturnRule::Range {
        min,
        max,
        subreg: false,
    };
    match prog_type {
        Pt::CGROUP_SOCK_ADDR => match eat {
            At::CGROUP_UDP4_RECVMSG
            | At::CGROUP_UDP6_RECVMSG
            | At::CGROUP_UNIX_RECVMSG
            | At::CGROUP_INET4_GETPEERNAME
            | At::CGROUP_INET6_GETPEERNAME
            | At::CGROUP_UNIX_GETPEERNAME
            | At::CGROUP_INET4_GETSOCKNAME
            | At::CGROUP_INET6_GETSOCKNAME
            | At::CGROUP_UNIX_GETSOCKNAME => range(1, 1),
            At::CGROUP_INET4_BIND | At::CGROUP_INET6_BIND => range(0, 3),
            _ => range(0, 1),
        },
        Pt::CGROUP_SKB if eat == At::CGROUP_INET_EGRESS => range(0, 3),
        Pt::CGROUP_SKB
        | Pt::CGROUP_SOCK
        | Pt::SOCK_OPS
        | Pt::CGROUP_DEVICE
        | Pt::CGROUP_SYSCTL
        | Pt::CGROUP_SOCKOPT => range(0, 1),
        Pt::RAW_TRACEPOINT if attach_btf => range(0, 0),
        Pt::TRACING => match eat {
            At::TRACE_FENTRY | At::TRACE_FEXIT => range(0, 0),
            At::TRACE_RAW_TP | At::MODIFY_RETURN => ReturnRule::Any,
            At::TRACE_ITER => range(0, 1),
            _ => ReturnRule::Unsupported,
        },
        Pt::KPROBE if matches!(eat, At::TRACE_KPROBE_SESSION | At::TRACE_UPROBE_SESSION) => {
            range(0, 1)
        }
        // SK_DROP..SK_PASS
        Pt::SK_LOOKUP => range(0, 1),
        Pt::LSM => ReturnRule::DependsOnLsmHook,
        // NF_DROP..NF_ACCEPT
        Pt::NETFILTER => range(0, 1),
        _ => ReturnRule::Any,
    }
}

/// The allowed range of R0 at exit for a main program, None when any
/// scalar is fine or when it depends on BTF (see [`return_rule`]).
pub fn return_range(
    prog_type: ProgType,
    expected_attach_type: Option<AttachType>,
) -> Option<(i64, i64)> {
    match return_rule(prog_type, expected_attach_type, false) {
        ReturnRule::Range { min, max, .. } => Some((min as i64, max as i64)),
        _ => None,
    }
}

/// Where the check happens, as the message names it.
pub const AT_PROGRAM_EXIT: &str = "At program exit";
/// Timer and other async callbacks must return 0.
pub const AT_ASYNC_CALLBACK_RETURN: &str = "At async callback return";

/// The kernel's message for an out-of-range return value: `smin`/`smax`
/// are the register's signed bounds (the 64-bit ones, or the 32-bit ones
/// widened for a `subreg` rule); a bound at its type's extreme is left out.
pub fn return_range_message(
    exit_ctx: &str,
    reg_name: &str,
    smin: i64,
    smax: i64,
    range: (i64, i64),
) -> String {
    let mut s = format!("{exit_ctx} the register {reg_name} has");
    let mut unknown = true;
    if smin > i64::MIN {
        s.push_str(&format!(" smin={smin}"));
        unknown = false;
    }
    if smax < i64::MAX {
        s.push_str(&format!(" smax={smax}"));
        unknown = false;
    }
    if unknown {
        s.push_str(" unknown scalar value");
    }
    s.push_str(&format!(" should have been in [{}, {}]", range.0, range.1));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_by_type() {
        assert_eq!(return_range(Pt::XDP, None), None);
        assert_eq!(return_range(Pt::CGROUP_SKB, None), Some((0, 1)));
        assert_eq!(
            return_range(Pt::CGROUP_SKB, Some(At::CGROUP_INET_EGRESS)),
            Some((0, 3))
        );
        assert_eq!(
            return_range(Pt::CGROUP_SOCK_ADDR, Some(At::CGROUP_UDP4_RECVMSG)),
            Some((1, 1))
        );
        assert_eq!(
            return_rule(Pt::TRACING, Some(At::TRACE_FENTRY), true),
            ReturnRule::Range {
                min: 0,
                max: 0,
                subreg: false
            }
        );
    }

    #[test]
    fn message_matches_the_kernel_format() {
        let m = return_range_message(AT_PROGRAM_EXIT, "R0", 0, 0, (1, 1));
        assert_eq!(
            m,
            "At program exit the register R0 has smin=0 smax=0 should have been in [1, 1]"
        );
        let u = return_range_message(AT_PROGRAM_EXIT, "R0", i64::MIN, i64::MAX, (0, 1));
        assert_eq!(
            u,
            "At program exit the register R0 has unknown scalar value should have been in [0, 1]"
        );
    }
}
