// The forward pass, one micro-batch at a time (or one token of each of
// several sessions: batched decode), for every family: it reads top to
// bottom and branches only on the spec's recipe enums.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "ellm/engine/engine.h"
#include "ellm/engine/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/attention.h"
#include "model/model.h"
#include "model/session_state.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "quant/quant.h"

namespace ellm {

using model::HParams;
using model::Layer;

namespace {

// Logit rows computed per pass over the output matrix: bounds the buffer
// (rows x n_vocab floats) while reading the big matrix once per slice.
constexpr int64_t kLogitRowsPerSlice = 32;

void NormRows(const float* x, const std::vector<float>& w, float* y, int64_t rows, int64_t n,
              float eps) {
  for (int64_t r = 0; r < rows; ++r) ops::RmsNorm(x + r * n, w.data(), y + r * n, n, eps);
}

// The same, rows shared among the pool's threads (a micro-batch's rows; the
// per-row arithmetic is unchanged, so results are too).
void NormRows(ThreadPool& pool, const float* x, const std::vector<float>& w, float* y, int64_t rows,
              int64_t n, float eps) {
  pool.ParallelFor(rows, ThreadPool::RowGrain(n), [&](int64_t r0, int64_t r1) {
    NormRows(x + r0 * n, w, y + r0 * n, r1 - r0, n, eps);
  });
}

// Rows [row0, row0 + rows) of a forward step belong to one session and sit
// at its positions pos0, pos0 + 1, ...: one segment for a session's Eval,
// one per session (of one row each) for batched decode.
struct Segment {
  Session::State* state;
  int64_t pos0;
  int64_t row0;
  int64_t rows;
};

// The layers, top to bottom, for n rows. Shapes (E = n_embd, H/Hkv = query/KV
// heads, Dk/Dv = head dims, F = n_ff), row-major, in `s` (the scratch: the
// first segment's state for batched decode): x [n, E] holds the scaled
// embeddings on entry and the last layer's output on return. Each row's K/V
// go to its own segment's cache; attention runs per segment.
Status ForwardLayers(const model::Model& m, ThreadPool& pool, Session::State& s,
                     std::span<const Segment> segments, int64_t n) {
  const HParams& hp = m.hparams();
  const int64_t E = hp.n_embd;
  const int64_t q_row = int64_t{hp.n_head} * hp.head_dim_k;
  const int64_t k_row = int64_t{hp.n_head_kv} * hp.head_dim_k;
  const int64_t v_row = int64_t{hp.n_head_kv} * hp.head_dim_v;
  const int64_t attn_row = int64_t{hp.n_head} * hp.head_dim_v;
  const ops::RopePairs pairs =
      m.spec().rope == model::RopeStyle::kNeox ? ops::RopePairs::kNeox : ops::RopePairs::kAdjacent;
  // Each row's segment and position.
  std::vector<const Segment*> row_segment(static_cast<size_t>(n));
  for (const Segment& g : segments) {
    for (int64_t r = 0; r < g.rows; ++r) row_segment[g.row0 + r] = &g;
  }
  auto row_pos = [&](int64_t t) { return row_segment[t]->pos0 + (t - row_segment[t]->row0); };
  for (int il = 0; il < hp.n_layer; ++il) {
    const Layer& l = m.layers()[il];
    // Attention block. h [n, E] = RmsNorm(x); q [n, H*Dk], k [n, Hkv*Dk],
    // v [n, Hkv*Dv] = h . W^T (+ bias).
    NormRows(pool, s.x.data(), l.attn_norm, s.h.data(), n, E, hp.rms_eps);
    const ops::MatMulOutput qkv[] = {{&l.q, s.q.data()}, {&l.k, s.k.data()}, {&l.v, s.v.data()}};
    ops::MatMulSameInput(qkv, s.h.data(), n, pool, s.mm);
    if (!l.q_bias.empty()) ops::AddRowBias(s.q.data(), l.q_bias.data(), n, q_row);
    if (!l.k_bias.empty()) ops::AddRowBias(s.k.data(), l.k_bias.data(), n, k_row);
    if (!l.v_bias.empty()) ops::AddRowBias(s.v.data(), l.v_bias.data(), n, v_row);
    // Heads of head_dim_k whose first n_rot dimensions turn (all, but for
    // partial RoPE), with the RoPE of the row's session (LongRoPE depends on
    // its n_ctx).
    auto rope_heads = [&](float* x, int heads, int64_t pos, const ops::RopeParams& rope) {
      if (hp.n_rot == hp.head_dim_k) {
        ops::Rope(x, heads, hp.head_dim_k, pos, pairs, rope);
        return;
      }
      for (int h = 0; h < heads; ++h) {
        ops::Rope(x + int64_t{h} * hp.head_dim_k, 1, hp.n_rot, pos, pairs, rope);
      }
    };
    // Per token: per-head q/k norms (qk_norm families), RoPE at its
    // position, q scaled by query_scale.
    pool.ParallelFor(n, ThreadPool::RowGrain(q_row + k_row), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const ops::RopeParams rope = m.RopeFor(l, row_segment[t]->state->cache->n_ctx());
        float* qt = s.q.data() + t * q_row;
        float* kt = s.k.data() + t * k_row;
        if (m.spec().qk_norm) {
          NormRows(qt, l.q_norm, qt, hp.n_head, hp.head_dim_k, hp.rms_eps);
          NormRows(kt, l.k_norm, kt, hp.n_head_kv, hp.head_dim_k, hp.rms_eps);
        }
        rope_heads(qt, hp.n_head, row_pos(t), rope);
        rope_heads(kt, hp.n_head_kv, row_pos(t), rope);
        ops::Scale(qt, hp.query_scale, q_row);
      }
    });
    // The caches take rows one at a time, on this thread (they may spill).
    for (int64_t t = 0; t < n; ++t) {
      ELLM_RETURN_IF_ERROR(row_segment[t]->state->cache->Store(
          il, row_pos(t), s.k.data() + t * k_row, s.v.data() + t * v_row));
    }
    // attn [n, H*Dv] = softmax(q . K^T) . V over each segment's cached
    // positions (causal; a sliding window on sliding layers).
    // One call for every segment (batched decode: one pool hand-off per
    // layer for all the sessions).
    thread_local std::vector<model::AttentionCall> calls;
    calls.clear();
    for (const Segment& g : segments) {
      Session::State& gs = *g.state;
      calls.push_back({model::AttentionShape{hp.n_head, hp.n_head_kv, hp.head_dim_k, hp.head_dim_v,
                                             l.sliding ? hp.sliding_window : 0, gs.bf16_weights,
                                             gs.sparse, gs.pair_scores, gs.tiles},
                       gs.cache.get(), s.q.data() + g.row0 * q_row, g.rows, g.pos0,
                       s.attn.data() + g.row0 * attn_row, &gs.attn_scratch, &gs.attn_placement[il],
                       gs.summaries.empty() ? nullptr : &gs.summaries[il]});
    }
    ELLM_RETURN_IF_ERROR(model::AttentionBatch(calls, il, pool));
    // h [n, E] = attn . Wo^T (post-norm for Gemma); x += h * residual_scale.
    ops::MatMul(l.o, s.attn.data(), n, s.h.data(), pool, s.mm);
    if (m.spec().norms == model::NormPlacement::kPreAndPost) {
      NormRows(pool, s.h.data(), l.post_attn_norm, s.h.data(), n, E, hp.rms_eps);
    }
    if (hp.residual_scale != 1.0f) ops::Scale(s.h.data(), hp.residual_scale, n * E);
    ops::AddInPlace(s.x.data(), s.h.data(), n * E);
    // Feed-forward block. gate, up [n, F] = RmsNorm(x) . W^T;
    // gate = act(gate) * up; h [n, E] = gate . Wdown^T; x += h.
    NormRows(pool, s.x.data(), l.ffn_norm, s.h.data(), n, E, hp.rms_eps);
    const ops::MatMulOutput gate_up[] = {{&l.gate, s.gate.data()}, {&l.up, s.up.data()}};
    ops::MatMulSameInput(gate_up, s.h.data(), n, pool, s.mm);
    pool.ParallelFor(n, ThreadPool::RowGrain(hp.n_ff), [&](int64_t t0, int64_t t1) {
      float* g = s.gate.data() + t0 * hp.n_ff;
      const float* u = s.up.data() + t0 * hp.n_ff;
      switch (m.spec().activation) {
        case model::FfnActivation::kGeluTanh:
          ops::GeGlu(g, u, g, (t1 - t0) * hp.n_ff);
          break;
        case model::FfnActivation::kSilu:
          ops::SwiGlu(g, u, g, (t1 - t0) * hp.n_ff);
          break;
      }
    });
    ops::MatMul(l.down, s.gate.data(), n, s.h.data(), pool, s.mm);
    if (m.spec().norms == model::NormPlacement::kPreAndPost) {
      NormRows(pool, s.h.data(), l.post_ffn_norm, s.h.data(), n, E, hp.rms_eps);
    }
    if (hp.residual_scale != 1.0f) ops::Scale(s.h.data(), hp.residual_scale, n * E);
    ops::AddInPlace(s.x.data(), s.h.data(), n * E);
  }
  return OkStatus();
}

