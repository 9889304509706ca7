#!/usr/bin/env python3
"""Writes the seed-*.form inputs of the `multipart` fuzz target into
tests/server/multipart_corpus/ (tests/fuzz/multipart_harness.h: the
boundary on the first line, the body after it)."""
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server", "multipart_corpus")


def form(boundary, parts, close=True):
    out = boundary + "\n"
    for headers, content in parts:
        out += "--" + boundary + "\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n"
        out += content + "\r\n"
    if close:
        out += "--" + boundary + "--\r\n"
    return out


def cd(name, filename=None):
    tail = '; filename="%s"' % filename if filename else ""
    return 'Content-Disposition: form-data; name="%s"%s' % (name, tail)


SEEDS = {
    "seed-upload.form": form("XyZ", [([cd("pipeline")], "document-stats"),
                                     ([cd("doc", "a.txt"), "Content-Type: text/plain"],
                                      "hello world")]),
    "seed-params.form": form("b0undary", [([cd("pipeline")], "summarize-report"),
                                          ([cd("params")], '{"max_words": 50}'),
                                          ([cd("id")], "job-1"),
                                          ([cd("file", "r.pdf")], "%PDF-1.4 ...")]),
    "seed-deep-params.form": form("B", [([cd("pipeline")], "document-stats"),
                                        ([cd("params")], '{"x":' + "[" * 100 + "]" * 100 + "}")]),
    "seed-unknown-field.form": form("B", [([cd("reply_to")], "__consumer_offsets")]),
    "seed-no-end.form": form("B", [([cd("pipeline")], "document-stats")], close=False),
    "seed-empty-name.form": form("B", [(['Content-Disposition: form-data; name=""; filename=""'],
                                        "x")]),
    "seed-bad-id.form": form("B", [([cd("pipeline")], "document-stats"),
                                   ([cd("id")], "../../etc"), ([cd("d", "x.txt")], "\u00ff")]),
    "seed-nested-boundary.form": form("--", [([cd("pipeline")], "----"),
                                             (["Content-Disposition: form-data"], "")]),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, text in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(text.encode("utf-8"))
