#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Shrink a rerand image that `rerand image` wrote from a real kernel into a
# fuzz seed: the setup part, the PE header, the stage and the image header
# stay the writer's bytes; each segment keeps its first KEEP stored bytes and
# each relocation list its first RELOCS entries, and the header's offsets,
# sizes and the PE section fields are rewritten to match.  A full image is
# 10-20 MB: too big to commit and too slow to mutate, while rr_image_parse
# reads only the headers and the offsets (it never decodes a segment).
#
#   shrink-image.py IN OUT [KEEP [RELOCS]]
#
# The result must still parse: check it with `rerand inspect OUT`.
import struct
import sys

HDR_FMT = "<8sHHIII QQQ IIII QQQQ 32s"   # up to and including seed (96 + 32 bytes)
SEG_FMT = "<QQQQQ"
PE_OFFSET = 0x40
PE_OPT = PE_OFFSET + 24
PE_OPT_SIZE = 112 + 8 * 16
PE_SECTION = PE_OPT + PE_OPT_SIZE


def put32(b, off, v):
    struct.pack_into("<I", b, off, v)


def checksum(img):
    s = 0
    for i in range(0, len(img) - 1, 2):
        s += img[i] | img[i + 1] << 8
        s = (s & 0xffff) + (s >> 16)
    if len(img) & 1:
        s += img[-1]
    s = (s & 0xffff) + (s >> 16)
    return (s + len(img)) & 0xffffffff


def main():
    src, dst = sys.argv[1], sys.argv[2]
    keep = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    nrel = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    img = open(src, "rb").read()
    setup = ((img[0x1f1] or 4) + 1) * 512
    pm = img[setup:]
    if pm[0x10:0x18] != b"RRLOCATE":
        sys.exit("%s: no rerand locator" % src)
    hoff = struct.unpack_from("<I", pm, 0x18)[0]
    h = list(struct.unpack_from(HDR_FMT, pm, hoff))
    (magic, version, hsize, flags, codec, nseg, mem_size, entry, link, layout,
     n64, ninv, n32, rel_off, file_size, scratch_off, scratch_size, seed) = h
    if file_size != len(pm):
        sys.exit("%s: signed or padded image; shrink the unsigned one" % src)
    segs = [list(struct.unpack_from(SEG_FMT, pm, hoff + 128 + 40 * i)) for i in range(nseg)]
    out = bytearray(pm[:hoff + hsize])
    for s in segs:
        mem_off, mem_sz, fsz, doff, dsz = s
        k = min(dsz, keep)
        if codec == 0:             # stored as is: the reader wants data_size == file_size
            s[2] = k
        s[3], s[4] = len(out), k
        out += pm[doff:doff + k]
    while len(out) % 4:
        out += b"\0"
    lists = []
    off = rel_off
    for cnt in (n64, ninv, n32):
        k = min(cnt, nrel)
        lists.append(pm[off:off + 4 * k])
        off += 4 * cnt
    new_rel = len(out)
    for chunk in lists:
        out += chunk
    while len(out) % 512:
        out += b"\0"
    h[10], h[11], h[12] = (len(lists[0]) // 4, len(lists[1]) // 4, len(lists[2]) // 4)
    h[13], h[14] = new_rel, len(out)
    struct.pack_into(HDR_FMT, out, hoff, *h)
    for i, s in enumerate(segs):
        struct.pack_into(SEG_FMT, out, hoff + 128 + 40 * i, *s)
    head = bytearray(img[:setup])
    pm_len = len(out)
    put32(head, PE_OPT + 4, pm_len)                                  # SizeOfCode
    put32(head, PE_OPT + 56, 0x1000 + ((pm_len + 0xfff) & ~0xfff))   # SizeOfImage
    put32(head, PE_SECTION + 8, pm_len)                              # VirtualSize
    put32(head, PE_SECTION + 16, pm_len)                             # SizeOfRawData
    put32(head, 0x1f4, (pm_len + 15) // 16)                          # syssize
    full = head + out
    put32(full, PE_OPT + 64, 0)
    put32(full, PE_OPT + 64, checksum(full))
    open(dst, "wb").write(full)


if __name__ == "__main__":
    main()
