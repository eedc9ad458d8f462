#!/bin/sh
# Loads every committed object into the host kernel (root, bpf() syscall)
# and prints one markdown table row per program: the kernel's verdict,
# processed insns, total and peak states, and for a rejected program the
# last line of its verifier log.  This produced the table in EXPECTED.md.
# Usage: ./measure.sh [OBJ...]   (default: all *.bpf.o)
#        ./measure.sh --tsv [OBJ...]   raw columns, see measure.c
#        ./measure.sh --build          only build build/measure
set -eu
cd "$(dirname "$0")"
mkdir -p build
if [ ! -x build/measure ] || [ measure.c -nt build/measure ]; then
    gcc -O2 -Wall -o build/measure measure.c -lbpf
fi

if [ "${1:-}" = "--build" ]; then
    exit 0
fi
tsv=false
if [ "${1:-}" = "--tsv" ]; then
    tsv=true
    shift
fi
if [ $# -eq 0 ]; then
    set -- *.bpf.o
fi

# Log level 1|4: the statistics plus the error; level 1 is what makes the
# error the log's last line (at level 4 alone the kernel appends the
# failing source line after it).
if $tsv; then
    exec build/measure -l 5 "$@"
fi
echo "| program | object | section | verdict | insns | states | peak states | kernel's last log line (rejected) |"
echo "|---|---|---|---|---:|---:|---:|---|"
build/measure -l 5 "$@" | awk -F '\t' '{
    printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $2, $1, $3, $4, $7, $8, $9, ($4 == "success" ? "" : "`" $13 "`")
}'
