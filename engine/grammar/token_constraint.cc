// JsonConstraint: the JSON automaton (json_matcher.h) applied to whole
// tokens. Each step tests every token's bytes from the current state set.
// Tokens are visited in byte order so that a shared prefix is stepped once,
// and every token under a prefix that already failed is skipped (a trie
// walk without the trie: the sorted texts and their common-prefix lengths).
// Inside a free string, tokens without '"', '\' or control bytes are
// allowed outright (within the length bound) and only the others are
// stepped: that is where most of a document's tokens are spent.
// Lazy tagged documents (TaggedJson::trigger) let every token through until
// the text holds the trigger, but step the automaton over what a token would
// put after it, from the trigger on, and refuse it if that breaks the block.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ellm/engine/constraint.h"
#include "grammar/json_matcher.h"

namespace ellm {
namespace grammar {

// Token texts in byte order with their common-prefix lengths.
struct SortedTokens {
  std::vector<TokenId> ids;
  std::vector<uint32_t> lcp;  // with the previous entry
};

class ConstraintImpl {
 public:
  ConstraintImpl(Schema schema, const Tokenizer& tok, const TaggedJson& tags = {})
      : schema_(std::move(schema)),
        matcher_(schema_, Framing{tags.open, tags.close, tags.min_blocks, tags.max_blocks}),
        tok_(tok),
        trigger_(tags.trigger) {
    const int32_t n = tok.vocab_size();
    pieces_.resize(static_cast<size_t>(n));
    string_safe_.assign(static_cast<size_t>(n), 0);
    code_points_.assign(static_cast<size_t>(n), 0);
    std::vector<TokenId> all, unsafe;
    for (TokenId id = 0; id < n; ++id) {
      if (tok.IsEndOfGeneration(id)) eog_.push_back(id);
      const TokenType type = tok.type(id);
      if (type == TokenType::kControl || type == TokenType::kUnused) continue;
      std::string piece = tok.TokenToPiece(id);
      if (piece.empty()) continue;
      // Safe inside a free string: no quote, backslash or control byte,
      // and whole UTF-8 code points (the automaton's rules, stepped once).
      bool safe = true;
      int32_t cps = 0;
      for (unsigned char c : piece) {
        if (c == '"' || c == '\\' || c < 0x20) safe = false;
        if ((c & 0xC0) != 0x80) ++cps;
      }
      safe = safe && IsWholeUtf8(piece);
      string_safe_[static_cast<size_t>(id)] = safe;
      code_points_[static_cast<size_t>(id)] = cps;
      pieces_[static_cast<size_t>(id)] = std::move(piece);
      all.push_back(id);
      if (!safe) unsafe.push_back(id);
      // Only a token with the trigger's last byte can complete it.
      if (!trigger_.empty() &&
          pieces_[static_cast<size_t>(id)].find(trigger_.back()) != std::string::npos) {
        trigger_ends_.push_back(id);
      }
    }
    all_ = Sort(std::move(all));
    unsafe_ = Sort(std::move(unsafe));
    Reset();
  }

  void Reset() {
    state_ = matcher_.Start();
    triggered_ = trigger_.empty();
    tail_.clear();
  }
  bool Complete() const { return !triggered_ || matcher_.CanEnd(state_); }
  bool Finished() const { return triggered_ && matcher_.MustEnd(state_); }

  size_t Mask(std::span<float> logits) const {
    if (!triggered_) return MaskBeforeTrigger(logits);
    std::vector<uint8_t> allowed(logits.size(), 0);
    const int64_t room = matcher_.FreeStringRoom(state_);
    if (room >= -1) {
      for (size_t id = 0; id < pieces_.size() && id < logits.size(); ++id) {
        if (string_safe_[id] && (room < 0 || code_points_[id] <= room)) allowed[id] = 1;
      }
      Walk(unsafe_, allowed);
    } else {
      Walk(all_, allowed);
    }
    if (Complete()) {
      for (TokenId id : eog_) {
        if (static_cast<size_t>(id) < allowed.size()) allowed[static_cast<size_t>(id)] = 1;
      }
    }
    size_t n = 0;
    for (size_t id = 0; id < logits.size(); ++id) {
      if (!allowed[id]) {
        logits[id] = -std::numeric_limits<float>::infinity();
      } else {
        ++n;
      }
    }
    return n;
  }

