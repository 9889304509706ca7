#!/usr/bin/env python3
"""Writes the Word fixtures tests/ingest/office_test.cc reads:

  tracked.docx    WordprocessingML written here by hand, as Word writes it:
                  heading styles numbered through numbering.xml ("1.", "2."),
                  sub-clauses "(a)", "(b)" from a second list level, a tracked
                  insertion and deletion, a comment, a table, a page break,
                  and the title in docProps/core.xml.
  encrypted.docx  a LibreOffice-written .docx encrypted with the password
                  "secret" by msoffcrypto-tool (Agile encryption, as Word 2013+).
  corrupt.docx    the first half of that LibreOffice .docx.

    python3 -m venv /tmp/offvenv && /tmp/offvenv/bin/pip install msoffcrypto-tool==6.1.0
    /tmp/offvenv/bin/python tests/data/office/make_fixtures.py   # needs soffice

The committed files are what the tests read; CI does not run this script.
"""
import os
import subprocess
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
STAMP = (1980, 1, 1, 0, 0, 0)  # fixed entry times: the same bytes on every run

CONTENT_TYPES = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>
<Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/>
<Override PartName="/word/comments.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.comments+xml"/>
<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>
</Types>"""

RELS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>
<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>
</Relationships>"""

DOC_RELS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>
<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/>
<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments" Target="comments.xml"/>
</Relationships>"""

CORE = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:title>Consulting Agreement</dc:title><dc:creator>Legal Team</dc:creator></cp:coreProperties>"""

STYLES = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles {W}>
<w:style w:type="paragraph" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/>
<w:pPr><w:numPr><w:numId w:val="1"/></w:numPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="ClauseSub"><w:name w:val="Clause Sub"/><w:basedOn w:val="Normal"/>
<w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr></w:pPr></w:style>
</w:styles>"""

NUMBERING = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:numbering {W}>
<w:abstractNum w:abstractNumId="0">
<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl>
<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="(%2)"/></w:lvl>
</w:abstractNum>
<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>
</w:numbering>"""

COMMENTS = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:comments {W}><w:comment w:id="0" w:author="Reviewer"><w:p><w:r><w:t>Check this figure with finance.</w:t></w:r></w:p></w:comment></w:comments>"""


def para(text, style=None, extra=""):
    ppr = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f'<w:p>{ppr}{extra}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>'


def cell(text):
    return f"<w:tc>{para(text)}</w:tc>"


BODY = "".join([
    para("Consulting Agreement", "Title"),
    para("This agreement is made between Northgate Analytics LLC (the \"Consultant\") and "
         "Riverside Health Trust (the \"Client\")."),
    para("Services", "Heading1"),
    para("The Consultant shall deliver a data audit.", "ClauseSub"),
    para("The Consultant shall train the Client's staff.", "ClauseSub"),
    para("Fees", "Heading1"),
    # A tracked change: "EUR 9,000" deleted, "EUR 9,500" inserted; and a comment.
    '<w:p><w:r><w:t xml:space="preserve">The Client shall pay </w:t></w:r>'
    '<w:del w:id="1" w:author="Reviewer"><w:r><w:delText>EUR 9,000</w:delText></w:r></w:del>'
    '<w:ins w:id="2" w:author="Reviewer"><w:r><w:t>EUR 9,500</w:t></w:r></w:ins>'
    '<w:commentRangeStart w:id="0"/><w:r><w:t xml:space="preserve"> per month</w:t></w:r>'
    '<w:commentRangeEnd w:id="0"/><w:r><w:commentReference w:id="0"/></w:r>'
    '<w:r><w:t>.</w:t></w:r></w:p>',
    "<w:tbl><w:tr>" + cell("Milestone") + cell("Due") + "</w:tr><w:tr>" + cell("Audit report") +
    cell("30 June 2026") + "</w:tr></w:tbl>",
    '<w:p><w:r><w:br w:type="page"/></w:r></w:p>',
    para("Term", "Heading1"),
    para("This agreement ends on 31 December 2026."),
    '<w:del w:id="3" w:author="Reviewer"><w:p><w:r><w:delText>A deleted paragraph.</w:delText>'
    '</w:r></w:p></w:del>',
])

DOCUMENT = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document {W}><w:body>{BODY}<w:sectPr/></w:body></w:document>"""


def write_zip(path, parts):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts:
            z.writestr(zipfile.ZipInfo(name, STAMP), data)


def main():
    write_zip(os.path.join(HERE, "tracked.docx"), [
        ("[Content_Types].xml", CONTENT_TYPES), ("_rels/.rels", RELS),
        ("word/_rels/document.xml.rels", DOC_RELS), ("word/document.xml", DOCUMENT),
        ("word/styles.xml", STYLES), ("word/numbering.xml", NUMBERING),
        ("word/comments.xml", COMMENTS), ("docProps/core.xml", CORE)])
    import msoffcrypto.format.ooxml
    with tempfile.TemporaryDirectory() as tmp:
        html = os.path.join(tmp, "plain.html")
        with open(html, "w") as f:
            f.write("<html><body><h1>Secret terms</h1><p>The price is EUR 1.</p></body></html>")
        subprocess.run(["soffice", "--headless", "-env:UserInstallation=file://" + tmp + "/profile",
                        "--infilter=HTML (StarWriter)", "--convert-to", "docx:MS Word 2007 XML",
                        "--outdir", tmp, html], check=True, capture_output=True)
        plain = os.path.join(tmp, "plain.docx")
        with open(plain, "rb") as src, open(os.path.join(HERE, "encrypted.docx"), "wb") as out:
            msoffcrypto.format.ooxml.OOXMLFile(src).encrypt("secret", out)
        data = open(plain, "rb").read()
        open(os.path.join(HERE, "corrupt.docx"), "wb").write(data[: len(data) // 2])


if __name__ == "__main__":
    main()
