#!/bin/sh
# Regenerates bench/verifier_fuzz/FINDINGS.md: random plausible programs
# through bpfvet and the host kernel's verifier (needs root and bpf(2)),
# every unsound/overstrict cause minimised.
#   N=20000 SEED=0x... bench/verifier_fuzz/run.sh
set -eu
cd "$(dirname "$0")/../.."
N=${N:-20000}
SEED=${SEED:-0x62726666757a7a31}
OUT=${OUT:-$PWD/bench/verifier_fuzz/FINDINGS.md}
BPFVET_FUZZ_PROGRAMS=$N BPFVET_FUZZ_SEED=$SEED BPFVET_FUZZ_FINDINGS=$OUT \
    cargo test -p bpfvet-verifier --release --test random_kernel_diff \
    -- random_programs_match_host_kernel --nocapture
