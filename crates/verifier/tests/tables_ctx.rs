//! Differential sweep of the ctx access rules against the host kernel: for
//! each program (and attach) type, every offset around the ctx struct and
//! every size, load `r0 = *(uN *)(r1 + off)` and store `*(uN *)(r1 + off) =
//! r2`, and compare the kernel's verdict and message with
//! `check_ctx_access`; for accepted loads also whether the result is a
//! pointer (`r0 += r0` is "pointer += pointer prohibited" only for one).

mod tables_support;

use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_verifier::ctx::{check_ctx_access, check_ctx_access_with, ctx_size, Access, CtxQuery};
use tables_support::*;

struct Config {
    prog_type: ProgType,
    attach: Option<AttachType>,
    offsets: Vec<i32>,
    flags: u32,
}

fn around(size: u32) -> Vec<i32> {
    (-8..size as i32 + 16).collect()
}

fn configs() -> Vec<Config> {
    use AttachType as A;
    use ProgType as P;
    let mut v = Vec::new();
    let mut add = |p: ProgType, a: Option<AttachType>| {
        let size = ctx_size(p).expect("fixed-size ctx");
        v.push(Config {
            prog_type: p,
            attach: a,
            offsets: around(size),
            flags: 0,
        });
    };
    for p in [
        P::SOCKET_FILTER,
        P::SCHED_CLS,
        P::XDP,
        P::KPROBE,
        P::PERF_EVENT,
        P::RAW_TRACEPOINT,
        P::RAW_TRACEPOINT_WRITABLE,
        P::SOCK_OPS,
        P::SK_SKB,
        P::SK_MSG,
        P::FLOW_DISSECTOR,
        P::LWT_IN,
        P::LWT_XMIT,
        P::LWT_SEG6LOCAL,
        P::CGROUP_DEVICE,
        P::CGROUP_SYSCTL,
        P::SK_REUSEPORT,
    ] {
        add(p, None);
    }
    add(P::XDP, Some(A::XDP_DEVMAP));
    add(P::CGROUP_SKB, Some(A::CGROUP_INET_INGRESS));
    add(P::CGROUP_SKB, Some(A::CGROUP_INET_EGRESS));
    for a in [
        A::CGROUP_INET_SOCK_CREATE,
        A::CGROUP_INET_SOCK_RELEASE,
        A::CGROUP_INET4_POST_BIND,
        A::CGROUP_INET6_POST_BIND,
    ] {
        add(P::CGROUP_SOCK, Some(a));
    }
    for a in [
        A::CGROUP_INET4_BIND,
        A::CGROUP_INET6_CONNECT,
        A::CGROUP_UDP4_SENDMSG,
        A::CGROUP_UDP6_SENDMSG,
        A::CGROUP_UNIX_CONNECT,
        A::CGROUP_INET6_GETPEERNAME,
        A::CGROUP_UDP4_RECVMSG,
    ] {
        add(P::CGROUP_SOCK_ADDR, Some(a));
    }
    add(P::CGROUP_SOCKOPT, Some(A::CGROUP_GETSOCKOPT));
    add(P::CGROUP_SOCKOPT, Some(A::CGROUP_SETSOCKOPT));
    add(P::SK_LOOKUP, Some(A::SK_LOOKUP));
    add(P::SK_SKB, Some(A::SK_SKB_STREAM_PARSER));
    add(P::SK_REUSEPORT, Some(A::SK_REUSEPORT_SELECT_OR_MIGRATE));
    add(P::LWT_OUT, None);
    add(P::SCHED_ACT, None);
    add(P::NETFILTER, Some(A::NETFILTER));
    // Tracepoint records and syscall contexts are large: sweep the edges.
    v.push(Config {
        prog_type: P::TRACEPOINT,
        attach: None,
        offsets: (-8..64).chain(8180..8200).collect(),
        flags: 0,
    });
    v.push(Config {
        prog_type: P::SYSCALL,
        attach: None,
        offsets: (-8..32).chain(65520..65544).collect(),
        flags: BPF_F_SLEEPABLE,
    });
    v
}

const R0: u8 = 0;
const R1: u8 = 1;
const R2: u8 = 2;

