#!/bin/sh
# Publishes a finished batch run: copies DIR/REPORT.md to
# bench/verifier_fuzz/REPORT.md and writes ERROR_SITES.md, which of the 6.18
# verifier's error messages the run made the kernel emit (error_sites.py,
# with the kernel sources kernel_src.sh fetches) and, where the selftests'
# compare.sh results of 6.18 exist, which the selftests reach.
#   bench/verifier_fuzz/report.sh DIR [SELFTESTS_RESULTS_PREFIX]
#   (prefix default /var/tmp/bpfvet-selftests-6.18/results)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: report.sh DIR [SELFTESTS_RESULTS_PREFIX]}
st=${2:-/var/tmp/bpfvet-selftests-6.18/results}
[ -f "$dir/REPORT.md" ] || { echo "report.sh: no $dir/REPORT.md (run batch.sh first)" >&2; exit 1; }
commit=$(git -C "$here" rev-parse --short HEAD)
{
    echo "<!-- copied from a batch.sh run by report.sh at $commit -->"
    cat "$dir/REPORT.md"
} > "$here/REPORT.md"
set --
for s in verifier other; do
    [ -f "$st-$s.csv" ] && [ -f "$st-$s.err" ] && set -- "$@" --selftests "$st-$s.csv" "$st-$s.err"
done
python3 "$here/error_sites.py" "$("$here/kernel_src.sh")" --fuzz "$dir"/batch-*.tsv "$@" \
    --out "$here/ERROR_SITES.md"
echo "wrote $here/REPORT.md and $here/ERROR_SITES.md"
