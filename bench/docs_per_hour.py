#!/usr/bin/env python3
"""Documents per hour: `ellm summarize` end to end on long real reports, and
the same pipeline with llama.cpp doing the generations (issue 39, item 4).

    py=$(scripts/reference/setup --print-python)   # llama-cpp-python 0.3.36
    $py bench/docs_per_hour.py --model models/gemma-3-270m-q4_k_m.gguf --threads 2 --runs 3

Two reports, made once into --workdir from SQLite's documentation
(bench/long_report.py, in quality.py's reportlab venv; cached sqlite3-doc):
"100 pages" (~100 A4 pages, over Gemma 3 270M's 32K context: map-reduce)
and "32K tokens" (a report of ~31,000 tokens, just under the context: one
pass). For each run and report, in turn (interleaved, so both engines see
the same load):

1. ellm: `ellm summarize REPORT --json --log-prompts LOG --threads T`,
   timed by wall clock (process start, model load, PDF extraction, every
   generation, the checks against the report, the SQLite store). LOG holds
   each generation as ellm ran it: the prompt's token ids (plain format:
   the pipeline's own prompts; a chat-format pipeline's would hold the
   chat template's tokens), each section's lead, max_tokens and stops.
2. llama.cpp: a worker (llama-cpp-python, this script with --worker) loads
   the model once, then repeats every generation of LOG: the same token ids
   prefilled, the same leads fed, greedy decoding (argmax) until an end
   token, a stop string, a repeated line (the pipeline's
   stop_on_repeated_line) or the section's max_tokens, as
   pipelines/run/generator.cc does; same threads; n_ctx = ellm's context.
   Its time per document = ellm's time outside the generations (start,
   load, extraction, checks, store: the same pipeline) + llama.cpp's time
   for the generations. The reduce step's prompt holds ellm's map answers:
   the work (tokens prefilled, limits) is identical, the answers need not
   be; the generated-token totals of both engines are printed.

Documents/hour = 3600 / seconds per document, one document at a time on
this machine with --threads threads. Median of --runs runs. A benchmark,
never a test: it prints numbers. KV caches: each engine's default (ellm
bf16, llama.cpp f16); llama.cpp flash attention --flash-attn (on: the
faster for prefill at these depths in docs/benchmarks.md).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
REPORTLAB_PY = os.path.expanduser("~/.cache/ellm/quality-venv/bin/python")
REAL_CACHE = os.path.expanduser("~/.cache/ellm/real-docs")


# --- the reports -------------------------------------------------------------

def ensure_reportlab():
    sys.path.insert(0, os.path.join(REPO, "bench"))
    import quality  # noqa: E402  (its venv: reportlab 4.2.5)
    return quality.ensure_venv()


def doc_tokens(ellm, model, pdf, workdir):
    """Tokens of the text ellm extracts from `pdf` (what the pipeline counts)."""
    text = subprocess.run([ellm, "extract", pdf], check=True, capture_output=True,
                          text=True).stdout
    path = os.path.join(workdir, "extracted.txt")
    with open(path, "w") as fh:
        fh.write(text)
    ids = subprocess.run([ellm, "tokenize", "--model", model, "--file", path, "--no-bos"],
                         check=True, capture_output=True, text=True).stdout
    return len(json.loads(ids))


def make_reports(args):
    os.makedirs(args.workdir, exist_ok=True)
    py = ensure_reportlab()
    gen = [py, os.path.join(REPO, "bench", "long_report.py"), REAL_CACHE]
    reports = []
    long_pdf = os.path.join(args.workdir, "report-100-pages.pdf")
    if not os.path.exists(long_pdf):
        subprocess.run(gen + [long_pdf, "--pages", "100"], check=True)
    reports.append(("100 pages", long_pdf))
    short_pdf = os.path.join(args.workdir, "report-32k-tokens.pdf")
    if not os.path.exists(short_pdf):
        # Characters for ~31,000 tokens (one pass in a 32,768 context with the
        # summary's ~500 tokens of room), corrected by what the tokenizer says.
        chars = 31000 * 3
        for _ in range(3):
            subprocess.run(gen + [short_pdf, "--chars", str(chars)], check=True,
                           stdout=subprocess.DEVNULL)
            n = doc_tokens(args.ellm, args.model, short_pdf, args.workdir)
            print(f"32K report: {chars} characters -> {n} tokens", file=sys.stderr)
            if 30500 <= n <= 31500:
                break
            chars = int(chars * 31000 / n)
    reports.append(("32K tokens", short_pdf))
    return reports


# --- ellm --------------------------------------------------------------------

def run_ellm(args, pdf, log):
    db = os.path.join(args.workdir, "ellm.db")
    cmd = [args.ellm, "summarize", pdf, "--model", args.model, "--threads", str(args.threads),
           "--ctx", str(args.ctx), "--db", db, "--json", "--log-prompts", log]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"ellm summarize failed ({' '.join(cmd)}):\n{p.stderr[-2000:]}")
    result = json.loads(p.stdout)
    with open(log) as fh:
        records = [json.loads(line) for line in fh]
    gen = sum(r["seconds"] for r in records)
    return {"wall": wall, "gen": gen, "strategy": result["strategy"],
            "prompt_tokens": result["prompt_tokens"],
            "generated_tokens": result["generated_tokens"], "generations": len(records)}


# --- llama.cpp (worker) --------------------------------------------------------

def repeated_line(text):
    """pipelines/run/generator.cc RepeatedLine: where the last complete line
    starts when it repeats an earlier line, else -1."""
    if not text or text[-1] != "\n":
        return -1
    end = len(text) - 1
    start = text.rfind("\n", 0, end - (1 if end > 0 else 0) + 1)
    start = 0 if start == -1 else start + 1
    if start >= end:
        return -1
    last = text[start:end]
    pos = 0
    while pos < start:
        nl = text.find("\n", pos)
        if nl == -1 or nl > start:
            break
        if text[pos:nl] == last:
            return start
        pos = nl + 1
    return -1


def replay(llm, rec, is_eog):
    """One generation of the prompt log, as generator.cc runs it: (tokens
    generated, section answers)."""
    import llama_cpp
    import numpy as np

    def eval_and_pick(ids):
        llm.eval(ids)
        ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        return int(np.argmax(np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),))))

    llm.reset()
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm._ctx.ctx), True)
    settings = rec["settings"]
    nxt = eval_and_pick(rec["ids"])
    generated, answers = 0, []
    mem = llama_cpp.llama_get_memory(llm._ctx.ctx)
    n_prompt = len(rec["ids"])
    for i, sec in enumerate(rec["sections"]):
        if sec.get("from_prompt") and i > 0:
            # Back to the end of the prompt (a field's own generation), as
            # generator.cc does with Session::Truncate; without a lead the
            # prompt's last token is evaluated again.
            keep = n_prompt if sec["lead_ids"] else n_prompt - 1
            if llama_cpp.llama_memory_seq_rm(mem, 0, keep, -1):
                llm.n_tokens = keep
            else:  # a cache that cannot drop a suffix: prefill again
                llm.reset()
                llama_cpp.llama_memory_clear(mem, True)
                llm.eval(rec["ids"][:keep])
            if keep < n_prompt:
                nxt = eval_and_pick(rec["ids"][keep:])
        if sec["lead_ids"]:
            nxt = eval_and_pick(sec["lead_ids"])
        out = b""
        produced = 0
        stops = sec["stop"] or settings["stop"]
        stop_at = -1
        while produced < sec["max_tokens"] and not is_eog(nxt):
            out += llm.detokenize([nxt])
            produced += 1
            generated += 1
            text = out.decode("utf-8", "replace")
            hits = [text.find(s) for s in stops if text.find(s) != -1]
            stop_at = min(hits) if hits else -1
            if stop_at == -1 and settings["stop_on_repeated_line"]:
                stop_at = repeated_line(text)
            if stop_at != -1 or llm.n_tokens >= llm.n_ctx():
                break
            nxt = eval_and_pick([nxt])
        text = out.decode("utf-8", "replace")
        if stop_at == -1 and produced == sec["max_tokens"] and "\n" in text:
            stop_at = text.rfind("\n")  # cut off by max_tokens: whole lines only
        answers.append((text[:stop_at] if stop_at != -1 else text).rstrip("\n "))
    return generated, answers


def worker(args):
    """Replays the prompt log args.log; prints JSON on stdout."""
    import llama_cpp
    from llama_cpp import Llama
    t0 = time.perf_counter()
    llm = Llama(model_path=args.model, n_ctx=args.ctx, n_batch=512, n_ubatch=512,
                n_threads=args.threads, n_threads_batch=args.threads,
                flash_attn=args.flash_attn == "on", logits_all=False, verbose=False)
    load = time.perf_counter() - t0
    vocab = llama_cpp.llama_model_get_vocab(llm.model)

    def is_eog(tok):
        return bool(llama_cpp.llama_vocab_is_eog(vocab, tok))

    with open(args.log) as fh:
        records = [json.loads(line) for line in fh]
    gen, generated, same = 0.0, 0, 0
    # Each generation as it finishes, beside ellm's time for it (a run
    # stopped early still compares the generations it did).
    progress = open(args.log + ".llama.jsonl", "w")
    for i, rec in enumerate(records):
        if rec["settings"]["json_schema"] or rec["settings"]["temperature"] != 0:
            sys.exit("only greedy, unconstrained generations can be replayed")
        t = time.perf_counter()
        n, answers = replay(llm, rec, is_eog)
        seconds = time.perf_counter() - t
        gen += seconds
        generated += n
        same += answers == rec["result"]["sections"]
        progress.write(json.dumps({"generation": i, "prompt_tokens": len(rec["ids"]),
                                   "ellm_s": rec["seconds"], "llama_s": seconds,
                                   "ellm_generated": rec["result"]["generated_tokens"],
                                   "llama_generated": n,
                                   "load": os.getloadavg()[0]}) + "\n")
        progress.flush()
    with open("/proc/self/status") as fh:
        rss = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))
    print(json.dumps({"load": load, "gen": gen, "generated_tokens": generated,
                      "same_answers": same, "generations": len(records), "peak_rss": rss}))


def run_llama(args, log):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--log", log,
           "--model", args.model, "--threads", str(args.threads), "--ctx", str(args.ctx),
           "--flash-attn", args.flash_attn]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"llama.cpp worker failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout)


# --- main ----------------------------------------------------------------------

def commit():
    return subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                          capture_output=True, text=True).stdout.strip()


def llama_version():
    try:
        import llama_cpp
        return llama_cpp.__version__
    except ImportError:
        return "?"


def cpu_name():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "?"


def print_table(args, reports, runs, load_start):
    """The table over the runs so far (printed after every run: a long
    benchmark stopped early still leaves its figures)."""
    n = len(next(iter(runs.values())))
    print(f"\nCPU: {cpu_name()}; {args.threads} threads; {n} of {args.runs} interleaved run(s), median; "
          f"load average {load_start:.2f} at start, {os.getloadavg()[0]:.2f} at end")
    print(f"ellm {commit()}; llama-cpp-python {llama_version()}")
    print("command: " + " ".join([os.path.basename(sys.executable), "bench/docs_per_hour.py"]
                                 + [a for a in sys.argv[1:]]) + "\n")
    print("| report | strategy | generations | prompt tokens | ellm s/doc | llama.cpp s/doc "
          "| ellm docs/h | llama.cpp docs/h | ratio | generating: ellm s / llama.cpp s "
          "| generated tokens ellm / llama.cpp |")
    print("|---" * 11 + "|")
    for name, _ in reports:
        rs = runs[name]
        if not rs:
            continue
        e_s = statistics.median(e["wall"] for e, _, _ in rs)
        l_s = statistics.median(o + ll["gen"] for _, ll, o in rs)
        e_g = statistics.median(e["gen"] for e, _, _ in rs)
        l_g = statistics.median(ll["gen"] for _, ll, _ in rs)
        e0, l0, _ = rs[0]
        print(f"| {name} | {e0['strategy'].split(';')[0]} | {e0['generations']} "
              f"| {e0['prompt_tokens']} | {e_s:.1f} | {l_s:.1f} | {3600 / e_s:.1f} "
              f"| {3600 / l_s:.1f} | {l_s / e_s:.2f}x | {e_g:.1f} / {l_g:.1f} "
              f"| {e0['generated_tokens']} / {l0['generated_tokens']} |")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--ellm", default=os.path.join(REPO, "build/release/cli/ellm"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=32768, help="ellm --ctx and llama.cpp n_ctx")
    ap.add_argument("--runs", type=int, default=3, help="interleaved runs; the median counts")
    ap.add_argument("--workdir", default="/tmp/ellm-docs-per-hour")
    ap.add_argument("--only", choices=["100 pages", "32K tokens"], help="one report only")
    ap.add_argument("--flash-attn", choices=["on", "off"], default="on",
                    help="llama.cpp flash attention")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    args.ellm = os.path.abspath(args.ellm)
    load_start = os.getloadavg()[0]
    reports = [r for r in make_reports(args) if args.only in (None, r[0])]
    runs = {name: [] for name, _ in reports}
    for run in range(args.runs):
        for name, pdf in reports:
            log = os.path.join(args.workdir, f"prompts-{name.replace(' ', '-')}.jsonl")
            e = run_ellm(args, pdf, log)
            ll = run_llama(args, log)
            other = e["wall"] - e["gen"]
            runs[name].append((e, ll, other))
            print(f"run {run + 1} {name}: ellm {e['wall']:.1f} s ({e['gen']:.1f} s generating, "
                  f"{e['generations']} generations, {e['strategy']}, {e['prompt_tokens']} prompt "
                  f"+ {e['generated_tokens']} generated tokens); llama.cpp {other + ll['gen']:.1f} s "
                  f"({ll['gen']:.1f} s generating, {ll['generated_tokens']} generated tokens, "
                  f"{ll['same_answers']}/{ll['generations']} answers as ellm's; load "
                  f"{ll['load']:.1f} s not counted); load average {os.getloadavg()[0]:.2f}",
                  file=sys.stderr, flush=True)
        print_table(args, reports, runs, load_start)


if __name__ == "__main__":
    main()