// x [n, E] = token_embd rows of `tokens` * embedding_scale, in `s`.
void Embed(const model::Model& m, Session::State& s, const TokenId* tokens, int64_t n) {
  const HParams& hp = m.hparams();
  const int64_t E = hp.n_embd;
  for (int64_t t = 0; t < n; ++t) {
    ops::DequantizeWeightRow(m.token_embd(), tokens[t], s.x.data() + t * E, s.emb_row);
    ops::Scale(s.x.data() + t * E, hp.embedding_scale, E);
  }
}

// Logits [rows, V] = RmsNorm(x) . output^T (scaled, soft-capped) for rows
// [first, last) of s.x, kLogitRowsPerSlice rows at a time; on_row(t, logits).
template <typename OnRow>
void EmitLogits(const model::Model& m, ThreadPool& pool, Session::State& s, int64_t first,
                int64_t last, const OnRow& on_row) {
  const HParams& hp = m.hparams();
  const int64_t E = hp.n_embd;
  for (int64_t t0 = first; t0 < last; t0 += kLogitRowsPerSlice) {
    const int64_t rows = std::min(kLogitRowsPerSlice, last - t0);
    NormRows(s.x.data() + t0 * E, m.output_norm(), s.h.data(), rows, E, hp.rms_eps);
    s.logits.resize(static_cast<size_t>(rows * hp.n_vocab));
    ops::MatMul(m.output(), s.h.data(), rows, s.logits.data(), pool, s.mm);
    if (hp.logit_scale != 1.0f) {
      // As ggml_scale by 1/logit_scale (src/models/granite.cpp), not a division.
      ops::Scale(s.logits.data(), 1.0f / hp.logit_scale, rows * hp.n_vocab);
    }
    if (hp.final_logit_softcap > 0) {
      const float cap = hp.final_logit_softcap;
      for (float& z : s.logits) z = std::tanh(z / cap) * cap;
    }
    for (int64_t r = 0; r < rows; ++r) {
      on_row(t0 + r, std::span<const float>(s.logits.data() + r * hp.n_vocab,
                                            static_cast<size_t>(hp.n_vocab)));
    }
  }
}

