//! BPF LSM programs: which hooks they may attach to and what they may
//! return, by the hook's `bpf_lsm_<hook>` function in vmlinux BTF
//! (bpf_lsm_verify_prog, bpf_lsm_get_retval_range, bpf_lsm_is_sleepable_hook),
//! and where tracing programs may attach. The hook lists are those of the
//! 6.12 sources with the host's config (keys, audit, xfrm), the sleepable
//! hooks 6.18's; hooks whose status changed in later kernels are refused by
//! name.

use crate::btf_walk::vmlinux;
use crate::error::VerifyError;
use crate::error_injection::{self, ErrorInjection};
use crate::kernel_config::{self, KernelConfig, When};
use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_object::btf::Kind;

/// Hooks a BPF LSM program may not attach to.
const DISABLED_HOOKS: &[&str] = &[
    "vm_enough_memory",
    "inode_need_killpriv",
    "inode_getsecurity",
    "inode_listsecurity",
    "inode_copy_up_xattr",
    "getselfattr",
    "getprocattr",
    "setprocattr",
    "key_getsecurity",
    "audit_rule_match",
    "ismaclabel",
];

/// Hooks disabled in some kernels after 6.12 and not in others: bpfvet
/// cannot tell which the target has.
const HOOKS_OF_UNSETTLED_STATUS: &[&str] = &["file_alloc_security", "xfrm_decode_session"];

/// Hooks a sleepable LSM program may attach to, and where the LSM-only
/// helpers that may sleep are allowed (6.18's sleepable_lsm_hooks; those
/// under SECURITY_PATH or SECURITY_NETWORK exist only where configured).
const SLEEPABLE_HOOKS: &[&str] = &[
    "bpf",
    "bpf_map",
    "bpf_map_create",
    "bpf_map_free",
    "bpf_prog",
    "bpf_prog_load",
    "bpf_prog_free",
    "bpf_token_create",
    "bpf_token_free",
    "bpf_token_cmd",
    "bpf_token_capable",
    "bprm_check_security",
    "bprm_committed_creds",
    "bprm_committing_creds",
    "bprm_creds_for_exec",
    "bprm_creds_from_file",
    "capget",
    "capset",
    "cred_prepare",
    "file_ioctl",
    "file_lock",
    "file_open",
    "file_post_open",
    "file_receive",
    "inode_create",
    "inode_free_security",
    "inode_getattr",
    "inode_getxattr",
    "inode_mknod",
    "inode_need_killpriv",
    "inode_post_setxattr",
    "inode_post_removexattr",
    "inode_readlink",
    "inode_removexattr",
    "inode_rename",
    "inode_rmdir",
    "inode_setattr",
    "inode_setxattr",
    "inode_symlink",
    "inode_unlink",
    "kernel_module_request",
    "kernel_read_file",
    "kernfs_init_security",
    "path_unlink",
    "path_mkdir",
    "path_rmdir",
    "path_truncate",
    "path_symlink",
    "path_link",
    "path_rename",
    "path_chmod",
    "path_chown",
    "mmap_file",
    "netlink_send",
    "path_notify",
    "release_secctx",
    "sb_alloc_security",
    "sb_eat_lsm_opts",
    "sb_kern_mount",
    "sb_mount",
    "sb_remount",
    "sb_set_mnt_opts",
    "sb_show_options",
    "sb_statfs",
    "sb_umount",
    "settime",
    "inet_conn_established",
    "socket_accept",
    "socket_bind",
    "socket_connect",
    "socket_create",
    "socket_getpeername",
    "socket_getpeersec_dgram",
    "socket_getsockname",
    "socket_getsockopt",
    "socket_listen",
    "socket_post_create",
    "socket_recvmsg",
    "socket_sendmsg",
    "socket_shutdown",
    "socket_socketpair",
    "syslog",
    "task_alloc",
    "task_prctl",
    "task_setscheduler",
    "task_to_inode",
    "userns_create",
];

