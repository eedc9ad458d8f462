#!/usr/bin/env bash
# Builds the kernel's BPF selftest objects (tools/testing/selftests/bpf/progs)
# from Debian's linux-source-6.12 package, the way the selftests Makefile
# builds test_progs' objects, into a directory outside the repository.
#   bench/selftests/build.sh [OUT_DIR]      (default /var/tmp/bpfvet-selftests)
# OUT_DIR/verifier holds the objects of progs/verifier_*.c, OUT_DIR/other the
# rest; OUT_DIR/build_failures.txt names the sources that did not compile.
# Needs root (apt) or the packages: linux-source-6.12 clang-19 bpftool
# libbpf-dev python3.
set -euo pipefail
out=${1:-/var/tmp/bpfvet-selftests}
tarball=/usr/src/linux-source-6.12.tar.xz
need=()
[ -f "$tarball" ] || need+=(linux-source-6.12)
command -v clang-19 >/dev/null || need+=(clang-19)
command -v bpftool >/dev/null || need+=(bpftool)
[ -f /usr/include/bpf/bpf_helpers.h ] || need+=(libbpf-dev)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]}" >&2
    apt-get update -q >/dev/null && apt-get install -y -q "${need[@]}" >/dev/null
fi
mkdir -p "$out"
src=$out/linux-source-6.12
if [ ! -d "$src/tools/testing/selftests/bpf/progs" ]; then
    echo "extracting the selftests from $tarball" >&2
    tar xf "$tarball" -C "$out" --wildcards \
        'linux-source-6.12/tools/testing/selftests/bpf/*' \
        'linux-source-6.12/tools/lib/bpf/*' \
        'linux-source-6.12/tools/include/*' \
        'linux-source-6.12/scripts/bpf_doc.py' \
        'linux-source-6.12/include/uapi/linux/bpf.h'
fi
st=$src/tools/testing/selftests/bpf
inc=$out/include
mkdir -p "$inc/bpf" "$out/verifier" "$out/other"
# libbpf's headers as the Makefile installs them, plus the generated helper
# declarations and the host's vmlinux.h.
cp "$src"/tools/lib/bpf/{bpf_helpers.h,bpf_tracing.h,bpf_core_read.h,bpf_endian.h,usdt.bpf.h} "$inc/bpf/"
python3 "$src/scripts/bpf_doc.py" --header --file "$src/include/uapi/linux/bpf.h" > "$inc/bpf/bpf_helper_defs.h"
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$inc/vmlinux.h"
flags=(-g -O2 --target=bpf -mcpu=v3 -Wall -Wno-compare-distinct-pointer-types
       -D__TARGET_ARCH_x86 -DENABLE_ATOMICS_TESTS -I"$inc" -I"$st" -I"$st/progs"
       -I"$src/tools/include/uapi" -idirafter /usr/include/x86_64-linux-gnu)
: > "$out/build_failures.txt"
build() {
    local f=$1 n dir
    n=$(basename "$f" .c)
    case $n in verifier_*) dir=verifier ;; *) dir=other ;; esac
    [ -s "$out/$dir/$n.bpf.o" ] && [ "$out/$dir/$n.bpf.o" -nt "$f" ] && return 0
    if ! clang-19 "${flags[@]}" -c "$f" -o "$out/$dir/$n.bpf.o" 2> "$out/$n.err"; then
        rm -f "$out/$dir/$n.bpf.o"
        echo "$n: $(grep -m1 'error:' "$out/$n.err" | sed 's/^[^ ]* //')" >> "$out/build_failures.txt"
    fi
    rm -f "$out/$n.err"
}
total=0
for f in "$st"/progs/*.c; do
    total=$((total + 1))
    build "$f" &
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
done
wait
echo "built $(ls "$out"/verifier/*.o | wc -l) verifier_* and $(ls "$out"/other/*.o | wc -l) other objects of $total sources; $(wc -l < "$out/build_failures.txt") failed (build_failures.txt)" >&2
