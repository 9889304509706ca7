#!/usr/bin/env python3
"""Renders every chat template in llama.cpp v0.5.0's models/templates with Python's
jinja2, configured as Hugging Face's apply_chat_template configures it (sandboxed,
trim_blocks, lstrip_blocks, loop controls, its own tojson, raise_exception and
strftime_now globals), for each conversation in
tests/reference/chat_templates/conversations.json, and writes expected.json beside
it: {template: {"sha256": ..., "renders": {conversation: {"text": ...} |
{"error": ...}}}}. tests/engine/chat/jinja_golden_test.cc compares ellm's own
interpreter with it byte for byte.

Usage: scripts/reference/make_chat_template_reference.py [LLAMA_SRC]
(LLAMA_SRC defaults to what scripts/reference/llama-source prints). Made with
jinja2 3.1.6 (pip install jinja2==3.1.6).
"""
import datetime
import hashlib
import json
import os
import subprocess
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT_DIR = os.path.join(REPO, "tests", "reference", "chat_templates")


class GenerationTracker(jinja2.ext.Extension):
    # transformers' AssistantTracker: {% generation %}...{% endgeneration %} renders its body.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else subprocess.check_output(
        [os.path.join(HERE, "llama-source")], text=True).strip()
    tdir = os.path.join(src, "models", "templates")
    with open(os.path.join(OUT_DIR, "conversations.json"), encoding="utf-8") as f:
        spec = json.load(f)
    now = datetime.datetime.fromisoformat(spec["strftime_now"])
    env = make_env(now)
    out = {}
    for name in sorted(os.listdir(tdir)):
        if not name.endswith(".jinja"):
            continue
        with open(os.path.join(tdir, name), "rb") as f:
            raw = f.read()
        entry = {"sha256": hashlib.sha256(raw).hexdigest(), "renders": {}}
        try:
            tmpl = env.from_string(raw.decode("utf-8"))
        except Exception as e:  # noqa: BLE001 - any compile error is the expected result
            entry["compile_error"] = f"{type(e).__name__}: {e}"
            out[name] = entry
            continue
        for cname, conv in spec["conversations"].items():
            ctx = dict(conv)
            ctx["bos_token"] = spec["bos_token"]
            ctx["eos_token"] = spec["eos_token"]
            try:
                entry["renders"][cname] = {"text": tmpl.render(**ctx)}
            except Exception as e:  # noqa: BLE001
                entry["renders"][cname] = {"error": f"{type(e).__name__}: {e}"}
        out[name] = entry
    with open(os.path.join(OUT_DIR, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    n_err = sum(1 for e in out.values() for r in e["renders"].values() if "error" in r)
    print(f"{len(out)} templates, {n_err} renders ended in an error", file=sys.stderr)


if __name__ == "__main__":
    main()