/// Whether the LSM hook (`bpf_lsm_<hook>` or `<hook>`) may sleep
/// (bpf_lsm_is_sleepable_hook).
pub fn hook_may_sleep(hook: &str) -> bool {
    SLEEPABLE_HOOKS.contains(&hook.strip_prefix("bpf_lsm_").unwrap_or(hook))
}

/// Hooks whose pointer arguments are not trusted (the objects are being
/// set up or torn down); every other hook's are (bpf_lsm_is_trusted).
const UNTRUSTED_ARG_HOOKS: &[&str] = &[
    "bpf_map_free",
    "bpf_prog_free",
    "file_alloc_security",
    "file_free_security",
    "sk_alloc_security",
    "sk_free_security",
    "task_free",
];

/// Whether the hook `bpf_lsm_<hook>`'s pointer arguments are trusted.
pub fn hook_args_trusted(func: &str) -> bool {
    let hook = func.strip_prefix("bpf_lsm_").unwrap_or(func);
    !UNTRUSTED_ARG_HOOKS.contains(&hook)
}

/// Hooks whose return value is a boolean.
const BOOL_HOOKS: &[&str] = &[
    "xfrm_state_pol_flow_match",
    "audit_rule_known",
    "inode_xattr_skipcap",
];

/// The largest errno, as the negated lower bound of errno hooks.
const MAX_ERRNO: i64 = 4095;

/// The hook an LSM program attaches to (its section's `lsm/<hook>`).
fn hook(prog: &bpfvet_object::Program) -> Option<&str> {
    (prog.prog_type == ProgType::LSM)
        .then_some(prog.attach_target.as_deref())
        .flatten()
        .map(|t| t.strip_prefix("bpf_lsm_").unwrap_or(t))
}

/// The load-time checks of an LSM program: a GPL license and a hook BPF
/// may attach to.
pub fn check_attach(
    obj: &bpfvet_object::Object,
    prog: &bpfvet_object::Program,
) -> Result<(), VerifyError> {
    let Some(hook) = hook(prog) else {
        return Ok(());
    };
    if !crate::check_call::license_is_gpl(obj.license_of(prog)) {
        return Err(VerifyError::new(
            None,
            "LSM programs must have a GPL compatible license".into(),
        ));
    }
    if HOOKS_OF_UNSETTLED_STATUS.contains(&hook) {
        return Err(VerifyError::unsupported(
            None,
            format!("whether LSM hook {hook} is open to BPF (it differs between kernels)"),
        ));
    }
    if DISABLED_HOOKS.contains(&hook) {
        let func = format!("bpf_lsm_{hook}");
        let id = vmlinux()
            .and_then(|b| b.find_by_name_kind(&func, Kind::Func))
            .unwrap_or(0);
        return Err(VerifyError::new(
            None,
            format!("attach_btf_id {id} points to disabled hook {func}"),
        ));
    }
    Ok(())
}

/// The functions registered as modify-return targets
/// (register_btf_fmodret_id_set), with whether a sleepable program may
/// attach to them (KF_SLEEPABLE): test_run's, always built, and MPTCP's
/// (in vmlinux when MPTCP is).
const FMODRET_SET: &[(&str, bool)] = &[
    ("bpf_modify_return_test", false),
    ("bpf_modify_return_test2", false),
    ("bpf_modify_return_test_tp", false),
    ("bpf_fentry_test1", true),
    ("update_socket_protocol", false),
];

/// `target`'s entry in the modify-return set: Some(sleepable) if it is
/// registered there.
fn fmodret_entry(target: &str) -> Option<bool> {
    let &(name, sleepable) = FMODRET_SET.iter().find(|(n, _)| *n == target)?;
    // update_socket_protocol is always in vmlinux; MPTCP registers it.
    if name == "update_socket_protocol"
        && vmlinux()
            .and_then(|b| b.find_by_name_kind("mptcp_sock", Kind::Struct))
            .is_none()
    {
        return None;
    }
    Some(sleepable)
}

