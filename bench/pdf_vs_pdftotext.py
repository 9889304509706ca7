#!/usr/bin/env python3
"""Pages per second of `ellm extract` against poppler's `pdftotext`, in one run.

Writes a 300-page PDF (pure Python, no dependencies: Helvetica text, a
running header and a page-number footer on every page, a two-column section
every tenth page, Flate-compressed content streams), then times on that same
file, best of --repeat interleaved rounds:

  ellm extract FILE      the product path: parent + sandboxed ellm-extract child
                         (fork/exec, rlimits, JSON over a pipe)
  ellm-extract FILE      the child alone, to show what the isolation costs
  pdftotext FILE -       poppler-utils, reading order (default mode)
  pdftotext -layout      poppler-utils, physical layout mode

Prints pages/s for each and the ratios. Never passes or fails on speed.

    python3 bench/pdf_vs_pdftotext.py --ellm build/release/cli/ellm
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

WORDS = ("revenue margin growth quarter market customer product service contract supplier cost "
         "price volume region board report capital cash debt equity asset risk plan result "
         "operation the of and to in for with on by from that which was were is are").split()


def escape(s):
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def sentence(rng, n):
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def page_content(rng, number, pages):
    ops = ["BT /F1 9 Tf 60 800 Td (Benchmark Report - Annual Review) Tj ET"]
    ops.append(f"BT /F1 9 Tf 520 40 Td ({number}) Tj ET")
    if number % 10 == 0:  # two columns
        for col, x in enumerate((60, 315)):
            y = 760
            for _ in range(48):
                line = " ".join(rng.choice(WORDS) for _ in range(6))
                ops.append(f"BT /F1 10 Tf {x} {y} Td ({escape(line)}) Tj ET")
                y -= 14
    else:
        y = 760
        for _ in range(50):
            line = sentence(rng, 13)
            ops.append(f"BT /F1 10 Tf 60 {y} Td ({escape(line)}) Tj ET")
            y -= 14
    return zlib.compress("\n".join(ops).encode("latin-1"))


def write_pdf(path, pages):
    rng = random.Random(42)
    objs = {1: b"<< /Type /Catalog /Pages 2 0 R >>",
            3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
               b"/Encoding /WinAnsiEncoding >>"}
    kids = []
    for p in range(pages):
        page_id, content_id = 4 + 2 * p, 5 + 2 * p
        kids.append(f"{page_id} 0 R")
        stream = page_content(rng, p + 1, pages)
        objs[page_id] = (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
                         f"/Resources << /Font << /F1 3 0 R >> >> /Contents {content_id} 0 R >>"
                         ).encode()
        objs[content_id] = (f"<< /Length {len(stream)} /Filter /FlateDecode >>\nstream\n"
                            ).encode() + stream + b"\nendstream"
    objs[2] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {pages} >>".encode()
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for oid in sorted(objs):
        offsets[oid] = len(out)
        out += f"{oid} 0 obj\n".encode() + objs[oid] + b"\nendobj\n"
    xref = len(out)
    n = max(objs) + 1
    out += f"xref\n0 {n}\n0000000000 65535 f \n".encode()
    for oid in range(1, n):
        out += f"{offsets[oid]:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {n} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    with open(path, "wb") as f:
        f.write(out)


def best_times(runs, repeat):
    """Best wall time of each command; rounds interleave the commands so that
    a burst of load on the machine hits all of them alike."""
    best = {}
    for _ in range(repeat):
        for name, cmd in runs:
            start = time.perf_counter()
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            elapsed = time.perf_counter() - start
            if r.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed: {r.stderr.decode(errors='replace')}")
            best[name] = min(best.get(name, elapsed), elapsed)
    return best


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ellm", default=os.path.join(repo, "build/release/cli/ellm"))
    ap.add_argument("--extractor", help="ellm-extract (default: ../libexec/ellm/ next to --ellm)")
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    extractor = args.extractor or os.path.normpath(
        os.path.join(os.path.dirname(args.ellm), "..", "libexec", "ellm", "ellm-extract"))
    pdftotext = shutil.which("pdftotext")
    if not pdftotext:
        sys.exit("pdftotext not found (apt-get install poppler-utils; scripts/bootstrap)")
    for b in (args.ellm, extractor):
        if not os.access(b, os.X_OK):
            sys.exit(f"{b} not found: build first (cmake --build build/release)")

    with tempfile.TemporaryDirectory() as tmp:
        pdf = os.path.join(tmp, "bench.pdf")
        write_pdf(pdf, args.pages)
        size = os.path.getsize(pdf)
        print(f"{args.pages}-page PDF, {size / 1e6:.2f} MB; best of {args.repeat} interleaved rounds")
        runs = [
            ("ellm extract (child process)", [args.ellm, "extract", pdf]),
            ("ellm-extract alone", [extractor, pdf]),
            ("pdftotext", [pdftotext, pdf, "-"]),
            ("pdftotext -layout", [pdftotext, "-layout", pdf, "-"]),
        ]
        results = {}
        times = best_times(runs, args.repeat)
        for name, _ in runs:
            t = times[name]
            results[name] = args.pages / t
            print(f"  {name:30s} {t:7.3f} s  {args.pages / t:8.1f} pages/s")
        ellm = results["ellm extract (child process)"]
        print(f"ratio ellm extract / pdftotext:         {ellm / results['pdftotext']:.2f}x")
        print(f"ratio ellm extract / pdftotext -layout: {ellm / results['pdftotext -layout']:.2f}x")
        print(f"isolation cost (ellm extract vs ellm-extract alone): "
              f"{100 * (results['ellm-extract alone'] / ellm - 1):+.1f}% time")


if __name__ == "__main__":
    main()
