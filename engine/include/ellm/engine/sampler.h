// Choosing the next token from logits: greedy, or temperature sampling with
// top-k, top-p and min-p filters and a repetition penalty, from a seeded
// generator so a run can be repeated exactly. The filter order follows
// llama.cpp's default sampler chain: penalties, top-k, top-p, min-p,
// temperature, then a draw.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <vector>

#include "ellm/engine/tokenizer.h"

namespace ellm {

struct SamplingOptions {
  float temperature = 0.0f;     // <= 0: greedy
  int top_k = 40;               // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off; > 1 discourages recent tokens
  int repeat_last_n = 64;       // how many recent tokens the penalties see
  float frequency_penalty = 0;  // minus count x this, per recent token (OpenAI's)
  float presence_penalty = 0;   // minus this once per distinct recent token
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);
  // Picks a token. `logits` is not modified.
  TokenId Sample(std::span<const float> logits);
  // Tells the sampler a token was emitted (feeds the repetition penalty).
  void Accept(TokenId id);

 private:
  SamplingOptions o_;
  std::mt19937_64 rng_;
  std::vector<TokenId> recent_;
  std::vector<float> penalized_;  // the logits after the penalties
  std::vector<std::pair<float, TokenId>> cand_;
  std::map<TokenId, int> counts_;
};

// Index of the largest logit (the lowest index among equals).
TokenId ArgMax(std::span<const float> logits);

}  // namespace ellm