Status CheckTokens(const HParams& hp, std::span<const TokenId> tokens) {
  for (TokenId id : tokens) {
    if (id < 0 || id >= hp.n_vocab) {
      return InvalidArgumentError("token id " + std::to_string(id) + " outside the vocabulary (" +
                                  std::to_string(hp.n_vocab) + ")");
    }
  }
  return OkStatus();
}

}  // namespace

Status Session::Eval(std::span<const TokenId> tokens, LogitsFor which,
                     const LogitsCallback& on_logits, const ProgressCallback& on_progress) {
  const model::Model& m = *engine_->model_;
  if (pos_ + static_cast<int64_t>(tokens.size()) > state_->cache->n_ctx()) {
    return OutOfRangeError("context full: " + std::to_string(pos_) + " positions used, " +
                           std::to_string(tokens.size()) + " more requested, n_ctx is " +
                           std::to_string(state_->cache->n_ctx()));
  }
  ELLM_RETURN_IF_ERROR(CheckTokens(m.hparams(), tokens));
  ThreadPool& pool = *engine_->pool_;
  State& s = *state_;
  const int64_t total = static_cast<int64_t>(tokens.size());
  for (int64_t b0 = 0; b0 < total; b0 += s.micro_batch) {
    const int64_t n = std::min(s.micro_batch, total - b0);
    Embed(m, s, tokens.data() + b0, n);
    const Segment whole{&s, pos_, 0, n};
    ELLM_RETURN_IF_ERROR(ForwardLayers(m, pool, s, std::span<const Segment>(&whole, 1), n));
    pos_ += n;
    tokens_.insert(tokens_.end(), tokens.begin() + b0, tokens.begin() + b0 + n);
    // Logits only where asked for.
    int64_t first = n;  // [first, n) of this micro-batch
    if (which == LogitsFor::kAll) {
      first = 0;
    } else if (which == LogitsFor::kLast && b0 + n == total) {
      first = n - 1;
    }
    EmitLogits(m, pool, s, first, n,
               [&](int64_t t, std::span<const float> logits) { on_logits(b0 + t, logits); });
    if (on_progress && !on_progress(b0 + n, total) && b0 + n < total) {
      return CancelledError("evaluation cancelled after " + std::to_string(b0 + n) + " of " +
                            std::to_string(total) + " tokens");
    }
  }
  return OkStatus();
}