/// Error-injection functions a sleepable program may still not attach
/// to, as they are called from atomic context too
/// (btf_non_sleepable_error_inject).
const NON_SLEEPABLE_ERROR_INJECT: &[(&str, When)] = &[
    ("__filemap_add_folio", When::Always),
    (
        "should_fail_alloc_page",
        When::AnySet(&["CONFIG_FAIL_PAGE_ALLOC"]),
    ),
    ("should_failslab", When::AnySet(&["CONFIG_FAILSLAB"])),
];

/// What a refusal names when a rule needs the kernel's config.
const UNKNOWN_CONFIG: &str = "its kernel configuration: set BPFVET_KERNEL_CONFIG";

/// Whether `func` is in the kernel set `set` on the target kernel; None
/// when that depends on a config bpfvet cannot read.
/// `config` is asked for only when the answer depends on it (reading the
/// host's config costs milliseconds).
fn in_kernel_set<'c>(
    set: &[(&str, When)],
    func: &str,
    config: impl FnOnce() -> Option<&'c KernelConfig>,
) -> Option<bool> {
    match set.iter().find(|(f, _)| *f == func) {
        None => Some(false),
        Some((_, When::Always)) => Some(true),
        Some(&(_, when)) => config().map(|c| c.holds(when)),
    }
}

/// Whether a sleepable fentry, fexit or fmod_ret program may attach to
/// `target`: an error-injection function not denied, or one the
/// modify-return set marks sleepable. Err names what bpfvet cannot see.
fn may_sleep_at<'c>(
    target: &str,
    list: &ErrorInjection,
    config: impl FnOnce() -> Option<&'c KernelConfig>,
) -> Result<bool, String> {
    if fmodret_entry(target) == Some(true) {
        return Ok(true);
    }
    if !list.contains(target).ok_or(error_injection::UNKNOWN_LIST)? {
        return Ok(false);
    }
    let denied = in_kernel_set(NON_SLEEPABLE_ERROR_INJECT, target, config).ok_or(UNKNOWN_CONFIG)?;
    Ok(!denied)
}

/// Whether an fmod_ret program may modify `target`
/// (check_attach_modify_return): a security hook, a modify-return set
/// member or an error-injection function.
fn may_modify(target: &str, list: &ErrorInjection) -> Option<bool> {
    if target.starts_with("security_") || fmodret_entry(target).is_some() {
        return Some(true);
    }
    list.contains(target)
}

/// The first check of a tracing or LSM program's target: it must have
/// one (a bare `SEC("fentry")` gets it from a loader call at run time, and
/// the kernel rejects the load without it). A sleepable fentry, fexit or
/// fmod_ret program may only attach to a function of the kernel's
/// error-injection list (a build option: Debian's kernels have none) or
/// of its sleepable modify-return set; a plain fmod_ret program only to
/// what it may modify. Where the list is unknown: refused.
pub fn check_attach_target(prog: &bpfvet_object::Program) -> Result<(), VerifyError> {
    check_attach_target_with(prog, error_injection::target_list, kernel_config::target)
}

