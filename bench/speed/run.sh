#!/usr/bin/env bash
# Verifier speed and memory on programs big enough to matter: instruction
# counts of bpfvet's verify() under callgrind (deterministic: the same
# binary and input give the same count whatever else the machine does), and
# the wall time of bpfvet against the host kernel on the same program, medians of
# RUNS interleaved runs (`verify --backend both` times each side's
# verification alone), and the peak heap of one verification next to the
# bytes of verifier states it needed (the heap_peak example). Writes
# REPORT.md and counts.csv beside this script.
# Needs root for the kernel side, valgrind, and the inputs it finds:
#   tests/progs' stress programs (always),
#   the 6.18 selftests' largest programs (bench/selftests/build.sh with SELFTESTS=6.18),
#   Cilium's datapath (bench/realworld/fetch_cilium.sh; built here with clang-19).
#   [RUNS=7] bench/speed/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
command -v valgrind >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q valgrind >/dev/null; }
(cd "$root" && cargo build -q --release -p bpfvet &&
    cargo build -q --release -p bpfvet-verifier --example heap_peak)
list=$(mktemp)
trap 'rm -f "$list"' EXIT
for p in stress_states stress_backtrack; do
    echo "tests/progs $root/tests/progs/$p.bpf.o *" >> "$list"
done
st=/var/tmp/bpfvet-selftests-6.18/other
if [ -d "$st" ]; then
    for o in test_verif_scale1 test_verif_scale2 test_verif_scale3 pyperf600_nounroll pyperf180 \
        strobemeta loop1 core_kern; do
        [ -f "$st/$o.bpf.o" ] && echo "selftests-6.18 $st/$o.bpf.o *" >> "$list"
    done
else
    echo "SKIP: 6.18 selftests not built (SELFTESTS=6.18 bench/selftests/build.sh)" >&2
fi
if cilium=$("$root/bench/realworld/fetch_cilium.sh" 2>/dev/null); then
    for o in bpf_xdp bpf_host bpf_lxc; do
        [ -f "$cilium/bpf/$o.o" ] || make -s -C "$cilium/bpf" CLANG="${CLANG:-clang-19}" "$o.o" >/dev/null
    done
    # The largest program of each object (by the kernel's processed insns).
    echo "cilium $cilium/bpf/bpf_xdp.o tail_nodeport_nat_ingress_ipv6" >> "$list"
    echo "cilium $cilium/bpf/bpf_host.o cil_to_netdev" >> "$list"
    echo "cilium $cilium/bpf/bpf_lxc.o tail_nodeport_nat_ingress_ipv6" >> "$list"
else
    echo "SKIP: Cilium's datapath not fetched (bench/realworld/fetch_cilium.sh)" >&2
fi
python3 "$here/speed.py" "$CARGO_TARGET_DIR/release/bpfvet" \
    "$CARGO_TARGET_DIR/release/examples/heap_peak" "$list" "${RUNS:-7}" \
    "$here/counts.csv" "$here/REPORT.md" "$(uname -r)" "$(git -C "$root" rev-parse --short HEAD)"
echo "wrote $here/REPORT.md"
