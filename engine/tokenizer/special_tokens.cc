#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <map>

namespace ellm::tokenizer {
namespace {

constexpr uint32_t kCandidate = attr::kControl | attr::kUserDefined | attr::kUnknown;

// C isspace() in the "C" locale, which llama.cpp's strip uses.
bool IsCSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

SpecialTokenSplitter::SpecialTokenSplitter(const Vocab& vocab)
    : vocab_(vocab), rank_(static_cast<size_t>(vocab.size()), -1) {
  // llama.cpp's cache_special_tokens: ids ascending, then std::sort by
  // length, longest first. std::sort is not stable; calling it on the same
  // input with the same comparator reproduces libstdc++'s tie order.
  for (TokenId id = 0; id < vocab.size(); ++id) {
    if (vocab.Has(id, kCandidate)) order_.push_back(id);
  }
  std::sort(order_.begin(), order_.end(),
            [&](TokenId a, TokenId b) { return vocab.text[a].size() > vocab.text[b].size(); });

  // Build the trie with maps, then flatten it: node i's children are
  // edges_[nodes_[i].first_edge .. + n_edges], sorted by byte.
  std::vector<std::map<uint8_t, int32_t>> children(1);
  std::vector<TokenId> token_of(1, -1);
  for (size_t r = 0; r < order_.size(); ++r) {
    const TokenId id = order_[r];
    rank_[id] = static_cast<int32_t>(r);
    int32_t node = 0;
    for (char c : vocab.text[id]) {
      auto [it, inserted] =
          children[node].emplace(static_cast<uint8_t>(c), static_cast<int32_t>(children.size()));
      if (inserted) {
        children.emplace_back();
        token_of.push_back(-1);
      }
      node = it->second;
    }
    token_of[node] = id;
  }
  nodes_.resize(children.size());
  for (size_t i = 0; i < children.size(); ++i) {
    nodes_[i] = {token_of[i], static_cast<uint32_t>(edges_.size()),
                 static_cast<uint32_t>(children[i].size())};
    for (auto [byte, child] : children[i]) edges_.push_back({byte, child});
  }
  root_children_.fill(-1);
  for (const Edge& e : Edges(0)) root_children_[e.byte] = e.child;
}

std::span<const SpecialTokenSplitter::Edge> SpecialTokenSplitter::Edges(int32_t node) const {
  return std::span<const Edge>(edges_).subspan(nodes_[node].first_edge, nodes_[node].n_edges);
}

int32_t SpecialTokenSplitter::Child(int32_t node, uint8_t byte) const {
  for (const Edge& e : Edges(node)) {
    if (e.byte >= byte) return e.byte == byte ? e.child : -1;
  }
  return -1;
}

std::vector<Fragment> SpecialTokenSplitter::Split(std::string_view text, bool parse_special) const {
  std::vector<Fragment> out;
  const size_t n = text.size();
  if (n == 0) return out;

  // Which candidates occur anywhere in the text (fragments are substrings
  // of it, so no other candidate can match later).
  const uint32_t skipped = parse_special ? 0 : (attr::kControl | attr::kUnknown);
  std::vector<int32_t> occurring;  // ranks
  std::vector<uint8_t> seen(order_.size(), 0);
  for (size_t start = 0; start < n; ++start) {
    int32_t node = root_children_[static_cast<uint8_t>(text[start])];
    for (size_t i = start + 1; node != -1; ++i) {
      const TokenId id = nodes_[node].token;
      if (id != -1 && !seen[rank_[id]] && !vocab_.Has(id, skipped)) {
        seen[rank_[id]] = 1;
        occurring.push_back(rank_[id]);
      }
      if (i == n) break;
      node = Child(node, static_cast<uint8_t>(text[i]));
    }
  }
  if (occurring.empty()) {
    out.push_back({-1, 0, n});
    return out;
  }
  std::sort(occurring.begin(), occurring.end());

  // Each occurring candidate in llama.cpp's order takes its leftmost
  // occurrences none of whose bytes is taken yet. taken[i]: byte i belongs
  // to a special token or was stripped; token_at[i]: a special token starts
  // at i. Memory stays O(text) however many occurrences overlap.
  std::vector<uint8_t> taken(n, 0);
  std::vector<TokenId> token_at(n, -1);
  for (int32_t rank : occurring) {
    const TokenId id = order_[static_cast<size_t>(rank)];
    const std::string& token = vocab_.text[id];
    for (size_t start = text.find(token); start != std::string_view::npos;) {
      const size_t end = start + token.size();
      const auto first = taken.begin() + static_cast<ptrdiff_t>(start);
      const auto last = taken.begin() + static_cast<ptrdiff_t>(end);
      if (std::find(first, last, 1) != last) {
        // Every later occurrence starting at or before the last taken byte
        // of this span contains it; resume at the next free byte after it.
        size_t next = end;
        while (!taken[next - 1]) --next;
        while (next < n && taken[next]) ++next;
        start = text.find(token, next);
        continue;
      }
      std::fill(first, last, 1);
      token_at[start] = id;
      if (vocab_.Has(id, attr::kLstrip)) {
        for (size_t i = start; i > 0 && !taken[i - 1] && IsCSpace(text[i - 1]); --i) {
          taken[i - 1] = 1;
        }
      }
      if (vocab_.Has(id, attr::kRstrip)) {
        for (size_t i = end; i < n && !taken[i] && IsCSpace(text[i]); ++i) taken[i] = 1;
      }
      start = text.find(token, end);
    }
  }

  for (size_t i = 0; i < n;) {
    if (token_at[i] != -1) {
      out.push_back({token_at[i], 0, 0});
      i += vocab_.text[token_at[i]].size();
    } else if (taken[i]) {
      ++i;  // stripped whitespace
    } else {
      const size_t start = i;
      while (i < n && !taken[i]) ++i;
      out.push_back({-1, start, i - start});
    }
  }
  return out;
}

}  // namespace ellm::tokenizer
