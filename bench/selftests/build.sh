#!/usr/bin/env bash
# Builds the kernel's BPF selftest objects (tools/testing/selftests/bpf/progs)
# the way the selftests Makefile builds test_progs' objects, into a
# directory outside the repository, from Debian's linux-source-6.12 package
# or, with SELFTESTS=6.18, from Debian's 6.18 sources (the host kernel's
# version; fetched by bench/verifier_fuzz/kernel_src.sh).
#   [SELFTESTS=6.12|6.18] bench/selftests/build.sh [OUT_DIR]
#   (default OUT_DIR: /var/tmp/bpfvet-selftests, or -6.18 appended)
# OUT_DIR/verifier holds the objects of progs/verifier_*.c, OUT_DIR/other the
# rest; OUT_DIR/build_failures.txt names the sources that did not compile.
# Needs root (apt) or the packages: linux-source-6.12 clang-19 bpftool
# libbpf-dev python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
release=${SELFTESTS:-6.12}
case $release in
6.12) out=${1:-/var/tmp/bpfvet-selftests} ;;
6.18) out=${1:-/var/tmp/bpfvet-selftests-6.18} ;;
*) echo "build.sh: SELFTESTS must be 6.12 or 6.18" >&2; exit 2 ;;
esac
tarball=/usr/src/linux-source-6.12.tar.xz
need=()
[ "$release" != 6.12 ] || [ -f "$tarball" ] || need+=(linux-source-6.12)
command -v clang-19 >/dev/null || need+=(clang-19)
command -v bpftool >/dev/null || need+=(bpftool)
[ -f /usr/include/bpf/bpf_helpers.h ] || need+=(libbpf-dev)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]}" >&2
    apt-get update -q >/dev/null && apt-get install -y -q "${need[@]}" >/dev/null
fi
mkdir -p "$out"
if [ "$release" = 6.18 ]; then
    src=$("$here/../verifier_fuzz/kernel_src.sh")
else
    src=$out/linux-source-6.12
fi
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
# Newer bpftool releases also declare every kfunc in vmlinux.h, which the
# selftests rely on; Debian's does not. A source that fails to build is
# retried with those declarations, written from the same BTF.
bpftool btf dump file /sys/kernel/btf/vmlinux format raw > "$out/vmlinux.raw"
python3 "$here/kfunc_decls.py" "$out/vmlinux.raw" > "$inc/kfunc_decls.h"
rm -f "$out/vmlinux.raw"
flags=(-g -O2 --target=bpf -mcpu=v3 -Wall -Wno-compare-distinct-pointer-types
       -D__TARGET_ARCH_x86 -DENABLE_ATOMICS_TESTS -I"$inc" -I"$st" -I"$st/progs"
       -I"$src/tools/include/uapi" -idirafter /usr/include/x86_64-linux-gnu)
: > "$out/build_failures.txt"
build() {
    local f=$1 n dir
    n=$(basename "$f" .c)
    case $n in verifier_*) dir=verifier ;; *) dir=other ;; esac
    [ -s "$out/$dir/$n.bpf.o" ] && [ "$out/$dir/$n.bpf.o" -nt "$f" ] && return 0
    if ! clang-19 "${flags[@]}" -c "$f" -o "$out/$dir/$n.bpf.o" 2> "$out/$n.err" &&
        ! clang-19 "${flags[@]}" -include kfunc_decls.h -c "$f" -o "$out/$dir/$n.bpf.o" 2> "$out/$n.err"; then
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
