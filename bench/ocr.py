#!/usr/bin/env python3
"""OCR benchmark (issue 58): real text PDFs turned into scans, read back by
`ellm extract` (Tesseract in the sandboxed extractor), scored word by word
against pdftotext of the originals.

    bench/ocr.py [--ellm build/release/cli/ellm] [--dpi 150,200,300]
                 [--pages 2] [--held-out] [--keep DIR]

Documents: the 21 real manuals of bench/structure.py (nine Debian
documentation packages, fetched once with `apt-get download` into
~/.cache/ellm/structure-docs). From each, the `--pages` pages with the most
words among its first twelve are scanned:
  1. pdftoppm renders the page to grey pixels at the scan resolution;
  2. every third document is a poor scan: the page is tilted by 1.2 degrees
     and 0.4% of its pixels are flipped to black or white (salt and pepper);
  3. the pixels are wrapped into an image-only PDF written here (no text
     layer; the tilt is the image's placement matrix).
Each scan is extracted by `ellm extract FILE --json` (OCR in auto mode, the
product's default; the extractor renders the page again at its own
extract.ocr_dpi, 300) and scored against `pdftotext -layout`-free text of the
same page of the original:
  recall      original words found in the OCR text (as multisets; words
              compared as lowercase letters and digits)
  precision   OCR words that are original words
  s/page      wall-clock seconds of `ellm extract` per page (2 cores; the
              extractor runs Tesseract on one thread)
Printed per scan resolution, clean and poor scans apart. Goal (issue 58):
recall >= 0.97 at 300 dpi.
Held out: the packages bench/structure.py holds out (octave-doc,
asymptote-doc, libtasn1-doc) are scored only with --held-out.
"""

import argparse
import collections
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import structure  # noqa: E402  (the manuals and their fetching)


def words(text):
    out = []
    for w in text.split():
        w = re.sub(r"[^a-z0-9]+", "", w.lower())
        if w:
            out.append(w)
    return out


def page_text(pdf, page):
    out = subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), pdf, "-"],
                         capture_output=True, text=True, check=True)
    return out.stdout


def best_pages(pdf, count):
    info = subprocess.run(["pdfinfo", pdf], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    sizes = [(len(words(page_text(pdf, p))), p) for p in range(1, min(pages, 12) + 1)]
    sizes.sort(reverse=True)
    return sorted(p for n, p in sizes[:count] if n > 0)


def read_pgm(path):
    with open(path, "rb") as f:
        data = f.read()
    m = re.match(rb"P5\s+(\d+)\s+(\d+)\s+(\d+)\s", data)
    width, height = int(m.group(1)), int(m.group(2))
    return width, height, bytearray(data[m.end():m.end() + width * height])


def speckle(pixels, share, rng):
    n = len(pixels)
    for _ in range(int(n * share)):
        pixels[rng.randrange(n)] = 0 if rng.random() < 0.5 else 255


def image_pdf(path, width, height, pixels, dpi, tilt_degrees):
    """An image-only PDF: one page the size of the scan, the grey image
    placed on it (turned by tilt_degrees about its centre)."""
    w_pt, h_pt = width * 72.0 / dpi, height * 72.0 / dpi
    a = math.radians(tilt_degrees)
    c, s = math.cos(a), math.sin(a)
    # Scale to the page, then rotate about the page's centre.
    cx, cy = w_pt / 2, h_pt / 2
    e = cx - (c * cx - s * cy)
    f = cy - (s * cx + c * cy)
    content = (f"q {c * w_pt:.4f} {s * w_pt:.4f} {-s * h_pt:.4f} {c * h_pt:.4f} "
               f"{e:.4f} {f:.4f} cm /Im0 Do Q\n").encode()
    data = zlib.compress(bytes(pixels), 6)
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w_pt:.2f} {h_pt:.2f}] "
         f"/Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>").encode(),
        (f"<< /Type /XObject /Subtype /Image /Width {width} /Height {height} "
         f"/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode "
         f"/Length {len(data)} >>\nstream\n").encode() + data + b"\nendstream",
        f"<< /Length {len(content)} >>\nstream\n".encode() + content + b"endstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    with open(path, "wb") as f:
        f.write(out)


