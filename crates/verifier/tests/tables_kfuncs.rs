//! The kfunc table against the host kernel: every name exists as a
//! function in vmlinux BTF, and calling each one from a set of program types
//! is refused ("calling kernel function X is not allowed") exactly where
//! `kfunc_allowed` says so.

mod tables_support;

use bpfvet_isa::uapi::ProgType;
use bpfvet_isa::Insn;
use bpfvet_verifier::helpers::kfuncs::{build_option, kfunc_allowed, KFUNCS};
use tables_support::*;

fn kfunc_ids() -> Option<Vec<Option<u32>>> {
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return None;
    }
    let names: Vec<(u32, &str)> = KFUNCS.iter().map(|k| (BTF_KIND_FUNC, k.name)).collect();
    Some(vmlinux_btf_ids(&names))
}

#[test]
fn every_kfunc_is_in_vmlinux_btf() {
    let Some(ids) = kfunc_ids() else {
        println!("SKIP: no /sys/kernel/btf/vmlinux");
        return;
    };
    // A kfunc of a build option the host lacks is absent, rightly.
    let config = bpfvet_object::read_kernel_config(std::path::Path::new("/proc/config.gz"))
        .unwrap_or_default();
    let built = |k: &bpfvet_verifier::helpers::kfuncs::Kfunc| {
        build_option(k).is_none_or(|opt| config.get(opt).is_some_and(|v| v == "y"))
    };
    let missing: Vec<&str> = KFUNCS
        .iter()
        .zip(&ids)
        .filter(|(k, id)| id.is_none() && built(k))
        .map(|(k, _)| k.name)
        .collect();
    assert!(missing.is_empty(), "not in vmlinux BTF: {missing:?}");
}

#[test]
fn kfunc_permissions_match_the_host_kernel() {
    if let Some(why) = kernel_unavailable() {
        println!("SKIP: {why}");
        return;
    }
    let Some(ids) = kfunc_ids() else {
        println!("SKIP: no /sys/kernel/btf/vmlinux");
        return;
    };
    let mut mismatches = Vec::new();
    let mut compared = 0;
    for prog_type in [
        ProgType::SOCKET_FILTER,
        ProgType::KPROBE,
        ProgType::SCHED_CLS,
        ProgType::XDP,
        ProgType::CGROUP_SKB,
        ProgType::SK_SKB,
        ProgType::LWT_XMIT,
        ProgType::TRACEPOINT,
        ProgType::SOCK_OPS,
        ProgType::PERF_EVENT,
    ] {
        let spec = LoadSpec {
            prog_type: prog_type.0,
            ..Default::default()
        };
        for (k, id) in KFUNCS.iter().zip(&ids) {
            let Some(id) = id else { continue };
            let kfunc_call = Insn::new(0x85, 0, 2, 0, *id as i32);
            let r = load(&spec, &[kfunc_call, mov_r0(1), exit()]);
            let refused =
                r.last_error_line() == format!("calling kernel function {} is not allowed", k.name);
            compared += 1;
            if Some(!refused) != kfunc_allowed(k.name, prog_type, None) {
                mismatches.push(format!(
                    "{prog_type} {}: kernel refused={refused} ({})",
                    k.name,
                    r.last_error_line()
                ));
            }
        }
    }
    println!("compared {compared} (program type, kfunc) pairs");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
