#!/usr/bin/env python3
"""Makes the golden files in tests/reference/gemma3-270m/ with llama.cpp.

llama.cpp is reached through its Python binding, llama-cpp-python, pinned and
installed into a private venv by scripts/reference/setup. Run this with that
venv's python:

  py=$(scripts/reference/setup --print-python)
  $py scripts/reference/make_gemma3_reference.py all

Steps (each writes its own files, so one can be redone alone):
  corpus      extract the public-domain Jane Austen texts from Debian's
              r-cran-janeaustenr package into tests/reference/corpus/
              (needs apt-get; the extracted files are committed)
  facts       model_facts.json: how llama.cpp reads the model file
  tokenize    tokenize.jsonl over tests/reference/corpus/tokenizer_strings.jsonl
  document    tokenize_document.json: full tokenization of the document text
  greedy      greedy.jsonl: greedy decoding of 5 chat prompts
  logits      logits.jsonl: last-position logits (top-64 + 16 fixed ids)
  perplexity  perplexity.json at ctx 512 and 4096
  speed       speed.json: prefill/decode tokens per second on this machine
  all         every step but corpus, cheap ones first

The context is the binding's default unless stated: CPU only, KV cache F16,
flash attention disabled, n_threads = n_threads_batch = 2, n_ubatch = 512.
Every output records the settings it was made with.
"""

import argparse
import ctypes
import glob
import json
import math
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(REPO, "models", "gemma-3-270m-q4_k_m.gguf")
OUT = os.path.join(REPO, "tests", "reference", "gemma3-270m")
CORPUS = os.path.join(REPO, "tests", "reference", "corpus")
TOKENIZER_STRINGS = os.path.join(CORPUS, "tokenizer_strings.jsonl")
PERPLEXITY_TEXT = os.path.join(CORPUS, "pride_and_prejudice_ch01-12.txt")
DOCUMENT_TEXT = os.path.join(CORPUS, "persuasion_ch01-05.txt")
# 34 544 tokens with BOS: one chunk at ctx 32768 and the needle haystacks.
LONG_TEXT = os.path.join(CORPUS, "pride_and_prejudice_ch01-16.txt")
N_THREADS = 2
# The llama.cpp tree vendored by llama-cpp-python 0.3.36 (the version pinned in
# scripts/reference/setup), from the binding's CHANGELOG: its sdist carries no git
# metadata. Update both together.
LLAMA_CPP_COMMIT = "ggml-org/llama.cpp@0c1e57098"

GREEDY_PROMPTS = [
    "What is the capital of France?",
    "Name three primary colors.",
    "Translate 'good morning' into Spanish.",
    "How many legs does a spider have?",
    "Write one sentence about the ocean.",
]
GREEDY_MAX_TOKENS = 32
CHAT_TEMPLATE = "<start_of_turn>user\n{prompt}<end_of_turn>\n<start_of_turn>model\n"

# (text, parse_special); all with BOS.
LOGITS_PROMPTS = [
    ("The capital of France is", False),
    ("def fibonacci(n):\n    ", False),
    (CHAT_TEMPLATE.format(prompt="Say hello in German."), True),
]
LOGITS_TOP_K = 64
# Fixed ids whose logits are always stored: the control tokens, the ends of the
# vocabulary and a spread in between, so a test sees more than the top-k.
LOGITS_FIXED_IDS = [0, 1, 2, 3, 4, 105, 106, 107, 108, 1000, 10000, 50000,
                    100000, 200000, 262000, 262143]

PERPLEXITY_CTX = [512, 4096]

# Austen texts: Debian package, R object name, chapters kept, output file.
AUSTEN_DEB = "r-cran-janeaustenr"
AUSTEN_CUTS = [
    ("prideprejudice", 12, PERPLEXITY_TEXT),
    ("persuasion", 5, DOCUMENT_TEXT),
    ("prideprejudice", 16, LONG_TEXT),
]


def log(*args):
    print("make_gemma3_reference:", *args, file=sys.stderr, flush=True)


def rel(path):
    return os.path.relpath(path, REPO)


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")
    log("wrote", rel(path), os.path.getsize(path), "bytes")


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    log("wrote", rel(path), os.path.getsize(path), "bytes")


# ---------------------------------------------------------------- corpus ----

def _r_lazyload_blobs(rdb):
    """Yields the decompressed objects of an R lazy-load database (.rdb):
    each is a 4-byte big-endian length followed by a zlib stream."""
    pos = 0
    while pos < len(rdb):
        d = zlib.decompressobj()
        out = d.decompress(rdb[pos + 4:])
        yield out
        pos = len(rdb) - len(d.unused_data)


