#!/usr/bin/env python3
"""Regenerates the measured parts of EXPECTED.md from the host kernel: the
verdict table (measure.sh's loader, log level 1|4) and the section "Runs on
packets/" (run_packets.py).  The prose around them is written by hand.
Needs root and the bpf() syscall; takes a few minutes."""
import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent

# What each program is there for (shown in the table's last column).
NOTES = {
    'ca_init': 'struct_ops tcp_congestion_ops.init: writes tcp_sock snd_cwnd (a field congestion control may write)',
    'ca_cong_avoid': 'struct_ops tcp_congestion_ops.cong_avoid: calls the kfunc tcp_reno_cong_avoid',
    'ca_write_rcv_wnd': 'struct_ops tcp_congestion_ops.init writing tcp_sock rcv_wnd, which congestion control may not write',
    'iter_task_pids': 'task iterator: ctx->task may be NULL; a null check makes it usable',
    'tp_btf_cpumask': 'kfuncs bpf_cpumask_create (acquire, may be NULL) / set_cpu / weight / release',
    'tp_btf_cpumask_leak': 'preceded by `Unreleased reference id=2 alloc_insn=0`',
    'tp_btf_task_ref': 'bpf_task_acquire / bpf_task_release on a trusted task pointer',
    'tp_btf_vma_iter': 'open-coded iterator bpf_iter_task_vma_* over a trusted task; next() returns a trusted pointer: non-NULL once checked',
    'prog_in_unknown_section': 'built for other loaders: libbpf refuses an unknown section (bpfvet refuses it by name)',
    'text_only_func': 'built for other loaders: a .text function is a subprogram to libbpf',
 'state_stress': 'SEEDS.md 1d "state stress": 5,984 insns in the object; processed and states equal the SEEDS figures exactly',
 'backtrack_stress': 'SEEDS.md 1d "backtrack stress" shape, 3,428 insns in the object (SEEDS: 4,892 insns, 251,231 processed, 27,943 states, 4,780 peak, from a chain we do not know)',
 'xdp_collatz': 'data-dependent `while` loop; loop-heavy for the verifier and at run time',
 'xdp_long_jump': '-mcpu=v4; two `gotol` (32-bit jump offsets) around a 32,832-insn block',
 'xdp_signed_ops': '-mcpu=v4; MEMSX loads, MOVSX 8/16/32, SDIV, SMOD, BSWAP16/32/64',
 'xdp_uninit_stack': 'reads uninitialised stack: allowed for root (CAP_PERFMON), refused unprivileged',
 'sock_ldabs_ssh': 'legacy LD_ABS / LD_IND',
 'sock_count_ipproto': 'skb_load_bytes; returns bytes to keep',
 'xdp_dispatch': 'tail calls through a prog array initialised from the object',
 'handle_ipv4': 'tail-call target', 'handle_ipv6': 'tail-call target',
 'xdp_calls': 'static subprograms 3 frames deep (5 arguments) + a global function',
 'tp_btf_sched_switch': 'tp_btf: attach target resolved in vmlinux BTF',
 'kprobe_openat2': 'CO-RE relocation (task_struct::tgid), probe_read_user_str',
 'kretprobe_openat2': 'PT_REGS_RC via BPF_KRETPROBE',
 'tp_sys_enter': 'tracepoint context (CO-RE field access)',
 'syscall_sum': 'sleepable (libbpf sets BPF_F_SLEEPABLE for SEC("syscall"))',
 'rawtp_sys_enter': 'raw tracepoint, runnable by test_run',
 'xdp_arm_timer': 'bpf_timer in a map value, callback subprogram',
 'xdp_for_each': 'bpf_for_each_map_elem callback',
 'xdp_bpf_loop': 'bpf_loop callback',
 'xdp_for_loop': 'constant-bound `for`, back-edge kept (unroll disabled)',
 'xdp_tlv_walk': '`while` over variable-length options (variable packet offsets)',
 'xdp_map_in_map': 'ARRAY_OF_MAPS + HASH_OF_MAPS with inner templates and initial slots',
 'xdp_global_data': '.rodata (frozen) / .data / .bss / .data.counters',
 'xdp_parse_flows': 'eth / 2 VLAN tags / IPv4+options / IPv6 / TCP / UDP, flow hash map',
 'xdp_vlan_pop': 'bpf_xdp_adjust_head: output packet differs from input',
 'tc_classify': 'skb field reads/writes, skb_load_bytes, skb_store_bytes, l3_csum_replace',
 'tc_spin_lock': 'bpf_spin_lock in array and hash values',
 'xdp_atomics': 'add/or/and/xor (fetch and not), xchg, cmpxchg, 32- and 64-bit',
 'xdp_map_types': 'PERCPU_ARRAY, PERCPU_HASH, LRU_HASH, LRU_PERCPU_HASH',
 'xdp_ringbuf_sample': 'ringbuf reserve/submit, reserve/discard, output',
 'xdp_ringbuf_dynptr': 'ringbuf dynptr: reserve_dynptr, dynptr_data, dynptr_write, submit/discard_dynptr',
 'xdp_dynptr_global': 'local dynptr handed to a global function (struct bpf_dynptr * argument)',
 'xdp_dynptr_local': 'local dynptr over a map value: dynptr_from_mem, _write, _data slice, _read',
 'xdp_dynptr_user_ringbuf': 'bpf_user_ringbuf_drain callback reading each sample through a const dynptr',
 'xdp_iter_num': 'kfunc calls (bpf_iter_num_*), open-coded iterator; the loop converges',
 'xdp_may_goto': '`may_goto` (inline asm), precise counter: every iteration walked',
 'xdp_may_goto_sum': '`may_goto` loop of up to 2^32 iterations whose state converges',
 'xdp_trim_padding': 'csum_diff, xdp_adjust_tail, ktime, prandom, smp_processor_id',
 'tc_socket_lookup': 'sk_lookup_tcp / sk_release (reference tracking), perf_event_output',
 'kprobe_sample': 'get_stackid, get_stack, current pid/uid/comm, snprintf, printk, perf_event_output',
 'dissect': 'flow dissector: direct packet access, writes bpf_flow_keys',
 'cgroup_egress_filter': 'cgroup_skb: return value range [0, 3] checked',
 'xdp_infinite_loop': 'the error is two lines up: `infinite loop detected at insn 0`, then `cur state: ...`',
 'xdp_ringbuf_leak': 'preceded by `Unreleased reference id=2 alloc_insn=6`',
 'xdp_map_value_oob': 'preceded by `invalid access to map value, value_size=64 off=124 size=4`',
 'xdp_no_bounds_check': 'preceded by `invalid access to packet, off=12 size=1, R1(id=0,off=12,r=0)`',
 'xdp_too_complex': 'slow: hits the 1M-insn limit (seconds of kernel time)',
 'xdp_uninit_reg': 'one line of inline asm reads R2',
 'xdp_use_after_submit': 'reference released by bpf_ringbuf_submit; the pointer became a scalar',
 'xdp_dynptr_slice_after_submit': "the dynptr_data slice shares the reservation's reference, released by submit_dynptr",
 'xdp_callback_return': 'bpf_loop callback return range [0, 1]',
 'xdp_callback_stack': "a bpf_loop callback's frame sits on its caller's (304 + 304 bytes, JIT rounding)",
 'xdp_timer_callback_return': "bpf_timer callback return range [0, 0], checked on the callback's own path",
 'xdp_timer_rearm': 'bpf_timer callback that arms the timer again (a second async entry)',
 'xdp_combined_stack': 'two 320-byte frames: each fine alone, 640 together',
 'btf_refused_unnamed_arg': 'a global function with an unnamed parameter: the kernel refuses the BTF (Invalid arg#1), so libbpf loads without it and the function is a static subprogram',
 'kconfig_two_externs': 'two kconfig externs, the smaller first: libbpf lays them out by alignment and sorts the .kconfig DATASEC by offset',
}


