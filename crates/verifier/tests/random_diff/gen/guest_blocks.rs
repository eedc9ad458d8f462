//! Tracing programs for a lockdown-free guest (feature `guest_tracing`,
//! batch.sh `KERNEL=...` only: the host refuses them before verifying):
//! fentry/fexit/fmod_ret (sleepable too) on functions named in the guest's
//! BTF, among them the ones the kernel denies (`btf_id_deny`,
//! `__noreturn`), tp_btf raw tracepoints, LSM hooks (sleepable and not,
//! void and int) and BPF_LSM_CGROUP. Their bodies read the arguments in
//! and out of range, walk pointer arguments, write the context, call the
//! trampoline helpers (`bpf_get_func_arg`/`ret`/`arg_cnt`/`ip`,
//! `bpf_d_path`, `bpf_copy_from_user`, `bpf_set_retval`...) and kfuncs, and
//! return values in and out of the hook's range. Attach targets go by
//! name: each side resolves them in the guest's BTF.

use super::kfunc_blocks::kfunc_id;
use super::{Rng, ARRAY_MAP, ARRAY_VALUE_SIZE, PROG_ARRAY_MAP, SIZES};
use bpfvet_isa::opcode::{BPF_PSEUDO_KFUNC_CALL, BPF_PSEUDO_MAP_IDX};
use bpfvet_isa::uapi::{AttachType, ProgType};
use bpfvet_isa::Insn;

const MAP_LOOKUP: i32 = 1;
const PROBE_READ_KERNEL: i32 = 113;
const KTIME_GET_NS: i32 = 5;
const TAIL_CALL: i32 = 12;
const GET_CURRENT_PID_TGID: i32 = 14;
const OVERRIDE_RETURN: i32 = 58;
const SEND_SIGNAL: i32 = 109;
const D_PATH: i32 = 147;
const COPY_FROM_USER: i32 = 148;
const GET_CURRENT_TASK_BTF: i32 = 158;
const BPRM_OPTS_SET: i32 = 159;
const GET_FUNC_IP: i32 = 173;
const GET_ATTACH_COOKIE: i32 = 174;
const TASK_PT_REGS: i32 = 175;
const GET_FUNC_ARG: i32 = 183;
const GET_FUNC_RET: i32 = 184;
const GET_FUNC_ARG_CNT: i32 = 185;
const SET_RETVAL: i32 = 187;

/// fentry/fexit targets: plain functions, `bpf_d_path`'s allow-list,
/// `btf_id_deny` and `__noreturn` members (those the guest's BTF has:
/// preempt_count_add is inlined there, its attach would only be refused).
const FUNCS: &[&str] = &[
    "tcp_connect",
    "vfs_read",
    "do_unlinkat",
    "bpf_fentry_test1",
    "bpf_fentry_test3",
    "bpf_fentry_test7",
    "security_file_open",
    "dentry_open",
    "filp_close",
    "vfs_getattr",
    "bpf_modify_return_test",
    "do_exit",
    "do_group_exit",
    "make_task_dead",
    "migrate_disable",
    "migrate_enable",
    "__rcu_read_lock",
    "__rcu_read_unlock",
];

const TRACEPOINTS: &[&str] = &[
    "sys_enter",
    "sched_switch",
    "task_newtask",
    "kfree_skb",
    "sched_process_exit",
    "xdp_exception",
];

/// LSM hooks: int and void ones, sleepable and not.
const HOOKS: &[&str] = &[
    "file_open",
    "bprm_check_security",
    "bprm_committed_creds",
    "task_alloc",
    "task_free",
    "socket_create",
    "socket_post_create",
    "socket_bind",
    "sk_alloc_security",
    "sk_free_security",
    "inet_csk_clone",
    "sock_graft",
    "inode_getattr",
    "inode_free_security",
    "file_permission",
    "path_unlink",
    "bpf",
];

