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
set -eu
cd "$(dirname "$0")/../.."
: "${DIR:?set DIR to the output directory}"
BPFVET_FUZZ_DIR=$DIR \
BPFVET_FUZZ_BATCHES=${BATCHES:-50} \
BPFVET_FUZZ_BATCH_SIZE=${SIZE:-2000} \
BPFVET_FUZZ_SEED=${SEED:-0x62726666757a7a31} \
BPFVET_FUZZ_SWARM=${SWARM:-1} \
BPFVET_FUZZ_MINIMISE=${MINIMISE:-300} \
BPFVET_FUZZ_PRIVILEGES=${PRIVILEGES:-root} \
BPFVET_FUZZ_FORCE_FEATURES=${FORCE_FEATURES:-} \
    cargo test -p bpfvet-verifier --release --test random_kernel_diff \
    -- --ignored fuzz_batches --nocapture
