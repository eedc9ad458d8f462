#!/usr/bin/env bash
# Real-world BPF projects built from source, verified by bpfvet and by the
# host kernel. Needs root, clang-19, bpftool, m4 and Debian's libbpf-dev.
# Objects are built in a scratch directory outside the repository and not
# kept. Each project takes a checkout: a work tree or a bare repository
# (a bare one is read with git; blobs it lacks are skipped).
#   bench/realworld/run.sh [--bcc DIR] [--xdp-tools DIR]
#                          [--libbpf-bootstrap DIR] [--katran DIR] [--cilium-ebpf DIR]
#                          [--cilium DIR]
# Cilium's tree is too large to fetch whole; fetch_cilium.sh brings its
# bpf/ directory and Makefiles from the Go module proxy at a pinned
# version and prints the DIR to give.
#   bench/realworld/run.sh /path/to/bcc      (as before: bcc only)
# For every project given, writes results-PROJECT.csv and replaces that
# project's section of REPORT.md; sections of projects not given are kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
clang=${CLANG:-clang-19}
multiarch=/usr/include/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

declare -A checkouts=()
order=()
if [ $# -eq 1 ] && [ "${1#--}" = "$1" ]; then set -- --bcc "$1"; fi
if [ $# -eq 0 ] && [ -n "${GIT_DIR:-}" ]; then set -- --bcc "$GIT_DIR"; unset GIT_DIR; fi
while [ $# -gt 0 ]; do
    case $1 in
        --bcc|--xdp-tools|--libbpf-bootstrap|--katran|--cilium-ebpf|--cilium)
            p=${1#--}; checkouts[$p]=$(cd "${2:?$1 needs a directory}" && pwd); order+=("$p"); shift 2 ;;
        *) echo "usage: $0 [--bcc DIR] [--xdp-tools DIR] [--libbpf-bootstrap DIR] [--katran DIR] [--cilium-ebpf DIR] [--cilium DIR]" >&2; exit 2 ;;
    esac
done
[ ${#order[@]} -gt 0 ] || { echo "no project given" >&2; exit 2; }

# Copy the files of checkout $1 under the paths $3... into $2; print the
# commit. A bare repository is read file by file: a missing blob (large
# vendored headers) is skipped rather than failing the export.
export_tree() {
    local src=$1 dest=$2; shift 2
    mkdir -p "$dest"
    if [ -d "$src/objects" ] && [ -f "$src/HEAD" ]; then
        git --git-dir="$src" ls-tree -r --name-only HEAD -- "$@" | while read -r f; do
            mkdir -p "$dest/$(dirname "$f")"
            git --git-dir="$src" show "HEAD:$f" > "$dest/$f" 2>/dev/null || rm -f "$dest/$f"
        done
        git --git-dir="$src" rev-parse HEAD > "$dest/.commit"
    else
        (cd "$src" && tar -cf - "$@") | tar -xf - -C "$dest"
        git -C "$src" rev-parse HEAD > "$dest/.commit" 2>/dev/null || echo unknown > "$dest/.commit"
    fi
}

# compile NAME SOURCE OUT FLAGS...: one BPF object; a failure is recorded
# with the compiler's first error.
compile() {
    local name=$1 srcf=$2 out=$3; shift 3
    if "$clang" -g -O2 -target bpf -D__TARGET_ARCH_x86 "$@" -I"$multiarch" \
        -c "$srcf" -o "$out/$name.bpf.o" 2> "$out/../$name.err"; then
        echo "$name" >> "$out/../built.txt"
    else
        echo "$name: $(grep -m1 'error:' "$out/../$name.err" | sed 's/^[^ ]* //')" >> "$out/../failed.txt"
    fi
}

vmlinux=$work/inc/vmlinux.h
mkdir -p "$work/inc"
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$vmlinux"

build_bcc() {  # bcc's libbpf-tools: CO-RE tracing tools
    local s=$1 o=$2
    export_tree "${checkouts[bcc]}" "$s" libbpf-tools
    rm -f "$s"/libbpf-tools/*/vmlinux*.h "$s"/libbpf-tools/vmlinux*.h
    for f in "$s"/libbpf-tools/*.bpf.c; do
        compile "$(basename "$f" .bpf.c)" "$f" "$o" -I"$work/inc" \
            -I"$s/libbpf-tools" -I"$s/libbpf-tools/x86"
    done
}

build_xdp_tools() {  # xdp-tools: the flags of lib/defines.mk, libbpf features of libbpf-dev
    local s=$1 o=$2 x
    export_tree "${checkouts[xdp-tools]}" "$s" headers lib/util lib/libxdp \
        xdp-bench xdp-dump xdp-filter xdp-forward xdp-monitor xdp-trafficgen
    local defs=(-std=gnu2x -DMAX_DISPATCHER_ACTIONS=10 -DDEBUG -DLIBBPF_DYNAMIC
        -DBPF_DIR_MNT=\"/sys/fs/bpf\" -DBPF_OBJECT_PATH=\"/usr/local/lib/bpf\"
        -Wno-unused-value -Wno-pointer-sign -Wno-compare-distinct-pointer-types
        -Wno-visibility -fno-stack-protector)
    # configure's feature probes, all present in libbpf >= 1.0
    for x in BPF_PROGRAM__FLAGS BPF_PROGRAM__TYPE BPF_MAP__SET_AUTOCREATE \
        PERF_BUFFER__CONSUME BTF__TYPE_CNT BPF_XDP_QUERY BPF_XDP_ATTACH \
        BPF_OBJECT__NEXT_PROGRAM BPF_OBJECT__NEXT_MAP PERF_BUFFER__NEW_RAW \
        BTF__LOAD_FROM_KERNEL_BY_ID BPF_PROG_TEST_RUN_OPTS BPF_PROGRAM__INSN_CNT \
        BPF_PROGRAM__EXPECTED_ATTACH_TYPE BPF_MAP_CREATE; do
        defs+=(-DHAVE_LIBBPF_$x)
    done
    m4 -DMAX_DISPATCHER_ACTIONS=10 "$s/lib/libxdp/xdp-dispatcher.c.in" > "$s/lib/libxdp/xdp-dispatcher.c"
    for f in "$s"/lib/util/*.bpf.c "$s"/xdp-*/*.bpf.c "$s"/xdp-*/*_bpf.c \
        "$s"/xdp-dump/xdpdump_xdp.c "$s"/xdp-filter/xdpfilt_*.c \
        "$s"/lib/libxdp/xdp-dispatcher.c "$s"/lib/libxdp/xsk_def_xdp_prog*.c; do
        [ -f "$f" ] || continue
        x=${f#"$s"/}; x=${x%.c}; x=${x%.bpf}
        compile "${x//\//__}" "$f" "$o" "${defs[@]}" -I"$s/headers" -I"$(dirname "$f")" -I"$s/lib/util"
    done
}

build_libbpf_bootstrap() {  # libbpf-bootstrap's C examples, against the host's vmlinux.h
    local s=$1 o=$2
    export_tree "${checkouts[libbpf-bootstrap]}" "$s" examples/c
    for f in "$s"/examples/c/*.bpf.c; do
        compile "$(basename "$f" .bpf.c)" "$f" "$o" -I"$work/inc" -I"$s/examples/c"
    done
}

# compile_host_ir NAME SOURCE OUT FLAGS...: Katran's Makefile-bpf way, host
# clang to LLVM IR, then llc for BPF (its headers need the host's libc).
compile_host_ir() {
    local name=$1 srcf=$2 out=$3; shift 3
    if "$clang" -g -O2 -emit-llvm "$@" -c "$srcf" -o "$out/../$name.bc" 2> "$out/../$name.err" &&
        "${LLC:-llc-19}" -march=bpf -filetype=obj "$out/../$name.bc" -o "$out/$name.bpf.o" 2>> "$out/../$name.err"; then
        echo "$name" >> "$out/../built.txt"
    else
        echo "$name: $(grep -m1 'error:' "$out/../$name.err" | sed 's/^[^ ]* //')" >> "$out/../failed.txt"
    fi
}

build_katran() {  # Katran: the flags of katran/lib/Makefile-bpf; its tpr programs as CO-RE
    local s=$1 o=$2 x
    export_tree "${checkouts[katran]}" "$s" katran/lib/bpf katran/lib/linux_includes \
        katran/decap katran/tpr
    local flags=(-DDEBUG -D__KERNEL__ -Wno-unused-value -Wno-pointer-sign
        -Wno-compare-distinct-pointer-types -I"$s/katran/lib/linux_includes" -I"$s")
    for f in "$s"/katran/lib/bpf/*.c "$s"/katran/decap/bpf/*.bpf.c "$s"/katran/decap/tc_bpf/*.bpf.c; do
        x=$(basename "$f" .c); x=${x%.bpf}
        compile_host_ir "$x" "$f" "$o" "${flags[@]}" -I"$(dirname "$f")"
    done
    mkdir -p "$work/inc/bpf/vmlinux"
    cp "$vmlinux" "$work/inc/bpf/vmlinux/vmlinux.h"
    for f in "$s"/katran/tpr/bpf/*.bpf.c; do
        x=$(basename "$f" .bpf.c)
        compile "$x" "$f" "$o" -I"$work/inc" -I"$s" -I"$(dirname "$f")"
    done
}

build_cilium_ebpf() {  # cilium/ebpf's examples, as their go:generate lines build them (bpf2go)
    local s=$1 o=$2 x
    export_tree "${checkouts[cilium-ebpf]}" "$s" examples
    for f in "$s"/examples/*/*.c; do
        x=$(basename "$(dirname "$f")")
        compile "$x" "$f" "$o" -I"$s/examples/headers" -I"$(dirname "$f")"
    done
}

build_cilium() {  # Cilium's datapath: its own Makefile (the MAX_*_OPTIONS configurations it load-tests)
    local s=$1 o=$2 x
    export_tree "${checkouts[cilium]}" "$s" bpf Makefile.defs Makefile.quiet
    [ -f "${checkouts[cilium]}/.commit" ] && cp "${checkouts[cilium]}/.commit" "$s/.commit"
    for x in $(sed -n 's/^BPF = //p' "$s/bpf/Makefile" | sed 's/\$(BPF_SIMPLE)//') \
        $(sed -n 's/^BPF_SIMPLE = //p' "$s/bpf/Makefile"); do
        if make -s -C "$s/bpf" CLANG="$clang" "$x" > "$o/../${x%.o}.err" 2>&1; then
            mv "$s/bpf/$x" "$o/${x%.o}.bpf.o"
            echo "${x%.o}" >> "$o/../built.txt"
        else
            echo "${x%.o}: $(grep -m1 'error:' "$o/../${x%.o}.err" | sed 's/^[^ ]* //')" >> "$o/../failed.txt"
        fi
    done
}

(cd "$root" && cargo build -q --release -p bpfvet)
for p in "${order[@]}"; do
    d=$work/$p; mkdir -p "$d/obj"; touch "$d/built.txt" "$d/failed.txt"
    "build_${p//-/_}" "$d/src" "$d/obj"
    echo "$p: built $(wc -l < "$d/built.txt"), failed $(wc -l < "$d/failed.txt")" >&2
    start=$(date +%s.%N)
    "$CARGO_TARGET_DIR/release/bpfvet" verify --backend both -o csv \
        -e file,prog,verdict,insns,duration "$d/obj" > "$here/results-$p.csv" 2> "$d/verify.err" || true
    python3 "$here/report.py" "$here/REPORT.md" "$p" "$here/results-$p.csv" "$d/verify.err" \
        "$d/built.txt" "$d/failed.txt" "$(cat "$d/src/.commit")" "$(uname -r)"
done
echo "wrote $here/REPORT.md"
