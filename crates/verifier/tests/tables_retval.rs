//! Differential test of the exit-value rules against the host kernel: for
//! each program (and attach) type, load `r0 = K; exit` for a few constants
//! and compare verdict and message with `return_rule`.

mod tables_support;

use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_verifier::ctx::retval::{return_range_message, AT_PROGRAM_EXIT};
use bpfvet_verifier::ctx::{return_rule, ReturnRule};
use tables_support::*;

/// (program type, attach type, attach BTF (kind, name), load flags).
type Config = (
    ProgType,
    Option<AttachType>,
    Option<(u32, &'static str)>,
    u32,
);

fn configs() -> Vec<Config> {
    use AttachType as A;
    use ProgType as P;
    let mut v: Vec<_> = [
        P::SOCKET_FILTER,
        P::KPROBE,
        P::SCHED_CLS,
        P::TRACEPOINT,
        P::XDP,
        P::PERF_EVENT,
        P::LWT_IN,
        P::SOCK_OPS,
        P::SK_SKB,
        P::CGROUP_DEVICE,
        P::SK_MSG,
        P::RAW_TRACEPOINT,
        P::SK_REUSEPORT,
        P::FLOW_DISSECTOR,
        P::CGROUP_SYSCTL,
    ]
    .into_iter()
    .map(|p| (p, None, None, 0))
    .collect();
    let with = |p, a| (p, Some(a), None, 0);
    v.extend([
        with(P::CGROUP_SKB, A::CGROUP_INET_INGRESS),
        with(P::CGROUP_SKB, A::CGROUP_INET_EGRESS),
        with(P::CGROUP_SOCK, A::CGROUP_INET_SOCK_CREATE),
        with(P::CGROUP_SOCK_ADDR, A::CGROUP_INET4_BIND),
        with(P::CGROUP_SOCK_ADDR, A::CGROUP_INET4_CONNECT),
        with(P::CGROUP_SOCK_ADDR, A::CGROUP_UDP4_RECVMSG),
        with(P::CGROUP_SOCK_ADDR, A::CGROUP_UNIX_GETSOCKNAME),
        with(P::CGROUP_SOCKOPT, A::CGROUP_GETSOCKOPT),
        with(P::SK_LOOKUP, A::SK_LOOKUP),
        with(P::NETFILTER, A::NETFILTER),
        with(P::KPROBE, A::TRACE_KPROBE_MULTI),
        with(P::KPROBE, A::TRACE_KPROBE_SESSION),
    ]);
    v.push((P::SYSCALL, None, None, BPF_F_SLEEPABLE));
    v.push((
        P::TRACING,
        Some(A::TRACE_RAW_TP),
        Some((BTF_KIND_TYPEDEF, "btf_trace_sched_switch")),
        0,
    ));
    v.push((
        P::TRACING,
        Some(A::TRACE_ITER),
        Some((BTF_KIND_FUNC, "bpf_iter_task")),
        0,
    ));
    v
}

#[test]
fn return_ranges_match_the_host_kernel() {
    if let Some(why) = kernel_unavailable() {
        println!("SKIP: {why}");
        return;
    }
    let mut mismatches = Vec::new();
    for (prog_type, attach, btf, flags) in configs() {
        let attach_btf_id = match btf {
            Some(name) => match vmlinux_btf_ids(&[name])[0] {
                Some(id) => id,
                None => {
                    println!("no BTF id for {}: {prog_type} not compared", name.1);
                    continue;
                }
            },
            None => 0,
        };
        let spec = LoadSpec {
            prog_type: prog_type.0,
            expected_attach_type: attach.map_or(0, |a| a.0),
            attach_btf_id,
            prog_flags: flags,
        };
        let rule = return_rule(prog_type, attach, false);
        for k in [-1i32, 0, 1, 2, 3, 4] {
            let r = load(&spec, &[mov_r0(k), exit()]);
            let expected: Result<(), String> = match rule {
                ReturnRule::Any => Ok(()),
                ReturnRule::Range { min, max, .. } if (min..=max).contains(&k) => Ok(()),
                ReturnRule::Range { min, max, .. } => Err(return_range_message(
                    AT_PROGRAM_EXIT,
                    "R0",
                    k as i64,
                    k as i64,
                    (min as i64, max as i64),
                )),
                other => panic!("{prog_type}: no rule to compare ({other:?})"),
            };
            let kernel = if r.ok {
                Ok(())
            } else {
                Err(r.last_error_line().to_string())
            };
            if kernel != expected {
                mismatches.push(format!(
                    "{prog_type} {attach:?} r0={k}: kernel {kernel:?}, ours {expected:?}"
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
