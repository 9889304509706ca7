// The pattern is parsed into a tree, then compiled to a small backtracking
// program (a Pike-style instruction list run depth-first with an explicit
// stack, so long runs of text do not recurse). Like std::regex it can take
// time quadratic in a run's length for some expressions; the pre-tokenizer
// expressions are simple enough that this stays far below BPE's own cost.
#include "tokenizer/regex.h"

#include <algorithm>
#include <string>

#include "tokenizer/unicode.h"

namespace ellm::tokenizer {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// llama.cpp's collapsed bytes (unicode_regex_split's k_ucat_cpt).
constexpr uint32_t kCollapsedOther = 0xD0;
constexpr uint32_t kCollapsedNumber = 0xD1;
constexpr uint32_t kCollapsedLetter = 0xD2;
constexpr uint32_t kCollapsedPunctuation = 0xD3;
constexpr uint32_t kCollapsedMark = 0xD4;
constexpr uint32_t kCollapsedSymbol = 0xD5;
constexpr uint32_t kWhitespaceStandIn = 0x0B;  // vertical tab, which \s matches

// The names llama.cpp's k_ucat_enum knows; any of them in an expression
// selects the collapsed alphabet.
constexpr std::string_view kCategoryNames[] = {"N",  "L",  "P",  "M",  "S",
                                               "Lu", "Ll", "Lt", "Lm", "Lo"};

// \p{name} in the collapsed alphabet: its byte plus its ASCII members
// (k_ucat_map). The letter subcategories all collapse to the letter class.
bool CollapsedCategory(std::string_view name, Ranges& out) {
  if (name == "N") {
    out.insert(out.end(), {{kCollapsedNumber, kCollapsedNumber}, {'0', '9'}});
  } else if (name == "L" || name == "Lu" || name == "Ll" || name == "Lt" || name == "Lm" ||
             name == "Lo") {
    out.insert(out.end(), {{kCollapsedLetter, kCollapsedLetter}, {'A', 'Z'}, {'a', 'z'}});
  } else if (name == "P") {
    out.insert(out.end(), {{kCollapsedPunctuation, kCollapsedPunctuation},
                           {0x21, 0x23},
                           {0x25, 0x2A},
                           {0x2C, 0x2F},
                           {0x3A, 0x3B},
                           {0x3F, 0x40},
                           {0x5B, 0x5D},
                           {0x5F, 0x5F},
                           {0x7B, 0x7B},
                           {0x7D, 0x7D}});
  } else if (name == "M") {
    out.push_back({kCollapsedMark, kCollapsedMark});
  } else if (name == "S") {
    out.insert(out.end(), {{kCollapsedSymbol, kCollapsedSymbol},
                           {0x24, 0x24},
                           {0x2B, 0x2B},
                           {0x3C, 0x3E},
                           {0x5E, 0x5E},
                           {0x60, 0x60},
                           {0x7C, 0x7C},
                           {0x7E, 0x7E}});
  } else {
    return false;
  }
  return true;
}

Ranges Complement(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  uint64_t next = 0;
  for (const auto& [lo, hi] : r) {
    if (lo > next) out.push_back({static_cast<uint32_t>(next), lo - 1});
    next = std::max<uint64_t>(next, static_cast<uint64_t>(hi) + 1);
  }
  if (next <= 0xFFFFFFFFull) out.push_back({static_cast<uint32_t>(next), 0xFFFFFFFF});
  return out;
}

// The C-locale classes of \s \d \w (lower case; upper case is the complement).
Ranges ClassEscape(uint32_t c) {
  switch (c) {
    case 's':
      return {{0x09, 0x0D}, {0x20, 0x20}};
    case 'd':
      return {{'0', '9'}};
    case 'w':
      return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
  }
  return {};
}

bool IsAsciiPunctuation(uint32_t c) {
  return c > 0x20 && c < 0x7F && !(c >= '0' && c <= '9') && !(c >= 'A' && c <= 'Z') &&
         !(c >= 'a' && c <= 'z');
}

struct Node {
  enum class Kind { kSet, kSeq, kAlt, kRepeat, kLook, kEnd };
  Kind kind = Kind::kSeq;
  int32_t set = -1;       // kSet
  bool negative = false;  // kLook: (?!...)
  int min = 1, max = 1;   // kRepeat; max -1: unbounded
  std::vector<Node> kids;
};

bool Nullable(const Node& n) {
  switch (n.kind) {
    case Node::Kind::kSet:
      return false;
    case Node::Kind::kSeq:
      return std::all_of(n.kids.begin(), n.kids.end(), Nullable);
    case Node::Kind::kAlt:
      return std::any_of(n.kids.begin(), n.kids.end(), Nullable);
    case Node::Kind::kRepeat:
      return n.min == 0 || Nullable(n.kids[0]);
    case Node::Kind::kLook:
    case Node::Kind::kEnd:
      return true;
  }
  return true;
}

}  // namespace

