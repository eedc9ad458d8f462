#!/bin/sh
# Mutation of real programs against the host kernel (root, bpf(2) needed):
#   DIR=/tmp/mut N=20 OBJECTS=tests/progs:/var/tmp/bpfvet-selftests/verifier \
#       bench/verifier_fuzz/mutate.sh
# Writes DIR/mutate.tsv (one row per mutant) and DIR/mutants/*.txt for the
# unsound and overstrict ones. Format: bench/verifier_fuzz/README.md.
set -eu
cd "$(dirname "$0")/../.."
: "${DIR:?set DIR to the output directory}"
BPFVET_MUTATE_DIR=$DIR \
BPFVET_MUTATE_N=${N:-20} \
BPFVET_MUTATE_OBJECTS=${OBJECTS:-$PWD/tests/progs} \
BPFVET_MUTATE_MAX_INSNS=${MAX_INSNS:-3000} \
BPFVET_FUZZ_MINIMISE=${MINIMISE:-300} \
BPFVET_FUZZ_SEED=${SEED:-0x62726666757a7a31} \
    cargo test -p bpfvet-verifier --release --test random_kernel_diff \
    -- --ignored mutate_real_programs --nocapture
