#!/usr/bin/env python3
"""Which of the kernel verifier's error messages the fuzzer reaches, and
whether bpfvet then says the same.

usage: error_sites.py KERNEL_SRC [--fuzz TSV...] [--mutants TSV...] [--guest TSV...] [--selftests CSV ERR]... [--out MD]

KERNEL_SRC is an extracted kernel tree (bench/verifier_fuzz/kernel_src.sh
fetches Debian's 6.18 sources). The list of error sites is read from its
kernel/bpf/verifier.c at run time: every `verbose(env, FORMAT, ...)` call
that is followed by a failing exit (`return -E...`,
`return err`, `return false`, a goto to an error label, or the end of a
void helper that prints part of its caller's message), unless it only
prints when the log is on, or it is a piece of a line other calls print. Nothing of the kernel's text is stored in the project.

A site is *reached* when some program's kernel error line (the last line of
its log) matches the site's format; it *agrees* when bpfvet rejected every
such program with the identical line. `--fuzz` takes the batch TSVs of
bench/verifier_fuzz (columns kernel_verdict, kernel_error, bpfvet_verdict,
bpfvet_error); `--mutants` takes the TSVs of mutate.sh (mut-*.tsv, the
same first columns), counted as generated programs too; `--guest` takes batch
TSVs of runs whose kernel side was the lockdown-free guest (batch.sh `KERNEL=`),
kept apart in their own column: a site only they reach leaves the list of
sites unreachable on this host; `--selftests` takes a CSV and stderr pair of
bench/selftests/compare.sh, shown as a second, separate column.
"""
import argparse, collections, csv, os, re, sys

SPEC = re.compile(r"%(?:%|[-+ #0]*(?:\d+|\*)?(?:\.\d+)?(?:hh|h|ll|l|z|L)?[diouxXscpS]"
                  r"(?:K|S|s|B)?)")


def c_string_literals(text):
    """The concatenated C string literals at the start of `text`, and
    whether the first argument was made only of literals."""
    out, i, n = [], 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i < n and text[i] == '"':
            j, buf = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    esc = text[j + 1]
                    buf.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(esc, esc))
                    j += 2
                else:
                    buf.append(text[j])
                    j += 1
            out.append("".join(buf))
            i = j + 1
        else:
            break
    rest = text[i:].lstrip()
    return "".join(out), rest == "" or rest.startswith(",") or rest.startswith(")")


