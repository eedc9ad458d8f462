#!/usr/bin/env bash
# Regenerates the reports and per-program CSVs beside this script: the
# kernel's BPF selftest objects (built by build.sh outside the repository)
# verified by bpfvet and by the host kernel, for the selftests of 6.12
# (REPORT.md, results-{verifier,other}.csv) and of 6.18, the host's
# version (REPORT-6.18.md, results-6.18-{verifier,other}.csv). Needs root.
#   bench/selftests/run.sh [RELEASE...]     (default: 6.12 6.18)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
releases=("$@")
[ ${#releases[@]} -gt 0 ] || releases=(6.12 6.18)
for release in "${releases[@]}"; do
    objs=/var/tmp/bpfvet-selftests
    report=$here/REPORT.md
    prefix=$here/results
    if [ "$release" != 6.12 ]; then
        objs=$objs-$release
        report=$here/REPORT-$release.md
        prefix=$here/results-$release
    fi
    SELFTESTS=$release "$here/build.sh" "$objs"
    "$here/compare.sh" "$objs" "$objs/results"
    for set in verifier other; do
        cp "$objs/results-$set.csv" "$prefix-$set.csv"
    done
    # The verifier_* objects' own annotations, as their test_loader checks them.
    "${CARGO_TARGET_DIR:-$here/../../target}/release/bpfvet" test --backend both "$objs/verifier" \
        > "$objs/results-test.txt" 2> "$objs/results-test.err" || true
    python3 "$here/annotations.py" "$objs/results-test.txt" > "$objs/results-test.json"
    python3 "$here/render.py" "$objs/results-verifier.json" "$objs/results-other.json" \
        "$objs/build_failures.txt" "$(uname -r)" "$objs/results-test.json" "$release" > "$report"
    echo "wrote $report"
done