  Status Accept(TokenId id) {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) {
      return FailedPreconditionError("constrained decoding: token " + std::to_string(id) +
                                     " is out of range");
    }
    if (tok_.IsEndOfGeneration(id)) {
      if (!Complete())
        return FailedPreconditionError(
            "constrained decoding: end of generation before the JSON is complete");
      return OkStatus();
    }
    const std::string& piece = pieces_[static_cast<size_t>(id)];
    if (!triggered_) {
      const std::string text = tail_ + piece;
      const size_t at = text.find(trigger_);
      if (at == std::string::npos) {
        tail_ = text.substr(text.size() - std::min(text.size(), trigger_.size() - 1));
        return OkStatus();
      }
      StateSet after;
      if (!StepFromStart(std::string_view(text).substr(at), after)) {
        return FailedPreconditionError("constrained decoding: token " + std::to_string(id) +
                                       " breaks the block after '" + trigger_ + "'");
      }
      state_.swap(after);
      triggered_ = true;
      return OkStatus();
    }
    if (piece.empty()) {
      return FailedPreconditionError("constrained decoding: token " + std::to_string(id) +
                                     " has no text");
    }
    StateSet next;
    for (unsigned char c : piece) {
      matcher_.Step(state_, c, next);
      if (next.empty()) {
        return FailedPreconditionError("constrained decoding: token " + std::to_string(id) +
                                       " breaks the JSON schema");
      }
      state_.swap(next);
    }
    return OkStatus();
  }

 private:
  // The state after `bytes` from the start into `out`; false if they break it.
  bool StepFromStart(std::string_view bytes, StateSet& out) const {
    out = matcher_.Start();
    StateSet next;
    for (unsigned char c : bytes) {
      matcher_.Step(out, c, next);
      if (next.empty()) return false;
      out.swap(next);
    }
    return true;
  }

