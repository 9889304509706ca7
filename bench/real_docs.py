#!/usr/bin/env python3
"""Real public-domain documents for bench/quality.py: SQLite's own
documentation pages, from the Debian package sqlite3-doc (SQLite's
documentation is dedicated to the public domain; see its copyright.html),
turned into multi-page A4 PDFs.

    real_docs.py CACHE OUT_DIR NAME...    # e.g. NAME = testing limits fts5

Fetches the package into CACHE once (`apt-get download`, pinned to
PINNED_VERSION, else the candidate version with a note), extracts it with
`dpkg-deb -x`, and for each NAME writes OUT_DIR/NAME.pdf and
OUT_DIR/NAME.sections.json:

    {"title": ..., "version": <sqlite3-doc version>, "top_level": <h level>,
     "sections": [{"heading": ..., "page": <PDF page it starts on>}, ...]}

`sections` holds the document's top-level headings under its title. Pages
of the SQLite site with no headings under the title (limits.html) number
their sections as bold-only paragraphs; those count as headings one level
below the title.

Runs inside the reportlab venv of quality.py (reportlab 4.2.5); everything
else is the standard library.
"""

import glob
import html.parser
import json
import os
import re
import subprocess
import sys
import unicodedata

PACKAGE = "sqlite3-doc"
PINNED_VERSION = "3.40.1-2+deb12u2"
HTML_DIR = os.path.join("usr", "share", "doc", "sqlite3")


# --- fetching --------------------------------------------------------------

def fetch_package(cache):
    """The extracted package's HTML directory and its version; downloads once."""
    os.makedirs(cache, exist_ok=True)
    debs = sorted(glob.glob(os.path.join(cache, f"{PACKAGE}_*.deb")))
    if not debs:
        pinned = subprocess.run(["apt-get", "download", f"{PACKAGE}={PINNED_VERSION}"],
                                cwd=cache, capture_output=True, text=True)
        if pinned.returncode != 0:
            any_version = subprocess.run(["apt-get", "download", PACKAGE], cwd=cache,
                                         capture_output=True, text=True)
            if any_version.returncode != 0:
                sys.exit(f"apt-get download {PACKAGE} failed in {cache}: "
                         f"{any_version.stderr.strip()[-300:]} (no package lists? apt-get update)")
        debs = sorted(glob.glob(os.path.join(cache, f"{PACKAGE}_*.deb")))
    deb = debs[-1]
    version = subprocess.run(["dpkg-deb", "-f", deb, "Version"], capture_output=True,
                             text=True, check=True).stdout.strip()
    if version != PINNED_VERSION:
        print(f"note: {PACKAGE} {version} in use ({PINNED_VERSION} could not be had); "
              f"real_facts.json was checked against {PINNED_VERSION}", file=sys.stderr)
    root = os.path.join(cache, "x-" + version)
    if not os.path.isdir(os.path.join(root, HTML_DIR)):
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    return os.path.join(root, HTML_DIR), version


# --- HTML to blocks ----------------------------------------------------------

# Blocks: ("title", text), ("h", level, text), ("p", text), ("li", text),
# ("row", text), ("pre", text).
BLOCK_TAGS = {"p", "div", "br", "dt", "dd", "blockquote", "center", "ul", "ol", "dl", "table"}
SKIP_TAGS = {"script", "style", "svg", "noscript"}
VOID_TAGS = {"br", "img", "hr", "meta", "link", "input", "wbr", "area", "col", "source"}