/// `list` and `config` are read only by the rules that need them: most
/// programs never pay for the host files behind them.
fn check_attach_target_with<'c>(
    prog: &bpfvet_object::Program,
    list: impl FnOnce() -> &'c ErrorInjection,
    config: impl Fn() -> Option<&'c KernelConfig>,
) -> Result<(), VerifyError> {
    if prog.prog_type != ProgType::TRACING && prog.prog_type != ProgType::LSM {
        return Ok(());
    }
    let Some(target) = prog.attach_target.as_deref() else {
        return Err(VerifyError::new(
            None,
            "Tracing programs must provide btf_id".into(),
        ));
    };
    if prog.prog_type == ProgType::LSM && prog.sleepable {
        let hook = target.strip_prefix("bpf_lsm_").unwrap_or(target);
        if !hook_may_sleep(hook) {
            return Err(VerifyError::new(
                None,
                format!("bpf_lsm_{hook} is not sleepable"),
            ));
        }
    }
    let kind = match prog.expected_attach_type {
        Some(AttachType::TRACE_FENTRY) => "fentry",
        Some(AttachType::TRACE_FEXIT) => "fexit",
        Some(AttachType::MODIFY_RETURN) => "fmod_ret",
        _ => return Ok(()),
    };
    if prog.prog_type == ProgType::TRACING && prog.sleepable {
        match may_sleep_at(target, list(), &config) {
            Ok(true) => {}
            Ok(false) => {
                return Err(VerifyError::new(None, format!("{target} is not sleepable")));
            }
            Err(what) => {
                return Err(VerifyError::unsupported(
                    None,
                    format!("whether a sleepable {kind} program may attach to {target} ({what})"),
                ));
            }
        }
    } else if kind == "fmod_ret" {
        match may_modify(target, list()) {
            Some(true) => {}
            Some(false) => {
                return Err(VerifyError::new(
                    None,
                    format!("{target}() is not modifiable"),
                ));
            }
            None => {
                return Err(VerifyError::unsupported(
                    None,
                    format!(
                        "whether fmod_ret may modify {target} ({})",
                        error_injection::UNKNOWN_LIST
                    ),
                ));
            }
        }
    }
    let unknown_config = |what: String| {
        Err(VerifyError::unsupported(
            None,
            format!("{what} ({UNKNOWN_CONFIG})"),
        ))
    };
    if prog.prog_type == ProgType::TRACING {
        match in_kernel_set(TRACING_DENIED, target, &config) {
            Some(false) => {}
            Some(true) => {
                return Err(VerifyError::new(
                    None,
                    format!("Attaching tracing programs to function '{target}' is rejected."),
                ));
            }
            None => {
                return unknown_config(format!("whether tracing programs may attach to {target}"))
            }
        }
    }
    if kind != "fentry" {
        match in_kernel_set(NORETURN_FUNCS, target, &config) {
            Some(false) => {}
            Some(true) => {
                return Err(VerifyError::new(
                    None,
                    format!(
                        "Attaching fexit/fmod_ret to __noreturn function '{target}' is rejected."
                    ),
                ));
            }
            None => return unknown_config(format!("whether {target} is listed as __noreturn")),
        }
    }
    Ok(())
}

/// Functions no tracing program may attach to (btf_id_deny).
const TRACING_DENIED: &[(&str, When)] = &[
    ("___migrate_enable", When::AnySet(&["CONFIG_SMP"])),
    ("migrate_disable", When::AnySet(&["CONFIG_SMP"])),
    ("migrate_enable", When::AnySet(&["CONFIG_SMP"])),
    (
        "rcu_read_unlock_strict",
        When::NoneSet(&["CONFIG_PREEMPT_RCU", "CONFIG_TINY_RCU"]),
    ),
    (
        "preempt_count_add",
        When::AnySet(&["CONFIG_DEBUG_PREEMPT", "CONFIG_TRACE_PREEMPT_TOGGLE"]),
    ),
    (
        "preempt_count_sub",
        When::AnySet(&["CONFIG_DEBUG_PREEMPT", "CONFIG_TRACE_PREEMPT_TOGGLE"]),
    ),
    ("__rcu_read_lock", When::AnySet(&["CONFIG_PREEMPT_RCU"])),
    ("__rcu_read_unlock", When::AnySet(&["CONFIG_PREEMPT_RCU"])),
];

/// `__noreturn` functions fexit and fmod_ret programs may not attach to
/// (noreturn_deny, on x86-64).
const NORETURN_FUNCS: &[(&str, When)] = &[
    ("__ia32_sys_exit", When::AnySet(&["CONFIG_IA32_EMULATION"])),
    (
        "__ia32_sys_exit_group",
        When::AnySet(&["CONFIG_IA32_EMULATION"]),
    ),
    ("__kunit_abort", When::AnySet(&["CONFIG_KUNIT"])),
    ("kunit_try_catch_throw", When::AnySet(&["CONFIG_KUNIT"])),
    (
        "__module_put_and_kthread_exit",
        When::AnySet(&["CONFIG_MODULES"]),
    ),
    ("__x64_sys_exit", When::Always),
    ("__x64_sys_exit_group", When::Always),
    ("do_exit", When::Always),
    ("do_group_exit", When::Always),
    ("kthread_complete_and_exit", When::Always),
    ("kthread_exit", When::Always),
    ("make_task_dead", When::Always),
];