Status Session::EvalBatch(std::span<Session* const> sessions, std::span<const TokenId> tokens,
                          const LogitsCallback& on_logits) {
  if (sessions.size() != tokens.size()) {
    return InvalidArgumentError("batched decode: " + std::to_string(sessions.size()) +
                                " sessions but " + std::to_string(tokens.size()) + " tokens");
  }
  if (sessions.empty()) return OkStatus();
  const Engine* engine = sessions[0]->engine_;
  for (size_t i = 0; i < sessions.size(); ++i) {
    const Session& se = *sessions[i];
    if (se.engine_ != engine) {
      return InvalidArgumentError("batched decode: session " + std::to_string(i) +
                                  " belongs to another engine");
    }
    for (size_t j = 0; j < i; ++j) {
      if (sessions[j] == &se) {
        return InvalidArgumentError("batched decode: session " + std::to_string(i) +
                                    " appears twice");
      }
    }
    if (se.pos_ + 1 > se.state_->cache->n_ctx()) {
      return OutOfRangeError("context full: session " + std::to_string(i) + " has used all " +
                             std::to_string(se.state_->cache->n_ctx()) + " positions");
    }
  }
  const model::Model& m = *engine->model_;
  ELLM_RETURN_IF_ERROR(CheckTokens(m.hparams(), tokens));
  ThreadPool& pool = *engine->pool_;
  // The first session's buffers hold the rows, as many as its micro-batch.
  State& s = *sessions[0]->state_;
  const int64_t total = static_cast<int64_t>(sessions.size());
  std::vector<Segment> segments;
  for (int64_t b0 = 0; b0 < total; b0 += s.micro_batch) {
    const int64_t n = std::min(s.micro_batch, total - b0);
    segments.clear();
    for (int64_t r = 0; r < n; ++r) {
      Session& se = *sessions[b0 + r];
      segments.push_back({se.state_.get(), se.pos_, r, 1});
    }
    Embed(m, s, tokens.data() + b0, n);
    ELLM_RETURN_IF_ERROR(ForwardLayers(m, pool, s, segments, n));
    for (int64_t r = 0; r < n; ++r) {
      Session& se = *sessions[b0 + r];
      ++se.pos_;
      se.tokens_.push_back(tokens[b0 + r]);
    }
    EmitLogits(m, pool, s, 0, n,
               [&](int64_t t, std::span<const float> logits) { on_logits(b0 + t, logits); });
  }
  return OkStatus();
}

}  // namespace ellm
