#!/usr/bin/env python3
"""Writes the sample documents in configs/samples/ (committed; CI does not run this).

    python3 -m venv /tmp/pdfgen && /tmp/pdfgen/bin/pip install reportlab==5.1.0
    /tmp/pdfgen/bin/python configs/samples/make_samples.py            # the samples
    /tmp/pdfgen/bin/python configs/samples/make_samples.py --long 100 /tmp/r100.pdf

- northwind-annual-report-2025.pdf: a 4-page annual report with running
  header and footer; its key figures are stated on known pages (see FACTS).
- contract-a.pdf / contract-b.pdf: two versions of a supply agreement that
  differ in amounts, dates, termination and liability.
- northwind-annual-report-2025-long.pdf: the same report padded to 14 pages
  with segment reviews, for map-reduce tests at a small context.
- --long N OUT: an N-page report for timing runs.
Deterministic output (reportlab invariant mode).
"""
import os
import sys

from reportlab.lib.pagesizes import A4
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfgen import canvas

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = A4
M = 64
FONT, SIZE = "Helvetica", 11

# Figures a correct summary must carry, with their pages.
FACTS = {
    "revenue": ("EUR 4.2 billion", 2),
    "operating_profit": ("EUR 610 million", 2),
    "net_debt": ("EUR 1.9 billion", 2),
    "dividend": ("EUR 0.84 per share", 2),
}

REPORT = [
    ("Northwind Energy plc - Annual Report 2025", [
        "Northwind Energy is a renewable power producer with wind and solar farms in Spain, "
        "Portugal and France. This report reviews the financial year 2025 for shareholders "
        "and lenders: results, financial position, risks and the outlook for 2026.",
        "The purpose of this report is to explain how the company grew its installed capacity "
        "by 1.1 gigawatts while keeping its balance sheet strong, and what the board expects "
        "next.",
    ]),
    ("Financial highlights", [
        "Revenue rose 12% to EUR 4.2 billion, driven by new wind capacity in Spain and "
        "Portugal.",
        "Operating profit was EUR 610 million, up from EUR 540 million in 2024.",
        "Net debt fell to EUR 1.9 billion, and the net debt to EBITDA ratio improved to 2.1.",
        "The board proposes a dividend of EUR 0.84 per share, payable in May 2026.",
    ]),
    ("Risks", [
        "The main risks are higher interest rates on refinancing, delays in turbine supply "
        "from two manufacturers, and lower wholesale power prices in Iberia.",
        "Regulatory change in France could delay permits for three solar projects.",
    ]),
    ("Outlook and conclusions", [
        "The board expects revenue growth of 6 to 8 percent in 2026 as the Douro wind farm "
        "reaches full output. Capital spending will stay near EUR 900 million.",
        "In conclusion, 2025 was a year of profitable growth with lower leverage, and the "
        "company enters 2026 with a funded investment plan.",
    ]),
]

SEGMENT = ("Segment review: {name}", [
    "The {name} segment operated {mw} megawatts at the end of the year. Availability was "
    "{avail} percent and the load factor was {lf} percent, in line with the long-term average.",
    "Maintenance costs in {name} were EUR {cost} million. Two substations were upgraded and "
    "the control room moved to the regional operations centre.",
    "Local community funds received EUR {fund} thousand for schools, roads and training "
    "programmes near the sites.",
])


def wrap(text, width):
    lines, cur = [], ""
    for word in text.split():
        trial = word if not cur else cur + " " + word
        if pdfmetrics.stringWidth(trial, FONT, SIZE) <= width:
            cur = trial
        else:
            lines.append(cur)
            cur = word
    if cur:
        lines.append(cur)
    return lines


def write_pages(path, title, pages, header):
    c = canvas.Canvas(path, pagesize=A4, invariant=1)
    c.setTitle(title)
    c.setAuthor("Northwind Energy plc")
    for n, (heading, paras) in enumerate(pages, start=1):
        c.setFont(FONT, 8)
        c.drawString(M, H - 36, header)
        c.drawRightString(W - M, 30, f"Page {n} of {len(pages)}")
        y = H - M - 20
        c.setFont("Helvetica-Bold", 14)
        c.drawString(M, y, heading)
        y -= 28
        c.setFont(FONT, SIZE)
        for p in paras:
            for line in wrap(p, W - 2 * M):
                c.drawString(M, y, line)
                y -= 15
            y -= 10
        c.showPage()
    c.save()


def long_report(n_pages):
    pages = list(REPORT)
    names = ["Spain North", "Spain South", "Portugal", "France", "Offshore", "Solar", "Storage"]
    i = 0
    while len(pages) < n_pages:
        name = names[i % len(names)] + ("" if i < len(names) else f" {i // len(names) + 1}")
        h, paras = SEGMENT
        vals = dict(name=name, mw=300 + 37 * i, avail=96 + i % 3, lf=27 + i % 9,
                    cost=11 + i % 7, fund=120 + 15 * i)
        pages.insert(len(pages) - 1, (h.format(**vals), [p.format(**vals) for p in paras]))
        i += 1
    return pages


CONTRACT = [
    ("Supply Agreement", [
        "This Supply Agreement is made between Northwind Energy plc (the Buyer) and "
        "{seller} (the Supplier) on {date}.",
        "The Supplier shall deliver {count} wind turbines of type NX-5 to the Buyer's sites in "
        "Spain. Delivery shall be completed by {delivery}.",
        "The Buyer shall pay a total price of {price}, in three instalments: 20% on signing, "
        "50% on delivery and 30% on commissioning.",
    ]),
    ("Termination, liability and law", [
        "Either party may terminate this Agreement with {notice} days written notice if the "
        "other party materially breaches it and does not cure the breach.",
        "The Supplier's total liability under this Agreement is limited to {cap} of the total "
        "price, except for death, personal injury or fraud.",
        "This Agreement is governed by the laws of {law}.",
    ]),
]


def contract(path, **vals):
    pages = [(h, [p.format(**vals) for p in paras]) for h, paras in CONTRACT]
    write_pages(path, "Supply Agreement", pages, "Supply Agreement - Confidential")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--long":
        write_pages(sys.argv[3], "Northwind Energy plc - Annual Report 2025",
                    long_report(int(sys.argv[2])), "Northwind Energy plc - Annual Report 2025")
        return
    header = "Northwind Energy plc - Annual Report 2025"
    write_pages(os.path.join(HERE, "northwind-annual-report-2025.pdf"),
                "Northwind Energy plc - Annual Report 2025", REPORT, header)
    write_pages(os.path.join(HERE, "northwind-annual-report-2025-long.pdf"),
                "Northwind Energy plc - Annual Report 2025", long_report(14), header)
    contract(os.path.join(HERE, "contract-a.pdf"), seller="Aero Turbines SA",
             date="3 March 2025", count="12", delivery="30 June 2026",
             price="EUR 96 million", notice="30", cap="100%", law="Spain")
    contract(os.path.join(HERE, "contract-b.pdf"), seller="Aero Turbines SA",
             date="3 March 2025", count="14", delivery="31 December 2026",
             price="EUR 118 million", notice="90", cap="50%", law="England and Wales")


if __name__ == "__main__":
    main()