/// Whether the program's LSM hook returns void, or an error naming what
/// bpfvet cannot resolve (the hook's prototype in vmlinux BTF).
pub fn hook_returns_void(prog: &bpfvet_object::Program) -> Result<bool, VerifyError> {
    let func = format!("bpf_lsm_{}", hook(prog).unwrap_or(""));
    vmlinux()
        .and_then(|b| {
            let f = b.type_by_id(b.find_by_name_kind(&func, Kind::Func)?)?;
            Some(b.type_by_id(f.size_or_type)?.size_or_type == 0)
        })
        .ok_or_else(|| {
            VerifyError::unsupported(
                None,
                format!("LSM hook {func} without its prototype in kernel BTF"),
            )
        })
}

/// What R0 must hold when an LSM program exits.
pub enum LsmReturn {
    /// Void hook of a plain LSM program: nothing, R0 need not be set.
    Nothing,
    /// A range of the whole register, or of its low 32 bits.
    Range { min: i64, max: i64, subreg: bool },
}

/// The return rule of an LSM program, or an error naming what bpfvet
/// cannot resolve (the hook's prototype in vmlinux BTF).
pub fn return_rule(prog: &bpfvet_object::Program) -> Result<LsmReturn, VerifyError> {
    let hook = hook(prog).unwrap_or("");
    let returns_void = hook_returns_void(prog)?;
    Ok(
        if prog.expected_attach_type == Some(AttachType::LSM_CGROUP) {
            // A cgroup LSM program on a void hook must not change the result.
            let min = if returns_void { 1 } else { 0 };
            LsmReturn::Range {
                min,
                max: 1,
                subreg: false,
            }
        } else if returns_void {
            LsmReturn::Nothing
        } else if BOOL_HOOKS.contains(&hook) {
            LsmReturn::Range {
                min: 0,
                max: 1,
                subreg: true,
            }
        } else {
            LsmReturn::Range {
                min: -MAX_ERRNO,
                max: 0,
                subreg: true,
            }
        },
    )
}

/// check_attach_btf_id's rules for sleepable programs: syscall programs
/// must be, and only trampolines, iterators, LSM, uprobes and struct_ops
/// may be.
pub fn check_sleepable(prog: &bpfvet_object::Program) -> Result<(), VerifyError> {
    let fail = |m: &str| Err(VerifyError::new(None, m.to_string()));
    if prog.prog_type == ProgType::SYSCALL {
        return if prog.sleepable {
            Ok(())
        } else {
            fail("Syscall programs can only be sleepable")
        };
    }
    let can_sleep = match prog.prog_type {
        ProgType::TRACING => matches!(
            prog.expected_attach_type,
            Some(
                AttachType::TRACE_FENTRY
                    | AttachType::TRACE_FEXIT
                    | AttachType::MODIFY_RETURN
                    | AttachType::TRACE_ITER
            )
        ),
        ProgType::LSM | ProgType::KPROBE | ProgType::STRUCT_OPS => true,
        _ => false,
    };
    if prog.sleepable && !can_sleep {
        return fail(
            "Only fentry/fexit/fmod_ret, lsm, iter, uprobe, and struct_ops programs can be sleepable",
        );
    }
    Ok(())
}

#[cfg(test)]
mod attach_target_tests {
    use super::*;
    use bpfvet_object::Object;

    fn tracing(section: &str, attach: AttachType, target: Option<&str>, sleepable: bool) -> Object {
        let mut obj = Object::single_program("p", ProgType::TRACING, vec![]);
        let p = &mut obj.programs[0];
        p.section = section.into();
        p.expected_attach_type = Some(attach);
        p.attach_target = target.map(Into::into);
        p.sleepable = sleepable;
        obj
    }

