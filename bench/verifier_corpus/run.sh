#!/bin/sh
# Regenerates REPORT.md and results.csv: every program of the corpus and of
# tests/progs verified by bpfvet and loaded by the host kernel (needs root).
# Programs whose section names no type get one from prog_types.tsv.
# Usage: bench/verifier_corpus/run.sh [corpus dir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
corpus=${1:-$root/../shared/corpus/ebpf-samples}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
cargo build -q --release -p bpfvet-verifier --example compare_kernel
"$CARGO_TARGET_DIR/release/examples/compare_kernel" --prog-types "$here/prog_types.tsv" \
    "$corpus" "$root/tests/progs" \
    | sed "s|$corpus/||; s|$root/||" > "$here/results.csv"
python3 "$here/report.py" "$here/results.csv" "$here/causes.tsv" > "$here/REPORT.md"
echo "wrote $here/REPORT.md"