def verdict_table() -> tuple[str, str]:
    objs = sorted(p.name for p in HERE.glob("*.bpf.o"))
    subprocess.run([str(HERE / "measure.sh"), "--build"], check=True)
    res = subprocess.run([str(HERE / "build" / "measure"), "-l", "5", *objs],
                         cwd=HERE, capture_output=True, text=True)
    rows = [line.split("\t") for line in res.stdout.splitlines()]
    out = ["| program | object | section | verdict | insns | states | peak | "
           "note (for a rejection: the kernel's last log line first) |",
           "|---|---|---|---|---:|---:|---:|---|"]
    accepted = sum(r[3] == "success" for r in rows)
    for obj, prog, sec, verdict, *rest in rows:
        processed, states, peak, last = rest[2], rest[3], rest[4], rest[8]
        note = NOTES.get(prog, "")
        if verdict != "success" and last:
            note = f"`{last}`" + (f"; {note}" if note else "")
        # Objects built for other loaders (loader_*) that libbpf cannot
        # open, or programs it does not load, have no figures.
        num = lambda v: f"{int(v):,}" if v.lstrip("-").isdigit() and int(v) >= 0 else "-"
        out.append(f"| {prog} | {obj} | {sec} | {verdict} | {num(processed)} | "
                   f"{num(states)} | {num(peak)} | {note} |")
    summary = (f"{len(rows)} programs in {len(objs)} objects: {accepted} accepted, "
               f"{len(rows) - accepted} rejected (one reason per\n`reject_*` object) "
               f"or not loaded by libbpf (`loader_*` objects built for other loaders).")
    return "\n".join(out) + "\n", summary


def main() -> None:
    path = HERE / "EXPECTED.md"
    text = path.read_text()
    table, summary = verdict_table()
    start = text.index("| program | object |")
    end = text.index("\n## The stress programs")
    text = text[:start] + table + text[end:]
    text = re.sub(r"\d+ programs in \d+ objects: \d+ accepted, \d+ rejected \(one reason per\n"
                  r"`reject_\*` object\)[^.]*\.", summary, text)

    runs = subprocess.run([str(HERE / "run_packets.py")], capture_output=True, text=True,
                          check=True).stdout
    start = text.index("- **", text.index("## Runs on packets/"))
    end = text.index("\nWhat a runtime must reproduce here")
    text = text[:start] + runs + text[end:]
    path.write_text(text)


if __name__ == "__main__":
    main()
