#!/usr/bin/env python3
"""Quality harness for the shipped pipelines: documents with planted facts,
run through `ellm`, scored. It never passes or fails; it prints numbers.

    bench/quality.py --model models/gemma-3-270m-q4_k_m.gguf            # after
    bench/quality.py --ellm OLD/ellm --pipelines OLD_DEFS --model M      # before

What it makes (seeded, in --out): --pairs contract pairs (the supply
agreement of configs/samples/make_samples.py with random parties, dates,
quantity, price, notice, liability cap and law; B differs from A in a random
half of the terms) and --reports annual reports (make_samples.py's report
with random revenue, operating profit, net debt and dividend on page 2).
PDFs are written with reportlab in its own venv (~/.cache/ellm/quality-venv).

What it prints, per pipeline:
  compare-contracts  comparison accuracy (terms whose same/different status is
                     right, over all terms), differences found / planted,
                     false differences, wrong-side values (a value of the other
                     contract shown as this one's), citation accuracy (cited
                     page holds the planted value)
  extract-key-terms  valid-JSON rate, field accuracy, citation accuracy
  summarize-report   figure recall (planted figures present), hallucinated-
                     figure rate (figures in Key figures found nowhere in the
                     report), lines with a page citation, citation accuracy
                     (the cited page holds every figure of the line); also
                     on a --long page report at --long-ctx (map-reduce)
Both output forms are read: the computed table (pipelines with `fields`)
and the older "- Document N, the X: value" lines, so one command scores a
previous build for the "before" numbers.

Real documents (--real, default all): pages of SQLite's documentation
(public domain) from the Debian package sqlite3-doc, made into PDFs by
bench/real_docs.py (fetched once into ~/.cache/ellm/real-docs with
apt-get download; skipped with a note when that fails), with the facts and
key terms of bench/real_facts.json, checked by hand. Each is summarized
with summarize-report; the long ones (fts5, fts3, fileformat2: 20-30K tokens)
at --real-ctx, the others at the default context. Per document and in
total it prints the document's tokens, the strategy and time, then
  fact recall         hand-checked facts whose figure is in the summary
  figures             figures in the summary; found anywhere in the document
                      (the rest: hallucinated); on the page their statement
                      cites
  coverage            top-level sections with any of their key terms in the
                      summary, headings repeated in it left out; also with
                      the pipeline's "Terms:" lists left out (the model's
                      sentences alone)
  statement support   statements (sentences or bullets, headings excluded)
                      citing "[p. N]" with >= 60% of their content words on
                      the cited pages; statements with no citation
  --real NAME...      documents: testing limits whentouse fts5 fileformat2 fts3,
                      or all (default), short (the first three), long, none
  --real-ctx N        context for the long ones (default 32768)
The long documents take minutes each on a small CPU; --real none keeps the
planted documents alone.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VENV = os.path.expanduser("~/.cache/ellm/quality-venv")

TERMS = ["buyer", "supplier", "signed", "quantity", "price", "delivery", "termination_notice",
         "liability_cap", "governing_law"]
# Page of each term in the generated contract.
TERM_PAGE = {"buyer": 1, "supplier": 1, "signed": 1, "quantity": 1, "price": 1, "delivery": 1,
             "termination_notice": 2, "liability_cap": 2, "governing_law": 2}
# The older markdown lines: "- Document N, the <label>: value".
LEGACY_LABELS = {"total price": "price", "number of turbines": "quantity",
                 "delivery date": "delivery", "termination notice": "termination_notice",
                 "liability cap": "liability_cap", "governing law": "governing_law"}

BUYERS = ["Northwind Energy plc", "Iberia Wind SL", "Atlantic Power AG", "Solway Renewables Ltd"]
SUPPLIERS = ["Aero Turbines SA", "Nordic Blades AS", "Vento Systems SpA", "Helix Rotor GmbH"]
LAWS = ["Spain", "England and Wales", "France", "Germany", "the Netherlands", "Portugal"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]


def ensure_venv():
    py = os.path.join(VENV, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "reportlab==4.2.5"], check=True)
    return py


# --- values and their normal forms -----------------------------------------

SCALE = {"k": 1e3, "thousand": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9}
FIGURE = re.compile(r"(?:(EUR|USD|GBP|€|\$|£)\s?)?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
                    r"(?:\s?(%|percent|thousand|million|billion|bn|mn|m|k)\b|(%))?"
                    r"(?:\s(days|months|years|weeks))?", re.I)
DATE = re.compile(r"\b(\d{1,2}) (" + "|".join(MONTHS) + r") (\d{4})\b")
# "January 8, 2027", as models trained on US text write dates.
DATE_US = re.compile(r"\b(" + "|".join(MONTHS) + r") (\d{1,2}),? (\d{4})\b")


def figures(text):
    """(kind, value) of each figure in text: dates first, then numbers."""
    out = []
    taken = []
    for m in DATE.finditer(text):
        out.append(("date", f"{m.group(3)}-{MONTHS.index(m.group(2)) + 1:02d}-{int(m.group(1)):02d}"))
        taken.append(m.span())
    for m in DATE_US.finditer(text):
        out.append(("date", f"{m.group(3)}-{MONTHS.index(m.group(1)) + 1:02d}-{int(m.group(2)):02d}"))
        taken.append(m.span())
    for m in FIGURE.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        v = float(m.group(2).replace(",", "") + (m.group(3) or ""))
        unit = (m.group(4) or m.group(5) or "").lower()
        if m.group(6):
            out.append(("duration", f"{v:g} {m.group(6).lower()}"))
        elif unit in ("%", "percent"):
            out.append(("percent", v))
        else:
            out.append(("figure", v * SCALE.get(unit, 1)))
    return out


def norm_value(term, text):
    """The planted-comparable form of a term's value as written."""
    if text is None:
        return None
    if term in ("buyer", "supplier", "governing_law"):
        return " ".join(re.findall(r"[a-z0-9]+", text.lower())) or None
    for kind, v in figures(text):
        if term in ("signed", "delivery") and kind == "date":
            return v
        if term == "termination_notice" and kind == "duration":
            return v
        if term == "liability_cap" and kind == "percent":
            return v
        if term in ("price", "quantity") and kind == "figure":
            return v
    return None


