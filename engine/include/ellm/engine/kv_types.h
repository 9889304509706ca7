// The KV cache's public choices and counters: how it stores keys and values
// (KvType), how a bf16 cache's attention scores are computed (AttnScores),
// and what it did in a session (KvStats). SessionOptions (engine.h) carries
// the choices; engine/kv/ implements them without including the engine's
// facade.
#pragma once

#include <cstdint>
#include <string_view>

#include "ellm/base/status.h"

namespace ellm {

// How the KV cache stores keys and values; serialized in configs and saved
// states, append-only. Attention rounds Q to the storage's precision before
// the products with K (as llama.cpp does), and works in f32 from there.
enum class KvType {
  kF16 = 0,  // llama.cpp's default (the golden tests compare with it)
  kF32 = 1,  // no rounding at all
  // The default: f32's range (never overflows as f16 can with Gemma's large
  // activations); perplexity as f16's, same bytes; Q.K as AttnScores says.
  kBF16 = 2,
  kQ8_0 = 3,  // blocks of 32 int8 with an f16 scale: about half of f16's bytes
};
// "f16", "f32", "bf16", "q8_0"; and back (error naming the accepted names).
std::string_view KvTypeName(KvType type);
StatusOr<KvType> ParseKvType(std::string_view name);

// How a bf16 cache's attention scores (Q.K) are computed. All multiply
// the same bf16 values exactly and add in f32; they differ only in the
// order of the additions (so in last bits):
//   kPairs: bf16 pair dot products, as VDPBF16PS and llama.cpp's
//           ggml_vec_dot_bf16 compute them (kernels/attn_tile.h ScoresBf16);
//   kF32:   keys widened to f32 (exact), then f32 FMAs, as for f16;
//   kAuto:  whichever is faster on this CPU (CpuFeatures::FastBf16Dot:
//           pairs on AMD with AVX512_BF16, twice the FMA rate there; f32 on
//           Intel, where pairs measured 0.6x, and without AVX512_BF16).
//   kTiles: AMX bf16 tiles (TDPBF16PS: sums per chunk of 32 products,
//           kernels/attn_tile.h ScoresBf16Tiles), and the weighted sum of V
//           on tiles too, with the weights rounded to bf16 (as the opt-in
//           bf16 weights are). Needs AMX-BF16 (Sapphire Rapids and later);
//           opt-in (kAuto never picks it).
// Prefill and decode always use the same one, so they agree bit for bit.
enum class AttnScores { kAuto = 0, kPairs = 1, kF32 = 2, kTiles = 3 };
AttnScores ResolveAttnScores(AttnScores s);  // kAuto -> this CPU's choice
// What a cache of kv_type computes its scores with: ResolveAttnScores(s)
// for bf16, kF32 (keys widened or stored as f32) for every other type.
AttnScores AttnScoresUsed(KvType kv_type, AttnScores s);
// "auto", "pairs", "f32", "tiles"; and back (error naming the accepted names).
std::string_view AttnScoresName(AttnScores s);
StatusOr<AttnScores> ParseAttnScores(std::string_view name);

// What the KV cache did so far in a session.
struct KvStats {
  uint64_t resident_bytes = 0;       // KV bytes in memory now
  uint64_t peak_resident_bytes = 0;  // the most at any time
  uint64_t spilled_bytes = 0;        // raw bytes of the blocks written to disk
  uint64_t spilled_encoded_bytes = 0;
  uint64_t read_back_bytes = 0;  // raw bytes read back from disk
  double compression_ratio() const {
    return spilled_encoded_bytes > 0 ? double(spilled_bytes) / double(spilled_encoded_bytes) : 0.0;
  }
};

}  // namespace ellm
