#!/bin/sh
# Rebuild every tests/progs/*.bpf.c into <name>.bpf.o next to its source.
#
# Needs clang-19, Debian's libbpf-dev (bpf/bpf_helpers.h) and, for sources
# that include "vmlinux.h", bpftool and /sys/kernel/btf/vmlinux.  The objects
# are committed, so tests never need this script; run it after editing a
# source.  Usage: ./build.sh [name.bpf.c ...]   (default: all sources)
set -eu
cd "$(dirname "$0")"

CLANG=${CLANG:-clang-19}
BUILD=build
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo "$(uname -m)-linux-gnu")
mkdir -p "$BUILD"

# The stress programs are long; their C is generated (and committed).
python3 gen_stress.py

if [ $# -eq 0 ]; then
    set -- *.bpf.c
fi

if grep -l '#include "vmlinux.h"' "$@" >/dev/null 2>&1 && [ ! -s "$BUILD/vmlinux.h" ]; then
    bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$BUILD/vmlinux.h.tmp"
    mv "$BUILD/vmlinux.h.tmp" "$BUILD/vmlinux.h"
fi

for src in "$@"; do
    obj=${src%.c}.o
    # v4 is opt-in per object: only v4_insns needs sign-extending loads,
    # movsx, sdiv/smod, bswap and gotol; the rest stay at the common v3.
    # The stress programs use clang's default CPU (v1), the build that
    # SEEDS.md's reference figures were measured on.
    case "$src" in
        v4_*) cpu=-mcpu=v4 ;;
        stress_*) cpu= ;;
        *) cpu=-mcpu=v3 ;;
    esac
    echo "  CC  $obj ${cpu:-(default cpu)}"
    "$CLANG" -O2 -g -target bpf $cpu -D__TARGET_ARCH_x86 -Wall \
        -I"$BUILD" -I/usr/include/"$MULTIARCH" \
        -c "$src" -o "$obj"
done
