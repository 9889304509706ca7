#!/usr/bin/env python3
"""The packed GEMM against llama.cpp's CPU kernels, type by type, on one shape.

    bench/gemm_vs_llama_cpp.py --bench build/release/bench/ellm_bench_gemm

llama.cpp's side is its own kernel benchmark, test-backend-ops in perf mode
(`perf -o MUL_MAT -b CPU`), whose MUL_MAT cases multiply a [4096 x 14336]
weight matrix of every type by 1 and by 512 f32 activation rows. It is built
from the llama.cpp release that scripts/reference/llama-source unpacks
(v0.5.0, the one scripts/reference/build-llama-bench builds), against ggml
only (test-backend-ops needs nothing else), -march=native, AMX compiled out
as there, into a build directory beside that source; a finished build is
reused. ellm's side is ellm_bench_gemm's BM_GemmPackedLlamaShape, the packed
kernel on the same shapes, with the row groups split over the threads ggml's
CPU backend gets in test-backend-ops (half the CPUs, at least one).

Differences the ratio includes: llama.cpp's MUL_MAT also converts the f32
activations to its dot type on every run (for 512 tokens under 1% of the
product, as for ops::MatMul). test-backend-ops keeps the weights in ggml's
plain CPU buffer, so its row-wise vec_dot kernels run, not the repacked
ones (ggml-cpu/repack.cpp) that llama.cpp's CPU_REPACK buffer gives a model
for Q4_0, Q4_K, IQ4_NL and a few others: bench/vs_llama_cpp.py --llama-bench
measures those, on a whole model. Prints a Markdown table of MAC/s and ellm / llama.cpp per
type and token count. A benchmark, never a test: it prints numbers.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# ggml's names of the types both sides have (test-backend-ops' type_a).
TYPES = ["q8_0", "q5_0", "q4_0", "q5_1", "q4_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K",
         "iq4_nl", "iq4_xs"]
M, K = 4096, 14336
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"


def log(msg):
    print(f"gemm_vs_llama_cpp: {msg}", file=sys.stderr, flush=True)


def build_test_backend_ops():
    """test-backend-ops linked against ggml alone; returns its path."""
    src = Path(subprocess.check_output([str(ROOT / "scripts/reference/llama-source")],
                                       text=True).strip())
    build = src.parent / "build-ggml-perf"
    binary = build / "bin" / "test-backend-ops"
    if binary.exists():
        return binary
    log(f"building ggml and test-backend-ops in {build} (a few minutes on 2 cores)")
    nice = ["nice", "-n", "19"]
    subprocess.run(nice + [
        "cmake", "-S", str(src), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
        "-DBUILD_SHARED_LIBS=OFF", f"-DCMAKE_C_FLAGS={NO_AMX}", f"-DCMAKE_CXX_FLAGS={NO_AMX}",
        "-DGGML_NATIVE=ON", "-DGGML_CUDA=OFF", "-DGGML_METAL=OFF", "-DGGML_VULKAN=OFF",
        "-DGGML_BLAS=OFF", "-DGGML_OPENMP=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
        "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_TOOLS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_APP=OFF"], check=True, stdout=subprocess.DEVNULL)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    subprocess.run(nice + ["cmake", "--build", str(build), "-j", jobs, "--target", "ggml"],
                   check=True, stdout=subprocess.DEVNULL)
    libs = [build / "ggml/src" / f"lib{name}.a" for name in ("ggml", "ggml-cpu", "ggml-base")]
    binary.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(nice + [
        "c++", "-std=c++17", "-O2", "-march=native", *NO_AMX.split(),
        "-I", str(src / "ggml/include"), str(src / "tests/test-backend-ops.cpp"),
        *map(str, libs), "-fopenmp", "-lpthread", "-ldl", "-o", str(binary)], check=True)
    return binary


def llama_cpp_rates(binary):
    """{(type, n): MAC/s} from test-backend-ops perf on the M x K cases."""
    pattern = f"type_a=({'|'.join(TYPES)}),type_b=f32,m={M},n=(1|512),k={K},"
    out = subprocess.run([str(binary), "perf", "-o", "MUL_MAT", "-b", "CPU", "-p", pattern],
                         check=True, capture_output=True, text=True).stdout
    rates = {}
    line_re = re.compile(r"MUL_MAT\(type_a=(\w+),type_b=f32,m=(\d+),n=(\d+),k=(\d+),.*?"
                         r"\s([\d.]+) us/run")
    for line in out.splitlines():
        m = line_re.search(line)
        if m:
            t, rows, n, cols, us = m.group(1), int(m.group(2)), int(m.group(3)), int(
                m.group(4)), float(m.group(5))
            rates[(t, n)] = rows * n * cols / (us * 1e-6)
    return rates


def ellm_rates(bench, threads):
    """{(type, n): MAC/s} from ellm_bench_gemm's BM_GemmPackedLlamaShape."""
    env = dict(os.environ, ELLM_GEMM_THREADS=str(threads))
    out = subprocess.run([str(bench), "--benchmark_filter=BM_GemmPackedLlamaShape/",
                          "--benchmark_format=json"], check=True, capture_output=True,
                         text=True, env=env).stdout
    rates = {}
    for b in json.loads(out)["benchmarks"]:
        m = re.match(r"BM_GemmPackedLlamaShape/(\w+)/rows:\d+/cols:\d+/tokens:(\d+)", b["name"])
        if m:
            # Our type names are ggml's, upper-cased ("Q4_K", "IQ4_NL").
            ours = m.group(1)
            t = next((x for x in TYPES if x.upper() == ours), ours.lower())
            rates[(t, int(m.group(2)))] = b["MAC"]
    return rates


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True, help="path to ellm_bench_gemm")
    args = ap.parse_args()
    binary = build_test_backend_ops()
    # test-backend-ops gives the CPU backend hardware_concurrency / 2 threads.
    threads = max(1, (os.cpu_count() or 2) // 2)
    log(f"both sides on {threads} thread(s); llama.cpp: {binary}")
    theirs = llama_cpp_rates(binary)
    ours = ellm_rates(args.bench, threads)
    print("| type | tokens | ellm GMAC/s | llama.cpp GMAC/s | ellm / llama.cpp |")
    print("|---|---:|---:|---:|---:|")
    for t in TYPES:
        for n in (1, 512):
            a, b = ours.get((t, n)), theirs.get((t, n))
            ratio = f"{a / b:.2f}" if a and b else "-"
            fa = f"{a / 1e9:.1f}" if a else "-"
            fb = f"{b / 1e9:.1f}" if b else "-"
            print(f"| {t} | {n} | {fa} | {fb} | {ratio} |")


if __name__ == "__main__":
    main()
