#!/usr/bin/env python3
"""Writes the vmlinux BTF of a bzImage: the .BTF section of the ELF vmlinux
its payload decompresses to (zstd, xz or gzip, found by magic).
    extract_btf.py VMLINUZ OUT"""
import subprocess
import sys
import tempfile

MAGICS = [(b"\x28\xb5\x2f\xfd", ["zstd", "-d", "-c"]),
          (b"\xfd7zXZ\x00", ["xz", "-d", "-c"]),
          (b"\x1f\x8b\x08", ["gzip", "-d", "-c"])]


def vmlinux(image):
    for magic, cmd in MAGICS:
        start = 0
        while (at := image.find(magic, start)) >= 0:
            # Trailing data after the stream makes the tools complain; what
            # they decompressed is still whole.
            out = subprocess.run(cmd, input=image[at:], capture_output=True).stdout
            if out[:4] == b"\x7fELF":
                return out
            start = at + 1
    return None


def main():
    src, dst = sys.argv[1], sys.argv[2]
    elf = vmlinux(open(src, "rb").read())
    if elf is None:
        sys.exit(f"{src}: no ELF vmlinux inside")
    with tempfile.NamedTemporaryFile(suffix=".elf") as f:
        f.write(elf)
        f.flush()
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.BTF", f.name, dst], check=True)


if __name__ == "__main__":
    main()
