#!/bin/sh
# Rebuild every *.bpf.c here into <name>.bpf.o (clang-19 and Debian's
# libbpf-dev headers). The objects are committed, so tests never need this.
# Usage: ./build.sh [name.bpf.c ...]   (default: all sources)
set -eu
cd "$(dirname "$0")"
CLANG=${CLANG:-clang-19}
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo "$(uname -m)-linux-gnu")
[ $# -eq 0 ] && set -- *.bpf.c
for src in "$@"; do
    obj=${src%.c}.o
    echo "  CC  $obj"
    "$CLANG" -O2 -g -target bpf -I"/usr/include/$MULTIARCH" -c "$src" -o "$obj"
done
