#!/usr/bin/env python3
"""Writes <pair>/a.pdf and <pair>/b.pdf from the hand-drafted <pair>/a.txt and
b.txt (tests/data/contracts/): headings in bold, paragraphs wrapped, a new page
every PAGE_LINES lines, so the clause splitter reads them as a user's PDFs.
The committed PDFs are what the tests read; CI does not run this script.

    python3 -m venv /tmp/pdfgen && /tmp/pdfgen/bin/pip install reportlab==5.1.0
    /tmp/pdfgen/bin/python tests/data/contracts/make_pdfs.py

Deterministic output (reportlab invariant mode).
"""
import os
import re

from reportlab.lib.pagesizes import A4
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfgen import canvas

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = A4
M = 64
SIZE, LEADING = 11, 15
PAGE_LINES = 30
HEADING = re.compile(r"^(?:\d+\.|Clause \d+|ARTICLE [IVX]+|[A-Z][A-Z ]+$)")


def wrap(text, font, width):
    lines, cur = [], ""
    for word in text.split():
        trial = word if not cur else cur + " " + word
        if pdfmetrics.stringWidth(trial, font, SIZE) <= width:
            cur = trial
        else:
            lines.append(cur)
            cur = word
    if cur:
        lines.append(cur)
    return lines


def write(txt, pdf, title):
    c = canvas.Canvas(pdf, pagesize=A4, invariant=1)
    c.setTitle(title)
    c.setAuthor("ellm tests")
    y, used = H - M, 0
    with open(txt, encoding="utf-8") as f:
        paragraphs = f.read().split("\n")
    for para in paragraphs:
        if not para.strip():
            y -= LEADING / 2
            continue
        font = "Helvetica-Bold" if HEADING.match(para) else "Helvetica"
        for line in wrap(para, font, W - 2 * M):
            if used >= PAGE_LINES:
                c.showPage()
                y, used = H - M, 0
            c.setFont(font, SIZE)
            c.drawString(M, y, line)
            y -= LEADING
            used += 1
    c.showPage()
    c.save()


def main():
    for pair in sorted(os.listdir(HERE)):
        d = os.path.join(HERE, pair)
        if not os.path.isfile(os.path.join(d, "expected.json")):
            continue
        for side in ("a", "b"):
            write(os.path.join(d, side + ".txt"), os.path.join(d, side + ".pdf"),
                  f"{pair} contract {side.upper()}")


if __name__ == "__main__":
    main()