# --- documents -------------------------------------------------------------

def random_terms(rng):
    day = lambda: f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.choice([2025, 2026, 2027])}"
    return {"buyer": rng.choice(BUYERS), "supplier": rng.choice(SUPPLIERS), "signed": day(),
            "quantity": str(rng.randint(4, 60)),
            "price": f"EUR {rng.randint(20, 400)} million", "delivery": day(),
            "termination_notice": str(rng.choice([14, 30, 45, 60, 90, 120])),
            "liability_cap": f"{rng.choice([25, 50, 75, 100, 150, 200])}%",
            "governing_law": rng.choice(LAWS)}


def planted_pairs(n, seed):
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        a = random_terms(rng)
        b = dict(a)
        other = random_terms(rng)
        for t in rng.sample(TERMS, len(TERMS) // 2):
            tries = 0
            while other[t] == a[t] and tries < 20:
                other = random_terms(rng)
                tries += 1
            b[t] = other[t]
        pairs.append((a, b))
    return pairs


def planted_reports(n, seed):
    rng = random.Random(seed + 1)
    out = []
    for _ in range(n):
        out.append({"revenue": f"EUR {rng.randint(11, 99) / 10:.1f} billion",
                     "operating_profit": f"EUR {rng.randint(120, 900)} million",
                     "net_debt": f"EUR {rng.randint(5, 40) / 10:.1f} billion",
                     "dividend": f"EUR {rng.randint(20, 150) / 100:.2f} per share"})
    return out


PDF_SCRIPT = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
import make_samples as ms
spec = json.load(open(sys.argv[2]))
for c in spec["contracts"]:
    t = c["terms"]
    pages = [(h, [p.format(seller=t["supplier"], date=t["signed"], count=t["quantity"],
                           delivery=t["delivery"], price=t["price"], notice=t["termination_notice"],
                           cap=t["liability_cap"], law=t["governing_law"])
                  .replace("Northwind Energy plc", t["buyer"]) for p in paras])
             for h, paras in ms.CONTRACT]
    ms.write_pages(c["path"], "Supply Agreement", pages, "Supply Agreement - Confidential")
for r in spec["reports"]:
    f = r["figures"]
    pages = []
    for h, paras in ms.REPORT:
        new = []
        for p in paras:
            p = p.replace("EUR 4.2 billion", f["revenue"]).replace("EUR 610 million", f["operating_profit"])
            p = p.replace("EUR 1.9 billion", f["net_debt"]).replace("EUR 0.84 per share", f["dividend"])
            new.append(p)
        pages.append((h, new))
    if r.get("pages"):
        base = ms.long_report(r["pages"])
        pages = pages[:-1] + base[len(ms.REPORT) - 1:-1] + pages[-1:]
    ms.write_pages(r["path"], "Annual Report 2025", pages, "Annual Report 2025")
'''


def make_documents(out, pairs, reports, long_pages=0):
    py = ensure_venv()
    spec = {"contracts": [], "reports": []}
    for i, (a, b) in enumerate(pairs):
        for side, t in (("a", a), ("b", b)):
            spec["contracts"].append({"path": os.path.join(out, f"pair{i:02d}-{side}.pdf"),
                                      "terms": t})
    for i, f in enumerate(reports):
        spec["reports"].append({"path": os.path.join(out, f"report{i:02d}.pdf"), "figures": f})
    if long_pages and reports:
        spec["reports"].append({"path": os.path.join(out, "long.pdf"), "figures": reports[0],
                                "pages": long_pages})
    with open(os.path.join(out, "planted.json"), "w") as fh:
        json.dump({"pairs": pairs, "reports": reports}, fh, indent=1)
    script, spec_path = os.path.join(out, "make_pdfs.py"), os.path.join(out, "pdfs.json")
    with open(script, "w") as fh:
        fh.write(PDF_SCRIPT)
    with open(spec_path, "w") as fh:
        json.dump(spec, fh)
    subprocess.run([py, script, os.path.join(REPO, "configs", "samples"), spec_path], check=True)


# --- running and reading ----------------------------------------------------

# pipeline -> [decode ms, constraint ms, runs]: what grammar-constrained
# decoding cost each pipeline (results' constraint_ms of their decode_ms).
DECODE_COST = {}


def run(args, cmd):
    full = [args.ellm] + cmd + ["--model", args.model, "--db", os.path.join(args.out, "q.db"),
                                "--json"]
    if args.pipelines:
        full += ["--pipelines", args.pipelines]
    t0 = time.time()
    p = subprocess.run(full, capture_output=True, text=True)
    if p.returncode != 0:
        return None, time.time() - t0, p.stderr.strip()[-300:]
    res = json.loads(p.stdout)
    cost = DECODE_COST.setdefault(res.get("pipeline", cmd[0]), [0, 0, 0])
    cost[0] += res.get("decode_ms", 0)
    cost[1] += res.get("constraint_ms", 0)
    cost[2] += 1
    return res, time.time() - t0, ""


def print_decode_cost():
    if not DECODE_COST:
        return
    print("grammar-constrained decoding, per pipeline (constraint ms of decode ms)")
    for name, (decode, constraint, runs) in sorted(DECODE_COST.items()):
        share = f"{100.0 * constraint / decode:.1f}%" if decode else "n/a"
        print(f"  {name:24s} {constraint} of {decode} ms ({share}; {runs} runs"
              f"{'; no JSON schema' if constraint == 0 else ''})")


def sides_from_result(res):
    """{term: (value text, page or None)} for A and B, from either output form."""
    j = res.get("json") or {}
    a, b = {}, {}
    if isinstance(j, dict) and "comparison" in j:
        for row in j["comparison"]:
            for side, d in (("a", a), ("b", b)):
                cell = row[side]
                d[row["field"]] = (cell.get("value"), cell.get("page") if cell.get("verified") else None)
        return a, b
    for line in res.get("text", "").splitlines():
        m = re.match(r"- Document ([12]), the ([a-z ]+):\s*(.*)", line)
        if m and m.group(2) in LEGACY_LABELS:
            d = a if m.group(1) == "1" else b
            pm = re.search(r"\[page (\d+)\]", m.group(3))
            d[LEGACY_LABELS[m.group(2)]] = (m.group(3), int(pm.group(1)) if pm else None)
    return a, b


def score_compare(args, pairs):
    right = total = found = planted = false_diff = wrong_side = cited = cite_ok = 0
    secs = []
    for i, (ta, tb) in enumerate(pairs):
        pa = os.path.join(args.out, f"pair{i:02d}-a.pdf")
        pb = os.path.join(args.out, f"pair{i:02d}-b.pdf")
        res, s, err = run(args, ["compare", pa, pb])
        secs.append(s)
        if res is None:
            print(f"  pair {i}: failed: {err}", file=sys.stderr)
            total += len(TERMS)
            continue
        ga, gb = sides_from_result(res)
        for t in TERMS:
            want_a, want_b = norm_value(t, ta[t] if t != "termination_notice" else ta[t] + " days"), \
                norm_value(t, tb[t] if t != "termination_notice" else tb[t] + " days")
            va = norm_value(t, (ga.get(t) or (None, None))[0])
            vb = norm_value(t, (gb.get(t) or (None, None))[0])
            planted_diff = want_a != want_b
            got_diff = va != vb
            total += 1
            ok = planted_diff == got_diff and (not planted_diff or (va == want_a and vb == want_b))
            right += ok
            if not ok and args.verbose:
                print(f"  pair {i} {t}: planted {want_a!r} / {want_b!r}, got {va!r} / {vb!r}")
            planted += planted_diff
            found += planted_diff and got_diff and va == want_a and vb == want_b
            false_diff += (not planted_diff) and got_diff
            wrong_side += (va is not None and va == want_b and want_a != want_b)
            wrong_side += (vb is not None and vb == want_a and want_a != want_b)
            for v, want, page in ((va, want_a, (ga.get(t) or (None, None))[1]),
                                  (vb, want_b, (gb.get(t) or (None, None))[1])):
                if page is not None:
                    cited += 1
                    cite_ok += v == want and page == TERM_PAGE[t]
    pct = lambda x, y: f"{100.0 * x / y:.1f}%" if y else "n/a"
    print(f"compare-contracts ({len(pairs)} pairs, {total} terms, median {sorted(secs)[len(secs) // 2]:.1f} s/pair)")
    print(f"  comparison accuracy      {pct(right, total)} ({right}/{total})")
    print(f"  differences found        {found}/{planted}; false differences {false_diff}")
    print(f"  wrong-side values        {wrong_side}")
    print(f"  citation accuracy        {pct(cite_ok, cited)} ({cite_ok}/{cited} cited cells)")
    return {"accuracy": right / total if total else 0, "wrong_side": wrong_side}


def score_extract(args, pairs, n):
    valid = fields_ok = fields = cited = cite_ok = 0
    for i, (ta, _) in enumerate(pairs[:n]):
        res, _, err = run(args, ["summarize", os.path.join(args.out, f"pair{i:02d}-a.pdf"),
                                 "--pipeline", "extract-key-terms"])
        if res is None or not isinstance(res.get("json"), dict):
            continue
        valid += 1
        j = res["json"]
        if "fields" in j:
            for t in TERMS:
                f = j["fields"].get(t) or {}
                want = norm_value(t, ta[t] if t != "termination_notice" else ta[t] + " days")
                got = norm_value(t, f.get("value"))
                fields += 1
                fields_ok += got == want
                if f.get("verified"):
                    cited += 1
                    cite_ok += got == want and f.get("page") == TERM_PAGE[t]
        else:  # the older {parties, dates, amounts, governing_law}
            fields += 2
            fields_ok += norm_value("governing_law", j.get("governing_law")) == \
                norm_value("governing_law", ta["governing_law"])
            fields_ok += any(norm_value("price", x) == norm_value("price", ta["price"])
                             for x in j.get("amounts", []))
    pct = lambda x, y: f"{100.0 * x / y:.1f}%" if y else "n/a"
    print(f"extract-key-terms ({n} contracts)")
    print(f"  valid JSON               {pct(valid, n)}")
    print(f"  field accuracy           {pct(fields_ok, fields)} ({fields_ok}/{fields})")
    print(f"  citation accuracy        {pct(cite_ok, cited)} ({cite_ok}/{cited} cited fields)")


def score_summaries(args, reports, name=None, ctx=0):
    recall = planted = halluc = stated = cited_lines = lines = cite_ok = 0
    strategies = set()
    for i, f in enumerate(reports):
        path = os.path.join(args.out, name or f"report{i:02d}.pdf")
        res, _, err = run(args, ["summarize", path] + (["--ctx", str(ctx)] if ctx else []))
        if res is None:
            print(f"  report {i}: failed: {err}", file=sys.stderr)
            planted += len(f)
            continue
        text = res.get("text", "")
        strategies.add(res.get("strategy", "?"))
        doc = json.loads(subprocess.run([args.ellm, "extract", path, "--json"], capture_output=True,
                                        text=True).stdout)
        page_figs = {p["number"]: figures(p["text"]) for p in doc["pages"]}
        src_figs = [x for figs in page_figs.values() for x in figs]
        out_figs = figures(re.sub(r"\[(?:p\.|page) \d+(?:, \d+)*\]", "", text))
        for value in f.values():
            planted += 1
            want = figures(value)[0]
            recall += want in out_figs
        m = re.search(r"## Key figures\n(.*?)(?:\n\n## |\Z)", text, re.S)
        for line in (m.group(1).splitlines() if m else []):
            clean = re.sub(r"\[(?:p\.|page) \d+(?:, \d+)*\]", "", line)
            figs = figures(clean)
            if not figs:
                continue
            lines += 1
            cm = re.search(r"\[(?:p\.|page) (\d+(?:, \d+)*)\]", line)
            cited_lines += bool(cm)
            if cm:
                cited = [int(x) for x in cm.group(1).split(", ")]
                cite_ok += all(any(fig in page_figs.get(p, []) for p in cited) for fig in figs)
            for fig in figs:
                stated += 1
                halluc += fig not in src_figs
    pct = lambda x, y: f"{100.0 * x / y:.1f}%" if y else "n/a"
    label = f"{len(reports)} reports" if not name else f"{name}, --ctx {ctx}"
    print(f"summarize-report ({label}; {', '.join(sorted(strategies))})")
    print(f"  figure recall            {pct(recall, planted)} ({recall}/{planted} planted figures)")
    print(f"  hallucinated figures     {pct(halluc, stated)} ({halluc}/{stated} in Key figures)")
    print(f"  lines with a citation    {pct(cited_lines, lines)} ({cited_lines}/{lines})")
    print(f"  citation accuracy        {pct(cite_ok, cited_lines)} (cited page holds every figure)")


# --- real documents -----------------------------------------------------------

REAL_FACTS = os.path.join(REPO, "bench", "real_facts.json")
REAL_CACHE = os.path.expanduser("~/.cache/ellm/real-docs")
CITE = re.compile(r"\[(?:p\.|pp\.|page|pages) (\d+(?:\s*[-,–]\s*\d+)*)\]")
# Words that say nothing about what a statement claims.
STOPWORDS = set("""
about above after also been being both cannot could does doing each from have having here into
itself just more most much must only other over same should some such than that their them then
there these they this those through under very were what when where which while will with would
your summary report document page pages section sections describes described provides discusses
""".split())
REAL_ALIASES = ("all", "short", "long", "none")
# Names with digits in them (FTS5, unicode61, FTS3/4, TH3, UTF-16) are no figures.
IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*-?\d[A-Za-z0-9_]*(?:/\d+)*")


# An outline line's section number and page range ("- 2. Test Harnesses
# (pp. 1-2): ...") are no figures either.
SECTION_NUMBER = re.compile(r"(?m)^(\s*(?:[-*\u2022]\s+)?)\d+(?:\.\d+)*\.?\s+(?=[A-Z])")
PAGE_RANGE = re.compile(r"\((?:p\.|pp\.) \d+(?:\s*[-\u2013]\s*\d+)?\)")


def real_figures(text):
    text = PAGE_RANGE.sub("", SECTION_NUMBER.sub(r"\1", text))
    return figures(IDENTIFIER.sub(" ", CITE.sub("", text)))


def real_names(wanted):
    """Document names of real_facts.json that --real selects, in file order."""
    docs = json.load(open(REAL_FACTS))["documents"]
    out = []
    for w in wanted:
        for part in w.split(","):
            if part == "none":
                continue
            if part == "all":
                out += list(docs)
            elif part in ("short", "long"):
                out += [n for n, d in docs.items() if bool(d.get("long")) == (part == "long")]
            elif part in docs:
                out.append(part)
            else:
                sys.exit(f"--real: no document {part!r} in {REAL_FACTS} (have: {', '.join(docs)})")
    return list(dict.fromkeys(out))


def cited_pages(text):
    """Pages a "[p. 3]", "[p. 2, 5]" or "[p. 4-6]" citation names."""
    pages = set()
    for m in CITE.finditer(text):
        for part in re.split(r"\s*,\s*", m.group(1)):
            ends = [int(x) for x in re.split(r"\s*[-–]\s*", part) if x]
            pages.update(range(ends[0], ends[-1] + 1) if len(ends) == 2 and ends[1] - ends[0] < 50
                         else ends)
    return pages


def content_words(text):
    return {w for w in re.findall(r"[a-z0-9][a-z0-9_]*", text.lower())
            if len(w) >= 4 and w not in STOPWORDS}


def statements(summary):
    """Sentences and bullets of a summary with words to check; headings left out."""
    out = []
    for line in summary.splitlines():
        line = line.strip()
        # Headings, and the pipeline's own notes ("(no statement could be
        # traced to the source)"), are no statements.
        if not line or line.startswith("#") or (line.startswith("(") and line.endswith(")")):
            continue
        line = re.sub(r"^(?:[-*\u2022]|\d+[.)])\s+", "", line)
        # A Contents line's heading and pages ("4. Fuzz Testing (pp. 3-6): ")
        # are the document's own words, not a statement.
        line = re.sub(r"^[^\n]{0,160}?\((?:pp?\.) [\d\-\u2013]+\):\s*", "", line)
        if re.fullmatch(r"[^\n]{0,160}?\((?:pp?\.) [\d\-\u2013]+\)", line):
            continue  # a Contents line with nothing said about its section
        # A citation after the full stop belongs to the sentence before it.
        for sent in re.split(r"(?<=[.!?\]])\s+(?=[A-Z\"(])", line):
            # The label of a Contents line's computed key terms is ours.
            sent = re.sub(r"^Terms: ", "", sent)
            if content_words(CITE.sub("", sent)):
                out.append(sent)
    return out


def term_found(term, text):
    """A key term at the start of a word; case-sensitive when it has no lowercase letter."""
    flags = 0 if term == term.upper() else re.I
    return re.search(r"(?<![A-Za-z0-9])" + re.escape(term), text, flags) is not None


def make_real_documents(args, names):
    """Writes OUT/real/NAME.pdf and .sections.json; False (with a note) if that fails."""
    docs = json.load(open(REAL_FACTS))["documents"]
    out = os.path.join(args.out, "real")
    p = subprocess.run([ensure_venv(), os.path.join(REPO, "bench", "real_docs.py"), REAL_CACHE, out]
                       + [docs[n]["html"][:-len(".html")] for n in names],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(f"real documents skipped: bench/real_docs.py failed: {p.stderr.strip()[-400:]}",
              file=sys.stderr)
        return False
    if p.stderr.strip():
        print(p.stderr.strip(), file=sys.stderr)
    return True


def token_count(args, pdf):
    """Tokens of the text the model sees of pdf (ellm extract), or None."""
    txt = pdf[:-len(".pdf")] + ".txt"
    with open(txt, "w") as fh:
        fh.write(subprocess.run([args.ellm, "extract", pdf], capture_output=True, text=True).stdout)
    p = subprocess.run([args.ellm, "tokenize", "--model", args.model, "--file", txt],
                       capture_output=True, text=True)
    return len(json.loads(p.stdout)) if p.returncode == 0 else None


def score_real_document(args, name, doc):
    """Counts for one real document (see the module docstring), or None if it failed."""
    pdf = os.path.join(args.out, "real", doc["html"][:-len(".html")] + ".pdf")
    sections = json.load(open(pdf[:-len(".pdf")] + ".sections.json"))
    tokens = token_count(args, pdf)
    ctx = args.real_ctx if doc.get("long") else 0
    res, secs, err = run(args, ["summarize", pdf] + (["--ctx", str(ctx)] if ctx else []))
    if res is None:
        print(f"  {name}: failed after {secs:.0f} s: {err}", file=sys.stderr)
        return None
    text = res.get("text", "")
    with open(pdf[:-len(".pdf")] + ".result.json", "w") as fh:
        json.dump(res, fh, indent=1)
    pages = {p["number"]: p["text"] for p in json.loads(subprocess.run(
        [args.ellm, "extract", pdf, "--json"], capture_output=True, text=True).stdout)["pages"]}
    page_figs = {n: real_figures(t) for n, t in pages.items()}
    page_words = {n: content_words(t) for n, t in pages.items()}
    src_figs = {x for figs in page_figs.values() for x in figs}
    c = {"tokens": tokens or 0, "secs": secs, "strategy": res.get("strategy", "?")}

    body = "\n".join(re.sub(r"^(?:[-*\u2022]\s+)?(?:\d+(?:\.\d+)*[.)]?\s+(?=[A-Z]))?", "", l.strip())
                     for l in text.splitlines() if not l.lstrip().startswith("#"))
    out_figs = real_figures(body)
    c["facts"] = len(doc["facts"])
    c["facts_found"] = 0
    for f in doc["facts"]:
        hit = figures(f["figure"])[0] in out_figs
        c["facts_found"] += hit
        if not hit and args.verbose:
            print(f"    {name}: missed {f['figure']} ({f['description']}; {f['section']})")

    c["figures"] = len(out_figs)
    c["figures_in_doc"] = sum(x in src_figs for x in out_figs)
    c["figures_cited"] = c["figures_on_page"] = 0
    c["statements"] = c["cited"] = c["supported"] = 0
    for st in statements(text):
        c["statements"] += 1
        cited = cited_pages(st)
        if not cited:
            continue
        c["cited"] += 1
        words = content_words(CITE.sub("", st))
        there = set().union(*(page_words.get(n, set()) for n in cited))
        ok = len(words & there) >= 0.6 * len(words)
        c["supported"] += ok
        if not ok and args.verbose:
            print(f"    {name}: unsupported by p. {sorted(cited)} "
                  f"({len(words & there)}/{len(words)} words): {st[:160]}")
        for fig in real_figures(st):
            c["figures_cited"] += 1
            c["figures_on_page"] += any(fig in page_figs.get(n, []) for n in cited)

    terms = doc["key_terms"]
    heads = [s["heading"] for s in sections["sections"]]
    for h in set(heads) ^ set(terms):
        print(f"  {name}: section {h!r} is in only one of real_docs.py's headings and "
              "real_facts.json's key_terms", file=sys.stderr)
    c["sections"] = len(heads)
    c["covered"] = c["covered_by_model"] = 0
    # A heading repeated (the Contents lines) covers nothing by itself: the
    # terms must stand in what is said about a section. "Terms: ..." lists
    # are the pipeline's own tf-idf picks; the model's sentences are scored
    # without them too.
    said = text
    for h in sorted(heads, key=len, reverse=True):
        said = said.replace(h, " ")
    by_model = re.sub(r"Terms: [^\n]*", " ", said)
    for h in heads:
        hit = any(term_found(t, said) for t in terms.get(h, []))
        c["covered"] += hit
        c["covered_by_model"] += any(term_found(t, by_model) for t in terms.get(h, []))
        if not hit and args.verbose:
            print(f"    {name}: section not covered: {h}")
    return c


def print_real(label, c):
    pct = lambda x, y: f"{100.0 * x / y:.1f}%" if y else "n/a"
    print(f"  {label}")
    print(f"    fact recall            {pct(c['facts_found'], c['facts'])} "
          f"({c['facts_found']}/{c['facts']} hand-checked facts)")
    halluc = c["figures"] - c["figures_in_doc"]
    print(f"    figures                {c['figures']} in the summary; {c['figures_in_doc']} in the "
          f"document, hallucinated {pct(halluc, c['figures'])}; {c['figures_on_page']}/"
          f"{c['figures_cited']} cited ones on their cited page")
    print(f"    coverage               {pct(c['covered'], c['sections'])} "
          f"({c['covered']}/{c['sections']} top-level sections; by the model's sentences "
          f"alone {c['covered_by_model']}/{c['sections']})")
    print(f"    statement support      {pct(c['supported'], c['cited'])} "
          f"({c['supported']}/{c['cited']} cited statements); uncited "
          f"{c['statements'] - c['cited']}/{c['statements']}")


def score_real(args, names):
    if not make_real_documents(args, names):
        return
    docs = json.load(open(REAL_FACTS))["documents"]
    version = json.load(open(REAL_FACTS))["checked_against"]
    print(f"summarize-report on real documents (SQLite documentation; facts checked against "
          f"{version}; long ones at --ctx {args.real_ctx})")
    total, done = {}, 0
    for name in names:
        c = score_real_document(args, name, docs[name])
        if c is None:
            continue
        done += 1
        print_real(f"{name}: {docs[name]['title']} ({c['tokens']} tokens; {c['strategy']}; "
                   f"{c['secs']:.0f} s)", c)
        for k, v in c.items():
            if not isinstance(v, str):
                total[k] = total.get(k, 0) + v
    if total:
        print_real(f"total ({done} documents, {total['tokens']} tokens, "
                   f"{total['secs']:.0f} s)", total)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ellm", default=os.path.join(REPO, "build", "release", "cli", "ellm"))
    ap.add_argument("--model", default=os.environ.get("ELLM_TEST_MODEL",
                                                      os.path.join(REPO, "models", "gemma-3-270m-q4_k_m.gguf")))
    ap.add_argument("--pipelines", default="", help="pipeline directory (default: the binary's)")
    ap.add_argument("--out", default="/tmp/ellm-quality")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--reports", type=int, default=5)
    ap.add_argument("--extract", type=int, default=5)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--long", type=int, default=100, help="pages of the long report (0: none)")
    ap.add_argument("--long-ctx", type=int, default=4096, help="context for it (map-reduce)")
    ap.add_argument("--real", nargs="+", default=["all"], metavar="NAME",
                    help="real documents (" + " ".join(REAL_ALIASES) + " or names; default all)")
    ap.add_argument("--real-ctx", type=int, default=32768, help="context for the long real documents")
    ap.add_argument("--verbose", action="store_true",
                    help="print every wrong term, missed fact and unsupported statement")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if os.path.exists(os.path.join(args.out, "q.db")):
        os.remove(os.path.join(args.out, "q.db"))
    pairs = planted_pairs(args.pairs, args.seed)
    reports = planted_reports(args.reports, args.seed)
    make_documents(args.out, pairs, reports, args.long)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"quality harness: {args.ellm} {args.pipelines or '(shipped pipelines)'}; model "
          f"{os.path.basename(args.model)}; CPU {cpu}; seed {args.seed}")
    if pairs:
        score_compare(args, pairs)
    if args.extract and pairs:
        score_extract(args, pairs, min(args.extract, len(pairs)))
    if reports:
        score_summaries(args, reports)
    if args.long and reports:
        score_summaries(args, reports[:1], "long.pdf", args.long_ctx)
    real = real_names(args.real)
    if real:
        score_real(args, real)
    print_decode_cost()


if __name__ == "__main__":
    main()
