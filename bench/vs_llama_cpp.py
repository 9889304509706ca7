#!/usr/bin/env python3
"""Side-by-side speed of ellm and llama.cpp on the same model, same machine,
same threads, in one command. Prints a Markdown table with the ratios.

    py=$(scripts/reference/setup --print-python)   # llama.cpp via llama-cpp-python
    $py bench/vs_llama_cpp.py --model models/gemma-3-270m-q4_k_m.gguf \
        --depths 512 2048 --gen 32 --threads 2

For each depth D: ellm runs `ellm bench --depth D --gen N --json`; llama.cpp
prefills D tokens of the same pseudo-random ids in one eval (logits for the
last position only) and then decodes N tokens greedily one eval at a time,
with flash attention off and on (the better is reported). Wall-clock; one
warm-up run each is not counted. A benchmark, never a test: it prints numbers.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def last_logits(llm):
    import llama_cpp
    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),))


def fresh(llm):
    import llama_cpp
    llm.reset()
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm._ctx.ctx), True)


def llama_cpp_run(model, depth, gen, threads, flash_attn, reps):
    from llama_cpp import Llama
    llm = Llama(model_path=model, n_ctx=depth + gen + 8, n_batch=512, n_ubatch=512,
                n_threads=threads, n_threads_batch=threads, flash_attn=flash_attn,
                logits_all=False, verbose=False)
    rng = np.random.default_rng(1234)
    # The same id range as `ellm bench`: [1000, min(n_vocab - 1, 200000)].
    hi = min(llm.n_vocab() - 1, 200000) + 1
    prompt = [llm.token_bos()] + [int(x) for x in rng.integers(1000, hi, depth - 1)]
    best = None
    for rep in range(reps):  # with 2, the first is a warm-up
        fresh(llm)
        t0 = time.perf_counter()
        llm.eval(prompt)
        t1 = time.perf_counter()
        tok = int(np.argmax(last_logits(llm)))
        t2 = time.perf_counter()
        for _ in range(gen):
            llm.eval([tok])
            tok = int(np.argmax(last_logits(llm)))
        t3 = time.perf_counter()
        if rep == reps - 1:
            best = (depth / (t1 - t0), gen / (t3 - t2))
    del llm
    return best


def ellm_run(ellm, model, depth, gen, threads, reps, extra):
    best = None
    for rep in range(reps):
        out = subprocess.run([ellm, "bench", "--model", model, "--depth", str(depth), "--gen",
                              str(gen), "--threads", str(threads), "--json"] + extra,
                             check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        if rep == reps - 1:
            best = (r["prefill_tokens_per_s"], r["decode_tokens_per_s"], r["peak_rss_bytes"])
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--ellm", default="build/release/cli/ellm")
    ap.add_argument("--depths", type=int, nargs="+", default=[512, 2048])
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2,
                    help="runs per engine and depth; the last counts (1 = no warm-up)")
    ap.add_argument("--ellm-args", default="", help="extra `ellm bench` flags, e.g. '--kv-type f16'")
    ap.add_argument("--flash-attn", choices=["both", "off", "on"], default="both",
                    help="llama.cpp flash attention settings to run (both: report the better)")
    args = ap.parse_args()
    load_start = os.getloadavg()[0]
    fa_modes = {"both": [False, True], "off": [False], "on": [True]}[args.flash_attn]

    rows = []
    for d in args.depths:
        e = ellm_run(args.ellm, args.model, d, args.gen, args.threads, args.reps,
                     args.ellm_args.split())
        runs = {fa: llama_cpp_run(args.model, d, args.gen, args.threads, fa, args.reps)
                for fa in fa_modes}
        l_prefill = max(r[0] for r in runs.values())
        l_decode = max(r[1] for r in runs.values())
        rows.append((d, e, (l_prefill, l_decode), runs.get(False), runs.get(True)))
        llama = "  ".join(f"fa-{'on' if fa else 'off'} {r[0]:.1f}/{r[1]:.1f}" for fa, r in runs.items())
        print(f"depth {d}: ellm {e[0]:.1f}/{e[1]:.1f}  llama.cpp {llama} (prefill/decode tokens/s)"
              f"  load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    print(f"\nload average {load_start:.2f} at start, {os.getloadavg()[0]:.2f} at end, "
          f"threads {args.threads}, gen {args.gen}, reps {args.reps}, "
          f"llama.cpp flash attention {args.flash_attn}, ellm args '{args.ellm_args}'\n")
    print("| depth | ellm prefill t/s | llama.cpp prefill t/s | ratio | ellm decode t/s | "
          "llama.cpp decode t/s | ratio | ellm peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for d, e, l, off, on in rows:
        def which(i):  # which flash-attention setting gave llama.cpp's number
            return "" if off is None or on is None else (" (fa on)" if on[i] >= off[i] else " (fa off)")
        print(f"| {d} | {e[0]:.1f} | {l[0]:.1f}{which(0)} | {e[0] / l[0]:.2f}x | {e[1]:.1f} | "
              f"{l[1]:.1f}{which(1)} | {e[1] / l[1]:.2f}x | {e[2] / 2**20:.0f} |")


if __name__ == "__main__":
    main()
