#!/usr/bin/env python3
"""Writes the scanned-document cases of the OCR tests (tests/ingest/ocr_test.cc).

Every page here is an image with no text layer, as a scanner makes it:

- scanned.pdf: single_column.pdf rendered to grey pixels at 200 dpi by
  pdftoppm and wrapped back into a PDF by img2pdf (its text is
  single_column.txt);
- mixed_scan.pdf: four pages, pdfunite'd: page 1 of single_column.pdf with
  its text layer, page 2 of scanned.pdf, a blank white scan, and a
  "photo" (a smooth gradient with noise and no writing);
- fax.tif: both pages of single_column.pdf in one two-page TIFF (200 dpi
  grey, Deflate), truncated.tif its first half, and bomb.png a PNG whose
  header claims 50000 x 50000 pixels (a decompression bomb's first bytes);
- tests/data/office/scan.docx: a Word file (WordprocessingML written here)
  whose second paragraph is a picture: page 2 of single_column.pdf as a
  150-dpi grey PNG, between two paragraphs of text; scan.odt: the same
  converted by LibreOffice (soffice --headless --convert-to odt);
- tests/data/contracts/{services,nda}/{a,b}_scan.pdf: the hand-drafted
  contract pairs scanned the same way (200 dpi grey), for the comparison
  of a scanned pair (tests/integration/compare_cli_test.cc).

Needs poppler-utils, img2pdf and LibreOffice (scripts/bootstrap installs them); the
images are written as PNG with the standard library only. The committed
outputs are what the tests read; CI does not run this script.

    python3 tests/data/pdf/make_scans.py
"""
import os
import random
import struct
import subprocess
import tempfile
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def write_png(path, width, height, pixel):
    """An 8-bit grey PNG whose pixel (x, y) is pixel(x, y)."""
    rows = b"".join(b"\0" + bytes(pixel(x, y) for x in range(width)) for y in range(height))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(rows, 9)))
        f.write(chunk(b"IEND", b""))


def write_tiff(path, pages, dpi):
    """A multi-page grey TIFF (one Deflate-compressed strip per page), as a
    fax or a document scanner writes; pages are (width, height, pixels)."""
    out = bytearray(b"II*\0\0\0\0\0")
    link = 4  # where the offset of the next IFD goes
    for width, height, pixels in pages:
        data = zlib.compress(bytes(pixels), 9)
        strip = len(out)
        out += data
        if len(out) % 2:
            out += b"\0"
        res = len(out)
        out += struct.pack("<II", dpi, 1)
        entries = [(256, 4, width), (257, 4, height), (258, 3, 8), (259, 3, 8), (262, 3, 1),
                   (273, 4, strip), (277, 3, 1), (278, 4, height), (279, 4, len(data)),
                   (282, 5, res), (283, 5, res), (296, 3, 2)]
        ifd = len(out)
        struct.pack_into("<I", out, link, ifd)
        out += struct.pack("<H", len(entries))
        for tag, kind, value in entries:
            out += struct.pack("<HHI", tag, kind, 1)
            out += struct.pack("<HH", value, 0) if kind == 3 else struct.pack("<I", value)
        link = len(out)
        out += b"\0\0\0\0"
    with open(path, "wb") as f:
        f.write(out)


def read_pgm(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, width, height, _, rest = data.split(maxsplit=4)
    assert magic == b"P5"
    return int(width), int(height), rest[:int(width) * int(height)]


WORD_NS = ('xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
           'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
           'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
           'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
           'xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"')


def write_docx_with_picture(path, png):
    """A Word file: a paragraph, a paragraph holding the picture, a paragraph."""
    picture = ('<w:drawing><wp:inline><wp:extent cx="5000000" cy="7000000"/><wp:docPr id="1" '
               'name="Picture 1"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.'
               'org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="1" '
               'name="image1.png"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip '
               'r:embed="rId7"/></pic:blipFill><pic:spPr/></pic:pic></a:graphicData>'
               '</a:graphic></wp:inline></w:drawing>')
    document = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                f'<w:document {WORD_NS}><w:body>'
                '<w:p><w:r><w:t>The signed page follows.</w:t></w:r></w:p>'
                f'<w:p><w:r>{picture}</w:r></w:p>'
                '<w:p><w:r><w:t>End of the document.</w:t></w:r></w:p>'
                '</w:body></w:document>')
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    parts = [
        ("[Content_Types].xml",
         '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Types xmlns="http://schemas.'
         'openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType='
         '"application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" '
         'ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/>'
         '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
         'officedocument.wordprocessingml.document.main+xml"/></Types>'),
        ("_rels/.rels",
         '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="http://'
         'schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" '
         f'Type="{rel}/officeDocument" Target="word/document.xml"/></Relationships>'),
        ("word/document.xml", document),
        ("word/_rels/document.xml.rels",
         '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="http://'
         'schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId7" '
         f'Type="{rel}/image" Target="media/image1.png"/></Relationships>'),
        ("word/media/image1.png", png),
    ]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts:
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)