def call_end(src, start):
    """Index just past the `)` closing the call whose `(` is at `start`."""
    depth, i, n = 0, start, len(src)
    while i < n:
        c = src[i]
        if c == '"':
            i += 1
            while i < n and src[i] != '"':
                i += 2 if src[i] == "\\" else 1
        elif c == "'":
            i += 1
            while i < n and src[i] != "'":
                i += 2 if src[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


# After a message, the first of these decides whether it reported a failure:
# a return of an error (or false), a goto to an error label, or the end of a
# void function (a helper that prints part of its caller's error).
NEXT_EXIT = re.compile(r"\breturn\b\s*([^;]*);|(?:err|ret)\s*=\s*(-E\w+)|\bgoto\s+(\w+)|\n\}")
IMMEDIATE_EXIT = re.compile(r"\s*;\s*(?:\}\s*)*(?:return\b|goto\b)")
FAILING_RETURN = re.compile(r"^(?:-E\w+|-1|err|ret|false|PTR_ERR\b.*|\(?-E.*)$")


# Sites no program can reach on the host the fuzzer runs on (x86-64 with
# its JIT on, vmlinux BTF, not PREEMPT_RT, no offload device, loading as
# root), keyed by the site's format, each with its reason. A listed site
# that some program reaches anyway is reported as such.
JIT = "the x86-64 JIT is on and "
# __check_mem_access's line is always followed by its caller's: "R%d ..."
NOT_LAST = "never a last line: its caller then prints `R%d "
OPCODES = "every opcode is checked against the instruction table at load first (`unknown opcode`)"
# The three variable-offset stack checks for loaders without CAP_PERFMON:
# without it bypass_spec_v1 is off too (mitigations are on), so pointer
# arithmetic already refuses a variable stack offset.
LEVEL2 = "a trace printed at log level 2 only, on a path that goes on (no failure)"
FRAGMENT = "never a last line: verbose_invalid_scalar always ends the line with ` should have been in [%d, %d]`"
# Sites no kernel prints as a program's error, on any machine: internal
# consistency checks (a kernel bug is the only way there), lines always
# followed by their caller's, checks made unreachable by an earlier one,
# log-level-2 traces and the statistics line, and allocation failures.
NO_KERNEL_PRINTS = {
    "verifier internal error: unexpected ptr_reg":
        "an internal consistency check: pointer ALU is dispatched before",
    "verifier internal error: no src_reg":
        "an internal consistency check: BPF_X operands are checked before",
    "verifier internal error:R%d has non-overwritten BPF_PTR_POISON type":
        "an internal consistency check: helper prototypes resolve their BTF ids",
    "verifier internal error: unexpected graph root argument type %s":
        "an internal consistency check of the graph kfunc table",
    "verifier internal error: %s head arg for unknown kfunc":
        "an internal consistency check of the graph kfunc table",
    "verifier internal error: unexpected graph node argument type %s":
        "an internal consistency check of the graph kfunc table",
    "verifier internal error: %s node arg for unknown kfunc":
        "an internal consistency check of the graph kfunc table",
    "invalid access to map key, key_size=%d off=%d size=%d": NOT_LAST + "min/max value is outside ...`",
    "invalid access to map value, value_size=%d off=%d size=%d":
        NOT_LAST + "min/max value is outside ...`",
    "invalid access to memory, mem_size=%u off=%d size=%d": NOT_LAST + "min/max value is outside ...`",
    "invalid access to packet, off=%d size=%d, R%d(id=%d,off=%d,r=%d)":
        NOT_LAST + "offset is outside of the packet`",
    "invalid BPF_LD_IMM insn": OPCODES,
    "invalid BPF_LD mode": OPCODES,
    "unknown insn class %d": "the 3-bit class field has no value outside the eight classes",
    "invalid insn idx %d insn_cnt %d":
        "check_cfg rejects a program that can run past its last instruction first",
    "frame%d bpf_loop iteration limit reached": LEVEL2,
    "%s: too many iterations": LEVEL2,
    "processed %d insns (limit %d) max_states_per_insn %d total_states %d peak_states %d mark_read %d":
        "the statistics line every verification ends with; the error line is the one before it",
    "%s has to be at a constant offset":
        "never a last line: its callers (the dynptr, iterator and irq flag checks) print their own "
        "`Dynptr has to be ...`, `expected ... iter_...` or `... irq flag ...` line after it, and "
        "the marking that follows a passed check finds the same offset valid",
    "cannot pass in %s at an offset=%d":
        "never a last line: its callers (the dynptr, iterator and irq flag checks) print their own "
        "`Dynptr has to be ...`, `expected ... iter_...` or `... irq flag ...` line after it, and "
        "the marking that follows a passed check finds the same offset valid",
    "Locking two bpf_spin_locks are not allowed":
        "bpf_spin_lock is a helper only, and do_check refuses any helper but bpf_spin_unlock while "
        "a lock is held (`function calls are not allowed while holding a lock`); resilient locks "
        "take the other branch",
    "Failed to acquire lock state": "an allocation failure (acquire_reference_state's realloc)",
    "failed to mark s32 range for retval in forked state for lock":
        "the range [-MAX_ERRNO, -1] on a fresh unknown scalar is always consistent",
    "cannot pass pointer to const bpf_dynptr, the helper mutates it":
        "every dynptr argument that is neither read-only nor uninitialised releases (ring buffer "
        "submit/discard), and a const dynptr meets `cannot release unowned const bpf_dynptr` "
        "first; kfuncs and global functions make a const dynptr argument read-only",
    "Expected a dynptr of type %s as arg #%d":
        "the typed dynptr arguments are uninitialised ones (from_mem, reserve, from_skb/xdp, "
        "clone) or ring buffer releases, and only a ring buffer dynptr holds the reference the "
        "release check (`arg 1 is an unacquired reference`) wants first",
    "func %s#%d reference has not been acquired before":
        "an internal invariant: a release argument is referenced or NULL (check_func_arg), and "
        "releasing a reference invalidates every register holding it, so its state exists",
    "kfunc %s#%d reference has not been acquired before":
        "an internal invariant: released arguments carry a ref_obj_id (checked with the "
        "arguments), and releasing a reference invalidates every register holding it",
    "kfunc %s#%d conversion of owning ref to non-owning failed":
        "an internal invariant: the pushed node is referenced (`allocated object must be "
        "referenced` first) and its reference state exists (a verifier_bug otherwise)",
    "cannot update sockmap in this context":
        "never a last line: check_map_func_compatibility then prints `cannot pass map_type %d into func %s#%d`",
    "failed to retrieve map value address":
        "bpf_snprintf's format passed check_reg_const_str, which made the same direct-address call",
    "invalid BPF_ALU opcode %x": OPCODES + ": the ALU operations past BPF_END (0xe0, 0xf0) are not in it",
    "invalid BPF_JMP/JMP32 opcode %x":
        OPCODES + ": past BPF_JCOND (0xf0) and JMP32|JCOND are not in it, and BPF_JA is handled before",
    "%s the register %s has%s smin=%lld": FRAGMENT,
    "%s the register %s has%s smax=%lld": FRAGMENT,
    "%s the register %s has%s unknown scalar value": FRAGMENT,
    "invalid btf id for main subprog in func_info":
        "check_btf_info_early rejects a func_info record whose type id is no FUNC (`invalid type id %d in func info`) before add_subprog_and_kfunc looks for the exception callback",
    "stack size of subprog %d is %d. Too large":
        "a subprogram's stack depth is bounded by every stack access's check (-512 at most), rounding it up to 16 (JIT) or 32 keeps it at 512, and removing fastcall spills only lowers it",
    "tracking tail call prog failed":
        "prog_array_map_poke_track fails only when its allocation fails (-ENOMEM)",
    "invalid return type %u of func %s#%d":
        "an internal consistency check: helper prototypes name their return BTF ids",
    "unknown return type %u of func %s#%d":
        "an internal consistency check: helper prototypes have known return types",
    "allocated_stack too small":
        "an internal consistency check: check_stack_access_within_bounds grows the stack "
        "over every byte the range check then reads",
    "max struct nesting depth exceeded":
        "never a last line: both callers then print their own refusal (`arg#%d pointer type %s %s "
        "must point to ...`, `bpf_percpu_obj_new type ID argument must be of a struct of scalars`)",
    "held lock and object are not in the same allocation":
        "never a last line: its only caller, __process_kf_arg_ptr_to_graph_root, follows it with "
        "`bpf_spin_lock at off=%d must be held for %s`",
    "allocated object must be referenced":
        "no register is exactly PTR_TO_BTF_ID | MEM_ALLOC without a reference: bpf_obj_new, "
        "bpf_refcount_acquire, bpf_kptr_xchg, the list pops and bpf_rbtree_remove acquire one; "
        "other graph kfunc results and the rbtree callback's arguments get NON_OWN_REF "
        "(ref_set_non_owning fails only without an active lock, which their root argument needs "
        "first); a push turns the owner's copies into NON_OWN_REF, a release invalidates them; "
        "loaded local kptrs are PTR_UNTRUSTED or MEM_RCU",
    "kptr in map can only be accessed using BPF_LDX/BPF_STX/BPF_ST":
        "check_map_kptr_access is reached from check_mem_access of LDX, STX and ST instructions "
        "only, and atomics and sign-extending loads stop at its BPF_MEM mode check before "
        "(helper and kfunc memory checks refuse kptr fields in check_map_access)",
    "Calling bpf_rcu_read_{lock,unlock} in unnecessary rbtree callback":
        "the rbtree callback runs under the tree's lock (bpf_rbtree_add needs it held and the "
        "callback starts from the caller's state), so calling bpf_rcu_read_{lock,unlock} there "
        "stops first at `function calls are not allowed while holding a lock` (do_check, "
        "kfunc_spin_allowed)",
    "arg#%d reference type('%s %s') size cannot be determined: %ld":
        "a KF_ARG_PTR_TO_MEM argument points to a scalar or a struct of scalars "
        "(get_kfunc_ptr_arg_type refuses anything else), whose size btf_resolve_size always finds "
        "(it fails for void, forward declarations and functions)",
    # guestmit: checks of check_stack_write_var_off and check_stack_range_initialized
    # (kernel/bpf/verifier.c of 6.18.15) that an earlier check always makes unreachable.
    "uninit stack in range of var-offset write prohibited for !root; insn %d, off: %d":
        "check_stack_write_var_off (5288) tests !allow_uninit_stack on a STACK_INVALID byte, "
        "but the same loop first refuses every byte that is neither STACK_MISC nor STACK_ZERO "
        "when !allow_ptr_leaks (5252), and both switches are CAP_PERFMON (bpf_allow_ptr_leaks, "
        "bpf_allow_uninit_stack): no loader has one without the other",
    "R%d variable offset stack access prohibited for !root, var_off=%s":
        "check_stack_range_initialized (8000) needs a variable-offset stack pointer while "
        "!bypass_spec_v1, but only pointer ALU makes one and sanitize_check_bounds refuses it "
        "there when !bypass_spec_v1 (`R%d variable stack access prohibited for !root`); "
        "mitigations=off makes bypass_spec_v1 hold for every loader",
}

UNREACHABLE_ON_HOST = {
    "calling kernel function is not supported without CONFIG_DEBUG_INFO_BTF":
        "the host has vmlinux BTF",
    "map_ptr access not supported without CONFIG_DEBUG_INFO_BTF": "the host has vmlinux BTF",
    "kernel is missing BTF, make sure CONFIG_DEBUG_INFO_BTF=y is specified in Kconfig.":
        "the host has vmlinux BTF",
    "JIT is required for calling kernel function": JIT + "calls kfuncs",
    "JIT does not support calling kernel function": JIT + "calls kfuncs",
    "address of kernel function %s is out of range":
        "x86-64 kernel and module text lie within 2 GiB of __bpf_call_base",
    "JIT doesn't support bpf-to-bpf calls": JIT + "supports bpf-to-bpf calls",
    "mixing of tail_calls and bpf-to-bpf calls is not supported":
        JIT + "supports tail calls in subprograms",
    "calling kernel functions are not allowed in non-JITed programs": JIT + "JITs every program; "
    "with the JIT off (the guest's interpreter run) add_kfunc_call rejects the first kfunc call "
    "before verification (3275), so only a JIT that fails after verification gets here",
    "tail_calls are not allowed in non-JITed programs with bpf-to-bpf calls":
        JIT + "JITs every program",
    "callbacks are not allowed in non-JITed programs": JIT + "JITs every program",
    "Private stack not supported by jit": JIT + "supports private stacks",
    "JIT is required to use arena": JIT + "supports arenas",
    "JIT doesn't support arena": JIT + "supports arenas",
    "64-bit load-acquires are only supported on 64-bit arches": "the host is 64-bit",
    "64-bit store-releases are only supported on 64-bit arches": "the host is 64-bit",
    "bpf_timer cannot be used for PREEMPT_RT.": "the host kernel is not PREEMPT_RT",
    "offload device mismatch between prog and map": "the host has no BPF offload device",
    "expected valid iter pointer as arg #%d":
        "every iterator argument of a vmlinux kfunc is a `struct bpf_iter_*` of whole words "
        "(btf_check_iter_kfuncs at registration); only a module's kfunc could fail it",
    "Function %s has %d > %d args":
        "no kfunc the host registers takes more than 5 arguments (vmlinux's one bpf_kfunc with 7, "
        "bpf_modify_return_test2, is in an fmod_ret set only: `calling kernel function ... is not "
        "allowed` comes first)",
    "2 or more rdonly/rdwr_buf_size parameters for kfunc":
        "no vmlinux kfunc has a `rdonly_buf_size`/`rdwr_buf_size` argument (bpf_testmod's only)",
    "R%d is not a const":
        "no vmlinux kfunc has a `rdonly_buf_size`/`rdwr_buf_size` argument (bpf_testmod's only)",
    "Unrecognized arg#%d type %s":
        "every vmlinux kfunc argument is an integer, an enum or a pointer",
    "JIT does not support calling kfunc %s#%d": JIT + "supports exceptions (bpf_throw)",
    "Helper has invalid btf_id in R%d":
        "a per-CPU BTF pointer carries its type id: a percpu ksym's variable type (never void) or "
        "a per-CPU object's struct",
    "Helper has invalid btf/btf_id in R1":
        "an RCU per-CPU pointer is a per-CPU kptr or object, and both point to structs only "
        "(btf_find_kptr, bpf_percpu_obj_new's type check)",
    "kernel function btf_id %u does not have a valid func_proto":
        "kfunc BTF is kernel BTF only (`BTF fd %d is not a kernel BTF`): the host has vmlinux BTF alone (no module BTF in /sys/kernel/btf) and each of its 56,327 FUNCs points at a FUNC_PROTO",
    "sign extending loads from arena are not supported yet":
        JIT + "supports sign-extending arena loads (bpf_jit_supports_insn refuses only fetching and/or/xor atomics)",
    "R%d is ptr_%s access user memory: off=%d":
        "MEM_USER comes from a `user` type tag on a pointer in kernel BTF; the host's vmlinux BTF has "
        "no such tag (no modules are loaded) and pointer members of a program's own allocated "
        "objects load as scalars",
    "unable to resolve the size of type '%s': %ld":
        "bpf_per_cpu_ptr/this_cpu_ptr resolve the size of a per-CPU ksym that is no struct: every "
        "such variable of the host's vmlinux (186) has a resolvable size, per-CPU objects are structs",
    "map_ptr access not supported for map type %d":
        "every map type's ops name their map_btf_id; only offloaded maps lack it (no offload device)",
    "acquire kernel function does not return PTR_TO_BTF_ID":
        "every KF_ACQUIRE kfunc of the host's vmlinux returns a struct pointer, but the three "
        "exempt allocators; the selftests reach it with bpf_testmod's "
        "bpf_kfunc_call_test_acq_rdonly_mem (no modules are loaded)",
    "kernel function %s returns pointer type %s %s is not supported":
        "the host's vmlinux kfuncs return pointers to structs, void, or scalars "
        "(bpf_iter_num_next, bpf_iter_bits_next, bpf_session_cookie), whose size "
        "btf_resolve_size finds (bpf_testmod's are not loaded)",
    "struct_ops module %s is not found":
        "needs a struct_ops program whose attach BTF is a module's (attach_btf_obj_fd): the host "
        "has no module BTF (/sys/kernel/btf holds vmlinux only), and even then btf_try_get_module "
        "fails only for a module being unloaded during the load",
    "ldimm64 unable to resolve the size of type '%s': %ld":
        "__check_pseudo_btf_id resolves the size of a non-struct, non-per-CPU VAR only: every VAR "
        "of the host's vmlinux BTF (352) is per-CPU, and a VAR of a program's or module's BTF has a "
        "resolvable size (btf_var_resolve and btf_array_resolve refuse others when the BTF loads); "
        "the loader also holds no module BTF fd",
    # qdisc helper: reached in the 6.18 guest (CONFIG_NET_SCH_BPF=y) by batch.sh
    # KERNEL=6.18 FORCE_FEATURES=qdisc (gen/qdisc_blocks.rs); kernel/bpf/verifier.c of
    # 6.18.15, check_ctx_access (line 6180) and check_struct_ops_btf_id (line 23537).
    "invalid bpf_context access off=%d. Reference may already be released":
        "a context argument carries a reference only in struct_ops programs whose stub names it "
        "`__ref` (bpf_qdisc's Qdisc_ops.enqueue, bpf_testmod): the host's vmlinux BTF has neither "
        "and no modules are loaded; the 6.18 guest's bpf_qdisc has it",
    "program with __ref argument cannot tail call":
        "needs a struct_ops member whose stub names an argument `__ref` (arg_info refcounted): "
        "the host's struct_ops types are tcp_congestion_ops and bpf_dummy_ops, whose stubs have "
        "none; the 6.18 guest's bpf_qdisc (Qdisc_ops.enqueue's skb__ref) does",
    # guestmit: reached in the lockdown-free guest (batch.sh KERNEL=6.18 with
    # MITIGATIONS=off PRIVILEGES=bpf, JIT=0, guest_tracing); 6.18.15 kernel/bpf/verifier.c.
    "spilled ptr in range of var-offset stack write; insn %d, ptr off: %d":
        "check_stack_write_var_off (5252) needs a variable-offset stack pointer, which "
        "sanitize_check_bounds allows only under bypass_spec_v1, without allow_ptr_leaks: "
        "bpf_bypass_spec_v1 holds below CAP_PERFMON only on a kernel booted with "
        "mitigations=off (cpu_mitigations_off()); the host runs with mitigations on",
    "stack size %d(extra %d) is too large":
        JIT + "JITs every program: do_misc_fixups (22910) adds may_goto's counter slots to a "
        "function's stack depth and refuses more than 512 bytes only when !jit_requested",
    "BPF_LSM_CGROUP that attach to void LSM hooks can't modify return value!":
        "check_helper_call's bpf_set_retval case (11629) needs an LSM_CGROUP program on a void "
        "hook: the host refuses LSM programs with EPERM before verification (as it does "
        "fentry/fexit: no BPF trampolines)",
    "destructive kfunc calls require CAP_SYS_BOOT capability":
        "check_kfunc_call (13910) needs a KF_DESTRUCTIVE kfunc: only crash_kexec (helpers.c), "
        "registered under CONFIG_CRASH_DUMP, which the host kernel lacks (no crash_kexec in its "
        "BTF or kallsyms) and the 6.18 guest has; loaded there without CAP_SYS_BOOT (PRIVILEGES=bpf)",
}


def in_log_level_block(src, start):
    """Whether the innermost block around `start` runs only when the log
    is on (`if (env->log.level ...) {`): such prints trace, never fail."""
    depth, i = 0, start
    while i > 0:
        i -= 1
        c = src[i]
        if c == "}":
            depth += 1
        elif c == "{":
            if depth == 0:
                header_start = max(src.rfind(";", 0, i), src.rfind("}", 0, i), src.rfind("{", 0, i))
                return "log.level" in src[header_start:i]
            depth -= 1
    return False


def function_start(src, pos):
    return src.rfind("\n{", 0, pos)


def ends_void_function(src, end):
    m = NEXT_EXIT.search(src, end)
    return m is not None and m.group(0) == "\n}"


def reports_failure(src, end):
    m = NEXT_EXIT.search(src, end)
    if m is None:
        return False
    if m.group(2) is not None:
        return True
    if m.group(3) is not None:
        return re.search(r"err|fail", m.group(3)) is not None
    if m.group(1) is not None:
        return FAILING_RETURN.match(m.group(1).strip()) is not None
    return True


# What may stand between two verbose() calls that print one line: nothing,
# or the header of a loop whose body is the second call.
SAME_LINE_GAP = re.compile(r"^;\s*(for\s*\(.*\)|while\s*\(.*\))?\s*$", re.S)


def verbose_calls(src):
    """(start, end, format, literal) of every verbose(env, ...) call, in order."""
    calls = []
    for m in re.finditer(r"\bverbose\s*\(\s*env\s*,", src):
        end = call_end(src, src.index("(", m.start()))
        fmt, literal = c_string_literals(src[m.end():end])
        calls.append((m.start(), end, fmt, literal))
    return calls


def error_sites(verifier_c):
    """format pieces -> verifier.c lines. A site's message is a tuple of
    (format, repeated) pieces: the calls that print its last log line, a
    piece printed in a loop being repeated."""
    src = open(verifier_c, errors="replace").read()
    calls = verbose_calls(src)
    sites = {}
    for i, (start, end, fmt, literal) in enumerate(calls):
        if not literal or not fmt.strip() or not reports_failure(src, end):
            continue
        if in_log_level_block(src, start):
            continue
        if fmt.startswith(" ") and ends_void_function(src, end):
            # The end of a helper printing one line in pieces: its first
            # piece, then anything.
            first = next(c for c in calls if c[0] > function_start(src, start))
            key = ((first[2], False), ("%s", False), (fmt.rstrip("\n"), False))
            sites.setdefault(key, []).append(src.count("\n", 0, start) + 1)
            continue
        if fmt.startswith(" ") or len(re.findall(r"[A-Za-z]", SPEC.sub("", fmt))) < 6:
            continue  # a piece of a line that other calls start
        if not fmt.endswith("\n") and not IMMEDIATE_EXIT.match(src, end):
            continue  # the first part of a line that later prints complete
        pieces = [(fmt.rstrip("\n").rsplit("\n", 1)[-1], False)]
        j = i
        while "\n" not in fmt.rstrip("\n") and j > 0:
            pstart, pend, pfmt, plit = calls[j - 1]
            gap = SAME_LINE_GAP.match(src[pend:calls[j][0]])
            if not plit or gap is None or pfmt.endswith("\n"):
                break
            if gap.group(1):  # calls[j] is a loop's body
                pieces[0] = (pieces[0][0], True)
            pieces.insert(0, (pfmt.rsplit("\n", 1)[-1], False))
            j -= 1
        key = tuple(p for p in pieces if p[0])
        if not key:
            continue
        line = src.count("\n", 0, start) + 1
        sites.setdefault(key, []).append(line)
    return sites


def bug_sites(verifier_c):
    """The verifier_bug() and verifier_bug_if() reports: internal
    inconsistencies the kernel logs as "verifier bug: ..." (with the failed
    condition for the _if form). Kept apart from the error sites: a correct
    verifier never reaches them."""
    src = open(verifier_c, errors="replace").read()
    sites = {}
    for m in re.finditer(r"\bverifier_bug(_if)?\s*\(", src):
        open_paren = src.index("(", m.start())
        args = src[open_paren + 1:call_end(src, open_paren) - 1]
        cond = ""
        if m.group(1):
            depth, i = 0, 0
            while i < len(args) and not (args[i] == "," and depth == 0):
                depth += {"(": 1, ")": -1}.get(args[i], 0)
                i += 1
            cond, args = " ".join(args[:i].split()), args[i + 1:]
        env_end = args.find(",")
        fmt, literal = c_string_literals(args[env_end + 1:])
        if env_end < 0 or not literal:
            continue
        fmt = "verifier bug: " + fmt + (f" ({cond})" if m.group(1) else "")
        key = ((fmt, False),)
        sites.setdefault(key, []).append(src.count("\n", 0, m.start()) + 1)
    return sites


def display(site):
    return "".join(f"({f})…" if rep else f for f, rep in site)


def site_regex(site):
    out = []
    for fmt, rep in site:
        parts, pos = [], 0
        for m in SPEC.finditer(fmt):
            parts.append(re.escape(fmt[pos:m.start()]))
            parts.append("%" if m.group() == "%%" else ".*?")
            pos = m.end()
        parts.append(re.escape(fmt[pos:]))
        piece = "".join(parts)
        out.append(f"(?:{piece})*" if rep else piece)
    return re.compile("^" + "".join(out) + "$")


def literal_len(site):
    return sum(len(SPEC.sub("", f)) for f, _ in site)


def read_fuzz(paths):
    for p in paths:
        with open(p, newline="") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                yield (r.get("kernel_verdict", ""), r.get("kernel_error", ""),
                       r.get("bpfvet_verdict", ""), r.get("bpfvet_error", ""))


def read_selftests(csv_path, err_path):
    msgs = {}
    for line in open(err_path, errors="replace"):
        m = re.match(r"bpfvet: (\S+?) \((bpfvet|kernel)\): (.*)", line.rstrip("\n"))
        if m:
            msgs[(m.group(1), m.group(2))] = re.sub(r"^insn \d+: ", "", m.group(3))
    for r in csv.DictReader(open(csv_path)):
        key = f"{r['file_name']}/{r['prog_name']}"
        yield (r["verdict_kernel"], msgs.get((key, "kernel"), ""),
               r["verdict_bpfvet"], msgs.get((key, "bpfvet"), ""))


def tally(sites, rows):
    """site format -> [programs reaching it, programs where bpfvet agrees]"""
    regexes = sorted(((literal_len(f), f, site_regex(f)) for f in sites), reverse=True)
    counts = collections.defaultdict(lambda: [0, 0])
    unmatched = collections.Counter()
    rejected = ("failure", "reject")  # compare.sh's and the fuzzer's words
    for kv, ke, bv, be in rows:
        if kv not in rejected or not ke or ke.startswith("refused"):
            continue
        hit = next((f for _, f, rx in regexes if rx.match(ke)), None)
        if hit is None:
            unmatched[ke] += 1
            continue
        counts[hit][0] += 1
        if bv in rejected and be == ke:
            counts[hit][1] += 1
    return counts, unmatched


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kernel_src")
    ap.add_argument("--fuzz", nargs="*", default=[])
    ap.add_argument("--mutants", nargs="*", default=[])
    ap.add_argument("--guest", nargs="*", default=[])
    ap.add_argument("--selftests", nargs=2, action="append", default=[], metavar=("CSV", "ERR"))
    ap.add_argument("--out", default="-")
    args = ap.parse_args()
    vc = os.path.join(args.kernel_src, "kernel/bpf/verifier.c")
    sites, bugs = error_sites(vc), bug_sites(vc)
    every = {**bugs, **sites}
    fuzz_rows = list(read_fuzz(args.fuzz))
    mutant_rows = list(read_fuzz(args.mutants))
    fuzz, fuzz_unmatched = tally(every, fuzz_rows + mutant_rows)
    self_rows = [row for c, e in args.selftests for row in read_selftests(c, e)]
    selft, self_unmatched = tally(every, self_rows)
    guest_rows = list(read_fuzz(args.guest))
    guest, _ = tally(every, guest_rows)
    reached = [f for f in sites if fuzz[f][0]]
    agree = [f for f in reached if fuzz[f][1] == fuzz[f][0]]
    pct = lambda a: f"{100 * a / max(1, len(sites)):.1f}%"
    by_format = {display(f): f for f in sites}
    for fmt in [*NO_KERNEL_PRINTS, *UNREACHABLE_ON_HOST]:
        if fmt not in by_format:
            print(f"error_sites.py: no site has the unreachable format {fmt!r}", file=sys.stderr)
    # Reached by a generated program on this host or in the guest; agreed
    # when bpfvet gave the kernel's line on every such program of both.
    anywhere = lambda f: fuzz[f][0] or guest[f][0]
    all_reached = [f for f in sites if anywhere(f)]
    all_agree = [f for f in all_reached if fuzz[f][1] == fuzz[f][0] and guest[f][1] == guest[f][0]]
    never = [by_format[fmt] for fmt in NO_KERNEL_PRINTS if fmt in by_format]
    listed = [by_format[fmt] for fmt in UNREACHABLE_ON_HOST if fmt in by_format]
    # A site the lockdown-free guest reaches is reachable after all (there).
    not_here = [f for f in listed if not guest[f][0]]
    guest_only = [f for f in listed if guest[f][0]]
    printable = len(sites) - sum(1 for f in never if not anywhere(f))
    reachable = printable - sum(1 for f in not_here if not anywhere(f))
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    w = lambda s="": print(s, file=out)
    w("# Error sites of the kernel verifier reached by generated programs")
    w()
    w("Generated by `bench/verifier_fuzz/error_sites.py` from the batch TSVs of "
      "`bench/verifier_fuzz/batch.sh` and the selftests' `compare.sh` output. A site is a "
      "`verbose()` call of the kernel's `kernel/bpf/verifier.c` followed by a failing exit, "
      f"read from `{os.path.basename(os.path.normpath(args.kernel_src))}` at run time "
      "(multi-line messages counted by their last line). Reached: some program's kernel "
      "error line matches the site's format. Agrees: bpfvet rejected every such program with "
      "the identical line. `verifier_bug()` reports are listed apart. Sites no kernel prints "
      "as a program's error (internal consistency checks, lines always followed by another, "
      "checks an earlier one makes unreachable, traces, allocation failures) are listed with "
      "the reason and left out of the messages a program can cause; sites only another "
      "machine or kernel build can reach are listed apart.")
    w()
    w(f"Generated programs: {len(fuzz_rows)} from the generator's batches, "
      f"{len(mutant_rows)} mutants of real programs (mutate.sh).")
    w()
    w("| | sites |")
    w("|---|---:|")
    w(f"| error sites in verifier.c | {len(sites)} |")
    w(f"| reached by generated programs on this host | {len(reached)} ({pct(len(reached))}) |")
    w(f"| reached, bpfvet agrees on every program | {len(agree)} |")
    if guest_rows:
        greached = [f for f in sites if guest[f][0]]
        gagree = [f for f in greached if guest[f][1] == guest[f][0]]
        w(f"| reached in the lockdown-free guest ({len(guest_rows)} programs, `--guest`) | {len(greached)} |")
        w(f"| reached in the guest, bpfvet agrees on every program | {len(gagree)} |")
        w(f"| reached in the guest and not by the host's generated programs | {sum(1 for f in greached if not fuzz[f][0])} |")
    w(f"| reached on this host or in the guest | {len(all_reached)} ({pct(len(all_reached))}) |")
    w(f"| reached there, bpfvet agrees on every program | {len(all_agree)} |")
    w(f"| error messages a program can cause (all but the {len(sites) - printable} no kernel prints as an error) | {printable} |")
    w(f"| **reached / messages a program can cause** | **{len(all_reached)} / {printable} ({100 * len(all_reached) / max(1, printable):.1f}%)** |")
    w(f"| reachable on this host or in the guest (all but {printable - reachable} more listed) | {reachable} |")
    w(f"| reached / reachable | {len(all_reached)} / {reachable} ({100 * len(all_reached) / max(1, reachable):.1f}%) |")
    if self_rows:
        sreached = [f for f in sites if selft[f][0]]
        sagree = [f for f in sreached if selft[f][1] == selft[f][0]]
        either = [f for f in sites if selft[f][0] or fuzz[f][0]]
        w(f"| reached by the kernel selftests | {len(sreached)} ({pct(len(sreached))}) |")
        w(f"| reached by the selftests, bpfvet agrees on every program | {len(sagree)} |")
        w(f"| reached by either | {len(either)} ({pct(len(either))}) |")
    w()
    w(f"Kernel error lines matching no site: {sum(fuzz_unmatched.values())} programs "
      f"({len(fuzz_unmatched)} distinct lines) from the fuzzer"
      + (f", {sum(self_unmatched.values())} from the selftests." if self_rows else "."))
    bugs_hit = [f for f in bugs if fuzz[f][0] or selft[f][0]]
    if bugs_hit:
        w()
        w("## verifier_bug() reports the kernel printed")
        w()
        w("| verifier.c line | report | fuzz programs | bpfvet same line | selftests programs |")
        w("|---:|---|---:|---:|---:|")
        for f in bugs_hit:
            w(f"| {','.join(map(str, bugs[f]))} | `{cell(f)}` | {fuzz[f][0]} | {fuzz[f][1]} | {selft[f][0]} |")
    for title, unmatched in (("the fuzzer", fuzz_unmatched), ("the selftests", self_unmatched)):
        if unmatched:
            w()
            w(f"## Kernel errors of {title} matching no site (most frequent first)")
            w()
            for line, n in unmatched.most_common(40):
                w(f"- {n} × `{line}`")
    if guest_only:
        w()
        w("## Sites unreachable on this host, reached in the lockdown-free guest")
        w()
        w("| verifier.c line | format | why not on this host | guest programs | bpfvet agrees |")
        w("|---:|---|---|---:|---:|")
        for f in guest_only:
            w(f"| {','.join(map(str, sites[f]))} | `{cell(f)}` | {UNREACHABLE_ON_HOST[display(f)]} | "
              f"{guest[f][0]} | {guest[f][1]} |")
    for title, listed, why in (
        ("Sites no kernel prints as a program's error", never, NO_KERNEL_PRINTS),
        ("Sites no program can reach on this host", not_here, UNREACHABLE_ON_HOST),
    ):
        w()
        w(f"## {title}")
        w()
        w("| verifier.c line | format | why | reached anyway |")
        w("|---:|---|---|---:|")
        for f in listed:
            w(f"| {','.join(map(str, sites[f]))} | `{cell(f)}` | {why[display(f)]} | "
              f"{fuzz[f][0] + selft[f][0] or ''} |")
    w()
    w("## Every site")
    w()
    gh = " guest programs | bpfvet agrees |" if guest_rows else ""
    w("| verifier.c line | format | fuzz programs | bpfvet agrees | selftests programs | bpfvet agrees |" + gh)
    w("|---:|---|---:|---:|---:|---:|" + ("---:|---:|" if guest_rows else ""))
    for f, lines in sorted(sites.items(), key=lambda kv: kv[1][0]):
        fr, fa = fuzz[f]
        sr, sa = selft[f]
        gr, ga = guest[f]
        gc = f" {gr} | {ga if gr else ''} |" if guest_rows else ""
        w(f"| {','.join(map(str, lines))} | `{cell(f)}` | {fr} | {fa if fr else ''} | {sr} | {sa if sr else ''} |" + gc)


def cell(site):
    return display(site).replace("|", "\\|").replace("`", "'")


if __name__ == "__main__":
    main()
