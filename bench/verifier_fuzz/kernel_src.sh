#!/bin/sh
# Fetches the Linux 6.18 sources Debian ships (trixie-backports' orig
# tarball, checked against its pinned sha256) and extracts what the
# project's benches read: kernel/bpf, the BPF headers, the files defining
# helper prototypes (kernel/trace, net/core, net/ipv4, security/bpf) and
# the BPF selftests. Nothing of it enters the repository.
#   bench/verifier_fuzz/kernel_src.sh [DIR]   (default /var/tmp/ksrc618)
# Prints the extracted tree's path.
set -eu
dir=${1:-/var/tmp/ksrc618}
version=6.18.15
sha256=fdf4c4d487c95b17a41cb38003faef86669e532a44fe702eb31a3390b6a60cca
tarball=$dir/linux_$version.orig.tar.xz
tree=$dir/linux-$version
mkdir -p "$dir"
if [ ! -f "$tree/kernel/trace/bpf_trace.c" ] || [ ! -f "$tree/kernel/bpf/verifier.c" ]; then
    if ! echo "$sha256  $tarball" | sha256sum -c --status 2>/dev/null; then
        echo "fetching linux_$version.orig.tar.xz (157 MB) from deb.debian.org" >&2
        curl -fsS -o "$tarball" "http://deb.debian.org/debian/pool/main/l/linux/linux_$version.orig.tar.xz"
        echo "$sha256  $tarball" | sha256sum -c --status || {
            echo "kernel_src.sh: checksum mismatch for $tarball" >&2; exit 1; }
    fi
    tar -C "$dir" -xJf "$tarball" --wildcards "linux-$version/kernel/bpf/*" \
        "linux-$version/include/linux/bpf*" "linux-$version/include/uapi/linux/bpf*" \
        "linux-$version/include/linux/btf*" "linux-$version/net/core/*" \
        "linux-$version/net/ipv4/*" "linux-$version/kernel/trace/*" "linux-$version/security/bpf/*" \
        "linux-$version/tools/testing/selftests/bpf/*" "linux-$version/tools/lib/bpf/*" \
        "linux-$version/tools/include/*" "linux-$version/scripts/bpf_doc.py"
fi
echo "$tree"
