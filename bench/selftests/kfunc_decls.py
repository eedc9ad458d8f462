#!/usr/bin/env python3
"""Declarations of the kernel's kfuncs for BPF C, from vmlinux BTF.

Newer bpftool releases put `extern ... __ksym` prototypes of every function
tagged `bpf_kfunc` into the vmlinux.h they dump; the selftests rely on that.
Debian's bpftool (7.1) does not, so sources calling such a kfunc without
declaring it fail to build. This writes those prototypes from the raw dump
(`bpftool btf dump file /sys/kernel/btf/vmlinux format raw`), weak and in
libbpf's `.ksyms` section as `__ksym` would put them; the header includes
vmlinux.h, as it is included before the source.

    kfunc_decls.py RAW_DUMP > kfunc_decls.h
"""
import re
import sys

HEADER = re.compile(r"^\[(\d+)\] (\w+) '([^']*)'(.*)$")
MEMBER = re.compile(r"^\t'([^']*)' type_id=(\d+)")


def parse(path):
    types, order = {}, None
    with open(path) as f:
        for line in f:
            m = HEADER.match(line)
            if m:
                tid, kind, name, rest = int(m[1]), m[2], m[3], m[4]
                attrs = dict(re.findall(r"(\w+)=(-?\w+)", rest))
                order = {"kind": kind, "name": name, "attrs": attrs, "members": []}
                types[tid] = order
                continue
            m = MEMBER.match(line)
            if m and order is not None:
                order["members"].append((m[1], int(m[2])))
    return types


class Printer:
    def __init__(self, types):
        self.types = types

    def decl(self, tid, inner):
        """C declaration of `inner` (a declarator) with type `tid`."""
        if tid == 0:
            return f"void {inner}".rstrip()
        t = self.types[tid]
        kind, name = t["kind"], t["name"]
        if kind in ("INT", "TYPEDEF", "FLOAT"):
            return f"{name} {inner}".rstrip()
        if kind in ("STRUCT", "UNION", "ENUM", "ENUM64", "FWD"):
            tag = {"STRUCT": "struct", "UNION": "union", "FWD": "struct"}.get(kind, "enum")
            if kind == "FWD" and t["attrs"].get("fwd_kind") == "union":
                tag = "union"
            if name == "(anon)":
                raise ValueError("anonymous type in a prototype")
            return f"{tag} {name} {inner}".rstrip()
        if kind in ("CONST", "VOLATILE", "RESTRICT"):
            q = kind.lower() if kind != "RESTRICT" else "__restrict"
            target = int(t["attrs"]["type_id"])
            # A qualifier of a pointer follows the star.
            if target and self.types[target]["kind"] == "PTR":
                return self.decl(target, f"{q} {inner}".rstrip())
            return f"{q} {self.decl(target, inner)}"
        if kind == "TYPE_TAG":
            return self.decl(int(t["attrs"]["type_id"]), inner)
        if kind == "PTR":
            target = int(t["attrs"]["type_id"])
            tk = self.types[target]["kind"] if target else "VOID"
            if tk in ("FUNC_PROTO", "ARRAY"):
                return self.decl(target, f"(*{inner})")
            return self.decl(target, f"*{inner}")
        if kind == "FUNC_PROTO":
            return self.decl(int(t["attrs"]["ret_type_id"]), f"{inner}({self.params(t)})")
        if kind == "ARRAY":
            return self.decl(int(t["attrs"]["type_id"]), f"{inner}[{t['attrs']['nr_elems']}]")
        raise ValueError(f"type kind {kind}")

    def params(self, proto):
        members = proto["members"]
        if not members:
            return "void"
        out = []
        for pname, ptid in members:
            if ptid == 0:  # variadic
                out.append("...")
                continue
            out.append(self.decl(ptid, "" if pname == "(anon)" else pname))
        return ", ".join(out)


def main():
    types = parse(sys.argv[1])
    printer = Printer(types)
    kfuncs = sorted(
        {int(t["attrs"]["type_id"]) for t in types.values()
         if t["kind"] == "DECL_TAG" and t["name"] == "bpf_kfunc"}
    )
    print("/* kfunc prototypes from the host's vmlinux BTF (bench/selftests/kfunc_decls.py) */")
    print("#pragma once")
    print('#include "vmlinux.h"')
    skipped = 0
    for fid in kfuncs:
        func = types[fid]
        proto = types[int(func["attrs"]["type_id"])]
        try:
            line = printer.decl(int(proto["attrs"]["ret_type_id"]),
                                f"{func['name']}({printer.params(proto)})")
        except ValueError:
            skipped += 1
            continue
        print(f"extern {line} __attribute__((weak, section(\".ksyms\")));")
    print(f"/* {len(kfuncs) - skipped} kfuncs, {skipped} skipped */")


if __name__ == "__main__":
    main()
