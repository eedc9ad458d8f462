//! The `attach_btf_id` of tp_btf/, iter/, fentry/, fexit/, fmod_ret/ and
//! lsm/ programs: the vmlinux BTF type libbpf resolves for the section's
//! target name.

use bpfvet_object::btf::{Btf, Kind};

/// For tp_btf the `btf_trace_<tp>` typedef, for iter the `bpf_iter_<name>`
/// function, for lsm the `bpf_lsm_<hook>` function, else the function itself.
pub fn attach_target_id(vmlinux: &Btf, section: &str, target: &str) -> Option<u32> {
    // A leading '?' only turns autoload off (libbpf strips it first).
    let prefix = section
        .trim_start_matches('?')
        .split('/')
        .next()
        .unwrap_or("");
    match prefix {
        "tp_btf" => vmlinux.find_by_name_kind(&format!("btf_trace_{target}"), Kind::Typedef),
        "iter" | "iter.s" => vmlinux.find_by_name_kind(&format!("bpf_iter_{target}"), Kind::Func),
        "lsm" | "lsm.s" | "lsm_cgroup" => {
            vmlinux.find_by_name_kind(&format!("bpf_lsm_{target}"), Kind::Func)
        }
        _ => vmlinux.find_by_name_kind(target, Kind::Func),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_the_type_libbpf_would() {
        let Ok(data) = std::fs::read("/sys/kernel/btf/vmlinux") else {
            println!("SKIP: /sys/kernel/btf/vmlinux not readable");
            return;
        };
        let btf = Btf::from_bytes(&data).unwrap();
        let tp = attach_target_id(&btf, "tp_btf/sched_switch", "sched_switch").unwrap();
        assert_eq!(btf.name_of(tp), "btf_trace_sched_switch");
        let f = attach_target_id(&btf, "fentry/do_sys_openat2", "do_sys_openat2").unwrap();
        assert_eq!(btf.name_of(f), "do_sys_openat2");
        let it = attach_target_id(&btf, "iter/task", "task").unwrap();
        assert_eq!(btf.name_of(it), "bpf_iter_task");
        assert_eq!(attach_target_id(&btf, "fentry/x", "no_such_fn_here"), None);
        let quiet = attach_target_id(&btf, "?tp_btf/sched_switch", "sched_switch");
        assert_eq!(quiet, Some(tp));
        let lsm = attach_target_id(&btf, "?lsm/bpf", "bpf").unwrap();
        assert_eq!(btf.name_of(lsm), "bpf_lsm_bpf");
    }
}
