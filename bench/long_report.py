#!/usr/bin/env python3
"""A long real report for bench/docs_per_hour.py: chapters of SQLite's own
documentation (public domain; the Debian package sqlite3-doc, fetched and
parsed by real_docs.py) laid out as one A4 PDF, each page of the site a
numbered chapter ("3. Write-Ahead Logging") with its own headings below.

    long_report.py CACHE OUT.pdf --chars N     # chapters until N characters of text
    long_report.py CACHE OUT.pdf --pages N     # about N pages (laid out up to 4 times)

Chapters are taken in CHAPTERS order, whole, then the last one cut at a
block boundary so that the text holds about N characters. Prints the
characters and pages. Runs inside the reportlab venv of quality.py (reportlab 4.2.5).
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_docs  # noqa: E402

# Prose-heavy pages first (few syntax diagrams or tables).
CHAPTERS = ["atomiccommit", "fileformat2", "wal", "lockingv3", "queryplanner", "optoverview",
            "testing", "howtocorrupt", "isolation", "fts5", "vtab", "cli", "datatype3",
            "foreignkeys", "limits", "compile", "lang_expr", "pragma", "fts3", "session"]


def chapter_blocks(html_dir, number, name):
    """The page's blocks as one chapter: its title a numbered h1, its headings one level down."""
    blocks = real_docs.parse(os.path.join(html_dir, name + ".html"))
    top = real_docs.top_level(blocks) or 2
    out = []
    for b in blocks:
        if b[0] == "title":
            out.append(("h", 1, f"{number}. {b[1]}"))
        elif b[0] == "h":
            out.append(("h", min(4, b[1] - top + 2), b[2]))
        else:
            out.append(b)
    return out


def text_chars(block):
    return len(block[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cache")
    ap.add_argument("out")
    size = ap.add_mutually_exclusive_group(required=True)
    size.add_argument("--chars", type=int)
    size.add_argument("--pages", type=int)
    ap.add_argument("--title", default="SQLite: a technical report")
    args = ap.parse_args()
    html_dir, version = real_docs.fetch_package(args.cache)
    chars = args.chars or args.pages * 3700  # A4, 10 pt body: ~3,700 characters a page
    for _ in range(4):
        total, pages = build(html_dir, version, args.title, chars, args.out)
        if not args.pages or abs(pages - args.pages) <= 1:
            break
        chars = int(chars * args.pages / pages) + (1800 if pages < args.pages else -1800)
    print(f"{args.out}: {total} characters, {pages} pages")


def build(html_dir, version, title, chars, out):
    """Lays out chapters up to `chars` characters as `out`: (characters, pages)."""
    blocks = [("title", title),
              ("p", f"Chapters of the SQLite documentation (sqlite3-doc {version}), "
                    "dedicated to the public domain by its authors.")]
    total = 0
    for i, name in enumerate(CHAPTERS, 1):
        for b in chapter_blocks(html_dir, i, name):
            if total >= chars:
                break
            blocks.append(b)
            total += text_chars(b)
        if total >= chars:
            break
    else:
        print(f"note: all {len(CHAPTERS)} chapters hold only {total} characters", file=sys.stderr)
    real_docs.write_pdf(blocks, out, title)
    return total, pdf_pages(out)


def pdf_pages(path):
    """Page objects in a PDF reportlab wrote (uncompressed page tree)."""
    with open(path, "rb") as fh:
        return len(re.findall(rb"/Type /Page[^s]", fh.read()))


if __name__ == "__main__":
    main()
