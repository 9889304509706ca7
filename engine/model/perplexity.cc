#include "ellm/engine/perplexity.h"

#include <algorithm>
#include <cmath>

#include "ops/elementwise.h"

namespace ellm {

StatusOr<PerplexityResult> ComputePerplexity(Engine& engine, std::string_view text,
                                             const PerplexityOptions& o) {
  if (o.ctx < 2) return InvalidArgumentError("perplexity needs ctx >= 2");
  const Tokenizer& tok = engine.tokenizer();
  if (tok.bos() < 0) return FailedPreconditionError("the model's vocabulary has no BOS token");
  std::vector<TokenId> all = tok.Encode(text, true, false);
  const size_t skip = !all.empty() && all[0] == tok.bos() ? 1 : 0;
  const int64_t body = static_cast<int64_t>(all.size() - skip);
  const int64_t per_chunk = o.ctx - 1;
  int64_t chunks = body / per_chunk;
  if (o.max_chunks > 0) chunks = std::min(chunks, o.max_chunks);
  if (chunks == 0) {
    return InvalidArgumentError("the text has " + std::to_string(body) +
                                " tokens, fewer than one chunk of " + std::to_string(per_chunk));
  }
  SessionOptions so = o.session;
  so.n_ctx = o.ctx;
  so.micro_batch = o.micro_batch;
  ELLM_ASSIGN_OR_RETURN(auto session, engine.NewSession(so));
  PerplexityResult r;
  r.ctx = o.ctx;
  r.chunks = chunks;
  double total = 0;
  std::vector<TokenId> chunk(static_cast<size_t>(o.ctx));
  for (int64_t c = 0; c < chunks; ++c) {
    chunk[0] = tok.bos();
    auto first = all.begin() + static_cast<ptrdiff_t>(skip + c * per_chunk);
    std::copy(first, first + per_chunk, chunk.begin() + 1);
    session->Reset();
    double chunk_total = 0;
    // Logits at position i predict token i + 1; the last position's are unused.
    auto score = [&](int64_t i, std::span<const float> logits) {
      if (i + 1 >= o.ctx) return;
      const float target = logits[static_cast<size_t>(chunk[static_cast<size_t>(i + 1)])];
      chunk_total += ops::LogSumExp(logits.data(), static_cast<int64_t>(logits.size())) -
                     static_cast<double>(target);
    };
    ELLM_RETURN_IF_ERROR(session->Eval(chunk, LogitsFor::kAll, score));
    total += chunk_total;
    r.chunk_nll.push_back(chunk_total / static_cast<double>(per_chunk));
    r.tokens += per_chunk;
    if (o.progress) o.progress(c + 1, chunks, total / static_cast<double>(r.tokens));
  }
  r.kv = session->kv_stats();
  r.nll = total / static_cast<double>(r.tokens);
  r.ppl = std::exp(r.nll);
  return r;
}

}  // namespace ellm
