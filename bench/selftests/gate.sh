#!/usr/bin/env bash
# CI gate on the first rule: no program of the kernel's BPF selftests that
# bpfvet accepts and the host kernel rejects. Builds the selftest objects
# (build.sh, outside the repository), compares both backends (compare.sh)
# and fails on any unsound accept. Prints SKIP where the host kernel
# cannot be asked (no root or bpf(2)).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
objs=${SELFTESTS_DIR:-/var/tmp/bpfvet-selftests}
cargo build -q --release -p bpfvet
probe=$("$CARGO_TARGET_DIR/release/bpfvet" verify --backend kernel -q "$root/tests/progs/calls.bpf.o" 2>&1 || true)
if [ "$(id -u)" != 0 ] || grep -q "kernel backend unavailable" <<< "$probe"; then
    echo "SKIP: selftests gate: the host kernel backend is unavailable (needs root and bpf(2))"
    exit 0
fi
"$here/build.sh" "$objs"
summary=$("$here/compare.sh" "$objs" "$objs/gate")
echo "$summary"
unsound=$(grep -o 'UNSOUND [0-9]*' <<< "$summary" | awk '{s += $2} END {print s + 0}')
if [ "$unsound" -ne 0 ]; then
    echo "FAIL: $unsound kernel selftest programs accepted by bpfvet and rejected by the kernel"
    exit 1
fi
echo "selftests gate: bpfvet accepts no program the kernel rejects"
