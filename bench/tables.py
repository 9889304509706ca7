#!/usr/bin/env python3
"""Table benchmark (issue 55): tables with known cells, typeset to PDF by real
typesetters, extracted by `ellm extract --json`, scored cell by cell.

    bench/tables.py [--ellm build/release/cli/ellm] [--tables 12] [--seed 1]
                    [--held-out] [--show N] [--keep DIR]

Each table is random but plausible: a header row of labels ("Region",
"2024", "Change"), a first column of row labels, figures in the other cells
("1,204", "-7.5%", "EUR 3.4m", "n/a"); 2 to 6 columns, 3 to 9 rows, with a
sentence of text before and after it on the page. Typesetters:
  chromium     HTML printed by headless Chromium (Debian's chromium), half of
               the tables with ruled borders
  libreoffice  the same HTML converted to PDF by LibreOffice Writer (soffice
               --headless, Debian's libreoffice-writer-nogui)
  groff        tbl through groff -Tpdf (Debian's groff; installed by this
               script when missing), boxed or not
The extracted page text holds tables as Markdown (ellm/ingest/markdown_table.h);
the extracted table that best matches the truth is scored:
  cells exact   truth cells found with the same text in the same row and
                column (the header row included), over all truth cells
  tables found  tables of which at least one row was matched
Held out: groff and every table of seed 2 were not looked at while the
layout rules were written; they are scored only with --held-out (once, at
the end of a piece of work).
"""

import argparse
import html
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

ROW_LABELS = ["Revenue", "Cost of sales", "Gross profit", "Operating expenses", "Net income",
              "North", "South", "East", "West", "Central Europe", "Asia Pacific", "Headcount",
              "Orders", "Returns", "Average price", "Units shipped", "Energy use", "Water use",
              "Incidents", "Training hours", "Capital expenditure", "Free cash flow"]
COLUMN_LABELS = ["2021", "2022", "2023", "2024", "2025", "Q1", "Q2", "Q3", "Q4", "Change",
                 "Target", "Actual", "Budget", "Share", "Growth"]
FIRST_HEADERS = ["Item", "Region", "Measure", "Line", "Segment"]
INTRO = "The table below gives the figures for the period, as reported by the finance team."
OUTRO = "These figures are unaudited and may be restated in the annual report next year."


def figure(rng):
    kind = rng.random()
    if kind < 0.35:
        return f"{rng.randint(100, 99999):,}"
    if kind < 0.55:
        return f"{rng.choice(['', '-', '+'])}{rng.randint(0, 99)}.{rng.randint(0, 9)}%"
    if kind < 0.7:
        return f"EUR {rng.randint(1, 99)}.{rng.randint(0, 9)}m"
    if kind < 0.9:
        return str(rng.randint(1, 999))
    return "n/a"


def make_table(rng):
    cols = rng.randint(2, 6)
    rows = rng.randint(3, 9)
    header = [rng.choice(FIRST_HEADERS)] + rng.sample(COLUMN_LABELS, cols - 1)
    labels = rng.sample(ROW_LABELS, rows)
    body = [[label] + [figure(rng) for _ in range(cols - 1)] for label in labels]
    return [header] + body


def to_html(table, ruled):
    border = "border-collapse: collapse;" if ruled else ""
    cell = "border: 1px solid #000; padding: 2px 8px;" if ruled else "padding: 2px 12px;"
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><style>",
           f"body {{ font-family: 'DejaVu Sans', sans-serif; font-size: 11pt; }}"
           f" table {{ {border} }} td, th {{ {cell} }} td + td, th + th {{ text-align: right; }}",
           "</style></head><body>", f"<p>{html.escape(INTRO)}</p>", "<table>"]
    for r, row in enumerate(table):
        tag = "th" if r == 0 else "td"
        out.append("<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in row) + "</tr>")
    out += ["</table>", f"<p>{html.escape(OUTRO)}</p>", "</body></html>"]
    return "\n".join(out)


def to_tbl(table, boxed):
    cols = len(table[0])
    fmt = "l" + " r" * (cols - 1)
    out = [".LP", INTRO, ".TS", ("box tab(\t);" if boxed else "tab(\t);"),
           f"lb{' rb' * (cols - 1)}", f"{fmt}."]
    for row in table:
        out.append("\t".join(row))
    out += [".TE", ".LP", OUTRO]
    return "\n".join(out) + "\n"


def ensure_groff():
    probe = subprocess.run(["groff", "-Tpdf", "-Z"], input="", capture_output=True, text=True)
    if probe.returncode == 0:
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run(sudo + ["apt-get", "install", "-y", "--no-install-recommends", "groff"],
                   check=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


def typeset(kind, table, seed, index, work):
    base = os.path.join(work, f"{kind}-{seed}-{index}")
    if kind == "groff":
        with open(base + ".tr", "w") as f:
            f.write(to_tbl(table, index % 2 == 0))
        with open(base + ".pdf", "wb") as out:
            subprocess.run(["groff", "-t", "-ms", "-Tpdf", base + ".tr"], stdout=out, check=True)
        return base + ".pdf"
    with open(base + ".html", "w") as f:
        f.write(to_html(table, index % 2 == 0))
    if kind == "chromium":
        subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                        "--no-pdf-header-footer", f"--print-to-pdf={base}.pdf",
                        "file://" + base + ".html"], capture_output=True, check=True)
    else:
        profile = os.path.join(work, "lo-profile")
        subprocess.run(["soffice", f"-env:UserInstallation=file://{profile}", "--headless",
                        "--convert-to", "pdf:writer_pdf_Export", "--outdir", work,
                        base + ".html"], capture_output=True, check=True)
    return base + ".pdf"


