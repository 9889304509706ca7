// Attribute and item access, the methods of str/dict/list, operators and
// iteration, with Python's semantics (see jinja_builtins.h).
#include <algorithm>
#include <cmath>

#include "chat/jinja_builtins.h"
#include "chat/jinja_limits.h"

namespace ellm::jinja {
namespace {

[[noreturn]] void Fail(const std::string& what) { throw TemplateError(what); }

void RequireDefined(const Value& v) {
  if (v.is_undefined()) Fail(v.undefined_message());
}

int64_t ToIndex(const Value& v, const char* what) {
  if (!v.is_int() && !v.is_bool())
    Fail(std::string(what) + " must be an integer, not " + v.TypeName());
  return v.as_int();
}

const std::string& ArgString(const std::vector<Value>& args, size_t i, const char* method) {
  if (i >= args.size() || !args[i].is_string()) {
    Fail(std::string(method) + "() takes a string argument");
  }
  return args[i].str();
}

bool IsPyWhitespace(std::string_view cp) {
  if (cp.size() == 1) {
    const char c = cp[0];
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
  }
  return cp == "\xc2\x85" || cp == "\xc2\xa0" || cp == "\xe3\x80\x80" ||
         (cp.size() == 3 && cp[0] == '\xe2' &&
          ((cp[1] == '\x80' && (static_cast<unsigned char>(cp[2]) <= 0x8a || cp[2] == '\xa8' ||
                                cp[2] == '\xa9' || cp[2] == '\xaf')) ||
           (cp[1] == '\x81' && cp[2] == '\x9f')));
}

// str.strip / lstrip / rstrip: `chars` undefined or None strips whitespace.
std::string Strip(const std::string& s, const Value& chars, bool left, bool right) {
  std::vector<std::string_view> cps = SplitCodePoints(s);
  std::vector<std::string_view> set;
  const bool ws = chars.is_undefined() || chars.is_none();
  if (!ws) {
    if (!chars.is_string()) Fail("strip arg must be None or str");
    set = SplitCodePoints(chars.str());
  }
  const auto strip = [&](std::string_view cp) {
    return ws ? IsPyWhitespace(cp) : std::find(set.begin(), set.end(), cp) != set.end();
  };
  size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strip(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip(cps[e - 1])) --e;
  }
  std::string out;
  for (size_t i = b; i < e; ++i) out += cps[i];
  return out;
}

// str.split / rsplit. sep undefined or None: runs of whitespace, no empties.
Array Split(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right) {
  Array out;
  if (sep.is_undefined() || sep.is_none()) {
    std::vector<std::string_view> cps = SplitCodePoints(s);
    std::vector<std::string> words;
    std::string cur;
    bool in_word = false;
    for (std::string_view cp : cps) {
      if (IsPyWhitespace(cp)) {
        if (in_word) {
          words.push_back(cur);
          CheckListSize(words.size(), "split");
        }
        cur.clear();
        in_word = false;
      } else {
        cur += cp;
        in_word = true;
      }
    }
    if (in_word) words.push_back(cur);
    if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit + 1) {
      Fail("split() with a limit on whitespace is not supported");
    }
    for (auto& w : words) out.emplace_back(std::move(w));
    return out;
  }
  if (!sep.is_string()) Fail("must be str or None, not " + sep.TypeName());
  const std::string& d = sep.str();
  if (d.empty()) Fail("empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      const size_t at = s.find(d, start);
      if (at == std::string::npos) break;
      parts.push_back(s.substr(start, at - start));
      CheckListSize(parts.size(), "split");
      start = at + d.size();
    }
    parts.push_back(s.substr(start));
  } else {
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      if (end < d.size()) break;
      const size_t at = s.rfind(d, end - d.size());
      if (at == std::string::npos) break;
      parts.push_back(s.substr(at + d.size(), end - at - d.size()));
      CheckListSize(parts.size(), "rsplit");
      end = at;
    }
    parts.push_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
  }
  for (auto& p : parts) out.emplace_back(std::move(p));
  return out;
}