    #[test]
    fn only_some_program_types_may_sleep() {
        let fentry = tracing("fentry.s/f", AttachType::TRACE_FENTRY, Some("f"), true);
        assert!(check_sleepable(&fentry.programs[0]).is_ok());
        let raw_tp = tracing("tp_btf.s/f", AttachType::TRACE_RAW_TP, Some("f"), true);
        let e = check_sleepable(&raw_tp.programs[0]).unwrap_err();
        assert!(e.msg.starts_with("Only fentry/fexit/fmod_ret, lsm, iter"));
        let mut obj = Object::single_program("p", ProgType::SCHED_CLS, vec![]);
        obj.programs[0].sleepable = true;
        assert!(check_sleepable(&obj.programs[0]).is_err());
        obj.programs[0].sleepable = false;
        assert!(check_sleepable(&obj.programs[0]).is_ok());
        let syscall = Object::single_program("p", ProgType::SYSCALL, vec![]);
        let e = check_sleepable(&syscall.programs[0]).unwrap_err();
        assert_eq!(e.msg, "Syscall programs can only be sleepable");
    }

    #[test]
    fn a_tracing_program_without_target_is_rejected_as_the_kernel_does() {
        let obj = tracing("fentry", AttachType::TRACE_FENTRY, None, false);
        let e = check_attach_target(&obj.programs[0]).unwrap_err();
        assert_eq!(e.msg, "Tracing programs must provide btf_id");
        assert!(!e.unsupported);
        let obj = tracing("fentry/foo", AttachType::TRACE_FENTRY, Some("foo"), false);
        assert!(check_attach_target(&obj.programs[0]).is_ok());
    }

    fn listing(funcs: &[&str]) -> ErrorInjection {
        ErrorInjection::parse(
            &funcs
                .iter()
                .map(|f| format!("{f}\tERRNO\n"))
                .collect::<String>(),
        )
    }

    #[test]
    fn fmod_ret_modifies_hooks_its_set_and_the_error_injection_list() {
        let list = listing(&["__x64_sys_nanosleep"]);
        let check = |target, list: &ErrorInjection| {
            let obj = tracing("fmod_ret/x", AttachType::MODIFY_RETURN, Some(target), false);
            check_attach_target_with(&obj.programs[0], || list, || None)
        };
        let unknown = ErrorInjection::Unknown;
        assert!(check("security_file_open", &unknown).is_ok());
        assert!(check("bpf_modify_return_test", &unknown).is_ok());
        assert!(check("__x64_sys_nanosleep", &list).is_ok());
        let e = check("__x64_sys_getpgid", &list).unwrap_err();
        assert_eq!(e.msg, "__x64_sys_getpgid() is not modifiable");
        assert!(!e.unsupported);
        // Without the list bpfvet cannot tell.
        let e = check("__x64_sys_nanosleep", &unknown).unwrap_err();
        assert!(e.unsupported, "{e:?}");
        assert!(e.msg.contains("error-injection list"), "{}", e.msg);
    }

    #[test]
    fn noreturn_and_denied_targets_by_the_kernel_config() {
        let preempt_rcu = KernelConfig::parse("CONFIG_PREEMPT_RCU=y\nCONFIG_IA32_EMULATION=y\n");
        let plain = KernelConfig::parse("CONFIG_SMP=y\n");
        let check = |attach, target, config: Option<&KernelConfig>| {
            let obj = tracing("x", attach, Some(target), false);
            check_attach_target_with(&obj.programs[0], || &ErrorInjection::Unknown, || config)
        };
        let (fentry, fexit) = (AttachType::TRACE_FENTRY, AttachType::TRACE_FEXIT);
        let e = check(fexit, "do_exit", None).unwrap_err();
        assert_eq!(
            e.msg,
            "Attaching fexit/fmod_ret to __noreturn function 'do_exit' is rejected."
        );
        assert!(!e.unsupported);
        assert!(check(AttachType::MODIFY_RETURN, "do_group_exit", None).is_err());
        // fentry runs before the function: allowed.
        assert!(check(fentry, "do_exit", None).is_ok());
        // Denied or __noreturn under some configurations.
        let e = check(fentry, "__rcu_read_lock", Some(&preempt_rcu)).unwrap_err();
        assert_eq!(
            e.msg,
            "Attaching tracing programs to function '__rcu_read_lock' is rejected."
        );
        assert!(check(fentry, "__rcu_read_lock", Some(&plain)).is_ok());
        assert!(check(fentry, "rcu_read_unlock_strict", Some(&plain)).is_err());
        assert!(check(fentry, "rcu_read_unlock_strict", Some(&preempt_rcu)).is_ok());
        assert!(check(fexit, "__ia32_sys_exit", Some(&preempt_rcu)).is_err());
        assert!(check(fexit, "__ia32_sys_exit", Some(&plain)).is_ok());
        // Without the config: refused by name.
        let e = check(fentry, "__rcu_read_lock", None).unwrap_err();
        assert!(
            e.unsupported && e.msg.contains("BPFVET_KERNEL_CONFIG"),
            "{e:?}"
        );
        assert!(
            check(fexit, "__ia32_sys_exit", None)
                .unwrap_err()
                .unsupported
        );
    }

