#!/bin/sh
# Publishes a finished batch run: copies DIR/REPORT.md to
# bench/verifier_fuzz/REPORT.md and writes ERROR_SITES.md, which of the 6.18
# verifier's error messages the run made the kernel emit (error_sites.py,
# with the kernel sources kernel_src.sh fetches) and, where the selftests'
# compare.sh results of 6.18 exist, which the selftests reach. Mutation runs
# of mutate.sh (MUTATE_DIR: their mut-*.tsv) count as generated programs;
# their MUTATE.md is appended to REPORT.md. More batch runs (EXTRA_DIRS,
# e.g. a run at PRIVILEGES=unprivileged) count as generated programs too;
# their REPORT.md is appended. Runs whose kernel side was the lockdown-free
# guest (batch.sh KERNEL=..., GUEST_DIRS="DIR ...") are a column of their own;
# their REPORT.md is appended too.
#   [EXTRA_DIRS="DIR2 ..."] bench/verifier_fuzz/report.sh DIR [SELFTESTS_RESULTS_PREFIX [MUTATE_DIR...]]
#   (prefix default /var/tmp/bpfvet-selftests-6.18/results)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: report.sh DIR [SELFTESTS_RESULTS_PREFIX [MUTATE_DIR...]]}
st=${2:-/var/tmp/bpfvet-selftests-6.18/results}
if [ $# -ge 2 ]; then shift 2; else shift $#; fi
mutdirs="$*"
[ -f "$dir/REPORT.md" ] || { echo "report.sh: no $dir/REPORT.md (run batch.sh first)" >&2; exit 1; }
commit=$(git -C "$here" rev-parse --short HEAD)
{
    echo "<!-- copied from a batch.sh run by report.sh at $commit -->"
    cat "$dir/REPORT.md"
    for e in ${EXTRA_DIRS:-}; do
        [ -f "$e/REPORT.md" ] || { echo "report.sh: no $e/REPORT.md" >&2; exit 1; }
        echo; sed 's/^# /## /' "$e/REPORT.md"
    done
    for g in ${GUEST_DIRS:-}; do
        [ -f "$g/REPORT.md" ] || { echo "report.sh: no $g/REPORT.md" >&2; exit 1; }
        echo; sed 's/^# /## (lockdown-free guest) /' "$g/REPORT.md"
    done
    for m in $mutdirs; do
        if [ -f "$m/MUTATE.md" ]; then echo; sed 's/^# /## /' "$m/MUTATE.md"; fi
    done
} > "$here/REPORT.md"
mutants=""
for m in $mutdirs; do
    for f in "$m"/mut-*.tsv; do
        if [ -f "$f" ]; then mutants="$mutants $f"; fi
    done
done
set --
for s in verifier other; do
    [ -f "$st-$s.csv" ] && [ -f "$st-$s.err" ] && set -- "$@" --selftests "$st-$s.csv" "$st-$s.err"
done
# shellcheck disable=SC2086 # one word per TSV path
extra=""
for e in ${EXTRA_DIRS:-}; do extra="$extra $e/batch-*.tsv"; done
guest=""
for g in ${GUEST_DIRS:-}; do guest="$guest $g/batch-*.tsv"; done
# shellcheck disable=SC2086 # one word per TSV path
python3 "$here/error_sites.py" "$("$here/kernel_src.sh")" --fuzz "$dir"/batch-*.tsv $extra \
    --mutants $mutants --guest $guest "$@" \
    --out "$here/ERROR_SITES.md"
echo "wrote $here/REPORT.md and $here/ERROR_SITES.md"
