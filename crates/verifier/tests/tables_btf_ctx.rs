//! BTF-typed contexts against the host kernel: tp_btf and iterator programs
//! load every offset and size of their ctx; verdict, explanation lines,
//! pointer-ness and NULL-ability must match `btf_ctx_access`.

mod tables_support;

use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_isa::Insn;
use bpfvet_object::btf::{Btf, Kind};
use bpfvet_verifier::ctx::btf_args::{btf_ctx_access, BtfArgValue, BtfCtxTarget};
use bpfvet_verifier::ctx::Access;
use tables_support::*;

const TRACEPOINTS: &[&str] = &[
    "sched_switch",
    "sched_wakeup",
    "sys_enter",
    "sched_process_exec",
    "sched_pi_setprio",
    "kfree_skb",
    "signal_generate",
    "signal_deliver",
    "task_newtask",
];
const ITERATORS: &[&str] = &[
    "task",
    "task_file",
    "task_vma",
    "bpf_map",
    "bpf_prog",
    "cgroup",
    "tcp",
    "udp",
    "unix",
];

#[test]
fn btf_ctx_access_matches_the_host_kernel() {
    if let Some(why) = kernel_unavailable() {
        println!("SKIP: {why}");
        return;
    }
    let Ok(bytes) = std::fs::read("/sys/kernel/btf/vmlinux") else {
        println!("SKIP: no /sys/kernel/btf/vmlinux");
        return;
    };
    let btf = Btf::from_bytes(&bytes).expect("vmlinux BTF parses");
    let mut mismatches = Vec::new();
    let mut compared = 0;
    let targets = TRACEPOINTS
        .iter()
        .map(|n| {
            (
                AttachType::TRACE_RAW_TP,
                format!("btf_trace_{n}"),
                Kind::Typedef,
                *n,
            )
        })
        .chain(ITERATORS.iter().map(|n| {
            (
                AttachType::TRACE_ITER,
                format!("bpf_iter_{n}"),
                Kind::Func,
                *n,
            )
        }));
    for (eat, btf_name, kind, name) in targets {
        let Some(attach_btf_id) = btf.find_by_name_kind(&btf_name, kind) else {
            println!("{btf_name} not in this kernel: not compared");
            continue;
        };
        let target = BtfCtxTarget::resolve(&btf, ProgType::TRACING, eat, name).expect("resolves");
        let spec = LoadSpec {
            prog_type: ProgType::TRACING.0,
            expected_attach_type: eat.0,
            attach_btf_id,
            prog_flags: 0,
        };
        for off in -8i16..104 {
            for size in [1u32, 2, 4, 8] {
                let r = load(&spec, &[ldx(size, 0, 1, off), mov_r0(0), exit()]);
                let ours = btf_ctx_access(&target, off as i32, size, Access::Read);
                compared += 1;
                let lines: Vec<&str> = r
                    .log
                    .lines()
                    .filter(|l| !l.is_empty() && !l.starts_with("processed "))
                    .collect();
                let same = match &ours {
                    Ok(_) => r.ok,
                    Err(refusal) => {
                        let n = refusal.log.len() + 1;
                        let tail = &lines[lines.len().saturating_sub(n)..];
                        let mut want: Vec<String> = refusal.log.clone();
                        want.push(refusal.error.to_string());
                        !r.ok && tail == want.iter().map(String::as_str).collect::<Vec<_>>()
                    }
                };
                if !same {
                    mismatches.push(format!(
                        "{name} off={off} size={size}: kernel {:?}, ours {ours:?}",
                        lines.last()
                    ));
                    continue;
                }
                let Ok(a) = ours else { continue };
                let probe = |insn: Insn| {
                    let r = load(&spec, &[ldx(size, 0, 1, off), insn, mov_r0(0), exit()]);
                    r.last_error_line().to_string()
                };
                let pointer =
                    probe(Insn::new(0x0f, 0, 0, 0, 0)) == "R0 pointer += pointer prohibited";
                let ours_pointer = !matches!(a.value, BtfArgValue::Scalar);
                let null = probe(Insn::new(0x07, 0, 0, 0, 0)).ends_with("null-check it first");
                let ours_null = matches!(
                    a.value,
                    BtfArgValue::BtfId {
                        maybe_null: true,
                        ..
                    } | BtfArgValue::BufOrNull { .. }
                );
                if pointer != ours_pointer || null != ours_null {
                    mismatches.push(format!(
                        "{name} off={off} size={size}: kernel pointer={pointer} null={null}, ours {:?}",
                        a.value
                    ));
                }
            }
        }
    }
    println!("compared {compared} BTF ctx loads");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
