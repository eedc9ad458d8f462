#!/bin/sh
# Interpreter vs bpfvet JIT vs kernel JIT (BPF_PROG_TEST_RUN duration), and
# the threaded scaling of a map-heavy program, HASH against RHASH: one run
# of each `cargo bench -p bpfvet-vm` target; writes bench/vm/RESULTS.md.
# Needs root for the kernel column.
#   [REPEATS=3] bench/vm/run.sh
set -e
cd "$(dirname "$0")/../.."
out=bench/vm/RESULTS.md
load=$(cut -d" " -f1-3 /proc/loadavg)
# The machine is shared: the table is run REPEATS times and each figure
# is the median of its runs' medians (ratios recomputed from them).
repeats=${REPEATS:-3}
tables=$(mktemp -d)
trap 'rm -rf "$tables"' EXIT
for i in $(seq "$repeats"); do
  cargo bench -q -p bpfvet-vm --bench interp_vs_kernel 2>/dev/null > "$tables/$i.md"
done
table=$(python3 bench/vm/median_tables.py "$tables"/*.md)
load_threads=$(cut -d" " -f1-3 /proc/loadavg)
threads=$(cargo bench -q -p bpfvet-vm --bench threads_scaling 2>/dev/null)
load_after=$(cut -d" " -f1-3 /proc/loadavg)
{
  echo "# bpfvet-vm: interpreter and bpfvet JIT vs the kernel's JIT"
  echo
  echo "Command: \`bench/vm/run.sh\` (\`cargo bench -p bpfvet-vm --bench interp_vs_kernel\`,"
  echo "run $repeats times: each figure is the median of the $repeats runs' figures, the"
  echo "ratios recomputed from those medians). In each run, a figure is the median of 15 batches of 2000 runs on the same frame"
  echo "(the kernel: test_run's reported duration with repeat=2000, which leaves"
  echo "out the time the task spent rescheduled; the vm: the thread's CPU time"
  echo "(CLOCK_THREAD_CPUTIME_ID) across test_run with repeat=2000, divided by"
  echo "2000, for the interpreter and for bpfvet's JIT alike, both on the program"
  echo "bpfvet's verifier accepted, as \`bpfvet run\` runs it; the JIT column"
  echo "excludes compilation, whose one-off cost, for every program of the"
  echo "object, is the last column)."
  echo
  echo "Machine: $(uname -sr), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load average $load (a shared machine: treat ratios as approximate); $(date -u +%Y-%m-%d)."
  echo
  echo "$table"
  echo
  echo "## Threads: a map-heavy XDP program on 1 and 2 threads, HASH vs RHASH"
  echo
  echo "Command: \`cargo bench -p bpfvet-vm --bench threads_scaling\` (the same"
  echo "\`test_run_threads\` as \`bpfvet run --threads N\`). The program,"
  echo "crates/vm/tests/fixtures/map_heavy.bpf.c, touches 32 keys of a"
  echo "4096-entry flow table per run from a random start: three of four looked"
  echo "up and counted with atomic adds, every fourth overwritten with"
  echo "bpf_map_update_elem (BPF_ANY on an existing key: HASH swaps in a new"
  echo "element from its free list, RHASH copies in place). Its flow table is"
  echo "loaded as written (HASH) and turned into an RHASH. Each thread is one"
  echo "CPU of the VM and makes 10000 runs per batch (the control, 100000);"
  echo "a figure is the median over 15 batches of all threads' runs divided by"
  echo "the batch's wall time. The configurations take turns batch by batch"
  echo "(interleaved, order rotated), after one unmeasured batch each."
  echo
  echo "The control row runs xdp_collatz (no maps) the same way: its 2-thread"
  echo "ratio is the parallelism the machine had to give during the run. This"
  echo "machine has 2 cores shared with other jobs (load average $load_threads"
  echo "before, $load_after after): a ratio well under 2x in the control row"
  echo "means the machine was busy, and the map rows are then comparable with"
  echo "each other and with the control, not with an idle machine's 2x."
  echo
  echo "The CPU columns divide the threads' CPU time (CLOCK_THREAD_CPUTIME_ID,"
  echo "around their runs) by their runs. Time spent waiting for a core does"
  echo "not count there, so a busy machine disturbs them much less: their rise"
  echo "from 1 to 2 threads (last column) is what sharing the flow table costs"
  echo "per run (contended bucket locks and free lists, cache lines moving"
  echo "between the cores), the part of the scaling that is bpfvet's own."
  echo
  echo "$threads"
} > "$out"
cat "$out"
