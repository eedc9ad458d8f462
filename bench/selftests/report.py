#!/usr/bin/env python3
"""Classifies `bpfvet verify --backend both` over the kernel selftests.

usage: report.py SET_NAME RESULTS.csv VERIFY.err  (one set per call)
Prints a JSON summary and the disagreement lists on stdout; run.sh turns
them into REPORT.md.
"""
import csv, json, re, sys

name, results, errs = sys.argv[1:4]
rows = list(csv.DictReader(open(results)))
kernel_refused, bpfvet_refused, messages, open_failures = {}, {}, {}, []
for line in open(errs, errors="replace").read().splitlines():
    m = re.match(r"bpfvet: (\S+?) \((bpfvet|kernel)\): (.*)", line)
    if m:
        prog, side, text = m.groups()
        if text.startswith("refused: "):
            (kernel_refused if side == "kernel" else bpfvet_refused)[prog] = text[len("refused: "):]
        else:
            text = re.sub(r"^insn \d+: ", "", text)
            # bpfvet files the kernel's own limits (1M insns, jump
            # sequences) under "limit: "; the message is the kernel's.
            text = re.sub(r"^limit: ", "", text)
            messages[(prog, side)] = text
        continue
    m = re.match(r"bpfvet: failed to open '([^']+)': (.*)", line)
    if m:
        open_failures.append((m.group(1), m.group(2).split(": ", 1)[-1]))

key = lambda r: f"{r['file_name']}/{r['prog_name']}"
out = {"set": name, "programs": len(rows), "open_failures": open_failures}
refused = [r for r in rows if key(r) in kernel_refused]
verified = [r for r in rows if key(r) not in kernel_refused]
kv = lambda r: r["verdict_kernel"]
bv = lambda r: "refused" if key(r) in bpfvet_refused else r["verdict_bpfvet"]
kernel_ok = [r for r in verified if kv(r) == "success"]
both_fail = [r for r in verified if kv(r) == bv(r) == "failure"]
both_ok = [r for r in verified if kv(r) == bv(r) == "success"]
unsound = [r for r in verified if bv(r) == "success" and kv(r) == "failure"]
overstrict = [r for r in verified if bv(r) == "failure" and kv(r) == "success"]
same_text = [r for r in both_fail
             if messages.get((key(r), "bpfvet")) == messages.get((key(r), "kernel"))]
exact = [r for r in both_ok if r["total_insns_bpfvet"] == r["total_insns_kernel"]]
refused_by_bpfvet = [r for r in verified if bv(r) == "refused"]
out.update(
    kernel_refused=len(refused), kernel_verified=len(verified),
    kernel_accepts=len(kernel_ok),
    same_verdict=sum(1 for r in verified if kv(r) == bv(r)),
    unsound=len(unsound), overstrict=len(overstrict),
    both_reject=len(both_fail), same_text=len(same_text),
    both_accept=len(both_ok), insns_exact=len(exact),
    bpfvet_refused=len(refused_by_bpfvet),
)
def detail(r):
    return {"prog": key(r),
            "bpfvet": messages.get((key(r), "bpfvet"), ""),
            "kernel": messages.get((key(r), "kernel"), ""),
            "insns_bpfvet": r["total_insns_bpfvet"], "insns_kernel": r["total_insns_kernel"]}
out["unsound_list"] = [detail(r) for r in unsound]
out["overstrict_list"] = [detail(r) for r in overstrict]
out["text_list"] = [detail(r) for r in both_fail if r not in same_text]
out["insns_list"] = [detail(r) for r in both_ok if r not in exact]
out["bpfvet_refused_list"] = [dict(detail(r), bpfvet=bpfvet_refused[key(r)])
                              for r in refused_by_bpfvet]
out["kernel_refused_list"] = [{"prog": key(r), "reason": kernel_refused[key(r)],
                               "bpfvet": bv(r)} for r in refused]
json.dump(out, sys.stdout, indent=1)