std::string AsciiCase(std::string s, bool upper) {
  for (char& c : s) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return s;
}

bool AffixMatch(const std::string& s, const Value& affix, bool prefix) {
  const auto one = [&](const Value& a) {
    if (!a.is_string()) Fail("startswith/endswith takes a str or a tuple of str");
    const std::string& x = a.str();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0
                  : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_array()) {
    return std::any_of(affix.array().begin(), affix.array().end(), one);
  }
  return one(affix);
}

std::string Replace(const std::string& s, const std::string& from, const std::string& to,
                    int64_t count) {
  std::string out;
  size_t start = 0;
  int64_t n = 0;
  if (from.empty()) Fail("replace() of an empty string is not supported");
  StepMeter::ChargeBytes(s.size());
  while (count < 0 || n < count) {
    const size_t at = s.find(from, start);
    if (at == std::string::npos) break;
    CheckStringSize(out.size() + (at - start) + to.size(), "replace");
    StepMeter::ChargeBytes(at - start + to.size());
    out.append(s, start, at - start);
    out += to;
    start = at + from.size();
    ++n;
  }
  CheckStringSize(out.size() + (s.size() - start), "replace");
  return out + s.substr(start);
}

Value StringMethod(const std::string& s, const std::string& name, std::vector<Value>& args,
                   Kwargs& kwargs) {
  const auto arg = [&](size_t i, const char* kw) {
    return i < args.size() ? args[i] : kwargs.Take(kw);
  };
  if (name == "strip") return Strip(s, arg(0, "chars"), true, true);
  if (name == "lstrip") return Strip(s, arg(0, "chars"), true, false);
  if (name == "rstrip") return Strip(s, arg(0, "chars"), false, true);
  if (name == "split" || name == "rsplit") {
    const Value max = arg(1, "maxsplit");
    return Split(s, arg(0, "sep"), max.is_undefined() ? -1 : ToIndex(max, "maxsplit"),
                 name == "rsplit");
  }
  if (name == "startswith" || name == "endswith") {
    return AffixMatch(s, arg(0, "prefix"), name == "startswith");
  }
  if (name == "upper") return AsciiCase(s, true);
  if (name == "lower") return AsciiCase(s, false);
  if (name == "replace") {
    const Value count = arg(2, "count");
    return Replace(s, ArgString(args, 0, "replace"), ArgString(args, 1, "replace"),
                   count.is_undefined() ? -1 : ToIndex(count, "count"));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "count") {
    const std::string& x = ArgString(args, 0, name.c_str());
    if (name == "count") {
      int64_t n = 0;
      for (size_t at = s.find(x); at != std::string::npos && !x.empty();
           at = s.find(x, at + x.size()))
        ++n;
      return n;
    }
    const size_t at = name == "rfind" ? s.rfind(x) : s.find(x);
    if (at == std::string::npos) {
      if (name == "index") Fail("substring not found");
      return -1;
    }
    return static_cast<int64_t>(SplitCodePoints(s.substr(0, at)).size());
  }
  if (name == "join") {
    std::string out;
    bool first = true;
    for (const Value& v : Iterate(arg(0, "iterable"))) {
      if (!v.is_string()) Fail("sequence item: expected str instance, " + v.TypeName() + " found");
      CheckStringSize(out.size() + (first ? 0 : s.size()) + v.str().size(), "join");
      StepMeter::ChargeBytes(s.size() + v.str().size());
      if (!first) out += s;
      out += v.str();
      first = false;
    }
    return out;
  }
  if (name == "format") return PyFormat(s, args, kwargs);
  if (name == "splitlines") {
    Array out;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\n' || s[i] == '\r') {
        out.emplace_back(s.substr(start, i - start));
        CheckListSize(out.size(), "splitlines");
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        start = i + 1;
      }
    }
    if (start < s.size()) out.emplace_back(s.substr(start));
    return out;
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const std::string& x = ArgString(args, 0, name.c_str());
    if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) return s.substr(x.size());
    if (name == "removesuffix" && x.size() <= s.size() &&
        s.compare(s.size() - x.size(), x.size(), x) == 0) {
      return s.substr(0, s.size() - x.size());
    }
    return s;
  }
  const auto all = [&](auto pred) {
    return !s.empty() && std::all_of(s.begin(), s.end(),
                                     [&](char c) { return pred(static_cast<unsigned char>(c)); });
  };
  if (name == "isdigit" || name == "isnumeric")
    return all([](unsigned char c) { return c >= '0' && c <= '9'; });
  if (name == "isalpha") return all([](unsigned char c) { return std::isalpha(c) || c >= 0x80; });
  if (name == "isalnum") return all([](unsigned char c) { return std::isalnum(c) || c >= 0x80; });
  if (name == "isspace") return all([](unsigned char c) { return std::isspace(c) != 0; });
  if (name == "isupper") return s != AsciiCase(s, false) && s == AsciiCase(s, true);
  if (name == "islower") return s != AsciiCase(s, true) && s == AsciiCase(s, false);
  if (name == "title" || name == "capitalize") {
    std::vector<Value> none;
    return ApplyFilter(name, Value(s), none, kwargs);
  }
  Fail("'str' object has no attribute '" + name + "'");
}

