#!/usr/bin/env python3
"""Writes the seeds of the `image` fuzz target (tests/fuzz/image_fuzz.cc)
into tests/ingest/image_corpus/ (as NAME.bin, the ending scripts/fuzz keeps): small PNGs (grey, grey with alpha, RGB,
palette, 1-bit), a two-page grey TIFF and a big-endian one, a JPEG made by
pdftoppm, and broken ones (truncated, a header claiming 50000 x 50000
pixels, a TIFF whose second page points past the end). Standard library
only, besides pdftoppm (poppler-utils) for the JPEG. The committed files
are what the tests read; CI does not run this script.

    python3 tests/fuzz/make_image_seeds.py
"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "ingest", "image_corpus")
sys.path.insert(0, os.path.join(HERE, "..", "data", "pdf"))
import make_scans  # noqa: E402  (write_tiff)


def png(width, height, color_type, bit_depth, rows, extra=b""):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\0" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)) +
            extra + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def main():
    os.makedirs(OUT, exist_ok=True)
    w, h = 24, 16
    seeds = {
        "seed-grey.png": png(w, h, 0, 8, [bytes((x * 10 + y) % 256 for x in range(w))
                                          for y in range(h)]),
        "seed-grey-alpha.png": png(w, h, 4, 8, [bytes([128, 255] * w) for _ in range(h)]),
        "seed-rgb.png": png(w, h, 2, 8, [bytes([200, 30, 30] * w) for _ in range(h)]),
        "seed-palette.png": png(w, h, 3, 8, [bytes([x % 2 for x in range(w)]) for _ in range(h)],
                                extra=(struct.pack(">I", 6) + b"PLTE" + bytes([0, 0, 0, 255, 255, 255]) +
                                       struct.pack(">I", zlib.crc32(b"PLTE" + bytes([0, 0, 0, 255, 255, 255]))))),
        "seed-1bit.png": png(w, h, 0, 1, [bytes([0xAA, 0x55, 0xF0]) for _ in range(h)]),
    }
    good = seeds["seed-grey.png"]
    seeds["seed-truncated.png"] = good[:len(good) // 2]
    bomb = bytearray(good)
    struct.pack_into(">II", bomb, 16, 50000, 50000)
    struct.pack_into(">I", bomb, 29, zlib.crc32(bytes(bomb[12:29])))
    seeds["seed-bomb.png"] = bytes(bomb)
    tmp = tempfile.mkdtemp()
    tif = os.path.join(tmp, "two.tif")
    page = bytes((x + y) % 256 for y in range(h) for x in range(w))
    make_scans.write_tiff(tif, [(w, h, page), (w // 2, h // 2, page[:w * h // 4])], 200)
    with open(tif, "rb") as f:
        two = f.read()
    seeds["seed-two-pages.tif"] = two
    seeds["seed-truncated.tif"] = two[:len(two) - 20]
    # Big-endian: one page, uncompressed.
    be = bytearray(b"MM\0*" + struct.pack(">I", 8 + w * h))
    be += page
    entries = [(256, 3, w), (257, 3, h), (258, 3, 8), (259, 3, 1), (262, 3, 1), (273, 4, 8),
               (277, 3, 1), (278, 3, h), (279, 4, w * h)]
    be += struct.pack(">H", len(entries))
    for tag, kind, value in entries:
        be += struct.pack(">HHI", tag, kind, 1)
        be += struct.pack(">HH", value, 0) if kind == 3 else struct.pack(">I", value)
    be += b"\0\0\0\0"
    seeds["seed-big-endian.tif"] = bytes(be)
    single = os.path.join(HERE, "..", "data", "pdf", "single_column.pdf")
    subprocess.run(["pdftoppm", "-r", "12", "-gray", "-jpeg", "-f", "1", "-l", "1", "-singlefile",
                    single, os.path.join(tmp, "page")], check=True)
    with open(os.path.join(tmp, "page.jpg"), "rb") as f:
        seeds["seed-page.jpg"] = f.read()
    for name, data in seeds.items():
        with open(os.path.join(OUT, name + ".bin"), "wb") as f:  # scripts/fuzz: *.bin
            f.write(data)
        print(f"{len(data):8d}  {name}")


if __name__ == "__main__":
    main()