def _r_character_vector(obj):
    """Decodes an R XDR-serialized character vector (STRSXP of CHARSXPs)."""
    if obj[:2] != b"X\n":
        raise ValueError("not an XDR R serialization")
    p = 2

    def i32():
        nonlocal p
        (v,) = struct.unpack(">i", obj[p:p + 4])
        p += 4
        return v

    version = i32()
    i32()  # R version that wrote it
    i32()  # minimal R version to read it
    if version == 3:
        n = i32()  # then the native encoding's name
        p += n
    if i32() & 0xFF != 16:
        raise ValueError("not a character vector")
    lines = []
    for _ in range(i32()):
        if i32() & 0xFF != 9:
            raise ValueError("not a CHARSXP")
        n = i32()  # -1 for NA
        lines.append("" if n < 0 else obj[p:p + n].decode("utf-8"))
        p += max(n, 0)
    return lines


def step_corpus(_args):
    """Downloads r-cran-janeaustenr with apt-get and cuts the first chapters of
    two novels into plain UTF-8 text files."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", AUSTEN_DEB], cwd=tmp, check=True)
        (deb,) = glob.glob(os.path.join(tmp, "*.deb"))
        log("extracting", os.path.basename(deb))
        subprocess.run(["dpkg-deb", "-x", deb, "x"], cwd=tmp, check=True)
        data = os.path.join(tmp, "x/usr/lib/R/site-library/janeaustenr/data")
        # Object order in Rdata.rdb is alphabetical by name.
        names = ["emma", "mansfieldpark", "northangerabbey", "persuasion",
                 "prideprejudice", "sensesensibility"]
        with open(os.path.join(data, "Rdata.rdb"), "rb") as f:
            blobs = list(_r_lazyload_blobs(f.read()))
        books = {n: "\n".join(_r_character_vector(b)) for n, b in zip(names, blobs)}
    for name, chapters, path in AUSTEN_CUTS:
        text = books[name]
        m = re.search(r"\nChapter %d\n" % (chapters + 1), text)
        text = text[:m.start()].rstrip() + "\n"
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        log("wrote", rel(path), len(text.encode()), "bytes")


# --------------------------------------------------------------- llama.cpp --

def llama_cpp_info():
    import importlib.metadata
    import llama_cpp
    return {
        "binding": "llama-cpp-python",
        "binding_version": importlib.metadata.version("llama_cpp_python"),
        "llama_cpp_commit": LLAMA_CPP_COMMIT,
        "system_info": llama_cpp.llama_print_system_info().decode().strip(),
    }


def load_vocab():
    from llama_cpp import Llama
    return Llama(MODEL, vocab_only=True, verbose=False)


def load_model(n_ctx, logits_all=False, n_batch=512):
    from llama_cpp import Llama
    return Llama(MODEL, n_ctx=n_ctx, n_batch=n_batch, n_ubatch=512,
                 n_threads=N_THREADS, n_threads_batch=N_THREADS,
                 logits_all=logits_all, flash_attn=False, verbose=False)


def context_settings(llm):
    import llama_cpp
    p = llm.context_params
    return {
        "n_ctx": p.n_ctx, "n_batch": p.n_batch, "n_ubatch": p.n_ubatch,
        "n_threads": p.n_threads, "n_threads_batch": p.n_threads_batch,
        "flash_attn": p.flash_attn_type == llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
        "type_k": "f16" if p.type_k == llama_cpp.GGML_TYPE_F16 else int(p.type_k),
        "type_v": "f16" if p.type_v == llama_cpp.GGML_TYPE_F16 else int(p.type_v),
        "logits_all": llm._logits_all,
    }


def fresh(llm):
    """Empties the KV cache: the next eval starts a new sequence at position 0."""
    import llama_cpp
    llm.reset()
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm._ctx.ctx), True)


def last_logits(llm):
    """Copy of the logits of the last evaluated position, float32 [n_vocab]."""
    import llama_cpp
    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()


def piece(llm, tok):
    return llm.detokenize([tok], special=True).decode("utf-8", errors="replace")


# ----------------------------------------------------------------- facts ----

FACT_KEYS = [
    "general.architecture", "general.name", "general.file_type",
    "gemma3.context_length", "gemma3.embedding_length", "gemma3.block_count",
    "gemma3.feed_forward_length", "gemma3.attention.head_count",
    "gemma3.attention.head_count_kv", "gemma3.attention.key_length",
    "gemma3.attention.value_length", "gemma3.attention.sliding_window",
    "gemma3.attention.sliding_window_pattern",
    "gemma3.attention.layer_norm_rms_epsilon", "gemma3.rope.freq_base",
    "gemma3.rope.freq_base_swa", "gemma3.rope.scaling.type",
    "gemma3.rope.scaling.factor", "gemma3.final_logit_softcapping",
    "gemma3.attn_logit_softcapping", "tokenizer.ggml.model",
    "tokenizer.ggml.pre", "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
    "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token",
    "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_space_prefix",
]


def step_facts(_args):
    """What llama.cpp reads from the file: metadata, vocabulary ids, and the
    loader's own print_info/tensor-type lines (captured from its log)."""
    import llama_cpp
    llm = load_model(n_ctx=512)  # vocab_only leaves the hyperparameters unread
    meta = llm.metadata
    vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
    special = {}
    for text in ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>",
                 "<end_of_turn>", "<start_of_image>", "<end_of_image>", "[multimodal]",
                 "<unused0>"]:
        toks = llm.tokenize(text.encode(), add_bos=False, special=True)
        special[text] = toks
    desc = ctypes.create_string_buffer(256)
    llama_cpp.llama_model_desc(llm._model.model, desc, 256)
    facts = {
        "model_file": rel(MODEL),
        "model_bytes": os.path.getsize(MODEL),
        "llama_cpp": llama_cpp_info(),
        "model_desc": desc.value.decode(),
        "n_vocab": llm.n_vocab(),
        "n_ctx_train": llama_cpp.llama_n_ctx_train(llm._model.model),
        "n_embd": llama_cpp.llama_model_n_embd(llm._model.model),
        "n_layer": llama_cpp.llama_model_n_layer(llm._model.model),
        "n_head": llama_cpp.llama_model_n_head(llm._model.model),
        "n_params": llama_cpp.llama_model_n_params(llm._model.model),
        "vocab_bos": llama_cpp.llama_vocab_bos(vocab),
        "vocab_eos": llama_cpp.llama_vocab_eos(vocab),
        "vocab_eot": llama_cpp.llama_vocab_eot(vocab),
        "special_token_ids": special,
        "metadata": {k: meta.get(k) for k in FACT_KEYS},
        "metadata_keys": sorted(meta.keys()),
        "llama_cpp_load_log": _load_log(),
    }
    del llm
    write_json(os.path.join(OUT, "model_facts.json"), facts)


