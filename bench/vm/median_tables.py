#!/usr/bin/env python3
"""Combines runs of the interp_vs_kernel bench: the same markdown table
from each run, each figure replaced by its median over the runs and the
ratio columns recomputed from the medians.

usage: median_tables.py RUN.md..."""
import statistics, sys


def rows(path):
    """The table's header, separator and rows (cells), in order."""
    lines = [l.rstrip("\n") for l in open(path) if l.startswith("|")]
    return [[c.strip() for c in l.strip("|").split("|")] for l in lines]


def number(cell):
    """The cell's figure, None for a cell without one (no kernel: SKIP)."""
    try:
        return float(cell.rstrip("x"))
    except ValueError:
        return None


runs = [rows(p) for p in sys.argv[1:]]
head, sep, body = runs[0][0], runs[0][1], runs[0][2:]
if any(r[:2] != [head, sep] or [x[:2] for x in r[2:]] != [x[:2] for x in body] for r in runs):
    sys.exit("median_tables.py: the runs' tables differ in shape")
col = {name: i for i, name in enumerate(head)}
interp, jit, kernel = (col[n] for n in ("interpreter ns/run", "bpfvet JIT ns/run", "kernel JIT ns/run"))
print("| " + " | ".join(head) + " |")
print("|" + "|".join(sep) + "|")
for i, row in enumerate(body):
    out = list(row)
    for c in (interp, jit, kernel, len(row) - 1):
        vals = [number(r[2 + i][c]) for r in runs]
        if None not in vals:
            out[c] = f"{statistics.median(vals):.0f}"
    k = number(out[kernel])
    if k:
        out[col["interpreter / kernel"]] = f"{float(out[interp]) / k:.2f}x"
        out[col["bpfvet JIT / kernel"]] = f"{float(out[jit]) / k:.2f}x"
    print("| " + " | ".join(out) + " |")
