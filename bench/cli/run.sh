#!/usr/bin/env bash
# Corpus throughput of `bpfvet verify` (bpfvet backend) with --jobs 1 and
# --jobs 2 on the kernel selftest objects: programs per second, median of
# RUNS runs each, and a check that both give the same rows.
#
# usage: bench/cli/run.sh [SELFTESTS_DIR] [RUNS]
#   SELFTESTS_DIR holds verifier/ and other/ (*.bpf.o); default
#   /var/tmp/bpfvet-selftests. Build first: cargo build --release.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-/var/tmp/bpfvet-selftests}
runs=${2:-3}
bin=target/release/bpfvet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

load() {
    echo "$(uptime | sed 's/.*load average/load average/');" \
        "cpu pressure $(head -1 /proc/pressure/cpu 2>/dev/null || echo n/a)"
}
echo "machine: $(nproc) cores; $(load) (before)"
for jobs in 1 2; do
    times=()
    cpu=()
    for i in $(seq "$runs"); do
        # Exit 1 is expected: the corpus has programs that fail to verify.
        /usr/bin/time -o "$tmp/time" -f "%e %U %S" \
            "$bin" verify -q --jobs "$jobs" -o csv -e file,prog,verdict,insns,states \
            "$dir/verifier" "$dir/other" >"$tmp/rows.$jobs.$i.csv" 2>"$tmp/err.$jobs.$i" || [ $? -eq 1 ]
        read -r wall user sys < <(tail -1 "$tmp/time")
        times+=("$wall")
        cpu+=("$(echo "$user + $sys" | bc)")
    done
    progs=$(($(wc -l <"$tmp/rows.$jobs.1.csv") - 1))
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")
    echo "jobs $jobs: $progs programs; wall s: ${times[*]} (cpu s: ${cpu[*]});" \
        "median $median s; $(echo "scale=0; $progs / $median" | bc) programs/s"
    eval "median_$jobs=$median"
done
echo "speed-up jobs 2 / jobs 1: $(echo "scale=2; $median_1 / $median_2" | bc)"
echo "machine: $(load) (after)"

# Same rows: every run of either job count, sorted, byte for byte.
sort "$tmp/rows.1.1.csv" >"$tmp/ref"
for f in "$tmp"/rows.*.csv; do
    sort "$f" | cmp -s - "$tmp/ref" || { echo "DIFFERENT rows: $f"; exit 1; }
done
# Unsorted too: --jobs keeps the input order.
cmp -s "$tmp/rows.1.1.csv" "$tmp/rows.2.1.csv" && echo "rows: identical for --jobs 1 and 2 (sorted and unsorted)"
