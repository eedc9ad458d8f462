"""Write one project's section of bench/realworld/REPORT.md from the CSV and
stderr of `bpfvet verify --backend both`; other projects' sections are kept.
Usage: report.py REPORT PROJECT RESULTS_CSV VERIFY_ERR BUILT FAILED COMMIT KERNEL"""
import collections, csv, re, sys

report, project, results, errfile, builtf, failedf, commit, kernel = sys.argv[1:9]
TITLES = {
    "bcc": "bcc libbpf-tools (iovisor/bcc)",
    "xdp-tools": "xdp-tools (xdp-project/xdp-tools)",
    "libbpf-bootstrap": "libbpf-bootstrap examples (libbpf/libbpf-bootstrap)",
    "katran": "Katran (facebookincubator/katran)",
    "cilium-ebpf": "cilium/ebpf examples (cilium/ebpf)",
    "cilium": "Cilium datapath (cilium/cilium bpf/, its Makefile's load-tested configurations)",
}
ORDER = list(TITLES)

rows = list(csv.DictReader(open(results)))
err = open(errfile).read().splitlines()
built = [l for l in open(builtf).read().splitlines() if l]
failed = [l for l in open(failedf).read().splitlines() if l]
key = lambda r: f"{r['file_name']}/{r['prog_name']}"


def reason(side):
    out = {}
    for l in err:
        m = re.match(rf"bpfvet: (\S+) \({side}\): refused: (.*)", l)
        if m:
            out[m.group(1)] = m.group(2)
    return out


kernel_refused = {key(r): "" for r in rows if r["verdict_kernel"] == "refused"}
kernel_refused.update({k: v for k, v in reason("kernel").items() if k in kernel_refused})
verified = [r for r in rows if r["verdict_kernel"] in ("success", "failure")]
bpfvet_refused = [r for r in verified if r["verdict_bpfvet"] not in ("success", "failure")]
agree = [r for r in verified if r["verdict_bpfvet"] == r["verdict_kernel"]]
both = [r for r in agree if r["verdict_kernel"] == "success"]
exact = [r for r in both if r["total_insns_bpfvet"] == r["total_insns_kernel"]]
unsound = [r for r in verified if r["verdict_bpfvet"] == "success" and r["verdict_kernel"] == "failure"]
overstrict = [r for r in verified if r["verdict_bpfvet"] == "failure" and r["verdict_kernel"] == "success"]
us = lambda rs, side: sum(int(r[f"duration_{side}"] or 0) for r in rs)
first_line = lambda k, side: next(
    (l.split(": ", 2)[-1] for l in err if l.startswith(f"bpfvet: {k} ({side})")), "")

out = [f"<!-- begin {project} -->", f"## {TITLES[project]}", ""]
out.append(f"{'Version' if commit.startswith('v') else 'Commit'} `{commit}`, host kernel {kernel}; rows in `results-{project}.csv`.")
out.append("")
out.append(f"- **bpfvet accepts what the kernel rejects: {len(unsound)}**")
for r in unsound:
    out.append(f"  - {key(r)}: kernel `{first_line(key(r), 'kernel')}`")
out.append(f"- objects built with clang-19: {len(built)}; not built: {len(failed)}")
out += [f"  - {f}" for f in failed]
empty = sorted(set(built) - {r["file_name"][: -len(".bpf.o")] for r in rows})
if empty:
    out.append(f"- objects with no program (nothing to verify): {', '.join(empty)}")
out.append(f"- programs found: {len(rows)}; refused by the kernel before verification "
           f"(excluded): {len(kernel_refused)}")
for why, n in collections.Counter(
        re.sub(r"'[^']*'", "'...'", w) or "(no reason given)" for w in kernel_refused.values()).most_common():
    out.append(f"  - {n}: {why}")
pct = lambda a, b: f" ({100 * a / b:.1f}%)" if b else ""
out.append(f"- verified by the kernel: {len(verified)}; same verdict: {len(agree)}/{len(verified)}"
           f"{pct(len(agree), len(verified))}")
out.append(f"- bpfvet rejects what the kernel accepts: {len(overstrict)}; "
           f"bpfvet refuses (not modelled): {len(bpfvet_refused)}")
out.append(f"- processed insns on programs both accept: exact on {len(exact)}/{len(both)}"
           f"{pct(len(exact), len(both))}")
out.append(f"- total verification time on the programs the kernel verified: bpfvet "
           f"{us(verified, 'bpfvet') / 1000:.1f} ms, kernel {us(verified, 'kernel') / 1000:.1f} ms")
diff = [r for r in verified if r not in agree or (r in both and r not in exact)]
if diff:
    out += ["", "| program | bpfvet | kernel | insns bpfvet | insns kernel |", "|---|---|---|---:|---:|"]
    for r in diff:
        out.append(f"| {key(r)} | {r['verdict_bpfvet']} | {r['verdict_kernel']} | "
                   f"{r['total_insns_bpfvet']} | {r['total_insns_kernel']} |")
    for r in bpfvet_refused:
        out.append(f"\n- {key(r)} refused by bpfvet: `{first_line(key(r), 'bpfvet')}`")
rej = [r for r in verified if r["verdict_kernel"] == "failure"]
if rej:
    out += ["", "Programs the kernel rejects (bpfvet's and the kernel's error):", ""]
    for r in rej:
        k = key(r)
        out.append(f"- {k}: bpfvet `{first_line(k, 'bpfvet')}`; kernel `{first_line(k, 'kernel')}`")
out += [f"<!-- end {project} -->", ""]
section = "\n".join(out)

try:
    text = open(report).read()
except FileNotFoundError:
    text = ""
sections = dict(re.findall(r"<!-- begin (\S+) -->.*?<!-- end \1 -->\n?", text, re.S) and
                [(m.group(1), m.group(0)) for m in
                 re.finditer(r"<!-- begin (\S+) -->.*?<!-- end \1 -->\n?", text, re.S)])
sections[project] = section
head = ["# Real-world BPF projects: bpfvet vs the host kernel", "",
        "Generated by `bench/realworld/run.sh` from checkouts of each project (commit given per",
        "section); objects are built with clang-19 against Debian's libbpf-dev headers in a scratch",
        "directory and verified with `bpfvet verify --backend both`. Programs the host kernel",
        "refuses before its verifier runs (missing attach target, trampoline, map creation) are",
        "excluded from the comparison and listed with their cause. Durations are each side's",
        "verification time as reported by `bpfvet verify` (wall clock on a shared host: they vary",
        "between runs by up to 2x).", ""]
body = [sections[p].rstrip("\n") + "\n" for p in sorted(sections, key=lambda p: (ORDER + [p]).index(p))]
open(report, "w").write("\n".join(head) + "\n" + "\n".join(body))