  // Lazy, before the trigger: every token but those that would complete the
  // trigger and follow it with bytes no block starts with.
  size_t MaskBeforeTrigger(std::span<float> logits) const {
    size_t n = logits.size();
    StateSet scratch;
    for (TokenId id : trigger_ends_) {
      if (static_cast<size_t>(id) >= logits.size()) continue;
      const std::string text = tail_ + pieces_[static_cast<size_t>(id)];
      const size_t at = text.find(trigger_);
      if (at == std::string::npos || StepFromStart(std::string_view(text).substr(at), scratch)) {
        continue;
      }
      logits[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
      --n;
    }
    return n;
  }

  SortedTokens Sort(std::vector<TokenId> ids) const {
    std::sort(ids.begin(), ids.end(), [&](TokenId a, TokenId b) {
      return pieces_[static_cast<size_t>(a)] < pieces_[static_cast<size_t>(b)];
    });
    SortedTokens s;
    s.ids = std::move(ids);
    s.lcp.resize(s.ids.size(), 0);
    for (size_t i = 1; i < s.ids.size(); ++i) {
      const std::string& a = pieces_[static_cast<size_t>(s.ids[i - 1])];
      const std::string& b = pieces_[static_cast<size_t>(s.ids[i])];
      uint32_t k = 0;
      while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
      s.lcp[i] = k;
    }
    return s;
  }

  // Marks the tokens of `sorted` whose bytes the current state accepts.
  void Walk(const SortedTokens& sorted, std::vector<uint8_t>& allowed) const {
    // levels[d]: the state set after the first d bytes of the current prefix.
    std::vector<StateSet>& levels = levels_;
    if (levels.empty()) levels.resize(1);
    levels[0] = state_;
    size_t dead = std::numeric_limits<size_t>::max();  // the prefix this long failed
    for (size_t i = 0; i < sorted.ids.size(); ++i) {
      const TokenId id = sorted.ids[i];
      const std::string& piece = pieces_[static_cast<size_t>(id)];
      const size_t shared = i == 0 ? 0 : sorted.lcp[i];
      if (shared >= dead) continue;  // under a prefix that already failed
      dead = std::numeric_limits<size_t>::max();
      if (levels.size() < piece.size() + 1) levels.resize(piece.size() + 1);
      bool ok = true;
      for (size_t d = shared; d < piece.size(); ++d) {
        matcher_.Step(levels[d], static_cast<unsigned char>(piece[d]), levels[d + 1]);
        if (levels[d + 1].empty()) {
          dead = d + 1;
          ok = false;
          break;
        }
      }
      if (ok && static_cast<size_t>(id) < allowed.size()) allowed[static_cast<size_t>(id)] = 1;
    }
  }

  Schema schema_;
  JsonMatcher matcher_;
  const Tokenizer& tok_;
  std::vector<std::string> pieces_;
  std::vector<uint8_t> string_safe_;
  std::vector<int32_t> code_points_;
  std::vector<TokenId> eog_;
  SortedTokens all_, unsafe_;
  StateSet state_;
  mutable std::vector<StateSet> levels_;  // scratch for Walk
  // Lazy (trigger_ non-empty): whether the text has reached the trigger,
  // and before it the text's last trigger_.size() - 1 bytes.
  std::string trigger_;
  std::vector<TokenId> trigger_ends_;  // tokens holding the trigger's last byte
  bool triggered_ = true;
  std::string tail_;
};

}  // namespace grammar

JsonConstraint::JsonConstraint(std::unique_ptr<grammar::ConstraintImpl> impl)
    : impl_(std::move(impl)) {}
JsonConstraint::~JsonConstraint() = default;

Status ValidateJsonSchema(std::string_view schema_json) {
  return grammar::Schema::Parse(schema_json).status();
}

StatusOr<std::unique_ptr<JsonConstraint>> JsonConstraint::FromSchema(std::string_view schema_json,
                                                                     const Tokenizer& tokenizer) {
  ELLM_ASSIGN_OR_RETURN(grammar::Schema schema, grammar::Schema::Parse(schema_json));
  return std::unique_ptr<JsonConstraint>(
      new JsonConstraint(std::make_unique<grammar::ConstraintImpl>(std::move(schema), tokenizer)));
}

StatusOr<std::unique_ptr<JsonConstraint>> JsonConstraint::FromSchemaInTags(
    std::string_view schema_json, const TaggedJson& tags, const Tokenizer& tokenizer) {
  if (tags.open.empty() || tags.close.empty()) {
    return InvalidArgumentError("tagged JSON needs an open and a close tag");
  }
  if (tags.min_blocks < 1 || (tags.max_blocks >= 0 && tags.max_blocks < tags.min_blocks)) {
    return InvalidArgumentError("tagged JSON: blocks must be 1 <= min <= max (or max -1); got " +
                                std::to_string(tags.min_blocks) + ".." +
                                std::to_string(tags.max_blocks));
  }
  if (!tags.trigger.empty() && tags.open.rfind(tags.trigger, 0) != 0) {
    return InvalidArgumentError("tagged JSON: the trigger '" + tags.trigger +
                                "' must begin the open tag '" + tags.open + "'");
  }
  ELLM_ASSIGN_OR_RETURN(grammar::Schema schema, grammar::Schema::Parse(schema_json));
  return std::unique_ptr<JsonConstraint>(new JsonConstraint(
      std::make_unique<grammar::ConstraintImpl>(std::move(schema), tokenizer, tags)));
}

std::unique_ptr<JsonConstraint> JsonConstraint::AnyObject(const Tokenizer& tokenizer) {
  return std::unique_ptr<JsonConstraint>(new JsonConstraint(
      std::make_unique<grammar::ConstraintImpl>(grammar::Schema::AnyObject(), tokenizer)));
}

size_t JsonConstraint::Mask(std::span<float> logits) const { return impl_->Mask(logits); }
Status JsonConstraint::Accept(TokenId id) { return impl_->Accept(id); }
bool JsonConstraint::Complete() const { return impl_->Complete(); }
bool JsonConstraint::Finished() const { return impl_->Finished(); }
void JsonConstraint::Reset() { impl_->Reset(); }

}  // namespace ellm