bool IsStringMethod(const std::string& n) {
  static const char* const kNames[] = {
      "strip",        "lstrip",  "rstrip",    "split",     "rsplit",     "startswith",
      "endswith",     "upper",   "lower",     "replace",   "find",       "rfind",
      "index",        "count",   "join",      "format",    "splitlines", "removeprefix",
      "removesuffix", "isdigit", "isnumeric", "isalpha",   "isalnum",    "isspace",
      "isupper",      "islower", "title",     "capitalize"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

Value Bind(const Value& self, const std::string& name) {
  return Value::FromFunction(self.TypeName() + "." + name,
                             [self, name](std::vector<Value>& args, Kwargs& kwargs) -> Value {
                               if (self.is_string())
                                 return StringMethod(self.str(), name, args, kwargs);
                               if (self.is_object()) {
                                 const Object& o = self.object();
                                 if (name == "items") {
                                   Array out;
                                   for (const auto& [k, v] : o.items)
                                     out.push_back(Value::Tuple({k, v}));
                                   return out;
                                 }
                                 if (name == "keys" || name == "values") {
                                   Array out;
                                   for (const auto& [k, v] : o.items)
                                     out.push_back(name == "keys" ? k : v);
                                   return out;
                                 }
                                 // get
                                 const Value key = args.empty() ? kwargs.Take("key") : args[0];
                                 const Value* v = o.Find(key);
                                 if (v) return *v;
                                 return args.size() > 1 ? args[1] : Value::None();
                               }
                               // list count / index
                               const Array& a = self.array();
                               const Value x = args.empty() ? Value() : args[0];
                               int64_t n = 0;
                               for (size_t i = 0; i < a.size(); ++i) {
                                 if (!a[i].Equals(x)) continue;
                                 if (name == "index") return static_cast<int64_t>(i);
                                 ++n;
                               }
                               if (name == "index") Fail(x.Repr() + " is not in list");
                               return n;
                             });
}

Value Unsafe(const Value& self, const std::string& name) {
  return Value::FromFunction(
      name, [type = self.TypeName(), name](std::vector<Value>&, Kwargs&) -> Value {
        Fail("access to attribute '" + name + "' of '" + type + "' object is unsafe.");
      });
}

}  // namespace

Value GetAttr(const Value& obj, const std::string& name) {
  RequireDefined(obj);
  if (obj.is_string() && IsStringMethod(name)) return Bind(obj, name);
  if (obj.is_object() && !obj.object().is_namespace) {
    if (name == "items" || name == "keys" || name == "values" || name == "get")
      return Bind(obj, name);
    if (name == "pop" || name == "update" || name == "setdefault" || name == "clear" ||
        name == "popitem") {
      return Unsafe(obj, name);
    }
  }
  if (obj.is_array()) {
    if (name == "count" || name == "index") return Bind(obj, name);
    if (name == "append" || name == "pop" || name == "extend" || name == "insert" ||
        name == "remove" || name == "sort" || name == "reverse" || name == "clear") {
      return Unsafe(obj, name);
    }
  }
  if (obj.is_object()) {
    if (const Value* v = obj.object().Find(std::string_view(name))) return *v;
  }
  return Value::Undefined("'" + obj.TypeName() + " object' has no attribute '" + name + "'");
}

Value GetItem(const Value& obj, const Value& key) {
  RequireDefined(obj);
  if (obj.is_generator()) Fail("'generator' object is not subscriptable");
  if (obj.is_object()) {
    if (const Value* v = obj.object().Find(key)) return *v;
    return Value::Undefined("'" + obj.TypeName() + " object' has no attribute " + key.Repr());
  }
  if ((obj.is_array() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_array()) {
      const int64_t n = static_cast<int64_t>(obj.array().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.array()[static_cast<size_t>(i)];
    } else {
      std::vector<std::string_view> cps = SplitCodePoints(obj.str());
      const int64_t n = static_cast<int64_t>(cps.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return std::string(cps[static_cast<size_t>(i)]);
    }
    return Value::Undefined(obj.TypeName() + " index out of range");
  }
  if (key.is_string()) return GetAttr(obj, key.str());
  return Value::Undefined("'" + obj.TypeName() + " object' has no item " + key.Repr());
}

Value Slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  RequireDefined(obj);
  std::vector<std::string_view> cps;
  int64_t n = 0;
  if (obj.is_generator()) Fail("'generator' object is not subscriptable");
  if (obj.is_array()) {
    n = static_cast<int64_t>(obj.array().size());
  } else if (obj.is_string()) {
    cps = SplitCodePoints(obj.str());
    n = static_cast<int64_t>(cps.size());
  } else {
    Fail("'" + obj.TypeName() + "' object is not subscriptable");
  }
  const auto given = [](const Value& v) { return !v.is_undefined() && !v.is_none(); };
  const int64_t st = given(step) ? ToIndex(step, "slice step") : 1;
  if (st == 0) Fail("slice step cannot be zero");
  // Python's slice.indices().
  const auto clamp = [&](const Value& v, int64_t dflt) {
    if (!given(v)) return dflt;
    int64_t i = ToIndex(v, "slice index");
    if (i < 0) i += n;
    if (st > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t b = clamp(start, st > 0 ? 0 : n - 1);
  const int64_t e = clamp(stop, st > 0 ? n : -1);
  Array items;
  std::string text;
  // b and e are within [-1, n]; a step beyond that ends the slice (i += st
  // could overflow).
  for (int64_t i = b; st > 0 ? i < e : i > e;) {
    StepMeter::Charge(1);
    if (obj.is_array()) {
      items.push_back(obj.array()[static_cast<size_t>(i)]);
    } else {
      text += cps[static_cast<size_t>(i)];
    }
    if (st > 0 ? st > e - i : st < e - i) break;
    i += st;
  }
  if (obj.is_array()) return items;
  return text;
}

bool Contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string())
      Fail("'in <string>' requires string as left operand, not " + item.TypeName());
    StepMeter::ChargeBytes(container.str().size());
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_object()) {
    return container.object().Find(item) != nullptr;
  }
  for (const Value& v : Iterate(container)) {
    if (v.Equals(item)) return true;
  }
  return false;
}

std::vector<Value> Iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return {};
    case Kind::kArray:
      StepMeter::Charge(static_cast<int64_t>(v.array().size()));
      return v.array();
    case Kind::kObject: {
      if (v.object().is_namespace) break;
      std::vector<Value> keys;
      StepMeter::Charge(static_cast<int64_t>(v.object().items.size()));
      for (const auto& kv : v.object().items) keys.push_back(kv.first);
      return keys;
    }
    case Kind::kString: {
      std::vector<std::string_view> cps = SplitCodePoints(v.str());
      CheckListSize(cps.size(), "iterating a string");
      std::vector<Value> out;
      out.reserve(cps.size());
      for (std::string_view cp : cps) out.emplace_back(std::string(cp));
      return out;
    }
    default:
      break;
  }
  Fail("'" + v.TypeName() + "' object is not iterable");
}

