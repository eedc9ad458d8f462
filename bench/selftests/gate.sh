#!/usr/bin/env bash
# CI gate on the first rule: no program of the kernel's BPF selftests that
# bpfvet accepts and the host kernel rejects, for the selftests of 6.12
# (Debian's linux-source-6.12) and of 6.18 (the host's version, Debian's
# sources). Builds the selftest objects (build.sh, outside the repository),
# compares both backends (compare.sh) and fails on any unsound accept.
# Prints SKIP where the host kernel cannot be asked (no root or bpf(2)).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
cargo build -q --release -p bpfvet
probe=$("$CARGO_TARGET_DIR/release/bpfvet" verify --backend kernel -q "$root/tests/progs/calls.bpf.o" 2>&1 || true)
if [ "$(id -u)" != 0 ] || grep -q "kernel backend unavailable" <<< "$probe"; then
    echo "SKIP: selftests gate: the host kernel backend is unavailable (needs root and bpf(2))"
    exit 0
fi
unsound=0
for release in 6.12 6.18; do
    objs=/var/tmp/bpfvet-selftests
    [ "$release" = 6.12 ] || objs=$objs-$release
    SELFTESTS=$release "$here/build.sh" "$objs"
    summary=$("$here/compare.sh" "$objs" "$objs/gate")
    echo "selftests of $release:"
    echo "$summary"
    n=$(grep -o 'UNSOUND [0-9]*' <<< "$summary" | awk '{s += $2} END {print s + 0}')
    unsound=$((unsound + n))
done
if [ "$unsound" -ne 0 ]; then
    echo "FAIL: $unsound kernel selftest programs accepted by bpfvet and rejected by the kernel"
    exit 1
fi
echo "selftests gate: bpfvet accepts no program the kernel rejects"
