#!/usr/bin/env python3
"""Structure benchmark (issue 55): the heading tree ellm reads from a PDF's
page layout, scored against the PDF's own outline (bookmarks).

    bench/structure.py [--ellm build/release/cli/ellm] [--held-out] [--show N]

Real manuals with outlines from Debian packages, fetched once with
`apt-get download` into ~/.cache/ellm/structure-docs (nothing installed):
R's manuals (r-doc-pdf), bash (bash-doc), GLPK (glpk-doc), gnuplot
(gnuplot-doc), Asymptote (asymptote-doc), GNU Octave (octave-doc), the
shared MIME-info spec (shared-mime-info) and libtasn1 (libtasn1-doc). Each
is extracted twice: `ellm extract --json` (headings from the outline: the
truth) and `ellm extract --json --headings layout` (the outline hidden).
A tree whose top level is one entry (the document's title) over two or
more is read from the level below, as the pipelines read it. Printed per
file and in total, for levels 1 and 2:
  recall      outline headings the layout found at that level (titles
              compared as lowercase letters and digits; numbers left out,
              as bookmarks often leave them out)
  precision   layout headings at that level that are outline headings
  pages       matched headings on the outline's page
Held out: the Octave, Asymptote and libtasn1 manuals were not looked at
while the rules were written; they are scored only with --held-out (once,
at the end of a piece of work).
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys

PACKAGES = {  # package: PDFs in it (paths inside the package)
    "r-doc-pdf": ["usr/share/R/doc/manual/R-data.pdf", "usr/share/R/doc/manual/R-intro.pdf",
                  "usr/share/R/doc/manual/R-admin.pdf", "usr/share/R/doc/manual/R-exts.pdf",
                  "usr/share/R/doc/manual/R-lang.pdf", "usr/share/R/doc/manual/R-ints.pdf",
                  "usr/share/R/doc/manual/R-FAQ.pdf"],
    "bash-doc": ["usr/share/doc/bash/bashref.pdf", "usr/share/doc/bash/bash.pdf"],
    "glpk-doc": ["usr/share/doc/glpk-doc/glpk.pdf", "usr/share/doc/glpk-doc/gmpl.pdf",
                 "usr/share/doc/glpk-doc/graphs.pdf", "usr/share/doc/glpk-doc/cnfsat.pdf"],
    "gnuplot-doc": ["usr/share/doc/gnuplot/gnuplot.pdf"],
    "shared-mime-info": ["usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"],
    "asymptote-doc": ["usr/share/doc/asymptote/asymptote.pdf", "usr/share/doc/asymptote/CAD.pdf",
                      "usr/share/doc/asymptote/asy-latex.pdf"],
    "octave-doc": ["usr/share/doc/octave/octave.pdf", "usr/share/doc/octave/liboctave.pdf"],
    "libtasn1-doc": ["usr/share/doc/libtasn1-doc/libtasn1.pdf"],
}
HELD_OUT = ("octave-doc", "asymptote-doc", "libtasn1-doc")


def fetch(pkg):
    root = os.path.join(os.path.expanduser("~"), ".cache", "ellm", "structure-docs")
    tree = os.path.join(root, pkg)
    if not os.path.isdir(tree):
        os.makedirs(root, exist_ok=True)
        subprocess.run(["apt-get", "download", pkg], cwd=root, check=True, capture_output=True)
        deb = sorted(glob.glob(os.path.join(root, pkg + "_*.deb")))[-1]
        subprocess.run(["dpkg-deb", "-x", deb, tree], check=True)
    return tree


def headings(ellm, pdf, layout):
    cmd = [ellm, "extract", pdf, "--json", "--max-pages", "5000", "--timeout", "600"]
    if layout:
        cmd += ["--headings", "layout"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout).get("headings", [])


def norm(h):
    # Titles only: bookmarks often leave out the numbers the pages show
    # ("Imports" for "1.1 Imports").
    # A number left in the title ("I Gnuplot", "A References") is dropped on
    # both sides alike.
    title = re.sub(r"^(?:[0-9.]+|[IVXLC]+|[A-Z])[.:)]?\s+(?=\S)", "", h["title"])
    return re.sub(r"[^a-z0-9]+", "", title.lower())


def top_levels(hs):
    """Levels renumbered so the first is the document's top level: below a
    single root when that root holds two or more."""
    if not hs:
        return hs
    top = min(h["level"] for h in hs)
    if sum(1 for h in hs if h["level"] == top) == 1:
        nxt = [h for h in hs if h["level"] > top]
        if nxt and sum(1 for h in nxt if h["level"] == min(x["level"] for x in nxt)) >= 2:
            top = min(x["level"] for x in nxt)
    return [dict(h, level=h["level"] - top + 1) for h in hs if h["level"] >= top]


def score(truth, got, level):
    t = [h for h in truth if h["level"] == level]
    g = [h for h in got if h["level"] == level]
    pages_by_name = {}
    for h in g:
        pages_by_name.setdefault(norm(h), []).append(h["page"])
    found = on_page = 0
    for h in t:
        pages = pages_by_name.get(norm(h))
        if pages:
            found += 1
            on_page += h["page"] in pages
    truth_names = {norm(h) for h in t}
    right = sum(1 for h in g if norm(h) in truth_names)
    return {"truth": len(t), "got": len(g), "found": found, "right": right, "on_page": on_page}


def pct(n, d):
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ellm", default="build/release/cli/ellm")
    ap.add_argument("--held-out", action="store_true")
    ap.add_argument("--show", type=int, default=0, help="print N missed and N extra headings per file")
    args = ap.parse_args()
    sets = {"development": [p for p in PACKAGES if p not in HELD_OUT]}
    if args.held_out:
        sets["held out"] = list(HELD_OUT)
    for name, pkgs in sets.items():
        print(f"\n{name}")
        print(f"{'file':<26}{'L1 recall':>16}{'L1 precision':>16}{'L1 pages':>14}"
              f"{'L2 recall':>16}{'L2 precision':>16}")
        total = {1: {}, 2: {}}
        for pkg in pkgs:
            tree = fetch(pkg)
            for rel in PACKAGES[pkg]:
                pdf = os.path.join(tree, rel)
                truth = top_levels(headings(args.ellm, pdf, False))
                if not truth:
                    print(f"{os.path.basename(pdf):<26} (no outline: not scored)")
                    continue
                got = top_levels(headings(args.ellm, pdf, True))
                s = {lv: score(truth, got, lv) for lv in (1, 2)}
                for lv in (1, 2):
                    for k, v in s[lv].items():
                        total[lv][k] = total[lv].get(k, 0) + v
                print(f"{os.path.basename(pdf):<26}{pct(s[1]['found'], s[1]['truth']):>16}"
                      f"{pct(s[1]['right'], s[1]['got']):>16}{pct(s[1]['on_page'], s[1]['found']):>14}"
                      f"{pct(s[2]['found'], s[2]['truth']):>16}{pct(s[2]['right'], s[2]['got']):>16}")
                if args.show:
                    names = {norm(h) for h in got if h["level"] == 1}
                    miss = [h["title"] for h in truth if h["level"] == 1 and norm(h) not in names]
                    tnames = {norm(h) for h in truth if h["level"] == 1}
                    extra = [h["title"] for h in got if h["level"] == 1 and norm(h) not in tnames]
                    print(f"    missed: {miss[:args.show]}\n    extra:  {extra[:args.show]}")
        t1, t2 = total[1], total[2]
        print(f"{'all':<26}{pct(t1['found'], t1['truth']):>16}{pct(t1['right'], t1['got']):>16}"
              f"{pct(t1['on_page'], t1['found']):>14}{pct(t2['found'], t2['truth']):>16}"
              f"{pct(t2['right'], t2['got']):>16}")


if __name__ == "__main__":
    sys.exit(main())