bool Regex::CharSet::Contains(uint32_t c) const {
  bool in = false;
  for (const auto& [lo, hi] : ranges) {
    if (c >= lo && c <= hi) {
      in = true;
      break;
    }
  }
  return in != negated;
}

// Recursive descent over the pattern's code points; each Parse* returns
// false after setting error_.
class Regex::Parser {
 public:
  Parser(std::span<const uint32_t> p, RegexAlphabet alphabet, std::vector<CharSet>& sets)
      : p_(p), alphabet_(alphabet), sets_(sets) {}

  bool ParseAll(Node& out) {
    if (!ParseAlt(out)) return false;
    return at_ == p_.size() || Fail("unbalanced ')'");
  }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const std::string& what) {
    error_ = what + " at code point " + std::to_string(at_);
    return false;
  }
  bool More() const { return at_ < p_.size(); }
  uint32_t Peek(size_t ahead = 0) const {
    return at_ + ahead < p_.size() ? p_[at_ + ahead] : 0xFFFFFFFF;
  }
  int32_t AddSet(CharSet s) {
    sets_.push_back(std::move(s));
    return static_cast<int32_t>(sets_.size() - 1);
  }

  bool ParseAlt(Node& out) {
    out.kind = Node::Kind::kAlt;
    for (;;) {
      Node seq;
      if (!ParseSeq(seq)) return false;
      out.kids.push_back(std::move(seq));
      if (Peek() != '|') return true;
      ++at_;
    }
  }

  bool ParseSeq(Node& out) {
    out.kind = Node::Kind::kSeq;
    while (More() && Peek() != '|' && Peek() != ')') {
      Node atom;
      if (!ParseAtom(atom) || !ParseQuantifier(atom)) return false;
      out.kids.push_back(std::move(atom));
    }
    return true;
  }

  bool ParseAtom(Node& out) {
    const uint32_t c = p_[at_++];
    if (c == '(') {
      out.kind = Node::Kind::kSeq;
      Node* body = &out;
      if (Peek() == '?') {
        const uint32_t kind = Peek(1);
        if (kind != ':' && kind != '=' && kind != '!') return Fail("unsupported group (?");
        at_ += 2;
        if (kind != ':') {
          out.kind = Node::Kind::kLook;
          out.negative = kind == '!';
          out.kids.emplace_back();
          body = &out.kids.back();
        }
      }
      Node alt;
      if (!ParseAlt(alt)) return false;
      if (Peek() != ')') return Fail("missing ')'");
      ++at_;
      body->kids.push_back(std::move(alt));
      return true;
    }
    if (c == '$') {
      out.kind = Node::Kind::kEnd;
      return true;
    }
    if (c == '^' || c == '.' || c == '*' || c == '+' || c == '?' || c == '{') {
      return Fail("unsupported '" + std::string(1, static_cast<char>(c)) + "'");
    }
    CharSet set;
    if (c == '[') {
      if (!ParseBracket(set)) return false;
    } else if (c == '\\') {
      uint32_t literal = 0;
      if (!ParseEscape(set.ranges, &literal)) return false;
      if (set.ranges.empty()) set.ranges.push_back({literal, literal});
    } else {
      set.ranges.push_back({c, c});
    }
    out.kind = Node::Kind::kSet;
    out.set = AddSet(std::move(set));
    return true;
  }

  // After a '\': adds a class to `ranges`, or sets *literal for a single
  // character (ranges untouched).
  bool ParseEscape(Ranges& ranges, uint32_t* literal) {
    if (!More()) return Fail("trailing '\\'");
    const uint32_t c = p_[at_++];
    switch (c) {
      case 's':
      case 'd':
      case 'w': {
        const Ranges r = ClassEscape(c);
        ranges.insert(ranges.end(), r.begin(), r.end());
        return true;
      }
      case 'S':
      case 'D':
      case 'W': {
        const Ranges r = Complement(ClassEscape(c + ('a' - 'A')));
        ranges.insert(ranges.end(), r.begin(), r.end());
        return true;
      }
      case 'p': {
        std::string name;
        if (Peek() != '{') return Fail("expected '{' after \\p");
        for (++at_; More() && Peek() != '}'; ++at_) name += static_cast<char>(Peek() & 0x7F);
        if (!More()) return Fail("missing '}'");
        ++at_;
        if (alphabet_ != RegexAlphabet::kCollapsed || !CollapsedCategory(name, ranges)) {
          return Fail("unsupported class \\p{" + name + "}");
        }
        return true;
      }
      case 'r':
        *literal = '\r';
        return true;
      case 'n':
        *literal = '\n';
        return true;
      case 't':
        *literal = '\t';
        return true;
      case 'f':
        *literal = '\f';
        return true;
      case 'v':
        *literal = '\v';
        return true;
    }
    if (!IsAsciiPunctuation(c)) return Fail("unsupported escape");
    *literal = c;
    return true;
  }

  // After the '[': items up to the closing ']'.
  bool ParseBracket(CharSet& set) {
    if (Peek() == '^') {
      set.negated = true;
      ++at_;
    }
    while (More() && Peek() != ']') {
      uint32_t lo = p_[at_++];
      if (lo == '\\') {
        const size_t before = set.ranges.size();
        if (!ParseEscape(set.ranges, &lo)) return false;
        if (set.ranges.size() != before) continue;  // a class, not a range endpoint
      }
      uint32_t hi = lo;
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != 0xFFFFFFFF) {
        at_ += 1;
        hi = p_[at_++];
        if (hi == '\\') {
          Ranges unused;
          if (!ParseEscape(unused, &hi) || !unused.empty()) return Fail("bad range end");
        }
        if (hi < lo) return Fail("reversed range");
      }
      set.ranges.push_back({lo, hi});
    }
    if (!More()) return Fail("missing ']'");
    ++at_;
    return true;
  }

  bool ParseQuantifier(Node& atom) {
    int min = 1, max = 1;
    const uint32_t c = Peek();
    if (c == '?') {
      min = 0;
    } else if (c == '*') {
      min = 0;
      max = -1;
    } else if (c == '+') {
      max = -1;
    } else if (c == '{') {
      ++at_;
      if (!ParseCount(min)) return false;
      max = min;
      if (Peek() == ',') {
        ++at_;
        max = -1;
        if (Peek() != '}' && !ParseCount(max)) return false;
      }
      if (Peek() != '}' || (max != -1 && max < min)) return Fail("bad {n,m}");
    } else {
      return true;
    }
    ++at_;
    if (Peek() == '?' || Peek() == '+')
      return Fail("lazy or possessive quantifiers are unsupported");
    Node repeat;
    repeat.kind = Node::Kind::kRepeat;
    repeat.min = min;
    repeat.max = max;
    repeat.kids.push_back(std::move(atom));
    if (max == -1 && Nullable(repeat.kids[0])) return Fail("unbounded repeat of an empty match");
    atom = std::move(repeat);
    return true;
  }

  bool ParseCount(int& n) {
    n = 0;
    const size_t start = at_;
    while (Peek() >= '0' && Peek() <= '9' && n < 100000)
      n = n * 10 + static_cast<int>(p_[at_++] - '0');
    return at_ != start || Fail("expected a count");
  }

  std::span<const uint32_t> p_;
  size_t at_ = 0;
  RegexAlphabet alphabet_;
  std::vector<CharSet>& sets_;
  std::string error_;
};