def _load_log():
    """llama.cpp's own account of the file (print_info and tensor-type lines),
    from a verbose load in a child process so the log goes to a pipe."""
    code = ("from llama_cpp import Llama\n"
            "Llama(%r, n_ctx=4096, n_threads=%d, verbose=True)\n" % (MODEL, N_THREADS))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True)
    keep = []
    for line in r.stderr.splitlines():
        if re.match(r"(print_info|llama_model_loader: - type|llama_kv_cache|"
                    r"llama_context: *(n_|flash|causal|freq|kv_unified))", line):
            keep.append(line.rstrip())
    return keep


# -------------------------------------------------------------- tokenize ----

def step_tokenize(_args):
    llm = load_vocab()
    rows = []
    with open(TOKENIZER_STRINGS, encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            toks = llm.tokenize(item["text"].encode("utf-8"), add_bos=item["add_bos"],
                                special=item["parse_special"])
            rows.append({"id": item["id"], "text": item["text"],
                         "add_bos": item["add_bos"],
                         "parse_special": item["parse_special"], "tokens": toks})
    write_jsonl(os.path.join(OUT, "tokenize.jsonl"), rows)


def step_document(_args):
    llm = load_vocab()
    with open(DOCUMENT_TEXT, "rb") as f:
        text = f.read()
    toks = llm.tokenize(text, add_bos=True, special=False)
    write_json_compact(os.path.join(OUT, "tokenize_document.json"), {
        "file": rel(DOCUMENT_TEXT), "bytes": len(text), "add_bos": True,
        "parse_special": False, "n_tokens": len(toks), "tokens": toks})


def write_json_compact(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    log("wrote", rel(path), os.path.getsize(path), "bytes")


# ---------------------------------------------------------------- greedy ----

def step_greedy(_args):
    llm = load_model(n_ctx=512)
    end_of_turn = llm.tokenize(b"<end_of_turn>", add_bos=False, special=True)
    assert len(end_of_turn) == 1, end_of_turn
    stops = {end_of_turn[0]: "end_of_turn", llm.token_eos(): "eos"}
    rows = []
    for prompt in GREEDY_PROMPTS:
        formatted = CHAT_TEMPLATE.format(prompt=prompt)
        toks = llm.tokenize(formatted.encode(), add_bos=True, special=True)
        fresh(llm)
        llm.eval(toks)
        steps, stop, out = [], "max_tokens", []
        for _ in range(GREEDY_MAX_TOKENS):
            logits = last_logits(llm)
            # argmax, then the best of the rest; ties go to the lower id.
            best = int(np.argmax(logits))
            rest = logits.copy()
            rest[best] = -np.inf
            second = int(np.argmax(rest))
            steps.append({"token": best, "piece": piece(llm, best),
                          "logit": float(logits[best]), "runner_up": second,
                          "runner_up_logit": float(logits[second])})
            if best in stops:
                stop = stops[best]
                break
            out.append(best)
            llm.eval([best])
        rows.append({"prompt": prompt, "formatted": formatted, "add_bos": True,
                     "parse_special": True, "prompt_tokens": toks,
                     "max_tokens": GREEDY_MAX_TOKENS, "stop": stop,
                     "text": llm.detokenize(out).decode("utf-8", errors="replace"),
                     "steps": steps, "context": context_settings(llm)})
        log("greedy:", repr(prompt), "->", repr(rows[-1]["text"]))
    write_jsonl(os.path.join(OUT, "greedy.jsonl"), rows)


# ---------------------------------------------------------------- logits ----

def step_logits(_args):
    llm = load_model(n_ctx=512)
    rows = []
    for text, special in LOGITS_PROMPTS:
        toks = llm.tokenize(text.encode(), add_bos=True, special=special)
        fresh(llm)
        llm.eval(toks)
        logits = last_logits(llm)
        order = np.argsort(-logits, kind="stable")[:LOGITS_TOP_K]
        m = float(np.max(logits))
        lse = m + math.log(float(np.sum(np.exp((logits - m).astype(np.float64)))))
        rows.append({
            "prompt": text, "add_bos": True, "parse_special": special,
            "tokens": toks, "position": len(toks) - 1,
            "top": [[int(i), float(logits[i])] for i in order],
            "fixed": [[i, float(logits[i])] for i in LOGITS_FIXED_IDS],
            "max": m, "logsumexp": lse,
            "mean": float(np.mean(logits.astype(np.float64))),
            "context": context_settings(llm)})
    write_jsonl(os.path.join(OUT, "logits.jsonl"), rows)


# ------------------------------------------------------------ perplexity ----

def _log_softmax_at(logits, targets, rows=128):
    """-log softmax(logits[r])[targets[r]] per row, in float64, a block of rows
    at a time (a float64 copy of 4095 x 262144 logits alone is 8.6 GB)."""
    out = np.empty(len(targets))
    for r0 in range(0, len(targets), rows):
        x = logits[r0:r0 + rows].astype(np.float64)
        m = x.max(axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(x - m).sum(axis=1))
        t = targets[r0:r0 + rows]
        out[r0:r0 + len(t)] = lse - x[np.arange(len(t)), t]
    return out


def step_perplexity(args):
    vocab = load_vocab()
    with open(PERPLEXITY_TEXT, "rb") as f:
        all_toks = vocab.tokenize(f.read(), add_bos=True, special=False)
    del vocab
    bos, text_toks = all_toks[0], all_toks[1:]
    if args.max_text_tokens:
        text_toks = text_toks[:args.max_text_tokens]
    path = os.path.join(OUT, "perplexity.json")
    results = []
    if os.path.exists(path):  # keep the other ctx values' results
        with open(path, encoding="utf-8") as f:
            results = [r for r in json.load(f)["results"] if r["ctx"] not in args.ctx]
    for n in args.ctx:
        llm = load_model(n_ctx=n, logits_all=True, n_batch=512)
        k = len(text_toks) // (n - 1)
        total, count, chunk_nll = 0.0, 0, []
        t0 = time.time()
        for c in range(k):
            seq = [bos] + text_toks[c * (n - 1):(c + 1) * (n - 1)]
            fresh(llm)
            llm.eval(seq)
            nll = _log_softmax_at(llm.scores[:n - 1], np.array(seq[1:]))
            total += float(nll.sum())
            count += len(nll)
            chunk_nll.append(float(nll.mean()))
            log("ppl ctx %d chunk %d/%d nll %.5f (%.0fs)" % (
                n, c + 1, k, chunk_nll[-1], time.time() - t0))
        mean = total / count
        results.append({"ctx": n, "chunks": k, "tokens": count, "nll": mean,
                        "ppl": math.exp(mean), "chunk_nll": chunk_nll,
                        "seconds": round(time.time() - t0, 1),
                        "context": context_settings(llm)})
        del llm
        results.sort(key=lambda r: r["ctx"])
        # Written after each ctx so a long run keeps what it has finished.
        write_json(path, {
            "file": rel(PERPLEXITY_TEXT), "add_bos": True, "parse_special": False,
            "text_tokens": len(text_toks),
            "protocol": ("tokenize the file with BOS; split the tokens after BOS into "
                         "consecutive chunks of ctx-1 tokens, dropping the last "
                         "partial chunk; evaluate [BOS]+chunk in an empty KV cache "
                         "with logits at every position; score positions 1..ctx-1 "
                         "by -log softmax(logits[i-1])[token[i]] (float64); nll is "
                         "the mean over all scored tokens of all chunks, "
                         "ppl = exp(nll)"),
            "llama_cpp": llama_cpp_info(), "results": results})


# ----------------------------------------------------------------- speed ----

def step_speed(args):
    vocab = load_vocab()
    with open(DOCUMENT_TEXT, "rb") as f:
        doc = vocab.tokenize(f.read(), add_bos=True, special=False)
    del vocab
    decode_n = 64
    load_before = list(os.getloadavg())
    runs = []
    for prompt_n in [512, 2048]:
        llm = load_model(n_ctx=prompt_n + decode_n, n_batch=2048)
        prompt = doc[:prompt_n]
        prefill, decode = [], []
        for rep in range(args.speed_repeats + 1):  # the first is a warm-up
            fresh(llm)
            t0 = time.perf_counter()
            llm.eval(prompt)
            t1 = time.perf_counter()
            tok = int(np.argmax(last_logits(llm)))
            t2 = time.perf_counter()
            for _ in range(decode_n):
                llm.eval([tok])
                tok = int(np.argmax(last_logits(llm)))
            t3 = time.perf_counter()
            if rep:
                prefill.append(t1 - t0)
                decode.append(t3 - t2)
        p, d = statistics.median(prefill), statistics.median(decode)
        runs.append({"prompt_tokens": prompt_n, "prefill_seconds": prefill,
                     "prefill_tokens_per_second": round(prompt_n / p, 1),
                     "prefill_tokens_per_second_best": round(prompt_n / min(prefill), 1),
                     "decode_tokens": decode_n, "decode_seconds": decode,
                     "decode_tokens_per_second": round(decode_n / d, 1),
                     "decode_tokens_per_second_best": round(decode_n / min(decode), 1),
                     "context": context_settings(llm)})
        log("speed:", runs[-1]["prompt_tokens"], runs[-1]["prefill_tokens_per_second"],
            runs[-1]["decode_tokens_per_second"])
        del llm
    write_json(os.path.join(OUT, "speed.json"), {
        "what": ("llama.cpp through its Python binding (ctypes): prefill = one "
                 "llm.eval() of the prompt with logits for its last position only; "
                 "decode = 64 single-token llm.eval() calls each followed by a numpy "
                 "argmax over the logits (greedy), continuing from the prompt. "
                 "Median (and best) of the repeats after one warm-up; wall-clock "
                 "seconds. Only meaningful on an otherwise idle machine: see the "
                 "load averages."),
        "prompt_source": rel(DOCUMENT_TEXT),
        "repeats": args.speed_repeats, "cpu": _cpu_model(),
        # Another busy process on a 2-core machine halves these numbers.
        "load_average_before": load_before,
        "load_average_after": list(os.getloadavg()),
        "nproc": os.cpu_count(), "llama_cpp": llama_cpp_info(), "runs": runs})


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


STEPS = {
    "corpus": step_corpus, "facts": step_facts, "tokenize": step_tokenize,
    "document": step_document, "greedy": step_greedy, "logits": step_logits,
    "perplexity": step_perplexity, "speed": step_speed,
}
ALL = ["facts", "tokenize", "document", "greedy", "logits", "perplexity", "speed"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("steps", nargs="+", choices=sorted(STEPS) + ["all"])
    ap.add_argument("--max-text-tokens", type=int, default=0,
                    help="cap the perplexity text (tokens after BOS); 0 = whole file")
    ap.add_argument("--speed-repeats", type=int, default=3)
    ap.add_argument("--ctx", type=int, nargs="+", default=PERPLEXITY_CTX,
                    help="perplexity context sizes (default: %(default)s)")
    args = ap.parse_args()
    steps = [s for name in args.steps for s in (ALL if name == "all" else [name])]
    if any(s != "corpus" for s in steps) and not os.path.exists(MODEL):
        sys.exit("model not found: %s (run scripts/fetch-model)" % MODEL)
    os.makedirs(OUT, exist_ok=True)
    for s in steps:
        log("step", s)
        STEPS[s](args)


if __name__ == "__main__":
    main()