#[test]
fn ctx_access_matches_the_host_kernel() {
    if let Some(why) = kernel_unavailable() {
        println!("SKIP: {why}");
        return;
    }
    let mut mismatches = Vec::new();
    let mut compared = 0;
    for c in configs() {
        let spec = LoadSpec {
            prog_type: c.prog_type.0,
            expected_attach_type: c.attach.map_or(0, |a| a.0),
            attach_btf_id: 0,
            prog_flags: c.flags,
        };
        let base = load(&spec, &[mov_r0(1), exit()]);
        assert!(base.ok, "{} {:?}: {}", c.prog_type, c.attach, base.log);
        for &off in &c.offsets {
            for size in [1u32, 2, 4, 8] {
                for access in [Access::Read, Access::Write] {
                    let Ok(off16) = i16::try_from(off) else {
                        continue;
                    };
                    let access_insn = match access {
                        Access::Read => ldx(size, R0, R1, off16),
                        Access::Write => stx(size, R1, R2, off16),
                    };
                    let prog: Vec<Insn> =
                        vec![Insn::new(0xb7, R2, 0, 0, 0), access_insn, mov_r0(1), exit()];
                    let r = load(&spec, &prog);
                    let ours = check_ctx_access(c.prog_type, c.attach, off, size, access);
                    compared += 1;
                    let kernel_line = r.last_error_line().to_string();
                    let same = match &ours {
                        Ok(_) => r.ok,
                        Err(e) => !r.ok && kernel_line == e.to_string(),
                    };
                    if !same {
                        mismatches.push(format!(
                            "{} {:?} {access:?} off={off} size={size}: kernel {}, ours {:?}",
                            c.prog_type,
                            c.attach,
                            if r.ok { "ok".to_string() } else { kernel_line },
                            ours
                        ));
                        continue;
                    }
                    // Pointer or scalar: add the loaded value to itself.
                    if let (Ok(a), Access::Read) = (ours, access) {
                        let add_self = Insn::new(0x0f, R0, R0, 0, 0);
                        let r = load(
                            &spec,
                            &[ldx(size, R0, R1, off16), add_self, mov_r0(1), exit()],
                        );
                        let leaks = r.log.contains("pointer += pointer prohibited");
                        if leaks != a.value.is_pointer() {
                            mismatches.push(format!(
                                "{} {:?} off={off} size={size}: kernel pointer={leaks}, ours {:?}",
                                c.prog_type, c.attach, a.value
                            ));
                        }
                    }
                }
            }
        }
    }
    println!("compared {compared} ctx accesses");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// Sign-extending loads (BPF_MEMSX) of 1, 2 and 4 bytes: the packet
/// pointer fields refuse them.
#[test]
fn sign_extending_ctx_loads_match_the_host_kernel() {
    if let Some(why) = kernel_unavailable() {
        println!("SKIP: {why}");
        return;
    }
    let mut mismatches = Vec::new();
    let mut compared = 0;
    for c in configs() {
        let spec = LoadSpec {
            prog_type: c.prog_type.0,
            expected_attach_type: c.attach.map_or(0, |a| a.0),
            attach_btf_id: 0,
            prog_flags: c.flags,
        };
        for &off in &c.offsets {
            let Ok(off16) = i16::try_from(off) else {
                continue;
            };
            for size in [1u32, 2, 4] {
                // BPF_LDX | BPF_MEMSX | size
                let code = 0x81
                    | match size {
                        1 => 0x10,
                        2 => 0x08,
                        _ => 0x00,
                    };
                let prog = [Insn::new(code, R0, R1, off16, 0), mov_r0(1), exit()];
                let r = load(&spec, &prog);
                let ours = check_ctx_access_with(&CtxQuery {
                    prog_type: c.prog_type,
                    expected_attach_type: c.attach,
                    off,
                    size,
                    access: Access::Read,
                    ldsx: true,
                    bpf_capable: true,
                });
                let line = r.last_error_line().to_string();
                let same = match &ours {
                    Ok(_) => r.ok,
                    Err(e) => !r.ok && line == e.to_string(),
                };
                compared += 1;
                if !same {
                    mismatches.push(format!(
                        "{} {:?} ldsx off={off} size={size}: kernel {}, ours {ours:?}",
                        c.prog_type,
                        c.attach,
                        if r.ok { "ok" } else { line.as_str() }
                    ));
                }
            }
        }
    }
    println!("compared {compared} sign-extending ctx loads");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
