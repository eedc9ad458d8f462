//! BPF LSM programs: which hooks they may attach to and what they may
//! return, by the hook's `bpf_lsm_<hook>` function in vmlinux BTF
//! (bpf_lsm_verify_prog, bpf_lsm_get_retval_range). The lists are those of
//! the 6.12 sources with the host's config (keys, audit, xfrm); hooks whose
//! status changed in later kernels are refused by name.

use crate::btf_walk::vmlinux;
use crate::error::VerifyError;
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
    if !crate::check_call::license_is_gpl(&obj.license) {
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

/// The functions bpfvet knows an fmod_ret program may modify: the
/// security_* hooks and the kfuncs test_run registers as modify-return
/// targets. The others depend on the kernel's error-injection list, which
/// its BTF does not show (check_attach_modify_return).
fn modifiable(target: &str) -> bool {
    const FMODRET_SET: &[&str] = &[
        "bpf_modify_return_test",
        "bpf_modify_return_test2",
        "bpf_modify_return_test_tp",
    ];
    target.starts_with("security_") || FMODRET_SET.contains(&target)
}

/// The first check of a tracing or LSM program's target: it must have
/// one (a bare `SEC("fentry")` gets it from a loader call at run time, and
/// the kernel rejects the load without it). A sleepable fentry, fexit or
/// fmod_ret program may only attach to a function of the kernel's
/// error-injection list (a build option: Debian's kernels have none) or
/// of its sleepable modify-return set, which bpfvet cannot see: refused.
pub fn check_attach_target(prog: &bpfvet_object::Program) -> Result<(), VerifyError> {
    if prog.prog_type != ProgType::TRACING && prog.prog_type != ProgType::LSM {
        return Ok(());
    }
    let Some(target) = prog.attach_target.as_deref() else {
        return Err(VerifyError::new(
            None,
            "Tracing programs must provide btf_id".into(),
        ));
    };
    let kind = match prog.expected_attach_type {
        Some(AttachType::TRACE_FENTRY) => "fentry",
        Some(AttachType::TRACE_FEXIT) => "fexit",
        Some(AttachType::MODIFY_RETURN) => "fmod_ret",
        _ => return Ok(()),
    };
    if prog.prog_type == ProgType::TRACING && prog.sleepable {
        return Err(VerifyError::unsupported(
            None,
            format!(
                "whether a sleepable {kind} program may attach to {target} (the kernel's error-injection list)"
            ),
        ));
    }
    if kind == "fmod_ret" && !modifiable(target) {
        return Err(VerifyError::unsupported(
            None,
            format!("whether fmod_ret may modify {target} (the kernel's error-injection list)"),
        ));
    }
    if prog.prog_type == ProgType::TRACING && TRACING_DENIED_BY_CONFIG.contains(&target) {
        return Err(VerifyError::unsupported(
            None,
            format!("whether tracing programs may attach to {target} (denied in some kernel configurations)"),
        ));
    }
    if kind != "fentry" {
        if NORETURN_FUNCS.contains(&target) {
            return Err(VerifyError::new(
                None,
                format!("Attaching fexit/fmod_ret to __noreturn function '{target}' is rejected."),
            ));
        }
        if NORETURN_FUNCS_BY_CONFIG.contains(&target) {
            return Err(VerifyError::unsupported(
                None,
                format!("whether {target} is listed as __noreturn (it depends on the kernel configuration)"),
            ));
        }
    }
    Ok(())
}

/// Functions no tracing program may attach to, each under a kernel
/// configuration bpfvet cannot see (btf_id_deny: SMP, PREEMPT_RCU,
/// DEBUG_PREEMPT...).
const TRACING_DENIED_BY_CONFIG: &[&str] = &[
    "___migrate_enable",
    "migrate_disable",
    "migrate_enable",
    "rcu_read_unlock_strict",
    "preempt_count_add",
    "preempt_count_sub",
    "__rcu_read_lock",
    "__rcu_read_unlock",
];

/// `__noreturn` functions fexit and fmod_ret programs may not attach to
/// (noreturn_deny) on every x86-64 kernel ...
const NORETURN_FUNCS: &[&str] = &[
    "__x64_sys_exit",
    "__x64_sys_exit_group",
    "do_exit",
    "do_group_exit",
    "kthread_complete_and_exit",
    "kthread_exit",
    "make_task_dead",
];

/// ... and those listed only under some configurations (IA32 emulation,
/// KUnit, modules).
const NORETURN_FUNCS_BY_CONFIG: &[&str] = &[
    "__ia32_sys_exit",
    "__ia32_sys_exit_group",
    "__kunit_abort",
    "kunit_try_catch_throw",
    "__module_put_and_kthread_exit",
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

    #[test]
    fn fmod_ret_only_where_bpfvet_knows_the_target_is_modifiable() {
        let check = |target| {
            let obj = tracing("fmod_ret/x", AttachType::MODIFY_RETURN, Some(target), false);
            check_attach_target(&obj.programs[0])
        };
        assert!(check("security_file_open").is_ok());
        assert!(check("bpf_modify_return_test").is_ok());
        // The error-injection list decides, which BTF does not show.
        let e = check("__x64_sys_nanosleep").unwrap_err();
        assert!(e.unsupported, "{e:?}");
        assert!(e.msg.contains("error-injection list"), "{}", e.msg);
    }

    #[test]
    fn noreturn_and_denied_targets() {
        let check = |attach, target| {
            let obj = tracing("x", attach, Some(target), false);
            check_attach_target(&obj.programs[0])
        };
        let e = check(AttachType::TRACE_FEXIT, "do_exit").unwrap_err();
        assert_eq!(
            e.msg,
            "Attaching fexit/fmod_ret to __noreturn function 'do_exit' is rejected."
        );
        assert!(!e.unsupported);
        assert!(check(AttachType::MODIFY_RETURN, "do_group_exit").is_err());
        // fentry runs before the function: allowed.
        assert!(check(AttachType::TRACE_FENTRY, "do_exit").is_ok());
        // Denied or __noreturn only under some configurations: refused.
        assert!(
            check(AttachType::TRACE_FENTRY, "__rcu_read_lock")
                .unwrap_err()
                .unsupported
        );
        assert!(
            check(AttachType::TRACE_FEXIT, "__ia32_sys_exit")
                .unwrap_err()
                .unsupported
        );
    }

    #[test]
    fn only_sleepable_fentry_fexit_fmod_ret_are_refused() {
        let obj = tracing("fentry.s/foo", AttachType::TRACE_FENTRY, Some("foo"), true);
        assert!(
            check_attach_target(&obj.programs[0])
                .unwrap_err()
                .unsupported
        );
        let obj = tracing(
            "fmod_ret.s/foo",
            AttachType::MODIFY_RETURN,
            Some("foo"),
            true,
        );
        assert!(
            check_attach_target(&obj.programs[0])
                .unwrap_err()
                .unsupported
        );
        let obj = tracing(
            "iter.s/task",
            AttachType::TRACE_ITER,
            Some("bpf_iter_task"),
            true,
        );
        assert!(check_attach_target(&obj.programs[0]).is_ok());
    }
}