class DocParser(html.parser.HTMLParser):
    """Text blocks of an SQLite documentation page, in reading order.

    Drops script/style/svg, everything before the page's title (the site's
    menu and search box), the "Table Of Contents" box and the closing "This
    page last modified" line."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks = []
        self.started = False
        self.ended = False
        self.skip = 0            # depth inside script/style/svg
        self.toc_depth = 0       # div depth of an open table of contents (0: none)
        self.title_depth = 0     # div depth of the open fancy_title
        self.div_depth = 0
        self.heading = None      # level of the open <hN>
        self.last_level = 1      # level of the last <hN>
        self.in_pre = 0
        self.table = 0
        self.row = None          # cells of the open <tr>
        self.bullet = False      # the next block is a list item
        self.buf = []
        self.bold_only = None    # None, or whether the open <p> so far is all bold
        self.bold = 0

    def text(self):
        return re.sub(r"\s+", " ", "".join(self.buf)).strip()

    def flush(self):
        if self.in_pre or self.table:
            return
        t = self.text()
        self.buf = []
        bold_only, self.bold_only = self.bold_only, None
        if not t or not self.started or self.ended:
            return
        if self.heading is not None:
            self.blocks.append(("h", self.heading, t))
        elif bold_only and len(t) < 120:
            # A paragraph that is all bold, in a page without headings
            # for its sections (limits.html, whentouse.html's items).
            self.blocks.append(("h", min(self.last_level + 1, 4), t))
        elif self.bullet:
            self.blocks.append(("li", t))
        else:
            self.blocks.append(("p", t))
        self.bullet = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag in SKIP_TAGS:
            self.skip += 1
            return
        if self.skip:
            return
        if tag == "div":
            self.div_depth += 1
            if "fancy_toc" in cls and not self.toc_depth:
                self.toc_depth = self.div_depth
            if "fancy_title" in cls and not self.started:
                self.title_depth = self.div_depth
                self.started = True
                self.buf = []
        if self.toc_depth:
            return
        if re.fullmatch(r"h[1-6]", tag):
            if not self.started:
                self.started = True
            self.flush()
            self.heading = int(tag[1])
            self.buf = []
            return
        if tag == "pre":
            self.flush()
            self.in_pre += 1
            return
        if tag == "table":
            self.flush()
            self.table += 1
            return
        if tag == "tr" and self.table:
            self.row = []
            self.buf = []
            return
        if tag in ("td", "th") and self.table:
            if self.row is not None and self.buf:
                self.row.append(self.text())
            self.buf = []
            return
        if tag == "li":
            self.flush()
            self.bullet = True
            self.bold_only = True
            return
        if tag == "p" or tag in BLOCK_TAGS:
            if self.table:
                self.buf.append(" ")
                return
            self.flush()
            if tag == "p":
                self.bold_only = True
            return
        if tag in ("b", "strong"):
            self.bold += 1
        if tag == "sup":
            self.buf.append("^")  # 2<sup>31</sup>-1 reads 2^31-1, not 231-1
        if tag in VOID_TAGS:
            self.buf.append(" ")

    def handle_endtag(self, tag):
        if tag in SKIP_TAGS:
            self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if tag == "div":
            if self.toc_depth == self.div_depth:
                self.toc_depth = 0
                self.buf = []
                self.div_depth -= 1
                return
            if self.title_depth == self.div_depth and self.title_depth:
                t = self.text()
                if t:
                    self.blocks.append(("title", t))
                self.buf = []
                self.title_depth = 0
            self.div_depth -= 1
        if self.toc_depth:
            return
        if re.fullmatch(r"h[1-6]", tag) and self.heading is not None:
            self.flush()
            self.last_level = self.heading
            self.heading = None
            return
        if tag == "pre" and self.in_pre:
            self.in_pre -= 1
            body = "".join(self.buf).strip("\n")
            self.buf = []
            if body.strip() and self.started and not self.ended:
                self.blocks.append(("pre", body))
            return
        if tag in ("td", "th") and self.table and self.row is not None:
            self.row.append(self.text())
            self.buf = []
            return
        if tag == "tr" and self.table and self.row is not None:
            if self.buf:
                self.row.append(self.text())
            cells = [c for c in self.row if c]
            if cells and self.started and not self.ended:
                self.blocks.append(("row", " | ".join(cells)))
            self.row = None
            self.buf = []
            return
        if tag == "table" and self.table:
            self.table -= 1
            self.buf = []
            return
        if tag in ("b", "strong"):
            self.bold = max(0, self.bold - 1)
            return
        if tag in ("p", "li") or tag in BLOCK_TAGS:
            if not self.table:
                self.flush()

    def handle_data(self, data):
        if self.skip or self.toc_depth:
            return
        if "This page last modified" in data:
            self.flush()
            self.ended = True
            return
        if self.bold_only and data.strip() and not self.bold:
            self.bold_only = False
        self.buf.append(data)


def parse(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        p = DocParser()
        p.feed(fh.read())
        p.close()
    p.flush()
    blocks = p.blocks
    if not any(b[0] == "title" for b in blocks):
        # No fancy_title: the first heading is the title.
        first = next(i for i, b in enumerate(blocks) if b[0] == "h")
        blocks[first] = ("title", blocks[first][2])
    return blocks


def top_level(blocks):
    """The highest heading level under the title (h1..h4)."""
    levels = [b[1] for b in blocks if b[0] == "h"]
    return min(levels) if levels else None


# --- PDF -------------------------------------------------------------------

# The standard PDF fonts cover Windows-1252 only.
ASCII_FOR = {"\u2192": "->", "\u2190": "<-", "\u2264": "<=", "\u2265": ">=", "\u2260": "!=",
             "\u00a0": " ", "\u2212": "-", "\u2248": "~", "\u25ba": ">", "\u25bc": "v",
             "\u21d2": "=>", "\u00d7": "x"}


def latin(text):
    out = []
    for ch in text:
        ch = ASCII_FOR.get(ch, ch)
        try:
            ch.encode("cp1252")
            out.append(ch)
        except UnicodeEncodeError:
            ch = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode() or "?"
            out.append(ch)
    return "".join(out)


def write_pdf(blocks, path, footer):
    """Writes blocks as an A4 PDF; returns [(level, heading, page)] of every heading."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet, ParagraphStyle
    from reportlab.lib.units import cm
    from reportlab.platypus import Paragraph, Preformatted, SimpleDocTemplate, Spacer
    from xml.sax.saxutils import escape

    styles = getSampleStyleSheet()
    body = ParagraphStyle("body", parent=styles["BodyText"], fontSize=10, leading=13)
    bullet = ParagraphStyle("bullet", parent=body, leftIndent=14, bulletIndent=4)
    row = ParagraphStyle("row", parent=body, leftIndent=8, fontSize=9, leading=11)
    code = ParagraphStyle("code", parent=styles["Code"], fontSize=8, leading=10)
    heading = {1: styles["Heading1"], 2: styles["Heading2"], 3: styles["Heading3"],
               4: styles["Heading4"]}
    found = []

    class Doc(SimpleDocTemplate):
        def afterFlowable(self, flowable):
            h = getattr(flowable, "ellm_heading", None)
            if h:
                found.append((h[0], h[1], self.page))

    def footer_fn(canvas, doc):
        canvas.saveState()
        canvas.setFont("Helvetica", 8)
        canvas.drawString(2 * cm, 1.2 * cm, footer)
        canvas.drawRightString(A4[0] - 2 * cm, 1.2 * cm, f"Page {doc.page}")
        canvas.restoreState()

    story = []
    # Heading levels as printed: the title is Title, the top level under it
    # Heading1 and so on, whatever tags the page used.
    shift = (top_level(blocks) or 1) - 1
    for b in blocks:
        kind = b[0]
        if kind == "title":
            story.append(Paragraph(escape(latin(b[1])), styles["Title"]))
        elif kind == "h":
            p = Paragraph(escape(latin(b[2])), heading[min(4, max(1, b[1] - shift))])
            p.ellm_heading = (b[1], b[2])
            story.append(p)
        elif kind == "li":
            story.append(Paragraph(escape(latin(b[1])), bullet, bulletText="\u2022"))
        elif kind == "row":
            story.append(Paragraph(escape(latin(b[1])), row))
        elif kind == "pre":
            story.append(Preformatted(latin(b[1]).expandtabs(), code, maxLineLength=95,
                                      newLineChars=""))
            story.append(Spacer(1, 4))
        else:
            story.append(Paragraph(escape(latin(b[1])), body))
    doc = Doc(path, pagesize=A4, leftMargin=2 * cm, rightMargin=2 * cm, topMargin=2 * cm,
              bottomMargin=2 * cm, title=footer, author="SQLite documentation (public domain)")
    doc.build(story, onFirstPage=footer_fn, onLaterPages=footer_fn)
    return found


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    cache, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    html_dir, version = fetch_package(cache)
    os.makedirs(out, exist_ok=True)
    for name in names:
        blocks = parse(os.path.join(html_dir, name + ".html"))
        title = next(b[1] for b in blocks if b[0] == "title")
        top = top_level(blocks)
        found = write_pdf(blocks, os.path.join(out, name + ".pdf"), f"{title} - SQLite documentation")
        sections = [{"heading": h, "page": page} for level, h, page in found if level == top]
        with open(os.path.join(out, name + ".sections.json"), "w") as fh:
            json.dump({"title": title, "version": version, "top_level": top,
                       "sections": sections}, fh, indent=1)
        print(f"{name}: {len(found)} headings, {len(sections)} top-level (h{top}), "
              f"last section on page {sections[-1]['page'] if sections else '?'}")


if __name__ == "__main__":
    main()