namespace {

[[noreturn]] void Overflow(const std::string& op) {
  throw LimitError("integer overflow in '" + op + "' (integers are 64-bit)");
}

// Python's floor division and modulo of 64-bit integers. REQUIRES: q != 0.
Value FloorDivMod(const std::string& op, int64_t p, int64_t q) {
  if (p == INT64_MIN && q == -1) {
    if (op == "%") return int64_t{0};
    Overflow(op);
  }
  int64_t d = p / q;
  if ((p % q != 0) && ((p < 0) != (q < 0))) --d;
  return op == "//" ? Value(d) : Value(p - d * q);
}

// base ** exp by squaring: 64 multiplications at most, each checked.
int64_t IntPow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (true) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) Overflow("**");
    }
    exp >>= 1;
    if (exp == 0) return result;
    if (__builtin_mul_overflow(base, base, &base)) {
      // |base| >= 2 from here on; the result would overflow unless it is 0.
      if (result == 0) return 0;
      Overflow("**");
    }
  }
}

// seq * count for a str or list: sizes checked before anything is built.
Value Repeat(const Value& seq, int64_t count) {
  const size_t unit = seq.is_string() ? seq.str().size() : seq.array().size();
  const size_t n = count > 0 ? static_cast<size_t>(count) : 0;
  const size_t total = unit == 0 ? 0 : n > SIZE_MAX / unit ? SIZE_MAX : n * unit;
  if (seq.is_string()) {
    CheckStringSize(total, "'*'");
    StepMeter::ChargeBytes(total);
    std::string s;
    s.reserve(total);
    for (size_t i = 0; i < n && unit > 0; ++i) s += seq.str();
    return s;
  }
  CheckListSize(total, "'*'");
  StepMeter::Charge(static_cast<int64_t>(total));
  Array items;
  items.reserve(total);
  for (size_t i = 0; i < n && unit > 0; ++i) {
    items.insert(items.end(), seq.array().begin(), seq.array().end());
  }
  return Value(std::move(items));
}