def scan(pdf, page, dpi, poor, work, rng):
    stem = os.path.join(work, f"p{page}-{dpi}")
    subprocess.run(["pdftoppm", "-r", str(dpi), "-gray", "-f", str(page), "-l", str(page),
                    "-singlefile", pdf, stem], check=True)
    width, height, pixels = read_pgm(stem + ".pgm")
    os.unlink(stem + ".pgm")
    if poor:
        speckle(pixels, 0.004, rng)
    out = stem + ("-poor" if poor else "") + ".pdf"
    image_pdf(out, width, height, pixels, dpi, 1.2 if poor else 0.0)
    return out


def score(truth, got):
    t, g = collections.Counter(words(truth)), collections.Counter(words(got))
    hit = sum((t & g).values())
    return hit, sum(t.values()), sum(g.values())


def documents(held_out):
    docs = []
    for pkg, paths in structure.PACKAGES.items():
        if (pkg in structure.HELD_OUT) != held_out:
            continue
        tree = structure.fetch(pkg)
        docs += [os.path.join(tree, p) for p in paths]
    return docs


def run_set(name, docs, args, work):
    rng = random.Random(58)
    totals = {}
    for index, pdf in enumerate(docs):
        poor = index % 3 == 2
        pages = best_pages(pdf, args.pages)
        for dpi in args.dpi:
            hit = truth_n = got_n = 0
            seconds = 0.0
            for page in pages:
                image = scan(pdf, page, dpi, poor, work, rng)
                start = time.monotonic()
                out = subprocess.run([args.ellm, "extract", image, "--json"], capture_output=True,
                                     text=True)
                seconds += time.monotonic() - start
                if out.returncode != 0:
                    print(f"  {os.path.basename(pdf)} p{page} {dpi} dpi: {out.stderr.strip()}")
                    got = ""
                else:
                    doc = json.loads(out.stdout)
                    got = "\n".join(p["text"] for p in doc["pages"])
                    assert all(p["read_by"] == "ocr" for p in doc["pages"]), image
                h, t, g = score(page_text(pdf, page), got)
                hit, truth_n, got_n = hit + h, truth_n + t, got_n + g
            key = (dpi, "poor" if poor else "clean")
            agg = totals.setdefault(key, [0, 0, 0, 0.0, 0])
            for i, v in enumerate((hit, truth_n, got_n, seconds, len(pages))):
                agg[i] += v
            print(f"  {os.path.basename(pdf):28s} {dpi:4d} dpi {'poor ' if poor else 'clean'} "
                  f"recall {hit / max(truth_n, 1):.3f} precision {hit / max(got_n, 1):.3f} "
                  f"({len(pages)} pages, {seconds / max(len(pages), 1):.2f} s/page)", flush=True)
    print(f"\n{name}: {len(docs)} documents")
    print(f"{'dpi':>5} {'scans':>6} {'pages':>6} {'recall':>8} {'precision':>10} {'s/page':>7}")
    for dpi in args.dpi:
        for kind in ("clean", "poor", "all"):
            rows = [v for (d, k), v in totals.items() if d == dpi and (kind == "all" or k == kind)]
            if not rows:
                continue
            hit, truth_n, got_n, secs, pages = (sum(r[i] for r in rows) for i in range(5))
            print(f"{dpi:5d} {kind:>6} {pages:6d} {hit / max(truth_n, 1):8.3f} "
                  f"{hit / max(got_n, 1):10.3f} {secs / max(pages, 1):7.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ellm", default="build/release/cli/ellm")
    ap.add_argument("--dpi", default="150,200,300")
    ap.add_argument("--pages", type=int, default=2)
    ap.add_argument("--held-out", action="store_true")
    ap.add_argument("--keep", help="keep the scans in this directory")
    args = ap.parse_args()
    args.dpi = [int(d) for d in args.dpi.split(",")]
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s+(.*)", cpu)
    print(f"CPU: {model.group(1) if model else '?'}, {os.cpu_count()} cores")
    work = args.keep or tempfile.mkdtemp(prefix="ellm-ocr-")
    os.makedirs(work, exist_ok=True)
    run_set("development", documents(False), args, work)
    if args.held_out:
        run_set("held out", documents(True), args, work)


if __name__ == "__main__":
    main()