/// A whole tracing or LSM program: (type, (attach type, section), insns,
/// sleepable).
pub(super) fn tracing_program(
    rng: &mut Rng,
) -> (ProgType, (AttachType, &'static str), Vec<Insn>, bool) {
    let (prog_type, attach_type, prefix, targets, sleepable) = match rng.below(10) {
        0 | 1 => (
            ProgType::TRACING,
            AttachType::TRACE_FENTRY,
            "fentry",
            FUNCS,
            false,
        ),
        2 => (
            ProgType::TRACING,
            AttachType::TRACE_FEXIT,
            "fexit",
            FUNCS,
            false,
        ),
        3 => (
            ProgType::TRACING,
            AttachType::MODIFY_RETURN,
            "fmod_ret",
            FUNCS,
            false,
        ),
        4 => {
            let (a, p) = rng.pick(&[
                (AttachType::TRACE_FENTRY, "fentry.s"),
                (AttachType::TRACE_FEXIT, "fexit.s"),
                (AttachType::MODIFY_RETURN, "fmod_ret.s"),
            ]);
            (ProgType::TRACING, a, p, FUNCS, true)
        }
        5 => (
            ProgType::TRACING,
            AttachType::TRACE_RAW_TP,
            "tp_btf",
            TRACEPOINTS,
            false,
        ),
        6 | 7 => (ProgType::LSM, AttachType::LSM_MAC, "lsm", HOOKS, false),
        8 => (ProgType::LSM, AttachType::LSM_MAC, "lsm.s", HOOKS, true),
        _ => (
            ProgType::LSM,
            AttachType::LSM_CGROUP,
            "lsm_cgroup",
            HOOKS,
            false,
        ),
    };
    let target = rng.pick(targets);
    let section: &'static str = Box::leak(format!("{prefix}/{target}").into_boxed_str());
    let mut insns = vec![Insn::new(0xbf, 6, 1, 0, 0)];
    if attach_type == AttachType::LSM_CGROUP && rng.chance(50) {
        // bpf_set_retval first, before a step fails: a void hook refuses it.
        insns.push(Insn::new(0xb7, 1, 0, 0, rng.pick(&[0, -1])));
        call(&mut insns, SET_RETVAL);
    }
    for _ in 0..1 + rng.below(6) {
        step(rng, &mut insns, sleepable);
    }
    // The hook's return range: 0, an errno, 1 and out-of-range values; or
    // R0 never set.
    if !rng.chance(5) {
        let r0 = rng.pick(&[0, 0, 0, 1, -1, -13, -4096, -4095, 2, 1000]);
        insns.push(Insn::new(0xb7, 0, 0, 0, r0));
    }
    insns.push(Insn::new(0x95, 0, 0, 0, 0));
    (prog_type, (attach_type, section), insns, sleepable)
}

fn call(insns: &mut Vec<Insn>, helper: i32) {
    insns.push(Insn::new(0x85, 0, 0, 0, helper));
}

/// r1 = ctx (r6), r2.. as given.
fn ctx_first(insns: &mut Vec<Insn>) {
    insns.push(Insn::new(0xbf, 1, 6, 0, 0));
}

/// rD = fp + off.
fn stack_ptr(insns: &mut Vec<Insn>, dst: u8, off: i32) {
    insns.push(Insn::new(0xbf, dst, 10, 0, 0));
    insns.push(Insn::new(0x07, dst, 0, 0, off));
}

fn step(rng: &mut Rng, insns: &mut Vec<Insn>, sleepable: bool) {
    let arg_off = |rng: &mut Rng| rng.pick(&[0i16, 0, 8, 8, 16, 24, 32, 40, 48, 56, 64, 4, -8]);
    match rng.below(16) {
        // An argument, any width (a u64 slot read narrow or misaligned).
        0 | 1 => {
            let (sz, _) = if rng.chance(80) {
                SIZES[3]
            } else {
                rng.pick(&SIZES)
            };
            insns.push(Insn::new(0x61 | sz, 7, 6, arg_off(rng), 0));
        }
        // A pointer argument walked, with or without the NULL check.
        2 | 3 => {
            insns.push(Insn::new(0x79, 7, 6, arg_off(rng), 0));
            let (sz, _) = rng.pick(&SIZES);
            let off = rng.pick(&[0i16, 0, 8, 16, 24, 32, 100, 4095, -8]);
            let load = Insn::new(0x61 | sz, 8, 7, off, 0);
            if rng.chance(70) {
                insns.push(Insn::new(0x15, 7, 0, 1, 0));
            }
            insns.push(load);
            if rng.chance(20) {
                // A second hop.
                insns.push(Insn::new(0x79, 8, 7, rng.pick(&[0i16, 8, 16]), 0));
                insns.push(Insn::new(0x15, 8, 0, 1, 0));
                insns.push(Insn::new(0x61, 9, 8, rng.pick(&[0i16, 4, 8]), 0));
            }
        }
        // The context written (never allowed).
        4 => {
            let (sz, _) = rng.pick(&SIZES);
            insns.push(Insn::new(0x62 | sz, 6, 0, arg_off(rng), 1));
        }
        // The trampoline's argument helpers.
        5 | 6 => {
            ctx_first(insns);
            let helper = rng.pick(&[GET_FUNC_ARG, GET_FUNC_RET, GET_FUNC_ARG_CNT, GET_FUNC_IP]);
            if helper == GET_FUNC_ARG {
                insns.push(Insn::new(0xb7, 2, 0, 0, rng.pick(&[0, 1, 2, 5, 12, -1])));
                stack_ptr(insns, 3, -8);
            } else if helper == GET_FUNC_RET {
                stack_ptr(insns, 2, rng.pick(&[-8, -8, -4]));
            }
            call(insns, helper);
        }
        // bpf_d_path(path argument, buffer, size).
        7 => {
            insns.push(Insn::new(0x79, 1, 6, arg_off(rng), 0));
            stack_ptr(insns, 2, -64);
            insns.push(Insn::new(0xb7, 3, 0, 0, rng.pick(&[64, 64, 0, 65])));
            call(insns, D_PATH);
        }
        // bpf_copy_from_user: sleepable programs only.
        8 => {
            if !sleepable && rng.chance(50) {
                return;
            }
            stack_ptr(insns, 1, -16);
            insns.push(Insn::new(0xb7, 2, 0, 0, 16));
            insns.push(Insn::new(0x79, 3, 6, 0, 0));
            call(insns, COPY_FROM_USER);
        }
        // The current task through BTF: a field, its pt_regs.
        9 => {
            call(insns, GET_CURRENT_TASK_BTF);
            if rng.chance(50) {
                insns.push(Insn::new(0xbf, 1, 0, 0, 0));
                call(insns, TASK_PT_REGS);
                insns.push(Insn::new(
                    0x79,
                    7,
                    0,
                    rng.pick(&[0i16, 8, 160, 168, 200]),
                    0,
                ));
            } else {
                let (sz, _) = rng.pick(&SIZES);
                insns.push(Insn::new(
                    0x61 | sz,
                    7,
                    0,
                    rng.pick(&[0i16, 16, 1000, 2000, 3000]),
                    0,
                ));
            }
        }
        // Helpers some program types or attach points may not call.
        10 => {
            let helper = rng.pick(&[
                SET_RETVAL,
                SET_RETVAL,
                OVERRIDE_RETURN,
                SEND_SIGNAL,
                GET_ATTACH_COOKIE,
                BPRM_OPTS_SET,
                GET_CURRENT_PID_TGID,
                KTIME_GET_NS,
            ]);
            match helper {
                SET_RETVAL | SEND_SIGNAL => {
                    insns.push(Insn::new(0xb7, 1, 0, 0, rng.pick(&[-1, 0, 9])))
                }
                OVERRIDE_RETURN => {
                    ctx_first(insns);
                    insns.push(Insn::new(0xb7, 2, 0, 0, -1));
                }
                GET_ATTACH_COOKIE => ctx_first(insns),
                BPRM_OPTS_SET => {
                    insns.push(Insn::new(0x79, 1, 6, 0, 0));
                    insns.push(Insn::new(0xb7, 2, 0, 0, rng.pick(&[0, 1, 2])));
                }
                _ => {}
            }
            call(insns, helper);
        }
        // bpf_probe_read_kernel of an argument into the stack.
        11 => {
            stack_ptr(insns, 1, -8);
            insns.push(Insn::new(0xb7, 2, 0, 0, 8));
            insns.push(Insn::new(0x79, 3, 6, arg_off(rng), 0));
            call(insns, PROBE_READ_KERNEL);
        }
        // A map value, written through.
        12 => {
            insns.push(Insn::new(0x62, 10, 0, -4, 0));
            insns.push(Insn::new(0x18, 1, BPF_PSEUDO_MAP_IDX, 0, ARRAY_MAP));
            insns.push(Insn::new(0, 0, 0, 0, 0));
            stack_ptr(insns, 2, -4);
            call(insns, MAP_LOOKUP);
            insns.push(Insn::new(0x15, 0, 0, 1, 0));
            insns.push(Insn::new(
                0x7a,
                0,
                0,
                rng.pick(&[0i16, 8, (ARRAY_VALUE_SIZE - 8) as i16]),
                7,
            ));
        }
        // A tail call.
        13 => {
            ctx_first(insns);
            insns.push(Insn::new(0x18, 2, BPF_PSEUDO_MAP_IDX, 0, PROG_ARRAY_MAP));
            insns.push(Insn::new(0, 0, 0, 0, 0));
            insns.push(Insn::new(0xb7, 3, 0, 0, 0));
            call(insns, TAIL_CALL);
        }
        // Kfuncs: an RCU section, a task reference held or leaked.
        14 => {
            let (Some(lock), Some(unlock)) = (
                kfunc_id("bpf_rcu_read_lock"),
                kfunc_id("bpf_rcu_read_unlock"),
            ) else {
                return;
            };
            insns.push(Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, lock));
            if rng.chance(50) {
                call(insns, GET_CURRENT_TASK_BTF);
                insns.push(Insn::new(0x79, 7, 0, rng.pick(&[0i16, 8, 16]), 0));
            }
            if rng.chance(85) {
                insns.push(Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, unlock));
            }
        }
        _ => {
            let (Some(acquire), Some(release)) =
                (kfunc_id("bpf_task_acquire"), kfunc_id("bpf_task_release"))
            else {
                return;
            };
            call(insns, GET_CURRENT_TASK_BTF);
            insns.push(Insn::new(0xbf, 1, 0, 0, 0));
            insns.push(Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, acquire));
            if rng.chance(80) {
                insns.push(Insn::new(0x15, 0, 0, 2, 0));
                insns.push(Insn::new(0xbf, 1, 0, 0, 0));
                insns.push(Insn::new(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, release));
            }
        }
    }
}
