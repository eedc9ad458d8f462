#!/bin/sh
# Interpreter vs bpfvet JIT vs kernel JIT (BPF_PROG_TEST_RUN duration), one run of
# `cargo bench -p bpfvet-vm`; writes bench/vm/RESULTS.md. Needs root for
# the kernel column.
set -e
cd "$(dirname "$0")/../.."
out=bench/vm/RESULTS.md
load=$(cut -d" " -f1-3 /proc/loadavg)
table=$(cargo bench -q -p bpfvet-vm --bench interp_vs_kernel 2>/dev/null)
{
  echo "# bpfvet-vm: interpreter and bpfvet JIT vs the kernel's JIT"
  echo
  echo "Command: \`bench/vm/run.sh\` (\`cargo bench -p bpfvet-vm --bench interp_vs_kernel\`)."
  echo "Each figure is the median of 15 batches of 2000 runs on the same frame"
  echo "(the kernel: test_run's reported duration with repeat=2000; the vm: wall"
  echo "time of test_run with repeat=2000, divided by 2000, for the interpreter and"
  echo "for bpfvet's JIT alike; the JIT column excludes compilation, whose one-off"
  echo "cost, for every program of the object, is the last column)."
  echo
  echo "Machine: $(uname -sr), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load average $load (a shared machine: treat ratios as approximate); $(date -u +%Y-%m-%d)."
  echo
  echo "$table"
} > "$out"
cat "$out"