    #[test]
    fn sleepable_trampolines_attach_to_error_injection_functions_only() {
        let list = listing(&[
            "__x64_sys_getpgid",
            "__filemap_add_folio",
            "should_failslab",
        ]);
        let check = |attach, target, list: &ErrorInjection| {
            let obj = tracing("x.s/f", attach, Some(target), true);
            check_attach_target_with(&obj.programs[0], || list, || None)
        };
        for attach in [
            AttachType::TRACE_FENTRY,
            AttachType::TRACE_FEXIT,
            AttachType::MODIFY_RETURN,
        ] {
            assert!(check(attach, "__x64_sys_getpgid", &list).is_ok());
            let e = check(attach, "__x64_sys_nanosleep", &list).unwrap_err();
            assert_eq!(e.msg, "__x64_sys_nanosleep is not sleepable");
            assert!(!e.unsupported);
        }
        let fentry = AttachType::TRACE_FENTRY;
        // Listed, but called in atomic context too.
        let e = check(fentry, "__filemap_add_folio", &list).unwrap_err();
        assert_eq!(e.msg, "__filemap_add_folio is not sleepable");
        // Denied only under a fault-injection option.
        assert!(
            check(fentry, "should_failslab", &list)
                .unwrap_err()
                .unsupported
        );
        // The modify-return set's sleepable member needs no list.
        assert!(check(fentry, "bpf_fentry_test1", &ErrorInjection::Unknown).is_ok());
        let e = check(fentry, "__x64_sys_getpgid", &ErrorInjection::Unknown).unwrap_err();
        assert!(
            e.unsupported && e.msg.contains("error-injection list"),
            "{e:?}"
        );
        // A sleepable fmod_ret needs no modifiable target: a hook that
        // may not sleep is refused for sleeping.
        let e = check(AttachType::MODIFY_RETURN, "security_file_open", &list).unwrap_err();
        assert_eq!(e.msg, "security_file_open is not sleepable");
        // Iterators may sleep anywhere.
        let obj = tracing(
            "iter.s/task",
            AttachType::TRACE_ITER,
            Some("bpf_iter_task"),
            true,
        );
        assert!(
            check_attach_target_with(&obj.programs[0], || &ErrorInjection::Unknown, || None)
                .is_ok()
        );
    }

    #[test]
    fn sleepable_lsm_programs_attach_to_sleepable_hooks_only() {
        let lsm = |hook: &str, sleepable| {
            let mut obj = Object::single_program("p", ProgType::LSM, vec![]);
            let p = &mut obj.programs[0];
            p.expected_attach_type = Some(AttachType::LSM_MAC);
            p.attach_target = Some(hook.into());
            p.sleepable = sleepable;
            check_attach_target_with(&obj.programs[0], || &ErrorInjection::Unknown, || None)
        };
        assert!(lsm("file_open", true).is_ok());
        assert!(lsm("bpf_lsm_bprm_committed_creds", true).is_ok());
        let e = lsm("task_free", true).unwrap_err();
        assert_eq!(e.msg, "bpf_lsm_task_free is not sleepable");
        assert!(!e.unsupported);
        assert!(lsm("task_free", false).is_ok());
    }
}
