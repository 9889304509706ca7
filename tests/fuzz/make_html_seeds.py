#!/usr/bin/env python3
"""Writes the seeds of the `html` fuzz target (tests/fuzz/html_fuzz.cc) into
tests/ingest/html_corpus/: the two pages of tests/data/html (the real one
cut to its first 6,000 bytes), 3,000 nested <div>s, broken markup
(unclosed and mismatched tags, a table without closing tags), a Latin-1
page that says so, a table nested in a cell with a numbered list starting
at 7, and a page with no text. The committed files are what the tests
read; CI does not run this script.

    python3 tests/fuzz/make_html_seeds.py
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "html")
OUT = os.path.join(HERE, "..", "ingest", "html_corpus")


def read(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {
        "seed-report.html": read("report.html"),
        "seed-docbook.html": read("users-and-groups.html")[:6000],
        "seed-deep.html": b"<html><body>" + b"<div>" * 3000 + b"deep" + b"</div>" * 3000 +
                          b"</body></html>",
        "seed-broken.html": b"<html><body><p>unclosed <b>bold <table><tr><td>cell<tr><td>next"
                            b"</table> <h2>Head</h3> text",
        "seed-latin1.html": ('<html><head><meta charset="iso-8859-1"></head><body><p>caf\xe9 '
                             'na\xefve</p></body></html>').encode("latin-1"),
        "seed-nested-table.html": b"<html><body><table><tr><td><table><tr><td>inner</td></tr>"
                                  b"</table></td><td>b</td></tr></table><ol start=\"7\"><li>seven"
                                  b"<li>eight</ol></body></html>",
        "seed-empty.html": b"<!DOCTYPE html><html><head><title>t</title></head><body><script>x"
                           b"</script></body></html>",
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        print(f"{len(data):8d}  {name}")


if __name__ == "__main__":
    main()
