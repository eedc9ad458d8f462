#!/usr/bin/env python3
"""Runs every packet-driven program on every frame in packets/ with the host
kernel's BPF_PROG_TEST_RUN (through build/measure --run, see measure.sh)
and prints, per program, which frames gave which return value, and which
frames the program changed.  This produced the run table of EXPECTED.md.
Needs root and the bpf() syscall.  Every run starts from freshly loaded
maps."""
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (object, program): programs whose input is a packet.  Skipped: syscall and
# raw_tp programs (their input is a context, not a packet) and those whose
# result depends on the host (timers, socket lookup, tracing).
PROGRAMS = [
    ("xdp_parser.bpf.o", "xdp_parse_flows"),
    ("xdp_parser.bpf.o", "xdp_vlan_pop"),
    ("tc_classifier.bpf.o", "tc_classify"),
    ("socket_filter.bpf.o", "sock_count_ipproto"),
    ("socket_filter.bpf.o", "sock_ldabs_ssh"),
    ("flow_dissector.bpf.o", "dissect"),
    ("cgroup_skb.bpf.o", "cgroup_egress_filter"),
    ("tail_call.bpf.o", "xdp_dispatch"),
    ("helpers_net.bpf.o", "xdp_trim_padding"),
    ("calls.bpf.o", "xdp_calls"),
    ("global_data.bpf.o", "xdp_global_data"),
    ("loops.bpf.o", "xdp_for_loop"),
    ("loops.bpf.o", "xdp_tlv_walk"),
    ("loops.bpf.o", "xdp_collatz"),
    ("callbacks.bpf.o", "xdp_bpf_loop"),
    ("callbacks.bpf.o", "xdp_for_each"),
    ("kfunc_iter.bpf.o", "xdp_iter_num"),
    ("kfunc_iter.bpf.o", "xdp_may_goto"),
    ("kfunc_iter.bpf.o", "xdp_may_goto_sum"),
    ("v4_insns.bpf.o", "xdp_signed_ops"),
    ("v4_insns.bpf.o", "xdp_long_jump"),
    ("atomics.bpf.o", "xdp_atomics"),
    ("map_in_map.bpf.o", "xdp_map_in_map"),
    ("maps_misc.bpf.o", "xdp_map_types"),
    ("ringbuf.bpf.o", "xdp_ringbuf_sample"),
    ("ringbuf.bpf.o", "xdp_ringbuf_dynptr"),
    ("spin_lock.bpf.o", "tc_spin_lock"),
    ("stress_states.bpf.o", "state_stress"),
    ("dynptr.bpf.o", "xdp_dynptr_local"),
    ("dynptr.bpf.o", "xdp_dynptr_user_ringbuf"),
    ("dynptr.bpf.o", "xdp_dynptr_global"),
]


# Frames on which a program's result is not deterministic on the reference
# host: these loops run until the may_goto budget is spent, and on x86-64
# that budget is a time limit (the JIT's timed may_goto), not a count.
BUDGET_DEPENDENT = {
    "xdp_may_goto_sum": {"raw_32_equal_bytes", "raw_tlv_ok"},
}


def main() -> int:
    subprocess.run([str(HERE / "measure.sh"), "--build"], check=True)
    packets = sorted(str(p.relative_to(HERE)) for p in (HERE / "packets").glob("*.bin"))
    for obj, prog in PROGRAMS:
        res = subprocess.run([str(HERE / "build" / "measure"), "--run", obj, prog, *packets],
                             cwd=HERE, capture_output=True, text=True)
        by_ret = defaultdict(list)
        changed = []
        for line in res.stdout.splitlines():
            pkt, ret, _out_len, same = line.split("\t")
            name = Path(pkt).stem
            if name in BUDGET_DEPENDENT.get(prog, ()):
                continue
            by_ret[ret].append(name)
            if same == "changed":
                changed.append(name)
        if res.returncode != 0 and not by_ret:
            print(f"- **{prog}** ({obj}): could not run: {res.stderr.strip()}")
            continue
        # The most common return value is listed last as "all other frames".
        common = max(by_ret, key=lambda r: len(by_ret[r]))
        parts = [f"{ret}: {', '.join(names)}" for ret, names in sorted(by_ret.items()) if ret != common]
        parts.append(f"{common}: all {'other ' if parts else ''}frames")
        print(f"- **{prog}** ({obj}): " + "; ".join(parts))
        if changed:
            print(f"  - output differs from input: {', '.join(changed)}")
        if prog in BUDGET_DEPENDENT:
            skipped = ", ".join(sorted(BUDGET_DEPENDENT[prog]))
            print(f"  - not listed (result depends on the may_goto time budget): {skipped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