StatusOr<Regex> Regex::Compile(std::string_view pattern) {
  Regex re;
  for (std::string_view name : kCategoryNames) {
    if (pattern.find("\\p{" + std::string(name) + "}") != std::string_view::npos) {
      re.alphabet_ = RegexAlphabet::kCollapsed;
    }
  }
  auto error = [&](const std::string& what) {
    return InvalidArgumentError("pre-tokenizer expression '" + std::string(pattern) + "': " + what);
  };
  if (re.alphabet_ == RegexAlphabet::kCollapsed &&
      std::any_of(pattern.begin(), pattern.end(), [](char c) { return (c & 0x80) != 0; })) {
    return error("a \\p{...} class and non-ASCII text together (llama.cpp refuses these too)");
  }
  std::vector<uint32_t> cps;
  DecodeUtf8(pattern, cps);
  Node root;
  Parser parser(cps, re.alphabet_, re.sets_);
  if (!parser.ParseAll(root)) return error(parser.error());

  // Code generation: each node appends its instructions.
  auto emit = [&re](auto&& self, const Node& n) -> void {
    auto push = [&re](Op op, int32_t x = 0) {
      re.prog_.push_back({op, x, 0});
      return static_cast<int32_t>(re.prog_.size() - 1);
    };
    auto here = [&re] { return static_cast<int32_t>(re.prog_.size()); };
    switch (n.kind) {
      case Node::Kind::kSet:
        push(Op::kClass, n.set);
        return;
      case Node::Kind::kEnd:
        push(Op::kEnd);
        return;
      case Node::Kind::kSeq:
        for (const Node& k : n.kids) self(self, k);
        return;
      case Node::Kind::kAlt: {
        std::vector<int32_t> jumps;
        for (size_t i = 0; i + 1 < n.kids.size(); ++i) {
          const int32_t split = push(Op::kSplit, here() + 1);
          self(self, n.kids[i]);
          jumps.push_back(push(Op::kJump));
          re.prog_[split].y = here();
        }
        self(self, n.kids.back());
        for (int32_t j : jumps) re.prog_[j].x = here();
        return;
      }
      case Node::Kind::kRepeat: {
        for (int i = 0; i < n.min; ++i) self(self, n.kids[0]);
        if (n.max == -1) {
          const int32_t split = push(Op::kSplit, here() + 1);
          self(self, n.kids[0]);
          push(Op::kJump, split);
          re.prog_[split].y = here();
          return;
        }
        std::vector<int32_t> splits;
        for (int i = n.min; i < n.max; ++i) {
          splits.push_back(push(Op::kSplit, here() + 1));
          self(self, n.kids[0]);
        }
        for (int32_t s : splits) re.prog_[s].y = here();
        return;
      }
      case Node::Kind::kLook: {
        const int32_t look = push(n.negative ? Op::kNegLookahead : Op::kLookahead);
        self(self, n.kids[0]);
        push(Op::kMatch);
        re.prog_[look].y = here();
        return;
      }
    }
  };
  emit(emit, root);
  re.prog_.push_back({Op::kMatch, 0, 0});
  return re;
}