def run(*args):
    subprocess.run(args, check=True)


def main():
    tmp = tempfile.mkdtemp()
    single = os.path.join(HERE, "single_column.pdf")
    run("pdftoppm", "-r", "200", "-gray", "-png", single, os.path.join(tmp, "page"))
    pages = sorted(p for p in os.listdir(tmp) if p.startswith("page"))
    scanned = os.path.join(HERE, "scanned.pdf")
    # A4 at 200 dpi is 1654 x 2339 pixels; img2pdf keeps the size in points.
    run("img2pdf", "--pagesize", "A4", *[os.path.join(tmp, p) for p in pages], "-o", scanned)
    contracts = os.path.join(HERE, "..", "contracts")
    for pair in ("services", "nda"):
        for side in ("a", "b"):
            stem = os.path.join(tmp, f"{pair}-{side}")
            run("pdftoppm", "-r", "200", "-gray", "-png",
                os.path.join(contracts, pair, side + ".pdf"), stem)
            images = sorted(os.path.join(tmp, p) for p in os.listdir(tmp)
                            if p.startswith(f"{pair}-{side}-"))
            run("img2pdf", "--pagesize", "A4", *images, "-o",
                os.path.join(contracts, pair, side + "_scan.pdf"))

    # 50 dpi is enough for pages with no writing on them.
    w, h = 413, 585  # 50 dpi
    write_png(os.path.join(tmp, "blank.png"), w, h, lambda x, y: 255)
    rng = random.Random(7)
    write_png(os.path.join(tmp, "photo.png"), w, h,
              lambda x, y: max(0, min(255, 60 + (x * 120) // w + (y * 60) // h
                                      + rng.randint(-12, 12))))
    for name in ("blank", "photo"):
        run("img2pdf", "--pagesize", "A4", os.path.join(tmp, name + ".png"),
            "-o", os.path.join(tmp, name + ".pdf"))
    run("pdfseparate", "-f", "1", "-l", "1", single, os.path.join(tmp, "text-%d.pdf"))
    run("pdfseparate", "-f", "2", "-l", "2", scanned, os.path.join(tmp, "scan-%d.pdf"))
    run("pdfunite", os.path.join(tmp, "text-1.pdf"), os.path.join(tmp, "scan-2.pdf"),
        os.path.join(tmp, "blank.pdf"), os.path.join(tmp, "photo.pdf"),
        os.path.join(HERE, "mixed_scan.pdf"))
    # fax.tif: both pages of single_column.pdf as one two-page TIFF;
    # truncated.tif: its first half; bomb.png: a PNG header claiming
    # 50000 x 50000 pixels over a few bytes of data.
    run("pdftoppm", "-r", "200", "-gray", single, os.path.join(tmp, "fax"))
    faxes = sorted(p for p in os.listdir(tmp) if p.startswith("fax") and p.endswith(".pgm"))
    fax = os.path.join(HERE, "fax.tif")
    write_tiff(fax, [read_pgm(os.path.join(tmp, p)) for p in faxes], 200)
    with open(fax, "rb") as f:
        whole = f.read()
    with open(os.path.join(HERE, "truncated.tif"), "wb") as f:
        f.write(whole[:len(whole) // 2])
    write_png(os.path.join(tmp, "tiny.png"), 8, 8, lambda x, y: 255)
    with open(os.path.join(tmp, "tiny.png"), "rb") as f:
        tiny = bytearray(f.read())
    struct.pack_into(">II", tiny, 16, 50000, 50000)
    struct.pack_into(">I", tiny, 29, zlib.crc32(bytes(tiny[12:29])))
    with open(os.path.join(HERE, "bomb.png"), "wb") as f:
        f.write(tiny)
    run("pdftoppm", "-r", "150", "-gray", "-png", "-f", "2", "-l", "2", "-singlefile", single,
        os.path.join(tmp, "picture"))
    with open(os.path.join(tmp, "picture.png"), "rb") as f:
        write_docx_with_picture(os.path.join(HERE, "..", "office", "scan.docx"), f.read())
    run("soffice", "--headless", "--convert-to", "odt", "--outdir",
        os.path.join(HERE, "..", "office"), os.path.join(HERE, "..", "office", "scan.docx"))
    for name in ("scanned.pdf", "mixed_scan.pdf", "fax.tif", "truncated.tif", "bomb.png"):
        print(f"{os.path.getsize(os.path.join(HERE, name)):8d}  {name}")


if __name__ == "__main__":
    main()
