#!/usr/bin/env bash
# Runs the maps benchmark tables (bpfvet bench maps) several times and
# prints each run, with the machine and the load at the start of each, to
# stdout. RESULTS.md in this directory was assembled from this output.
#   RUNS=5 REPEAT=3 bench/maps/run.sh > /tmp/maps-bench.md
# (`bench maps` is in the binary only with the cli's bench-maps feature.)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${RUNS:-5}
repeat=${REPEAT:-3}
cargo build --release -q -p bpfvet --features bench-maps
bin="${CARGO_TARGET_DIR:-target}/release/bpfvet"
echo "nproc: $(nproc); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); kernel: $(uname -r)"
for i in $(seq "$repeat"); do
    echo
    echo "## Run $i of $repeat ($(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg))"
    echo
    "$bin" bench maps --runs "$runs"
done
