#!/usr/bin/env bash
# Regenerates REPORT.md and the per-program CSVs beside this script: the
# kernel's BPF selftest objects (built by build.sh from linux-source-6.12,
# outside the repository) verified by bpfvet and by the host kernel.
# Needs root.
#   bench/selftests/run.sh [OBJ_DIR]     (default /var/tmp/bpfvet-selftests)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
objs=${1:-/var/tmp/bpfvet-selftests}
"$here/build.sh" "$objs"
"$here/compare.sh" "$objs" "$objs/results"
for set in verifier other; do
    cp "$objs/results-$set.csv" "$here/results-$set.csv"
done
# The verifier_* objects' own annotations, as their test_loader checks them.
"${CARGO_TARGET_DIR:-$here/../../target}/release/bpfvet" test --backend both "$objs/verifier" \
    > "$objs/results-test.txt" 2> "$objs/results-test.err" || true
python3 "$here/annotations.py" "$objs/results-test.txt" > "$objs/results-test.json"
python3 "$here/render.py" "$objs/results-verifier.json" "$objs/results-other.json" \
    "$objs/build_failures.txt" "$(uname -r)" "$objs/results-test.json" > "$here/REPORT.md"
echo "wrote $here/REPORT.md"
