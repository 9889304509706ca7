#!/usr/bin/env bash
# bench/amx_report.sh [--quick] — everything issue 39 asks of an AMX machine,
# in one command, from a built tree (build/release) on an Intel Xeon with
# AMX (Sapphire Rapids or later) where Linux grants the tile state:
#   1. the CPU (lscpu, `ellm cpu`); stops if ellm is not using AMX;
#   2. the AMX kernels' tests on the real instructions (they skip
#      elsewhere): packed GEMM, attention tiles, the tile model;
#   3. the AMX int8 and bf16 peaks and the prefill weight products (Gemma 3
#      270M's matrices at 256 tokens, three Llama 8B ones at 512) on AMX and on AVX-512 VNNI
#      (ELLM_ISA=avx512vnni), as a fraction of the int8 peak;
#   4. attention alone at 32K (256-token prefill tile, decode): tiles
#      against pair and f32 scores;
#   5. ellm against llama.cpp (llama-cpp-python, AMX compiled out: its AMX
#      path dies with SIGILL on these VMs) at depth 32768 on Gemma 3 270M
#      and 16384 on the Llama 3.2 1B shape, with --attn-scores tiles and
#      with the default; --quick skips this step (the longest: ~30 min);
#   6. the tiles' perplexity at 32K against the f32 path (nightly test).
# Prints as it goes; a benchmark, never a test. Numbers belong in
# docs/benchmarks.md with the CPU named.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    *) echo "usage: bench/amx_report.sh [--quick]" >&2; exit 2 ;;
  esac
done

b=build/release
ellm=$b/cli/ellm
model=${ELLM_TEST_MODEL:-models/gemma-3-270m-q4_k_m.gguf}
for f in "$ellm" "$b/bench/ellm_bench_gemm" "$b/bench/ellm_bench_attention" "$model"; do
  [[ -e $f ]] || { echo "amx_report: missing $f (build with scripts/test, model with scripts/fetch-model)" >&2; exit 1; }
done
section() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

section "CPU"
lscpu | grep -E 'Model name|^CPU\(s\)|L3' || true
cpu=$("$ellm" cpu)
echo "$cpu"
if ! grep -q 'using amx' <<<"$cpu"; then
  echo "amx_report: ellm is not using AMX here (see above); nothing to measure" >&2
  exit 1
fi

section "AMX kernels on the real instructions"
"$b/tests/gemm_packed_test" --gtest_filter='*Amx*' --gtest_brief=1
"$b/tests/vec_dot_test" --gtest_filter='AttnTileAmx.*' --gtest_brief=1
"$b/tests/amx_emu_test" --gtest_brief=1

section "peaks and weight products (one thread, then two)"
gemm_filter='BM_Int8PeakAmx|BM_Bf16PeakAmx|BM_Int8PeakVnni|BM_GemmPacked/.*tokens:256|BM_GemmPackedLlamaShape/(Q4_K|Q6_K|Q8_0).*tokens:512'
"$b/bench/ellm_bench_gemm" --benchmark_filter="$gemm_filter" --benchmark_min_time=0.2
echo "-- the same products on AVX-512 VNNI (ELLM_ISA=avx512vnni):"
ELLM_ISA=avx512vnni "$b/bench/ellm_bench_gemm" --benchmark_filter='BM_GemmPacked/.*tokens:256|BM_GemmPackedLlamaShape/(Q4_K|Q6_K|Q8_0).*tokens:512' \
  --benchmark_min_time=0.2

section "attention alone at 32K (kv 0 pairs, 4 f32 scores, 5 tiles)"
"$b/bench/ellm_bench_attention" \
  --benchmark_filter='BM_Attention/shape:[01]/depth:32768/tokens:(1|256)/threads:2/kv:[045]$'
"$b/bench/ellm_bench_attention" --benchmark_filter='BM_AttnTile/dim:(64|256)/op:[01]/rows:256/half:[034]$'

py=$(scripts/reference/setup --print-python)
if ((!quick)); then
  section "ellm vs llama.cpp, Gemma 3 270M at 32768"
  for args in "--attn-scores tiles" ""; do
    echo "-- ellm bench flags: '${args:-(default)}'"
    "$py" bench/vs_llama_cpp.py --model "$model" --depths 32768 --gen 16 --threads 2 --reps 1 \
      --flash-attn both --ellm-args "$args"
  done
  llama=$HOME/.cache/ellm/synthetic/llama-3.2-1b-synthetic-q4_k_m.gguf
  [[ -e $llama ]] || "$py" bench/make_synthetic_llama.py --shape 1b >/dev/null
  section "ellm vs llama.cpp, the Llama 3.2 1B shape at 16384"
  "$py" bench/vs_llama_cpp.py --model "$llama" --depths 16384 --gen 16 --threads 2 --reps 1 \
    --flash-attn both --ellm-args "--attn-scores tiles"
fi

section "tiles' perplexity at 32K against f32 (nightly test)"
ELLM_TEST_MODEL=$model ELLM_LLAMA_SRC=${ELLM_LLAMA_SRC:-$(scripts/reference/llama-source)} \
  "$b/tests/model_long_context_test" --gtest_filter='LongContext.TilePerplexity*'
