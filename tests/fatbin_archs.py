#!/usr/bin/env python3
"""Prints the GPU architectures of the machine code (sm_XY) and PTX (compute_XY) embedded in a
shared library's .nv_fatbin section, one per line: what `cuobjdump --list-elf / --list-ptx` would
list, for machines without cuobjdump. Exit 1 when the file has no fatbin."""
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2


def section(data, name):
    # 64-bit little-endian ELF: the section headers and their names' string table.
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit(f"{sys.argv[1]}: not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def header(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    names_offset = header(shstrndx)[4]
    for i in range(shnum):
        h = header(i)
        end = data.index(b"\0", names_offset + h[0])
        if data[names_offset + h[0]:end].decode() == name:
            return data[h[4]:h[4] + h[5]]
    return None


def archs(fatbin):
    found = set()
    pos = 0
    while pos + 16 <= len(fatbin):
        magic, _version, header_size, fat_size = struct.unpack_from("<IHHQ", fatbin, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # fatbins of several objects, each 8-byte aligned
            continue
        entry, end = pos + header_size, pos + header_size + fat_size
        while entry + 32 <= end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", fatbin, entry)
            arch, = struct.unpack_from("<I", fatbin, entry + 28)
            if kind == KIND_ELF:
                found.add(f"sm_{arch}")
            elif kind == KIND_PTX:
                found.add(f"compute_{arch}")
            if entry_header == 0:
                break
            entry += entry_header + payload
        pos = max(end, pos + 8)
    return found


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    fatbin = section(data, ".nv_fatbin")
    if not fatbin:
        print(f"{sys.argv[1]}: no .nv_fatbin section", file=sys.stderr)
        return 1
    for a in sorted(archs(fatbin), key=lambda s: (s.split("_")[0], int(s.split("_")[1]))):
        print(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
