#!/usr/bin/env bash
# Verifies the built selftest objects with bpfvet and the host kernel and
# prints each set's summary (needs root for the kernel side).
#   bench/selftests/compare.sh [OBJ_DIR] [OUT_PREFIX]
# OBJ_DIR is build.sh's output (default /var/tmp/bpfvet-selftests); the CSV,
# stderr and JSON classification of each set go to OUT_PREFIX-SET.{csv,err,json}
# (default OBJ_DIR/results). PRIVILEGES=bpf|unprivileged loads at that level
# on both sides (default root).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
objs=${1:-/var/tmp/bpfvet-selftests}
out=${2:-$objs/results}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
cargo build -q --release -p bpfvet
for set in verifier other; do
    "$CARGO_TARGET_DIR/release/bpfvet" verify --backend both --privileges "${PRIVILEGES:-root}" -o csv \
        -e file,prog,verdict,insns,states "$objs/$set" > "$out-$set.csv" 2> "$out-$set.err" || true
    python3 "$here/report.py" "$set" "$out-$set.csv" "$out-$set.err" > "$out-$set.json"
    python3 - "$out-$set.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{d['set']}: {d['programs']} programs, kernel verifies {d['kernel_verified']} "
      f"(refuses {d['kernel_refused']}); same verdict {d['same_verdict']}; "
      f"UNSOUND {d['unsound']}; overstrict {d['overstrict']}; bpfvet refuses {d['bpfvet_refused']}; "
      f"same text {d['same_text']}/{d['both_reject']}; insns exact {d['insns_exact']}/{d['both_accept']}")
for u in d["unsound_list"]:
    print(f"  unsound: {u['prog']}: kernel: {u['kernel']}")
PY
done
