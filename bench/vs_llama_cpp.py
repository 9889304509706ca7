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

With --llama-bench PATH, llama.cpp's own llama-bench (a newer llama.cpp, built by
scripts/reference/build-llama-bench) is measured too, with the same model,
threads and flash-attention settings: prefill as `-p D -n 0 -d 0` (D tokens from
an empty context, batch and ubatch 512 like above) and decode as `-p 0 -n N -d D`
(N tokens after a context of D). llama-bench does its own warm-up and reports the
mean of --reps runs (`avg_ts`); its columns join the table beside the others.

Peak RSS is each engine's own high-water mark (VmHWM of its process, which
execve resets, unlike ru_maxrss): `ellm bench` reports its own; llama-cpp-python
runs in a worker process that reads its own at the end (the interpreter and
numpy included, ~40 MiB); llama-bench's is read from /proc while it runs (the
higher of its prefill and decode runs).

    lb=$(scripts/reference/build-llama-bench --print-dir)/llama-bench
    $py bench/vs_llama_cpp.py --model models/gemma-3-270m-q4_k_m.gguf --llama-bench "$lb"

Depths up to 64K and beyond (issue 39): each engine gets a context of depth +
gen and more (ellm bench: depth + gen + 1; llama-cpp-python: n_ctx = depth +
gen + 8; llama-bench sizes its own as p + n + d), so the model's training
context must hold depth + gen + 8 (ellm refuses a longer one; a model
trained shorter needs RoPE scaling in its file, e.g. the YaRN keys of
make_synthetic_llama.py's qwen2.5-7b-4l). --timeout S bounds each engine's run:
one that runs out is reported as such and the others still run; every
engine's figures are printed to stderr as soon as it finishes.

    $py bench/vs_llama_cpp.py --model ~/.cache/ellm/synthetic/llama-3.2-1b-synthetic-q4_k_m.gguf \
        --depths 65536 --gen 16 --reps 1 --flash-attn on --timeout 3600 --llama-bench "$lb"
"""
import argparse
import json
import os
import subprocess
import sys
import threading
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


def vm_hwm_bytes(pid="self"):
    """The process's peak resident set (VmHWM), 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_with_peak_rss(cmd):
    """Runs cmd; returns (CompletedProcess, peak RSS bytes read from /proc every 20 ms).
    Raises subprocess.TimeoutExpired (the process killed) past TIMEOUT."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def watch():
        while proc.poll() is None:
            peak[0] = max(peak[0], vm_hwm_bytes(proc.pid))
            time.sleep(0.02)

    t = threading.Thread(target=watch)
    t.start()
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        t.join()
        raise
    t.join()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), peak[0]


# Seconds each engine's run may take (--timeout); None = no bound.
TIMEOUT = None

# llama.cpp's KV cache types (ggml_type values, for llama-cpp-python).
GGML_TYPES = {"f16": 1, "q8_0": 8, "bf16": 30}


def llama_cpp_run(model, depth, gen, threads, flash_attn, reps, kv_type):
    """llama-cpp-python in a worker process (this script with --worker):
    (prefill t/s, decode t/s, peak RSS bytes)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--model", model,
           "--depths", str(depth), "--gen", str(gen), "--threads", str(threads),
           "--reps", str(reps), "--flash-attn", "on" if flash_attn else "off",
           "--llama-kv-type", kv_type]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=TIMEOUT).stdout
    return tuple(json.loads(out))


