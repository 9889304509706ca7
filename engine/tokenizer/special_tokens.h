// SpecialTokenSplitter: cuts text into special tokens and the raw text
// between them before a tokenizer model sees it — llama.cpp's
// tokenizer_st_partition.
//
// The rule being reproduced: the candidates are the tokens with a CONTROL,
// USER_DEFINED or UNKNOWN attribute, ordered longest text first (ties in the
// order std::sort leaves them, starting from ascending ids). Each candidate in
// turn claims its leftmost non-overlapping occurrences inside the raw text
// that earlier candidates left. User-defined tokens always take part; control
// and unknown tokens only when parse_special. LSTRIP/RSTRIP tokens also drop
// the whitespace beside them.
//
// llama.cpp rescans the text once per candidate (6,000+ for Gemma). Here one
// trie walk finds which candidates occur at all, and only those are scanned,
// in llama.cpp's order; an occurrence is taken when none of its bytes is
// taken yet. That is llama.cpp's result: within one raw fragment its repeated
// find() takes exactly the leftmost occurrences that overlap neither one
// another nor a fragment boundary, and fragment boundaries are always taken
// bytes (a special token or stripped whitespace). Cost: O(text x trie depth)
// for the walk plus O(text) per distinct candidate present; memory O(text).
//
// Thread safety: immutable after construction.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace ellm::tokenizer {

// A piece of the input: a special token, or raw text for the model.
struct Fragment {
  TokenId token = -1;  // >= 0: this special token; -1: raw text
  size_t offset = 0;   // raw text: bytes [offset, offset + length) of the input
  size_t length = 0;
};

class SpecialTokenSplitter {
 public:
  // `vocab` must outlive the splitter.
  explicit SpecialTokenSplitter(const Vocab& vocab);

  // The fragments of `text` in order; no raw fragment is empty. Empty text
  // gives no fragments.
  std::vector<Fragment> Split(std::string_view text, bool parse_special) const;

 private:
  struct Node {
    TokenId token = -1;  // the candidate whose text ends here
    uint32_t first_edge = 0;
    uint32_t n_edges = 0;
  };
  struct Edge {
    uint8_t byte;
    int32_t child;
  };
  std::span<const Edge> Edges(int32_t node) const;
  int32_t Child(int32_t node, uint8_t byte) const;  // -1 if none

  const Vocab& vocab_;
  std::vector<TokenId> order_;  // the candidates in llama.cpp's order
  std::vector<int32_t> rank_;   // per token: its index in order_, -1 if no candidate
  std::vector<Node> nodes_;     // the trie; nodes_[0] is the root
  std::vector<Edge> edges_;     // per node, sorted by byte
  std::array<int32_t, 256> root_children_;
};

}  // namespace ellm::tokenizer
