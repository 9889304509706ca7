#include "grammar/json_matcher.h"

#include <algorithm>

namespace ellm::grammar {
namespace {

bool IsWs(unsigned char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Advances Stack::ws by the whitespace byte c; false when the rule forbids it.
bool NextWs(int32_t& ws, unsigned char c) {
  if (ws == 0) {
    if (c == ' ') return ws = 1, true;
    if (c == '\n') return ws = 2, true;
    return false;
  }
  if (ws == 1) return false;
  if (ws == 2 && c == '\n') return ws = 3, true;
  if (ws == 2) ws = 3;  // the indent after one newline
  if ((c == ' ' || c == '\t') && ws < 3 + JsonMatcher::kMaxIndent) return ++ws, true;
  return false;
}
bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool IsHex(unsigned char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Phases of each frame kind.
// The document frame. Framed: kDocOpen (pos bytes of the open tag matched),
// kDocBefore, kDocDone (the value is whole: the close tag next), kDocClose
// (pos bytes of it matched), kDocBetween (count blocks whole; whitespace or
// the next open tag).
enum DocPhase : uint8_t { kDocBefore, kDocDone, kDocOpen, kDocClose, kDocBetween };
enum ObjPhase : uint8_t {
  kObjOpen,        // expects '{'
  kObjFirst,       // after '{': a key or '}'
  kObjKey,         // inside a declared key (pos bytes matched, mask candidates)
  kObjColon,       // after a key: ':'
  kObjValue,       // after ':': the value
  kObjAfterValue,  // ',' or '}'
  kObjNext,        // after ',': a key
};
enum ArrPhase : uint8_t { kArrOpen, kArrFirst, kArrAfterItem, kArrNext };
enum StrPhase : uint8_t { kStrOpen, kStrIn, kStrEscape, kStrHex };
// Number: sign, int digits, after a leading 0, '.', fraction, 'e', exponent sign, exponent.
enum NumPhase : uint8_t {
  kNumStart,
  kNumMinus,
  kNumInt,
  kNumZero,
  kNumDot,
  kNumFrac,
  kNumE,
  kNumESign,
  kNumExp
};

bool NumberCanEnd(uint8_t phase) {
  return phase == kNumInt || phase == kNumZero || phase == kNumFrac || phase == kNumExp;
}

}  // namespace

int Utf8Follow(unsigned char c) {
  if (c >= 0xC2 && c <= 0xDF) return 1;
  if (c >= 0xE0 && c <= 0xEF) return 2;
  if (c >= 0xF0 && c <= 0xF4) return 3;
  return 0;
}

bool Utf8ContinuationOk(unsigned char lead, unsigned char c) {
  unsigned char lo = 0x80, hi = 0xBF;
  if (lead == 0xE0) lo = 0xA0;
  if (lead == 0xED) hi = 0x9F;
  if (lead == 0xF0) lo = 0x90;
  if (lead == 0xF4) hi = 0x8F;
  return c >= lo && c <= hi;
}

bool IsWholeUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int follow = c < 0x80 ? 0 : Utf8Follow(c);
    if (c >= 0x80 && follow == 0) return false;
    for (int k = 1; k <= follow; ++k) {
      if (i + static_cast<size_t>(k) >= s.size()) return false;
      const auto b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if (!Utf8ContinuationOk(k == 1 ? c : 0, b)) return false;
    }
    i += static_cast<size_t>(follow) + 1;
  }
  return true;
}

JsonMatcher::JsonMatcher(const Schema& schema, Framing framing)
    : nodes_(schema.nodes()), root_(schema.root()), framing_(std::move(framing)) {
  nodes_.push_back(SchemaNode{.kind = NodeKind::kString});
  key_node_ = static_cast<int>(nodes_.size()) - 1;
}

StateSet JsonMatcher::Start() const {
  Stack s;
  s.frames.push_back(Frame{.node = -1, .phase = framing_.open.empty() ? kDocBefore : kDocOpen});
  return {s};
}

void JsonMatcher::Step(const StateSet& in, unsigned char c, StateSet& out) const {
  out.clear();
  for (const Stack& s : in) StepOne(s, c, out);
  if (out.size() > 1) {
    StateSet unique;
    for (Stack& s : out) {
      if (std::find(unique.begin(), unique.end(), s) == unique.end())
        unique.push_back(std::move(s));
      if (unique.size() >= kMaxStacks) break;
    }
    out.swap(unique);
  }
}

bool JsonMatcher::CanEnd(const StateSet& set) const {
  for (const Stack& s : set) {
    size_t n = s.frames.size();
    // A root number ends where the text ends.
    if (n == 2) {
      const Frame& top = s.frames[1];
      const NodeKind k = nodes_[static_cast<size_t>(top.node)].kind;
      if ((k == NodeKind::kNumber || k == NodeKind::kInteger) && NumberCanEnd(top.phase)) n = 1;
    }
    if (n != 1) continue;
    const Frame& doc = s.frames[0];
    if (framing_.open.empty() ? doc.phase == kDocDone
                              : doc.phase == kDocBetween && doc.count >= framing_.min_blocks) {
      return true;
    }
  }
  return false;
}

bool JsonMatcher::MustEnd(const StateSet& set) const {
  if (!CanEnd(set)) return false;
  if (framing_.open.empty()) return true;
  for (const Stack& s : set) {
    const Frame& doc = s.frames[0];
    if (s.frames.size() != 1 || doc.phase != kDocBetween || framing_.max_blocks < 0 ||
        doc.count < framing_.max_blocks) {
      return false;
    }
  }
  return true;
}

int64_t JsonMatcher::FreeStringRoom(const StateSet& set) const {
  int64_t room = -1;
  if (set.empty()) return -2;
  for (const Stack& s : set) {
    const Frame& f = s.frames.back();
    if (f.node < 0) return -2;
    const SchemaNode& n = nodes_[static_cast<size_t>(f.node)];
    if (n.kind != NodeKind::kString || f.phase != kStrIn || !n.shape.empty() || f.pos > 0)
      return -2;
    if (n.max_length >= 0) {
      const int64_t left = n.max_length - f.count;
      room = room < 0 ? left : std::min(room, left);
    }
  }
  return room;
}

// Enters the value `node` with its first byte c (whitespace was the parent's).
void JsonMatcher::Push(Stack s, int node, unsigned char c, StateSet& out) const {
  const SchemaNode& n = nodes_[static_cast<size_t>(node)];
  if (n.kind == NodeKind::kAnyOf) {
    for (int alt : n.alternatives) Push(s, alt, c, out);
    return;
  }
  if (s.frames.size() > 256) return;  // nesting this deep is a runaway
  Frame f{.node = node};
  if (n.kind == NodeKind::kLiterals)
    f.mask = n.literals.size() >= 64 ? ~0ull : (1ull << n.literals.size()) - 1;
  s.frames.push_back(f);
  StepOne(std::move(s), c, out);
}

void JsonMatcher::StepOne(Stack s, unsigned char c, StateSet& out) const {
  Frame& f = s.frames.back();
  if (f.node < 0) {
    if (!framing_.open.empty()) return StepFramed(s, c, out);
    if (f.phase == kDocDone) return;
    f.phase = kDocDone;
    Push(std::move(s), root_, c, out);
    return;
  }
  switch (nodes_[static_cast<size_t>(f.node)].kind) {
    case NodeKind::kObject:
      return StepObject(s, c, out);
    case NodeKind::kArray:
      return StepArray(s, c, out);
    case NodeKind::kString:
      return StepString(s, c, out);
    case NodeKind::kNumber:
    case NodeKind::kInteger:
      return StepNumber(s, c, out);
    case NodeKind::kLiterals:
      return StepLiterals(s, c, out);
    case NodeKind::kAnyOf:
      return;  // never on a stack
  }
}

void JsonMatcher::StepFramed(Stack& s, unsigned char c, StateSet& out) const {
  Frame& f = s.frames.back();
  const std::string& open = framing_.open;
  const std::string& close = framing_.close;
  switch (f.phase) {
    case kDocBetween:
      if (c == static_cast<unsigned char>(open[0]) &&
          (framing_.max_blocks < 0 || f.count < framing_.max_blocks)) {
        s.ws = 0;
        f.phase = kDocOpen;
        f.pos = 0;
        break;  // matched as the open tag's first byte below
      }
      // Whitespace only where another block may follow.
      if ((framing_.max_blocks < 0 || f.count < framing_.max_blocks) && NextWs(s.ws, c)) {
        out.push_back(std::move(s));
      }
      return;
    case kDocBefore:
      f.phase = kDocDone;
      Push(std::move(s), root_, c, out);
      return;
    case kDocDone:
      f.phase = kDocClose;
      f.pos = 0;
      break;
    default:
      break;
  }
  const std::string& tag = f.phase == kDocOpen ? open : close;
  if (c != static_cast<unsigned char>(tag[static_cast<size_t>(f.pos)])) return;
  if (static_cast<size_t>(++f.pos) == tag.size()) {
    f.pos = 0;
    if (f.phase == kDocOpen) {
      f.phase = kDocBefore;
    } else {
      f.phase = kDocBetween;
      ++f.count;
      s.ws = 0;
    }
  }
  out.push_back(std::move(s));
}

uint64_t JsonMatcher::KeyCandidates(const SchemaNode& n, int from) const {
  uint64_t mask = 0;
  for (size_t i = static_cast<size_t>(from); i < n.property_names.size(); ++i) {
    mask |= 1ull << i;
    if (n.property_required[i]) break;  // a required property cannot be skipped
  }
  return mask;
}

bool JsonMatcher::RequiredLeft(const SchemaNode& n, int from) {
  for (size_t i = static_cast<size_t>(from); i < n.property_required.size(); ++i) {
    if (n.property_required[i]) return true;
  }
  return false;
}

void JsonMatcher::StepObject(Stack& s, unsigned char c, StateSet& out) const {
  Frame& f = s.frames.back();
  const SchemaNode& n = nodes_[static_cast<size_t>(f.node)];
  const bool free_keys = n.additional >= 0;
  const bool structural_ws = f.phase != kObjOpen && f.phase != kObjKey;
  if (structural_ws && IsWs(c)) {
    if (!NextWs(s.ws, c)) return;
    out.push_back(std::move(s));
    return;
  }
  s.ws = 0;
  switch (f.phase) {
    case kObjOpen:
      if (c != '{') return;
      f.phase = kObjFirst;
      out.push_back(std::move(s));
      return;
    case kObjFirst:
    case kObjNext:
      if (c == '}' && f.phase == kObjFirst && (free_keys || !RequiredLeft(n, f.count))) {
        return Pop(std::move(s), out);
      }
      if (c != '"') return;
      if (free_keys) {
        f.phase = kObjColon;
        s.frames.push_back(Frame{.node = key_node_, .phase = kStrIn});
        out.push_back(std::move(s));
        return;
      }
      f.mask = KeyCandidates(n, f.count);
      if (f.mask == 0) return;
      f.phase = kObjKey;
      f.pos = 1;
      out.push_back(std::move(s));
      return;
    case kObjKey: {
      uint64_t keep = 0;
      int done = -1;
      for (size_t i = 0; i < n.property_names.size(); ++i) {
        if (!(f.mask >> i & 1)) continue;
        const std::string& name = n.property_names[i];
        if (static_cast<size_t>(f.pos) < name.size() &&
            static_cast<unsigned char>(name[static_cast<size_t>(f.pos)]) == c) {
          if (static_cast<size_t>(f.pos) + 1 == name.size()) {
            done = static_cast<int>(i);
          } else {
            keep |= 1ull << i;
          }
        }
      }
      ++f.pos;
      if (done >= 0) {  // the closing quote: no other candidate continues
        f.phase = kObjColon;
        f.pos = done;  // the property whose value comes next
        f.count = done + 1;
        out.push_back(std::move(s));
        return;
      }
      if (keep == 0) return;
      f.mask = keep;
      out.push_back(std::move(s));
      return;
    }
    case kObjColon:
      if (c != ':') return;
      f.phase = kObjValue;
      out.push_back(std::move(s));
      return;
    case kObjValue: {
      f.phase = kObjAfterValue;
      const int value = free_keys ? n.additional : n.property_nodes[static_cast<size_t>(f.pos)];
      return Push(std::move(s), value, c, out);
    }
    case kObjAfterValue:
      if (c == '}' && (free_keys || !RequiredLeft(n, f.count))) return Pop(std::move(s), out);
      if (c == ',' && (free_keys || KeyCandidates(n, f.count) != 0)) {
        f.phase = kObjNext;
        out.push_back(std::move(s));
      }
      return;
  }
}

void JsonMatcher::StepArray(Stack& s, unsigned char c, StateSet& out) const {
  Frame& f = s.frames.back();
  const SchemaNode& n = nodes_[static_cast<size_t>(f.node)];
  if (f.phase != kArrOpen && IsWs(c)) {
    if (!NextWs(s.ws, c)) return;
    out.push_back(std::move(s));
    return;
  }
  s.ws = 0;
  switch (f.phase) {
    case kArrOpen:
      if (c != '[') return;
      f.phase = kArrFirst;
      out.push_back(std::move(s));
      return;
    case kArrFirst:
      if (c == ']') {
        if (n.min_items == 0) Pop(std::move(s), out);
        return;
      }
      if (n.max_items == 0) return;
      f.phase = kArrAfterItem;
      f.count = 1;
      return Push(std::move(s), n.items, c, out);
    case kArrAfterItem:
      if (c == ']' && f.count >= n.min_items) return Pop(std::move(s), out);
      if (c == ',' && (n.max_items < 0 || f.count < n.max_items)) {
        f.phase = kArrNext;
        out.push_back(std::move(s));
      }
      return;
    case kArrNext:
      f.phase = kArrAfterItem;
      ++f.count;
      return Push(std::move(s), n.items, c, out);
  }
}

void JsonMatcher::StepString(Stack& s, unsigned char c, StateSet& out) const {
  Frame& f = s.frames.back();
  const SchemaNode& n = nodes_[static_cast<size_t>(f.node)];
  switch (f.phase) {
    case kStrOpen:
      if (c != '"') return;
      f.phase = kStrIn;
      out.push_back(std::move(s));
      return;
    case kStrIn:
      if (f.pos > 0) {  // inside a multi-byte UTF-8 sequence
        if (!Utf8ContinuationOk(static_cast<unsigned char>(f.mask), c)) return;
        --f.pos;
        f.mask = 0;  // only the second byte has a narrower range
        out.push_back(std::move(s));
        return;
      }
      if (c == '"') {
        const bool shaped = !n.shape.empty();
        if ((shaped && static_cast<size_t>(f.count) != n.shape.size()) || f.count < n.min_length)
          return;
        return Pop(std::move(s), out);
      }
      if (c < 0x20) return;
      if (!n.shape.empty()) {
        if (static_cast<size_t>(f.count) >= n.shape.size()) return;
        const char want = n.shape[static_cast<size_t>(f.count)];
        if (want == 'd' ? !IsDigit(c) : c != static_cast<unsigned char>(want)) return;
      }
      if (c >= 0x80) {  // the lead byte of a multi-byte code point
        const int follow = Utf8Follow(c);
        if (follow == 0) return;
        f.pos = follow;
        f.mask = c;
      }
      if (n.max_length >= 0 && f.count >= n.max_length) return;
      ++f.count;
      if (c == '\\') f.phase = kStrEscape;
      out.push_back(std::move(s));
      return;
    case kStrEscape:
      if (c == 'u') {
        f.phase = kStrHex;
        f.pos = 0;
      } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
                 c == 'r' || c == 't') {
        f.phase = kStrIn;
      } else {
        return;
      }
      out.push_back(std::move(s));
      return;
    case kStrHex:
      if (!IsHex(c)) return;
      if (++f.pos == 4) {
        f.phase = kStrIn;
        f.pos = 0;
      }
      out.push_back(std::move(s));
      return;
  }
}

