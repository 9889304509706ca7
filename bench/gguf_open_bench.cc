// How long validating a GGUF header takes (the daemon does it at start-up).
// ELLM_BENCH_MODEL names the file; without it the benchmark reports an error.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "ellm/engine/gguf.h"

static void BM_GgufOpen(benchmark::State& state) {
  const char* path = std::getenv("ELLM_BENCH_MODEL");
  if (path == nullptr) {
    state.SkipWithError("set ELLM_BENCH_MODEL to a .gguf file");
    return;
  }
  for (auto _ : state) {
    auto f = ellm::gguf::GgufFile::Open(path);
    if (!f.ok()) {
      state.SkipWithError(f.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(f->tensors().size());
  }
}
BENCHMARK(BM_GgufOpen)->Unit(benchmark::kMillisecond);