std::string Concat(const std::string& a, const std::string& b, const char* op) {
  CheckStringSize(a.size() + b.size(), op);
  StepMeter::ChargeBytes(a.size() + b.size());
  return a + b;
}

Value IntArithmetic(const std::string& op, int64_t p, int64_t q) {
  int64_t r = 0;
  if (op == "+") {
    if (__builtin_add_overflow(p, q, &r)) Overflow(op);
    return r;
  }
  if (op == "-") {
    if (__builtin_sub_overflow(p, q, &r)) Overflow(op);
    return r;
  }
  if (op == "*") {
    if (__builtin_mul_overflow(p, q, &r)) Overflow(op);
    return r;
  }
  if (op == "/") {
    if (q == 0) Fail("division by zero");
    return static_cast<double>(p) / static_cast<double>(q);
  }
  if (op == "//" || op == "%") {
    if (q == 0) Fail("integer division or modulo by zero");
    return FloorDivMod(op, p, q);
  }
  // **: a negative exponent gives a float, as in Python.
  if (q < 0) return std::pow(static_cast<double>(p), static_cast<double>(q));
  return IntPow(p, q);
}

Value Arithmetic(const std::string& op, const Value& a, const Value& b) {
  RequireDefined(a);
  RequireDefined(b);
  const auto unsupported = [&]() -> Value {
    Fail("unsupported operand type(s) for " + op + ": '" + a.TypeName() + "' and '" + b.TypeName() +
         "'");
  };
  if (op == "+") {
    // Markup + str escapes the plain string (markupsafe's __add__/__radd__).
    if (a.is_markup() && b.is_string()) return Value::Markup(Concat(a.str(), HtmlEscape(b), "'+'"));
    if (a.is_string() && b.is_markup()) return Value::Markup(Concat(HtmlEscape(a), b.str(), "'+'"));
    if (a.is_string() && b.is_string()) return Concat(a.str(), b.str(), "'+'");
    if (a.is_array() && b.is_array()) {
      CheckListSize(a.array().size() + b.array().size(), "'+'");
      StepMeter::Charge(static_cast<int64_t>(a.array().size() + b.array().size()));
      Array out = a.array();
      out.insert(out.end(), b.array().begin(), b.array().end());
      return out;
    }
    if (a.is_string()) Fail("can only concatenate str (not \"" + b.TypeName() + "\") to str");
    if (a.is_array()) Fail("can only concatenate list (not \"" + b.TypeName() + "\") to list");
  }
  if (op == "*") {
    const Value* seq = a.is_string() || a.is_array()   ? &a
                       : b.is_string() || b.is_array() ? &b
                                                       : nullptr;
    const Value* count = seq == &a ? &b : &a;
    if (seq && (count->is_int() || count->is_bool())) return Repeat(*seq, count->as_int());
  }
  if (!a.is_number() || !b.is_number()) return unsupported();
  if (!a.is_float() && !b.is_float()) return IntArithmetic(op, a.as_int(), b.as_int());
  const double x = a.as_double(), y = b.as_double();
  if (op == "+") return x + y;
  if (op == "-") return x - y;
  if (op == "*") return x * y;
  if (op == "/") {
    if (y == 0) Fail("division by zero");
    return x / y;
  }
  if (op == "//" || op == "%") {
    if (y == 0) Fail("integer division or modulo by zero");
    const double d = std::floor(x / y);
    return op == "//" ? Value(d) : Value(x - d * y);
  }
  if (op == "**") return std::pow(x, y);
  return unsupported();
}

}  // namespace

