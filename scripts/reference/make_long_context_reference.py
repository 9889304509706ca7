#!/usr/bin/env python3
"""Long-context golden files for Gemma 3 270M, made with llama.cpp.

Run with the reference venv (scripts/reference/setup --print-python):

  py=$(scripts/reference/setup --print-python)
  $py scripts/reference/make_long_context_reference.py perplexity needle

Steps:
  perplexity  perplexity_long.json: perplexity of the first 32767 tokens of
              tests/reference/corpus/pride_and_prejudice_ch01-16.txt at
              ctx 32768 (one chunk, every position after BOS scored, the
              protocol of perplexity.json), KV cache bf16 (--kv adds f16, q8_0).
              Logits are taken one micro-batch at a time through the C API:
              llama-cpp-python's logits_all would hold 32768 x 262144 floats.
  needle      needle.json: needle-in-a-haystack cases at 8K, 16K and 32K
              tokens, needle at 10%, 50% and 90% of the haystack; llama.cpp's
              greedy answer and whether it holds the needle's number.

~15 minutes each on 2 cores. The settings are recorded in the outputs.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_gemma3_reference as ref  # noqa: E402  (shared helpers and paths)

LONG_CTX = 32768
MICRO_BATCH = 512
# GGML type ids (ggml.h, append-only).
GGML_TYPES = {"f16": 1, "q8_0": 8, "bf16": 30}

# Needle-in-a-haystack. The prompt is the Gemma chat turn
#   PREFIX + text[:offset] + NEEDLE + text[offset:cut] + SUFFIX
# where offset is a paragraph boundary at DEPTH of the haystack and cut the
# last paragraph boundary that keeps the prompt within LENGTH - ANSWER_TOKENS
# tokens. The number differs per case.
NEEDLE_LENGTHS = [8192, 16384, 32768]
NEEDLE_DEPTHS = [0.1, 0.5, 0.9]
NEEDLE_NUMBERS = [4725, 8316, 2957, 6148, 3592, 7031, 5864, 1479, 9203]
ANSWER_TOKENS = 16
# A chat turn whose answer is begun for the model ("The special magic number
# is"): Gemma 3 270M then copies the number from the haystack; asked to answer
# on its own it repeats the instructions even at 8K, as llama.cpp shows.
PREFIX = "<start_of_turn>user\n"
NEEDLE = "\n\nThe special magic number is {n}."
SUFFIX = ("\n\nWhat is the special magic number in the text above?<end_of_turn>\n"
          "<start_of_turn>model\nThe special magic number is")


def load(n_ctx, kv, flash_attn):
    from llama_cpp import Llama
    return Llama(ref.MODEL, n_ctx=n_ctx, n_batch=MICRO_BATCH, n_ubatch=MICRO_BATCH,
                 n_threads=ref.N_THREADS, n_threads_batch=ref.N_THREADS,
                 type_k=GGML_TYPES[kv], type_v=GGML_TYPES[kv],
                 flash_attn=flash_attn, verbose=False)


def settings(llm, kv, flash_attn):
    s = ref.context_settings(llm)
    s.update({"type_k": kv, "type_v": kv, "flash_attn": flash_attn})
    return s


def eval_scored(llm, tokens, on_rows):
    """Evaluates tokens from an empty cache one micro-batch at a time with
    logits at every position; on_rows(first_pos, logits[n, vocab]) per batch."""
    import llama_cpp
    ctx = llm._ctx.ctx
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
    batch = llama_cpp.llama_batch_init(MICRO_BATCH, 0, 1)
    try:
        for start in range(0, len(tokens), MICRO_BATCH):
            part = tokens[start:start + MICRO_BATCH]
            batch.n_tokens = len(part)
            for i, t in enumerate(part):
                batch.token[i] = t
                batch.pos[i] = start + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = True
            rc = llama_cpp.llama_decode(ctx, batch)
            if rc != 0:
                raise RuntimeError("llama_decode returned %d at %d" % (rc, start))
            ptr = llama_cpp.llama_get_logits(ctx)
            on_rows(start, np.ctypeslib.as_array(ptr, shape=(len(part), llm.n_vocab())))
    finally:
        llama_cpp.llama_batch_free(batch)


def step_perplexity(args):
    vocab = ref.load_vocab()
    with open(ref.LONG_TEXT, "rb") as f:
        toks = vocab.tokenize(f.read(), add_bos=True, special=False)
    del vocab
    seq = toks[:LONG_CTX]
    assert len(seq) == LONG_CTX, len(seq)
    path = os.path.join(ref.OUT, "perplexity_long.json")
    results = []
    if os.path.exists(path):  # keep the other KV types' results
        with open(path, encoding="utf-8") as f:
            results = [r for r in json.load(f)["results"] if r["kv_type"] not in args.kv]
    for kv in args.kv:
        # llama.cpp quantizes V only with flash attention.
        fa = kv == "q8_0"
        llm = load(LONG_CTX, kv, fa)
        nll = np.empty(LONG_CTX - 1)
        t0 = time.time()

        def score(start, logits):
            n = min(len(logits), LONG_CTX - 1 - start)  # the last row predicts nothing
            targets = np.array(seq[start + 1:start + 1 + n])
            nll[start:start + n] = ref._log_softmax_at(logits[:n], targets)
            if start % 4096 == 0:
                ref.log("ppl %s pos %d (%.0fs)" % (kv, start, time.time() - t0))

        eval_scored(llm, seq, score)
        # Mean NLL per 4096-token window too: shows where a drift starts.
        windows = [float(nll[i:i + 4096].mean()) for i in range(0, len(nll), 4096)]
        results.append({"kv_type": kv, "ctx": LONG_CTX, "chunks": 1, "tokens": len(nll),
                        "nll": float(nll.mean()), "ppl": math.exp(float(nll.mean())),
                        "window_nll": windows, "seconds": round(time.time() - t0, 1),
                        "context": settings(llm, kv, fa)})
        ref.log("ppl %s = %.4f" % (kv, results[-1]["ppl"]))
        del llm
        results.sort(key=lambda r: r["kv_type"])
        ref.write_json(path, {
            "file": ref.rel(ref.LONG_TEXT), "add_bos": True, "parse_special": False,
            "protocol": ("tokenize the file with BOS; evaluate its first ctx tokens in an "
                         "empty KV cache in micro-batches of %d with logits at every "
                         "position; score positions 1..ctx-1 by -log softmax(logits[i-1])"
                         "[token[i]] (float64); nll is their mean, ppl = exp(nll); "
                         "window_nll the mean per 4096 scored tokens" % MICRO_BATCH),
            "llama_cpp": ref.llama_cpp_info(), "results": results})


def paragraph_ends(text):
    """Byte offsets just before each blank-line paragraph break."""
    out, i = [], text.find("\n\n")
    while i >= 0:
        out.append(i)
        i = text.find("\n\n", i + 2)
    return out


def build_prompt(text, cut, offset, number):
    return (PREFIX + text[:offset] + NEEDLE.format(n=number) + text[offset:cut] + SUFFIX)


def needle_cases(vocab, text):
    """The cases' cut and offset, chosen with llama.cpp's tokenizer."""
    ends = paragraph_ends(text)

    def n_tokens(s):
        return len(vocab.tokenize(s.encode(), add_bos=True, special=True))

    cases, k = [], 0
    for length in NEEDLE_LENGTHS:
        budget = length - ANSWER_TOKENS
        lo, hi = 0, len(ends) - 1  # largest cut whose prompt fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if n_tokens(build_prompt(text, ends[mid], 0, 9999)) <= budget:
                lo = mid
            else:
                hi = mid - 1
        cut = ends[lo]
        for depth in NEEDLE_DEPTHS:
            offset = min(e for e in ends if e >= depth * cut)
            cases.append({"length": length, "depth": depth, "cut": cut, "offset": offset,
                          "number": NEEDLE_NUMBERS[k]})
            k += 1
    return cases


def step_needle(_args):
    with open(ref.LONG_TEXT, encoding="utf-8") as f:
        text = f.read()
    vocab = ref.load_vocab()
    cases = needle_cases(vocab, text)
    del vocab
    eot = None
    for length in NEEDLE_LENGTHS:
        llm = ref.load_model(n_ctx=length, n_batch=MICRO_BATCH)
        if eot is None:
            eot = llm.tokenize(b"<end_of_turn>", add_bos=False, special=True)[0]
        for c in (c for c in cases if c["length"] == length):
            prompt = build_prompt(text, c["cut"], c["offset"], c["number"])
            # Byte offsets: the C++ test cuts the file's bytes, not characters.
            assert text[:c["cut"]].encode() == text.encode()[:len(text[:c["cut"]].encode())]
            toks = llm.tokenize(prompt.encode(), add_bos=True, special=True)
            assert len(toks) + ANSWER_TOKENS <= length, (len(toks), length)
            t0 = time.time()
            ref.fresh(llm)
            llm.eval(toks)
            answer = []
            for _ in range(ANSWER_TOKENS):
                tok = int(np.argmax(ref.last_logits(llm)))
                if tok == eot or tok == llm.token_eos():
                    break
                answer.append(tok)
                llm.eval([tok])
            out = llm.detokenize(answer).decode("utf-8", errors="replace")
            c.update({"prompt_tokens": len(toks), "answer_tokens": answer, "answer": out,
                      "passed": str(c["number"]) in out,
                      "seconds": round(time.time() - t0, 1)})
            ref.log("needle %d @%.1f: %r (%s, %.0fs)" % (length, c["depth"], out,
                                                         c["passed"], c["seconds"]))
        settings_ = ref.context_settings(llm)
        del llm
    # Byte offsets for readers that work on bytes (the C++ test).
    for c in cases:
        c["cut_bytes"] = len(text[:c["cut"]].encode())
        c["offset_bytes"] = len(text[:c["offset"]].encode())
    ref.write_json(os.path.join(ref.OUT, "needle.json"), {
        "file": ref.rel(ref.LONG_TEXT), "add_bos": True, "parse_special": True,
        "prefix": PREFIX, "needle": NEEDLE, "suffix": SUFFIX,
        "max_answer_tokens": ANSWER_TOKENS,
        "protocol": ("prompt = prefix + file[:offset_bytes] + needle (every {n} replaced by "
                     "number) + "
                     "file[offset_bytes:cut_bytes] + suffix, tokenized with BOS and "
                     "special tokens; greedy decoding from an empty cache until "
                     "<end_of_turn>, EOS or max_answer_tokens; passed = the decimal "
                     "number occurs in the decoded answer"),
        "llama_cpp": ref.llama_cpp_info(), "context": settings_, "cases": cases})


STEPS = {"perplexity": step_perplexity, "needle": step_needle}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("steps", nargs="+", choices=sorted(STEPS))
    ap.add_argument("--kv", nargs="+", default=["bf16"],
                    choices=sorted(GGML_TYPES), help="perplexity KV types")
    args = ap.parse_args()
    if not os.path.exists(ref.MODEL):
        sys.exit("model not found: %s (run scripts/fetch-model)" % ref.MODEL)
    for s in args.steps:
        ref.log("step", s)
        STEPS[s](args)


if __name__ == "__main__":
    main()
