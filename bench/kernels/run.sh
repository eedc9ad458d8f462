#!/usr/bin/env bash
# The kernel version matrix and the lockdown-free comparison, written to
# bench/kernels/REPORT.md with the CSVs beside it.
#   bench/kernels/run.sh [KERNELS] [SELFTESTS_DIR]
# KERNELS defaults to 6.1,6.12,6.18,host (Debian kernels are fetched once
# into ~/.cache/bpfvet/kernels); SELFTESTS_DIR to /var/tmp/bpfvet-selftests-6.18
# (SELFTESTS=6.18 bench/selftests/build.sh's output; its sets are skipped when missing).
# Needs root, qemu-system-x86_64 and apt (for the first fetch of a kernel).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kernels=${1:-6.1,6.12,6.18,host}
selftests=${2:-/var/tmp/bpfvet-selftests-6.18}
corpus=$root/../shared/corpus/ebpf-samples
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
cargo build -q --release -p bpfvet
# A copy, so that a rebuild during the run cannot pull the executable the
# guests are built from out from under it.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$work/bpfvet
cp "$CARGO_TARGET_DIR/release/bpfvet" "$bin"
cd "$root"

# 1. The matrix over tests/progs and the shared corpus.
"$bin" verify --kernels "$kernels" -o csv tests/progs \
    > "$here/matrix-progs.csv" 2> "$work/progs.err" || true
if [ -d "$corpus" ]; then
    "$bin" verify --kernels "$kernels" -o csv \
        --prog-types bench/verifier_corpus/prog_types.tsv "$corpus" \
        > "$here/matrix-corpus.csv" 2> "$work/corpus.err" || true
else
    echo "SKIP: no corpus at $corpus" >&2
    : > "$here/matrix-corpus.csv"
    : > "$work/corpus.err"
fi

# 2. bpfvet against a 6.18 guest on the program types the host's lockdown
#    refuses: fentry/fexit/fmod_ret/iter/tp_btf (tracing), lsm,
#    struct_ops and freplace (ext).
#    bpfvet decides attach targets by the guest's build options (its
#    error-injection list is none when they do not build one).
guest_config=${XDG_CACHE_HOME:-$HOME/.cache}/bpfvet/kernels/6.18/config
[ -f "$guest_config" ] && export BPFVET_KERNEL_CONFIG=$guest_config
# ... and by its own vmlinux BTF and symbols (kfuncs, attach targets and
# CO-RE resolve against the guest's types, as batch.sh KERNEL= does).
guest_cache=$(dirname "$guest_config")
if [ -f "$guest_cache/vmlinuz" ]; then
    if [ ! -s "$guest_cache/btf/vmlinux" ]; then
        mkdir -p "$guest_cache/btf"
        python3 bench/verifier_fuzz/extract_btf.py "$guest_cache/vmlinuz" "$guest_cache/btf/vmlinux"
    fi
    export BPFVET_VMLINUX_BTF=$guest_cache/btf/vmlinux
fi
[ -f "$guest_cache/kallsyms" ] && export BPFVET_KALLSYMS=$guest_cache/kallsyms
sets=(tests/progs)
for s in verifier other; do
    [ -d "$selftests/$s" ] && sets+=("$selftests/$s")
done
: > "$work/lockdown.tsv"
for dir in "${sets[@]}"; do
    name=$(basename "$dir")
    "$bin" verify -q -o csv -e file,prog,prog_type "$dir" 2>/dev/null \
        | awk -F, 'NR > 1 && ($3 == "tracing" || $3 == "lsm" || $3 == "struct_ops" || $3 == "ext") { print $1 "/" $2 }' \
        > "$work/$name.list" || true
    [ -s "$work/$name.list" ] || continue
    "$bin" verify --backend both=6.18 -o csv -e file,prog,prog_type,verdict,insns \
        -f "@$work/$name.list" "$dir" > "$work/$name-lf.csv" 2> "$work/$name-lf.err" || true
    printf '%s\t%s\t%s\n' "$name" "$work/$name-lf.csv" "$work/$name-lf.err" >> "$work/lockdown.tsv"
done

python3 "$here/report.py" "$kernels" "$here" "$work" > "$here/REPORT.md"
echo "wrote $here/REPORT.md"
