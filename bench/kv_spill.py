#!/usr/bin/env python3
"""KV spill cost: a long prefill of the real model with a KV memory budget
small enough to force spilling, against the same run in memory, for bf16
and q8_0 KV. Prints a Markdown table (slowdown, bytes spilled, compression
ratio, peak resident KV). A benchmark, never a test.

    python3 bench/kv_spill.py --model models/gemma-3-270m-q4_k_m.gguf --depth 32704

Budgets default to about half of what each KV type holds at 32K
(bf16: 48 MiB of ~111, q8_0: 32 MiB of ~60).
"""
import argparse
import json
import subprocess
import tempfile


def run(ellm, model, depth, gen, threads, extra):
    out = subprocess.run([ellm, "bench", "--model", model, "--depth", str(depth), "--gen", str(gen),
                          "--threads", str(threads), "--json"] + extra,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--ellm", default="build/release/cli/ellm")
    ap.add_argument("--depth", type=int, default=32704)
    ap.add_argument("--gen", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budgets", default="bf16:48,q8_0:32", help="type:MiB,...")
    ap.add_argument("--spill-level", type=int, default=0,
                    help="0: raw spills (the default), 1-19: zstd at that level")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ellm-spill-") as spill:
        for item in args.budgets.split(","):
            kv_type, mib = item.split(":")
            base = ["--kv-type", kv_type]
            mem = run(args.ellm, args.model, args.depth, args.gen, args.threads, base)
            sp = run(args.ellm, args.model, args.depth, args.gen, args.threads,
                     base + ["--kv-budget", mib, "--spill-dir", spill,
                             "--spill-level", str(args.spill_level)])
            rows.append((kv_type, mib, mem, sp))
    print(f"\ndepth {args.depth}, gen {args.gen}, threads {args.threads}, "
          f"spill level {args.spill_level}\n")
    print("| KV | budget MiB | KV in memory MiB | spilled MiB | compression | peak resident MiB "
          "| prefill t/s in memory | with spill | slowdown | decode t/s in memory | with spill |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for kv_type, mib, mem, sp in rows:
        print(f"| {kv_type} | {mib} | {mem['kv_peak_resident_bytes'] / 2**20:.0f} | "
              f"{sp['kv_spilled_bytes'] / 2**20:.0f} | {sp['kv_compression_ratio']:.2f}x | "
              f"{sp['kv_peak_resident_bytes'] / 2**20:.0f} | {mem['prefill_tokens_per_s']:.1f} | "
              f"{sp['prefill_tokens_per_s']:.1f} | "
              f"{mem['prefill_tokens_per_s'] / sp['prefill_tokens_per_s']:.2f}x | "
              f"{mem['decode_tokens_per_s']:.1f} | {sp['decode_tokens_per_s']:.1f} |")


if __name__ == "__main__":
    main()
