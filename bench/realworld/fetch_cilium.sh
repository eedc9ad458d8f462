#!/bin/sh
# Brings Cilium's datapath sources (bpf/ and the Makefiles it includes) at a
# pinned release from the Go module proxy, whose module zip carries the
# whole tree; the zip is checked against its pinned go.sum hash (h1:, the
# go command's dirhash: SHA-256 over the sorted "sha256  name" lines). The
# full repository is too large to fetch. Prints the directory for
# `run.sh --cilium`.
#   bench/realworld/fetch_cilium.sh [DIR]    (default /var/tmp/cilium-src)
set -eu
version=v1.20.2
h1=dqiEGIcXc+gqCLYG/l7VCFJ8GHyb4HUrwbZOpkX5dL8=
dir=${1:-/var/tmp/cilium-src}
zip=$dir/cilium-$version.zip
tree=$dir/cilium-$version
mkdir -p "$dir"
if [ ! -f "$tree/bpf/Makefile" ]; then
    [ -f "$zip" ] || curl -fsS -o "$zip" "https://proxy.golang.org/github.com/cilium/cilium/@v/$version.zip"
    got=$(python3 -c '
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
lines = "".join(f"{hashlib.sha256(z.read(n)).hexdigest()}  {n}\n" for n in sorted(z.namelist()))
print(base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode())' "$zip")
    [ "$got" = "$h1" ] || { echo "fetch_cilium.sh: $zip has h1:$got, expected h1:$h1" >&2; exit 1; }
    rm -rf "$tree.tmp" && mkdir -p "$tree.tmp"
    (cd "$tree.tmp" && unzip -q "$zip" "github.com/cilium/cilium@$version/bpf/*" \
        "github.com/cilium/cilium@$version/Makefile.defs" "github.com/cilium/cilium@$version/Makefile.quiet")
    mv "$tree.tmp/github.com/cilium/cilium@$version" "$tree"
    rm -rf "$tree.tmp"
    echo "$version (module zip from proxy.golang.org)" > "$tree/.commit"
fi
echo "$tree"
