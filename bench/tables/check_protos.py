#!/usr/bin/env python3
"""Checks the helper prototypes of crates/verifier/src/helpers/protos.rs
against a kernel tree's `struct bpf_func_proto` definitions: for every
argument of every helper both know, the memory flags (MEM_WRITE,
MEM_UNINIT, MEM_RDONLY) and whether it may be NULL must agree. A missing
MEM_WRITE means bpfvet keeps what the program stored in a buffer the
helper overwrites: an unsound accept.

usage: check_protos.py KERNEL_SRC   (bench/verifier_fuzz/kernel_src.sh prints one)
Exit status 1 when some argument disagrees.
"""
import glob, os, re, sys

FLAGS = ("MEM_WRITE", "MEM_UNINIT", "MEM_RDONLY", "MAYBE_NULL")


def kernel_protos(root):
    """proto variable name -> {arg number: set of type words}."""
    files = []
    for d in ("kernel/bpf", "kernel/trace", "net/core", "net/ipv4", "security/bpf"):
        files += glob.glob(os.path.join(root, d, "*.c"))
    protos = {}
    for f in files:
        src = open(f, errors="replace").read()
        for m in re.finditer(r"struct\s+bpf_func_proto\s+(\w+)\s*=\s*\{(.*?)\n\};", src, re.S):
            args = {}
            for a in re.finditer(r"\.arg(\d)_type\s*=\s*([^,]+),", m.group(2)):
                words = {w.strip() for w in a.group(2).split("|")}
                if "ARG_PTR_TO_UNINIT_MEM" in words:  # the uapi macro's meaning
                    words |= {"MEM_UNINIT", "MEM_WRITE"}
                if "PTR_MAYBE_NULL" in words or any(w.endswith("_OR_NULL") for w in words):
                    words.add("MAYBE_NULL")
                args[int(a.group(1))] = words
            protos[m.group(1)] = args
    return protos


def split_args(text):
    items, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch in "([") - (ch in ")]")
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    return [i for i in items + [cur] if i.strip()]


def our_protos(path):
    """kernel proto name (from the doc line) -> [(flag set, text)] per argument."""
    src = open(path).read()
    out = {}
    for m in re.finditer(r"///\s*`(\w+)`[^\n]*\n(?:///[^\n]*\n)*pub static \w+: HelperProto =(.*?);\n",
                         src, re.S):
        args = re.search(r"\.args\(&\[(.*)\]\)", m.group(2), re.S)
        if not args:
            continue
        out[m.group(1)] = []
        for text in split_args(args.group(1)):
            flags = set(re.findall(r"F::(\w+)", text))
            if "OrNull" in text:
                flags.add("MAYBE_NULL")
            out[m.group(1)].append((flags, " ".join(text.split())))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    kernel = kernel_protos(sys.argv[1])
    here = os.path.dirname(os.path.abspath(__file__))
    ours = our_protos(os.path.join(here, "../../crates/verifier/src/helpers/protos.rs"))
    checked, bad = 0, []
    for name, args in sorted(ours.items()):
        kp = kernel.get(name + "_proto", kernel.get(name))
        if kp is None:
            continue
        checked += 1
        for i, (flags, text) in enumerate(args, start=1):
            words = kp.get(i, set())
            diff = [f for f in FLAGS if (f in words) != (f in flags)]
            if diff:
                bad.append(f"{name} arg{i}: kernel {' | '.join(sorted(words))}; bpfvet {text}")
    print(f"{checked} of {len(ours)} helper prototypes found in the kernel tree; "
          f"{len(bad)} arguments disagree")
    for b in bad:
        print("  " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
