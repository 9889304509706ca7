#include "ellm/engine/sampler.h"

#include <algorithm>
#include <cmath>

namespace ellm {

TokenId ArgMax(std::span<const float> logits) {
  return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(const SamplingOptions& options) : o_(options), rng_(options.seed) {}

void Sampler::Accept(TokenId id) {
  recent_.push_back(id);
  if (static_cast<int>(recent_.size()) > std::max(o_.repeat_last_n, 0)) {
    recent_.erase(recent_.begin());
  }
}

TokenId Sampler::Sample(std::span<const float> logits) {
  cand_.clear();
  cand_.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) cand_.emplace_back(logits[i], static_cast<TokenId>(i));
  if (o_.repeat_penalty != 1.0f || o_.frequency_penalty != 0.0f || o_.presence_penalty != 0.0f) {
    // As llama.cpp's penalties sampler, once per distinct recent token:
    // positive logits divided by repeat_penalty, negative multiplied; then
    // minus count * frequency_penalty and presence_penalty (OpenAI's).
    counts_.clear();
    for (TokenId id : recent_) {
      if (id >= 0 && static_cast<size_t>(id) < cand_.size()) ++counts_[id];
    }
    for (const auto& [id, count] : counts_) {
      float& z = cand_[static_cast<size_t>(id)].first;
      z = z > 0 ? z / o_.repeat_penalty : z * o_.repeat_penalty;
      z -= static_cast<float>(count) * o_.frequency_penalty + o_.presence_penalty;
    }
  }
  if (o_.temperature <= 0.0f) {
    return std::max_element(cand_.begin(), cand_.end(),
                            [](const auto& a, const auto& b) {
                              return a.first < b.first ||
                                     (a.first == b.first && a.second > b.second);
                            })
        ->second;
  }
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = cand_.size();
  if (o_.top_k > 0 && static_cast<size_t>(o_.top_k) < keep) {
    keep = static_cast<size_t>(o_.top_k);
    std::partial_sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(keep), cand_.end(),
                      by_logit);
  } else {
    std::sort(cand_.begin(), cand_.end(), by_logit);
  }
  cand_.resize(keep);
  // Probabilities at temperature 1 for the p-filters (llama.cpp applies
  // top-p and min-p before temperature in its default chain).
  std::vector<double> p(keep);
  const double max_logit = cand_[0].first;
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += p[i] = std::exp(cand_[i].first - max_logit);
  for (double& x : p) x /= sum;
  if (o_.top_p < 1.0f) {
    double cum = 0;
    size_t n = 0;
    while (n < keep) {
      cum += p[n++];
      if (cum >= o_.top_p) break;
    }
    keep = std::max<size_t>(n, 1);
  }
  if (o_.min_p > 0.0f) {
    const double floor = o_.min_p * p[0];
    size_t n = 1;
    while (n < keep && p[n] >= floor) ++n;
    keep = n;
  }
  std::vector<double> w(keep);
  for (size_t i = 0; i < keep; ++i) {
    w[i] = std::exp((cand_[i].first - max_logit) / o_.temperature);
  }
  std::discrete_distribution<size_t> draw(w.begin(), w.end());
  return cand_[draw(rng_)].second;
}

}  // namespace ellm
