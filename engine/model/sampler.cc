#include "ellm/engine/sampler.h"

#include <algorithm>
#include <cmath>

#include "kernels/activations.h"

namespace ellm {

TokenId ArgMax(std::span<const float> logits) {
  if (logits.empty()) return 0;
  return static_cast<TokenId>(
      kernels::GetActivationKernels().argmax(logits.data(), static_cast<int64_t>(logits.size())));
}

Sampler::Sampler(const SamplingOptions& options) : o_(options), rng_(options.seed) {}

void Sampler::Accept(TokenId id) {
  recent_.push_back(id);
  if (static_cast<int>(recent_.size()) > std::max(o_.repeat_last_n, 0)) {
    recent_.erase(recent_.begin());
  }
}

TokenId Sampler::Sample(std::span<const float> logits) {
  std::span<const float> z = logits;
  if (o_.repeat_penalty != 1.0f || o_.frequency_penalty != 0.0f || o_.presence_penalty != 0.0f) {
    // As llama.cpp's penalties sampler, once per distinct recent token:
    // positive logits divided by repeat_penalty, negative multiplied; then
    // minus count * frequency_penalty and presence_penalty (OpenAI's).
    penalized_.assign(logits.begin(), logits.end());
    counts_.clear();
    for (TokenId id : recent_) {
      if (id >= 0 && static_cast<size_t>(id) < penalized_.size()) ++counts_[id];
    }
    for (const auto& [id, count] : counts_) {
      float& v = penalized_[static_cast<size_t>(id)];
      v = v > 0 ? v / o_.repeat_penalty : v * o_.repeat_penalty;
      v -= static_cast<float>(count) * o_.frequency_penalty + o_.presence_penalty;
    }
    z = penalized_;
  }
  // The largest logit, the lowest id among equals.
  if (o_.temperature <= 0.0f) return ArgMax(z);
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  cand_.clear();
  if (o_.top_k > 0 && static_cast<size_t>(o_.top_k) < z.size()) {
    // The top k in by_logit order, as a partial sort would give them, in
    // one pass: a heap of the best k so far, whose worst is its front. Ids
    // rise, so a later logit equal to the worst's is worse and stays out.
    const size_t k = static_cast<size_t>(o_.top_k);
    for (size_t i = 0; i < k; ++i) cand_.emplace_back(z[i], static_cast<TokenId>(i));
    std::make_heap(cand_.begin(), cand_.end(), by_logit);
    for (size_t i = k; i < z.size(); ++i) {
      if (!(z[i] > cand_.front().first)) continue;
      std::pop_heap(cand_.begin(), cand_.end(), by_logit);
      cand_.back() = {z[i], static_cast<TokenId>(i)};
      std::push_heap(cand_.begin(), cand_.end(), by_logit);
    }
    std::sort(cand_.begin(), cand_.end(), by_logit);
  } else {
    cand_.reserve(z.size());
    for (size_t i = 0; i < z.size(); ++i) cand_.emplace_back(z[i], static_cast<TokenId>(i));
    std::sort(cand_.begin(), cand_.end(), by_logit);
  }
  size_t keep = cand_.size();
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
