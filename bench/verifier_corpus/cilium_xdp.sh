#!/bin/sh
# Processed insns of bpfvet vs the host kernel on Cilium's XDP objects of
# the corpus (their numbered sections name no program type: run as xdp).
# The kernel side needs root. Prints a summary and the programs that differ.
# Usage: bench/verifier_corpus/cilium_xdp.sh [corpus dir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
corpus=${1:-$root/../shared/corpus/ebpf-samples}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
cargo build -q --release -p bpfvet
bin=$CARGO_TARGET_DIR/release/bpfvet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for backend in kernel bpfvet; do
    "$bin" verify --backend $backend --prog-type xdp -q -o csv \
        -e file,prog,verdict,insns,states "$corpus"/cilium/bpf_xdp*.o > "$tmp/$backend.csv"
done
python3 - "$tmp/kernel.csv" "$tmp/bpfvet.csv" <<'PY'
import csv, sys
def rows(p):
    return {(r["file_name"], r["prog_name"]): r for r in csv.DictReader(open(p))}
k, b = rows(sys.argv[1]), rows(sys.argv[2])
common = [key for key in k if key in b]
ki = {key: int(k[key]["total_insns"]) for key in common}
bi = {key: int(b[key]["total_insns"]) for key in common}
exact = sum(ki[x] == bi[x] for x in common)
near = sum(abs(bi[x] - ki[x]) <= 0.1 * ki[x] for x in common)
verdicts = sum(k[x]["verdict"] == b[x]["verdict"] for x in common)
print(f"programs {len(common)}, same verdict {verdicts}, insns exact {exact}, "
      f"within 10% {near}, total bpfvet/kernel {sum(bi.values()) / sum(ki.values()):.4f}")
for x in sorted(common, key=lambda x: bi[x] / ki[x]):
    if ki[x] != bi[x]:
        print(f"  {x[0]}:{x[1]} kernel {ki[x]} bpfvet {bi[x]}")
PY
