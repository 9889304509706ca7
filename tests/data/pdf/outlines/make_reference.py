#!/usr/bin/env python3
"""Writes <name>.tsv: the outline (bookmarks) of real PDFs from Debian
packages that scripts/bootstrap installs, as pypdf reads it — an independent
reader to check ellm's (ingest/pdf/pdf_outline.cc) against. One line per
entry: level, page (1-based), title, tab-separated.

    python3 -m venv /tmp/pdfref && /tmp/pdfref/bin/pip install pypdf==7.1.1
    /tmp/pdfref/bin/python tests/data/pdf/outlines/make_reference.py

The committed .tsv files are what tests/ingest/pdf_outline_test.cc reads.
"""
import os

from pypdf import PdfReader

HERE = os.path.dirname(os.path.abspath(__file__))
PDFS = {
    "libtasn1": "/usr/share/doc/libtasn1-doc/libtasn1.pdf",
    "shared-mime-info-spec": "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
}


def walk(reader, items, level, out):
    for item in items:
        if isinstance(item, list):
            walk(reader, item, level + 1, out)
        else:
            title = " ".join(item.title.split())
            out.append(f"{level}\t{reader.get_destination_page_number(item) + 1}\t{title}\n")


def main():
    for name, path in PDFS.items():
        reader = PdfReader(path)
        out = []
        walk(reader, reader.outline, 1, out)
        with open(os.path.join(HERE, name + ".tsv"), "w") as f:
            f.writelines(out)
        print(name, len(out), "entries")


if __name__ == "__main__":
    main()