Value BinaryOp(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Concat(a.Str(), b.Str(), "'~'");
  if (op == "==") return a.Equals(b);
  if (op == "!=") return !a.Equals(b);
  if (op == "in") return Contains(b, a);
  if (op == "not in") return !Contains(b, a);
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    RequireDefined(a);
    RequireDefined(b);
    if (op == "<") return a.Less(b);
    if (op == ">") return b.Less(a);
    if (op == "<=") return !b.Less(a);
    return !a.Less(b);
  }
  return Arithmetic(op, a, b);
}

std::string PyFormat(const std::string& fmt, const std::vector<Value>& args, const Kwargs& kwargs) {
  std::string out;
  size_t next_auto = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) Fail("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string::npos)
      Fail("format specs in str.format are not supported");
    const Value* v = nullptr;
    if (field.empty() || std::all_of(field.begin(), field.end(), ::isdigit)) {
      const size_t idx = field.empty() ? next_auto++ : std::stoul(field);
      if (idx >= args.size()) Fail("Replacement index " + std::to_string(idx) + " out of range");
      v = &args[idx];
    } else {
      for (const auto& [k, val] : kwargs.items) {
        if (k == field) v = &val;
      }
      if (!v) Fail("KeyError: '" + field + "'");
    }
    out += v->Str();
    CheckStringSize(out.size(), "format");
    i = close;
  }
  return out;
}

}  // namespace ellm::jinja