def markdown_tables(text):
    """The Markdown tables of a page's text: lists of rows of cells."""
    tables, cur = [], []
    for line in text.split("\n") + [""]:
        t = line.strip()
        if t.startswith("|") and t.endswith("|") and len(t) >= 2:
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", t[1:-1])]
            if all(c and set(c) <= set("-:") for c in cells):
                continue  # the rule under the header
            cur.append(cells)
        elif cur:
            tables.append(cur)
            cur = []
    return tables


def score(truth, extracted):
    """Cells of `truth` found in the best-matching extracted table, by
    (row, column); rows matched by their first cell, else by position."""
    best = 0
    for t in extracted:
        by_label = {row[0]: row for row in t if row}
        found = 0
        for r, row in enumerate(truth):
            got = by_label.get(row[0]) or (t[r] if r < len(t) else [])
            found += sum(1 for c, cell in enumerate(row) if c < len(got) and got[c] == cell)
        best = max(best, found)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ellm", default="build/release/cli/ellm")
    ap.add_argument("--tables", type=int, default=12, help="tables per typesetter")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--held-out", action="store_true")
    ap.add_argument("--show", type=int, default=0, help="print the first N tables not all exact")
    ap.add_argument("--keep", default="", help="keep the PDFs in this directory")
    args = ap.parse_args()
    sets = {"development": [("chromium", args.seed), ("libreoffice", args.seed)]}
    if args.held_out:
        ensure_groff()
        sets["held out"] = [("chromium", args.seed + 1), ("libreoffice", args.seed + 1),
                            ("groff", args.seed), ("groff", args.seed + 1)]
    work = args.keep or tempfile.mkdtemp(prefix="ellm-tables-")
    os.makedirs(work, exist_ok=True)
    shown = 0
    try:
        for name, runs in sets.items():
            print(f"\n{name}: {args.tables} tables per run")
            print(f"{'typesetter':<14}{'seed':>5}{'cells exact':>22}{'tables found':>16}")
            total_cells = total_found = total_tables = total_hit = 0
            for kind, seed in runs:
                rng = random.Random(f"{kind}-{seed}")
                cells = found = hit = 0
                for i in range(args.tables):
                    table = make_table(rng)
                    pdf = typeset(kind, table, seed, i, work)
                    out = subprocess.run([args.ellm, "extract", pdf, "--json"],
                                         capture_output=True, text=True, check=True)
                    doc = json.loads(out.stdout)
                    extracted = [t for p in doc["pages"] for t in markdown_tables(p["text"])]
                    n = sum(len(r) for r in table)
                    got = score(table, extracted)
                    cells += n
                    found += got
                    hit += got > 0
                    if got < n and shown < args.show:
                        shown += 1
                        print(f"  {kind} {seed}-{i}: {got}/{n}\n    truth: {table}\n"
                              f"    got:   {extracted}")
                total_cells += cells
                total_found += found
                total_tables += args.tables
                total_hit += hit
                print(f"{kind:<14}{seed:>5}{found:>10}/{cells:<5} {100 * found / cells:5.1f}%"
                      f"{hit:>10}/{args.tables}")
            print(f"{'all':<19}{total_found:>10}/{total_cells:<5} "
                  f"{100 * total_found / total_cells:5.1f}%{total_hit:>10}/{total_tables}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
