#!/usr/bin/env python3
"""Classifies `bpfvet test --backend both` output: per test, whether each
backend's verdict agrees with the test's annotation (6.12's selftests), and
whether bpfvet's verdict agrees with the 6.18 host kernel's.

usage: annotations.py TEST_OUTPUT > annotations.json
"""
import json, re, sys

LINE = re.compile(r"^(PASS|FAIL|SKIP) (.*) \[(bpfvet|kernel)\](?:: (.*))?$")
VERDICT_FAIL = ("expected a rejection", "expected success")

tests = {}
for line in open(sys.argv[1], errors="replace"):
    m = LINE.match(line.rstrip("\n"))
    if not m:
        continue
    status, label, side, why = m.groups()
    tests.setdefault(label, {})[side] = (status, why or "")

def verdict(result):
    """'agree', 'disagree' or None (not decided: skipped or refused)."""
    status, why = result
    if status == "PASS":
        return "agree"
    if status == "FAIL":
        return "disagree" if why.startswith(VERDICT_FAIL) else "agree"
    # Skips after the verdict was checked (unchecked __xlated, retval).
    if why.startswith(("verdict and messages agree", "retval not checked")):
        return "agree"
    return None

out = {"tests": 0, "unpriv_skipped": 0, "arch_skipped": 0}
for side in ("bpfvet", "kernel"):
    out[side] = {"decided": 0, "verdict_agrees": 0, "passed": 0, "refused": 0}
out["bpfvet_vs_kernel"] = {"both_decided": 0, "same_verdict": 0}
out["bpfvet_disagrees"] = []
for label, sides in sorted(tests.items()):
    if label.endswith("(unpriv)"):
        out["unpriv_skipped"] += 1
        continue
    if any(s[0] == "SKIP" and s[1].startswith("only for") for s in sides.values()):
        out["arch_skipped"] += 1
        continue
    out["tests"] += 1
    v = {}
    for side, result in sides.items():
        v[side] = verdict(result)
        o = out[side]
        if result[0] == "SKIP" and result[1].startswith("refused"):
            o["refused"] += 1
        if v[side]:
            o["decided"] += 1
            o["verdict_agrees"] += v[side] == "agree"
        o["passed"] += result[0] == "PASS"
    if v.get("bpfvet") and v.get("kernel"):
        out["bpfvet_vs_kernel"]["both_decided"] += 1
        out["bpfvet_vs_kernel"]["same_verdict"] += v["bpfvet"] == v["kernel"]
    if v.get("bpfvet") != "agree":
        out["bpfvet_disagrees"].append({
            "test": label,
            "bpfvet": ": ".join(x for x in sides.get("bpfvet", ("", "")) if x),
            "kernel": ": ".join(x for x in sides.get("kernel", ("", "")) if x),
        })
json.dump(out, sys.stdout, indent=1)
