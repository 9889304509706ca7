#!/usr/bin/env python3
"""Writes the scanned-document cases of the OCR tests (tests/ingest/ocr_test.cc).

Every page here is an image with no text layer, as a scanner makes it:

- scanned.pdf: single_column.pdf rendered to grey pixels at 200 dpi by
  pdftoppm and wrapped back into a PDF by img2pdf (its text is
  single_column.txt);
- mixed_scan.pdf: four pages, pdfunite'd: page 1 of single_column.pdf with
  its text layer, page 2 of scanned.pdf, a blank white scan, and a
  "photo" (a smooth gradient with noise and no writing);
- tests/data/contracts/{services,nda}/{a,b}_scan.pdf: the hand-drafted
  contract pairs scanned the same way (200 dpi grey), for the comparison
  of a scanned pair (tests/integration/compare_cli_test.cc).

Needs poppler-utils and img2pdf (scripts/bootstrap installs both); the
images are written as PNG with the standard library only. The committed
outputs are what the tests read; CI does not run this script.

    python3 tests/data/pdf/make_scans.py
"""
import os
import random
import struct
import subprocess
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def write_png(path, width, height, pixel):
    """An 8-bit grey PNG whose pixel (x, y) is pixel(x, y)."""
    rows = b"".join(b"\0" + bytes(pixel(x, y) for x in range(width)) for y in range(height))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(rows, 9)))
        f.write(chunk(b"IEND", b""))


def run(*args):
    subprocess.run(args, check=True)


def main():
    tmp = tempfile.mkdtemp()
    single = os.path.join(HERE, "single_column.pdf")
    run("pdftoppm", "-r", "200", "-gray", "-png", single, os.path.join(tmp, "page"))
    pages = sorted(p for p in os.listdir(tmp) if p.startswith("page"))
    scanned = os.path.join(HERE, "scanned.pdf")
    # A4 at 200 dpi is 1654 x 2339 pixels; img2pdf keeps the size in points.
    run("img2pdf", "--pagesize", "A4", *[os.path.join(tmp, p) for p in pages], "-o", scanned)
    contracts = os.path.join(HERE, "..", "contracts")
    for pair in ("services", "nda"):
        for side in ("a", "b"):
            stem = os.path.join(tmp, f"{pair}-{side}")
            run("pdftoppm", "-r", "200", "-gray", "-png",
                os.path.join(contracts, pair, side + ".pdf"), stem)
            images = sorted(os.path.join(tmp, p) for p in os.listdir(tmp)
                            if p.startswith(f"{pair}-{side}-"))
            run("img2pdf", "--pagesize", "A4", *images, "-o",
                os.path.join(contracts, pair, side + "_scan.pdf"))

    # 50 dpi is enough for pages with no writing on them.
    w, h = 413, 585  # 50 dpi
    write_png(os.path.join(tmp, "blank.png"), w, h, lambda x, y: 255)
    rng = random.Random(7)
    write_png(os.path.join(tmp, "photo.png"), w, h,
              lambda x, y: max(0, min(255, 60 + (x * 120) // w + (y * 60) // h
                                      + rng.randint(-12, 12))))
    for name in ("blank", "photo"):
        run("img2pdf", "--pagesize", "A4", os.path.join(tmp, name + ".png"),
            "-o", os.path.join(tmp, name + ".pdf"))
    run("pdfseparate", "-f", "1", "-l", "1", single, os.path.join(tmp, "text-%d.pdf"))
    run("pdfseparate", "-f", "2", "-l", "2", scanned, os.path.join(tmp, "scan-%d.pdf"))
    run("pdfunite", os.path.join(tmp, "text-1.pdf"), os.path.join(tmp, "scan-2.pdf"),
        os.path.join(tmp, "blank.pdf"), os.path.join(tmp, "photo.pdf"),
        os.path.join(HERE, "mixed_scan.pdf"))
    for name in ("scanned.pdf", "mixed_scan.pdf"):
        print(f"{os.path.getsize(os.path.join(HERE, name)):8d}  {name}")


if __name__ == "__main__":
    main()