void JsonMatcher::StepNumber(Stack& s, unsigned char c, StateSet& out) const {
  Frame& f = s.frames.back();
  const SchemaNode& n = nodes_[static_cast<size_t>(f.node)];
  const bool integer = n.kind == NodeKind::kInteger;
  uint8_t next = 255;
  switch (f.phase) {
    case kNumStart:
      if (c == '-' && !n.non_negative) next = kNumMinus;
      [[fallthrough]];
    case kNumMinus:
      if (c == '0') next = kNumZero;
      if (c >= '1' && c <= '9') next = kNumInt;
      break;
    case kNumInt:
      if (IsDigit(c)) next = kNumInt;
      [[fallthrough]];
    case kNumZero:
      if (!integer && c == '.') next = kNumDot;
      if (!integer && (c == 'e' || c == 'E')) next = kNumE;
      break;
    case kNumDot:
    case kNumFrac:
      if (IsDigit(c)) next = kNumFrac;
      if (f.phase == kNumFrac && (c == 'e' || c == 'E')) next = kNumE;
      break;
    case kNumE:
      if (c == '+' || c == '-') next = kNumESign;
      [[fallthrough]];
    case kNumESign:
    case kNumExp:
      if (IsDigit(c)) next = kNumExp;
      break;
  }
  if (next != 255) {
    // Digits per part as llama.cpp's JSON-schema grammars allow (an integral
    // part of at most 16, common/json-schema-to-grammar.cpp), fractions too;
    // at most two exponent digits, so every number fits a double.
    f.pos = next == f.phase ? f.pos + 1 : 1;
    const int32_t limit = next == kNumExp ? 2 : 16;
    if ((next == kNumInt || next == kNumFrac || next == kNumExp) && f.pos > limit) return;
    if (++f.count > kMaxNumberChars) return;
    f.phase = next;
    out.push_back(std::move(s));
    return;
  }
  if (!NumberCanEnd(f.phase)) return;
  // The number ended before c: c belongs to whatever holds it.
  s.frames.pop_back();
  StepOne(std::move(s), c, out);
}

void JsonMatcher::StepLiterals(Stack& s, unsigned char c, StateSet& out) const {
  Frame& f = s.frames.back();
  const SchemaNode& n = nodes_[static_cast<size_t>(f.node)];
  uint64_t keep = 0;
  bool done = false;
  for (size_t i = 0; i < n.literals.size() && i < 64; ++i) {
    if (!(f.mask >> i & 1)) continue;
    const std::string& lit = n.literals[i];
    const size_t p = static_cast<size_t>(f.pos);
    if (p < lit.size() && static_cast<unsigned char>(lit[p]) == c) {
      if (p + 1 == lit.size()) {
        done = true;
      } else {
        keep |= 1ull << i;
      }
    }
  }
  ++f.pos;
  if (keep != 0) {
    Stack more = s;
    more.frames.back().mask = keep;
    out.push_back(std::move(more));
  }
  if (done) Pop(std::move(s), out);
}

}  // namespace ellm::grammar