std::optional<size_t> Regex::MatchAt(std::span<const uint32_t> text, size_t pos,
                                     bool not_null) const {
  return Run(0, text, pos, not_null);
}

std::optional<size_t> Regex::Run(int32_t pc, std::span<const uint32_t> text, size_t pos,
                                 bool not_null) const {
  std::vector<std::pair<int32_t, size_t>> backtrack;  // (instruction, position) to resume
  size_t sp = pos;
  for (;;) {
    const Inst& in = prog_[pc];
    bool ok = true;
    switch (in.op) {
      case Op::kClass:
        ok = sp < text.size() && sets_[in.x].Contains(text[sp]);
        if (ok) {
          ++sp;
          ++pc;
        }
        break;
      case Op::kSplit:
        backtrack.emplace_back(in.y, sp);
        pc = in.x;
        break;
      case Op::kJump:
        pc = in.x;
        break;
      case Op::kLookahead:
      case Op::kNegLookahead:
        // A lookahead is atomic: its first match decides, nothing backtracks into it.
        ok = Run(pc + 1, text, sp, false).has_value() == (in.op == Op::kLookahead);
        pc = in.y;
        break;
      case Op::kEnd:
        ok = sp == text.size();
        ++pc;
        break;
      case Op::kMatch:
        if (!not_null || sp != pos) return sp;
        ok = false;
        break;
    }
    if (ok) continue;
    if (backtrack.empty()) return std::nullopt;
    pc = backtrack.back().first;
    sp = backtrack.back().second;
    backtrack.pop_back();
  }
}

void ToSymbols(RegexAlphabet alphabet, std::span<const uint32_t> cps,
               std::span<const uint16_t> flags, std::vector<uint32_t>& out) {
  out.resize(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) {
    const uint32_t c = cps[i];
    const uint16_t f = flags[i];
    if (c < 0x80) {
      out[i] = c;
    } else if (f & cpflag::kWhitespace) {
      out[i] = kWhitespaceStandIn;
    } else if (alphabet == RegexAlphabet::kCodepoints) {
      out[i] = c;
    } else if (f & cpflag::kNumber) {
      out[i] = kCollapsedNumber;
    } else if (f & cpflag::kLetter) {
      out[i] = kCollapsedLetter;
    } else if (f & cpflag::kPunctuation) {
      out[i] = kCollapsedPunctuation;
    } else if (f & cpflag::kMark) {
      out[i] = kCollapsedMark;
    } else if (f & cpflag::kSymbol) {
      out[i] = kCollapsedSymbol;
    } else {
      out[i] = kCollapsedOther;
    }
  }
}

}  // namespace ellm::tokenizer