def llama_cpp_measure(model, depth, gen, threads, flash_attn, reps, kv_type):
    from llama_cpp import Llama
    llm = Llama(model_path=model, n_ctx=depth + gen + 8, n_batch=512, n_ubatch=512,
                n_threads=threads, n_threads_batch=threads, flash_attn=flash_attn,
                type_k=GGML_TYPES[kv_type], type_v=GGML_TYPES[kv_type],
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
    return best + (vm_hwm_bytes(),)


def ellm_run(ellm, model, depth, gen, threads, reps, extra):
    best = None
    for rep in range(reps):
        cmd = [ellm, "bench", "--model", model, "--depth", str(depth), "--gen", str(gen),
               "--threads", str(threads), "--json"] + extra
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        if p.returncode != 0:
            sys.exit(f"ellm bench failed ({' '.join(cmd)}):\n{p.stderr}")
        r = json.loads(p.stdout)
        if rep == reps - 1:
            best = (r["prefill_tokens_per_s"], r["decode_tokens_per_s"], r["peak_rss_bytes"])
    return best


def llama_bench_run(llama_bench, model, depth, gen, threads, fa_modes, reps, kv_type):
    """Returns ({flash_attn: (prefill t/s, decode t/s)}, llama-bench build string,
    peak RSS bytes)."""
    common = [llama_bench, "-m", model, "-t", str(threads), "-b", "512", "-ub", "512",
              "-ctk", kv_type, "-ctv", kv_type,
              "-fa", ",".join("1" if fa else "0" for fa in fa_modes), "-r", str(reps), "-o", "json"]
    tests = {"prefill": ["-p", str(depth), "-n", "0", "-d", "0"],
             "decode": ["-p", "0", "-n", str(gen), "-d", str(depth)]}
    speeds, build, rss = {}, "", 0
    for kind, extra in tests.items():
        proc, peak = run_with_peak_rss(common + extra)
        rss = max(rss, peak)
        if proc.returncode != 0:
            sys.exit(f"llama-bench failed ({' '.join(common + extra)}):\n{proc.stderr}")
        for r in json.loads(proc.stdout):
            # flash_attn is an enum (0 off, 1 on) in newer llama-bench, a bool in older ones.
            speeds.setdefault(bool(int(r["flash_attn"])), {})[kind] = r["avg_ts"]
            build = f"{r.get('build_commit', '?')} ({r.get('build_number', '?')})"
    return {fa: (s["prefill"], s["decode"]) for fa, s in speeds.items()}, build, rss


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
    ap.add_argument("--llama-bench", metavar="PATH",
                    help="also measure with this llama-bench (scripts/reference/build-llama-bench)")
    ap.add_argument("--llama-kv-type", choices=sorted(GGML_TYPES), default="f16",
                    help="llama.cpp's K and V cache type (its default f16); give ellm its "
                         "own with --ellm-args '--kv-type ...'")
    ap.add_argument("--timeout", type=float, metavar="S",
                    help="seconds each engine's run at one depth may take (default: no bound)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    global TIMEOUT
    TIMEOUT = args.timeout
    if args.worker:  # one llama-cpp-python measurement, as JSON on stdout
        print(json.dumps(llama_cpp_measure(args.model, args.depths[0], args.gen, args.threads,
                                           args.flash_attn == "on", args.reps,
                                           args.llama_kv_type)))
        return
    load_start = os.getloadavg()[0]
    fa_modes = {"both": [False, True], "off": [False], "on": [True]}[args.flash_attn]
    bench_cols = args.llama_bench is not None

    rows = []
    bench_build = "?"

    def timed(label, fn, *a):
        """fn(*a), its figures printed at once; None when it ran out of --timeout."""
        t0 = time.perf_counter()
        try:
            r = fn(*a)
        except subprocess.TimeoutExpired:
            print(f"depth {d}: {label} ran out of --timeout {args.timeout:g} s", file=sys.stderr)
            return None
        print(f"depth {d}: {label} done in {time.perf_counter() - t0:.0f} s: {r}", file=sys.stderr)
        return r

    for d in args.depths:
        e = timed("ellm", ellm_run, args.ellm, args.model, d, args.gen, args.threads, args.reps,
                  args.ellm_args.split())
        runs = {fa: timed(f"llama-cpp-python fa {'on' if fa else 'off'}", llama_cpp_run,
                          args.model, d, args.gen, args.threads, fa, args.reps,
                          args.llama_kv_type)
                for fa in fa_modes}
        runs = {fa: r for fa, r in runs.items() if r is not None}
        bench_runs, bench_rss = {}, 0
        if bench_cols:
            got = timed("llama-bench", llama_bench_run, args.llama_bench, args.model, d, args.gen,
                        args.threads, fa_modes, args.reps, args.llama_kv_type)
            if got:
                bench_runs, bench_build, bench_rss = got
        if e is None or not runs or (bench_cols and not bench_runs):
            print(f"depth {d}: not in the table (an engine ran out of time)", file=sys.stderr)
            continue
        rows.append((d, e, runs, bench_runs, bench_rss))
        llama = "  ".join(f"fa-{'on' if fa else 'off'} {r[0]:.1f}/{r[1]:.1f}" for fa, r in runs.items())
        bench = "  ".join(f"fa-{'on' if fa else 'off'} {r[0]:.1f}/{r[1]:.1f}"
                          for fa, r in bench_runs.items())
        print(f"depth {d}: ellm {e[0]:.1f}/{e[1]:.1f}  llama.cpp {llama}"
              f"{'  llama-bench ' + bench if bench_runs else ''} (prefill/decode tokens/s)"
              f"  load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    print(f"\nload average {load_start:.2f} at start, {os.getloadavg()[0]:.2f} at end, "
          f"threads {args.threads}, gen {args.gen}, reps {args.reps}, "
          f"llama.cpp flash attention {args.flash_attn}, llama.cpp KV {args.llama_kv_type}, "
          f"ellm args '{args.ellm_args}'"
          + (f", llama-bench build {bench_build}" if bench_cols else "") + "\n")
    stages = ("prefill", "decode")
    print("| depth | " + " | ".join(
        f"ellm {s} t/s | llama.cpp {s} t/s | ratio"
        + (f" | llama-bench {s} t/s | ratio" if bench_cols else "") for s in stages)
        + " | ellm peak RSS MiB | llama-cpp-python peak RSS MiB"
        + (" | llama-bench peak RSS MiB |" if bench_cols else " |"))
    print("|---" * (3 + len(stages) * (5 if bench_cols else 3) + bench_cols) + "|")
    for d, e, runs, bench_runs, bench_rss in rows:
        cells = []
        for i in range(len(stages)):
            cells.append(f"{e[i]:.1f}")
            for speeds in [runs] + ([bench_runs] if bench_cols else []):
                # The better flash-attention setting (on wins a tie) and, when both ran, which.
                best = max(sorted(speeds, reverse=True), key=lambda fa: speeds[fa][i])
                which = f" (fa {'on' if best else 'off'})" if len(speeds) > 1 else ""
                cells += [f"{speeds[best][i]:.1f}{which}", f"{e[i] / speeds[best][i]:.2f}x"]
        mib = [e[2], max(r[2] for r in runs.values())] + ([bench_rss] if bench_cols else [])
        print(f"| {d} | " + " | ".join(cells + [f"{m / 2**20:.0f}" for m in mib]) + " |")


if __name__ == "__main__":
    main()
