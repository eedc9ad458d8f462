#!/bin/sh
# Resumable differential fuzzing in batches (root, bpf(2) needed):
#   DIR=/tmp/fuzz BATCHES=50 SIZE=2000 bench/verifier_fuzz/batch.sh
# Batch k uses seed SEED + k*0x9e3779b97f4a7c15 and, with SWARM=1 (default),
# a feature subset drawn from that seed. Finished batches (DIR/batch-KKKK.tsv)
# are skipped; every distinct disagreement is minimised into DIR/cases/*.case;
# DIR/REPORT.md sums all batches. Format: bench/verifier_fuzz/README.md.
# PRIVILEGES=bpf|unprivileged|net_admin loads every program at that level on both sides
# (default root). FORCE_FEATURES=leaks,regions (names or a bit mask) turns
# those features on in every batch on top of its draw.
# KERNEL=6.18 verifies the kernel side in that Debian kernel under QEMU (one
# guest per run, `bpfvet verify --backend kernel=6.18`'s image cache) and
# gives bpfvet the guest's config and vmlinux BTF; JIT=0 turns the guest's
# JIT off (net.core.bpf_jit_enable=0) and tells bpfvet so; MITIGATIONS=off
# boots it with `mitigations=off` (Spectre sanitation bypassed for every
# loader: run it at PRIVILEGES=bpf or unprivileged) and tells bpfvet so
# (BPFVET_CPU_MITIGATIONS=off). RESCORE=1 runs
# bpfvet as built now on the finished batches against the kernel answers
# they recorded (no kernel load), printing what disagrees still.
set -eu
cd "$(dirname "$0")/../.."
: "${DIR:?set DIR to the output directory}"
if [ -n "${KERNEL:-}" ]; then
    cache=${XDG_CACHE_HOME:-$HOME/.cache}/bpfvet/kernels/$KERNEL
    if [ ! -f "$cache/vmlinuz" ]; then
        # Fetches the image into the cache.
        cargo run -q --release -p bpfvet -- verify --backend "kernel=$KERNEL" -q "$(ls tests/progs/*.o | head -1)" >/dev/null 2>&1 || true
    fi
    [ -f "$cache/vmlinuz" ] || { echo "no kernel image in $cache" >&2; exit 1; }
    # The guest's vmlinux BTF, alone in its directory (no module BTF):
    # the .BTF section of the vmlinux inside the bzImage.
    btf=$cache/btf/vmlinux
    if [ ! -s "$btf" ]; then
        mkdir -p "$cache/btf"
        python3 bench/verifier_fuzz/extract_btf.py "$cache/vmlinuz" "$btf"
    fi
    export BPFVET_FUZZ_KERNEL=$KERNEL BPFVET_VMLINUX_BTF=$btf
    # The guest's symbols as its agent listed them at a run's first boot.
    [ -f "$cache/kallsyms" ] && export BPFVET_KALLSYMS=$cache/kallsyms
    [ -f "$cache/config" ] && export BPFVET_KERNEL_CONFIG=$cache/config
    if [ "${JIT:-1}" = 0 ]; then
        export BPFVET_FUZZ_GUEST_JIT=0 BPFVET_BPF_JIT_ENABLE=0
    fi
    if [ "${MITIGATIONS:-on}" = off ]; then
        export BPFVET_CPU_MITIGATIONS=off
    fi
elif [ "${MITIGATIONS:-on}" = off ]; then
    echo "MITIGATIONS=off needs a guest (KERNEL=...): the host runs with mitigations on" >&2
    exit 1
fi
BPFVET_FUZZ_DIR=$DIR \
BPFVET_FUZZ_BATCHES=${BATCHES:-50} \
BPFVET_FUZZ_BATCH_SIZE=${SIZE:-2000} \
BPFVET_FUZZ_SEED=${SEED:-0x62726666757a7a31} \
BPFVET_FUZZ_SWARM=${SWARM:-1} \
BPFVET_FUZZ_MINIMISE=${MINIMISE:-300} \
BPFVET_FUZZ_PRIVILEGES=${PRIVILEGES:-root} \
BPFVET_FUZZ_FORCE_FEATURES=${FORCE_FEATURES:-} \
    cargo test -p bpfvet-verifier --release --test random_kernel_diff \
    -- --ignored --exact "$([ "${RESCORE:-0}" = 1 ] && echo fuzz_rescore || echo fuzz_batches)" --nocapture
