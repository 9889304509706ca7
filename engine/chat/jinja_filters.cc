// Jinja2's built-in filters and tests (jinja2/filters.py, jinja2/tests.py)
// that chat templates use, with Hugging Face's own tojson.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "chat/jinja_builtins.h"
#include "chat/jinja_limits.h"
#include "ellm/base/html.h"

namespace ellm::jinja {
namespace {

[[noreturn]] void Fail(const std::string& what) { throw TemplateError(what); }

// Argument i, or the keyword `name`, or `fallback`.
Value Arg(std::vector<Value>& args, Kwargs& kwargs, size_t i, const char* name,
          Value fallback = Value()) {
  if (i < args.size()) return args[i];
  return kwargs.Take(name, std::move(fallback));
}

void NoExtraKwargs(const std::string& filter, const Kwargs& kwargs) {
  if (!kwargs.items.empty()) {
    Fail("filter '" + filter + "' got an unexpected keyword argument '" + kwargs.items[0].first +
         "'");
  }
}

std::string CaseWords(const std::string& s, bool title) {
  std::string out = s;
  bool at_start = true;
  for (char& c : out) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (letter) {
      if (at_start) {
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
      } else if (c >= 'A' && c <= 'Z') {
        c = static_cast<char>(c + 32);
      }
    }
    at_start = title
                   ? !letter && !(c >= '0' && c <= '9') && !(static_cast<unsigned char>(c) >= 0x80)
                   : false;
  }
  return out;
}

// Jinja2's environment.getitem with a dotted path ("function.name", "0").
Value AttributePath(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    v = digits ? GetItem(v, Value(static_cast<int64_t>(std::stoll(part))))
               : GetItem(v, Value(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// The sort key of sort/unique/dictsort/min/max: lower-cased strings unless case-sensitive.
Value SortKey(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) {
    std::string s = v.str();
    for (char& c : s) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    }
    return s;
  }
  return v;
}

}  // namespace

std::string HtmlEscape(const Value& v) {
  if (v.is_markup()) return v.str();
  return ::ellm::HtmlEscape(v.Str());
}

namespace {

// \uXXXX escapes (surrogate pairs above the BMP) for every non-ASCII code
// point of JSON text, as json.dumps(ensure_ascii=True).
std::string AsciiJson(const std::string& json) {
  std::string out;
  for (std::string_view cp : SplitCodePoints(json)) {
    if (cp.size() == 1) {
      out += cp;
      continue;
    }
    const auto b = [&](size_t i) {
      return static_cast<uint32_t>(static_cast<unsigned char>(cp[i]));
    };
    uint32_t c = cp.size() == 2   ? ((b(0) & 0x1f) << 6) | (b(1) & 0x3f)
                 : cp.size() == 3 ? ((b(0) & 0x0f) << 12) | ((b(1) & 0x3f) << 6) | (b(2) & 0x3f)
                                  : ((b(0) & 0x07) << 18) | ((b(1) & 0x3f) << 12) |
                                        ((b(2) & 0x3f) << 6) | (b(3) & 0x3f);
    char buf[16];
    if (c >= 0x10000) {
      c -= 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xd800 + (c >> 10), 0xdc00 + (c & 0x3ff));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
    }
    out += buf;
  }
  return out;
}

Value ToJsonFilter(const Value& input, std::vector<Value>& args, Kwargs& kwargs) {
  // Hugging Face: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
  const Value ensure_ascii = Arg(args, kwargs, 0, "ensure_ascii", Value(false));
  const Value indent = Arg(args, kwargs, 1, "indent", Value::None());
  const Value separators = Arg(args, kwargs, 2, "separators", Value::None());
  const Value sort_keys = Arg(args, kwargs, 3, "sort_keys", Value(false));
  NoExtraKwargs("tojson", kwargs);
  int ind = -1;
  if (!indent.is_none() && !indent.is_undefined()) {
    if (!indent.is_int()) Fail("tojson: indent must be an integer");
    CheckStringSize(static_cast<size_t>(std::max<int64_t>(indent.as_int(), 0)), "tojson's indent");
    ind = static_cast<int>(indent.as_int());
  }
  std::string item_sep = ind < 0 ? ", " : ",", key_sep = ": ";
  if (!separators.is_none() && !separators.is_undefined()) {
    if (!separators.is_array() || separators.array().size() != 2 ||
        !separators.array()[0].is_string() || !separators.array()[1].is_string()) {
      Fail("tojson: separators must be a pair of strings");
    }
    item_sep = separators.array()[0].str();
    key_sep = separators.array()[1].str();
  }
  const std::string json = input.ToJson(ind, item_sep, key_sep, sort_keys.Truthy());
  if (!ensure_ascii.Truthy()) return json;
  std::string ascii = AsciiJson(json);
  CheckStringSize(ascii.size(), "tojson");
  return ascii;
}

std::string Indent(const std::string& text, const Value& width, bool first, bool blank) {
  if (!width.is_string() && !width.is_int() && !width.is_bool()) {
    Fail("indent: width must be an integer or a string");
  }
  const int64_t spaces = width.is_string() ? 0 : std::max<int64_t>(width.as_int(), 0);
  CheckStringSize(static_cast<uint64_t>(spaces), "indent");
  const std::string pad =
      width.is_string() ? width.str() : std::string(static_cast<size_t>(spaces), ' ');
  StepMeter::ChargeBytes(text.size());
  // As jinja2: append a newline, then splitlines (which drops the last empty line).
  std::vector<std::string> lines;
  const std::string s = text + "\n";
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n') {
      lines.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  std::string rv;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) rv += "\n";
    if (i > 0 && (blank || !lines[i].empty())) rv += pad;
    rv += lines[i];
    CheckStringSize(rv.size() + pad.size(), "indent");
    StepMeter::ChargeBytes(pad.size());
  }
  return first ? pad + rv : rv;
}

// select/reject/selectattr/rejectattr.
Value SelectFilter(const std::string& name, const Value& input, std::vector<Value>& args) {
  const bool attr = name == "selectattr" || name == "rejectattr";
  const bool keep_if = name == "select" || name == "selectattr";
  size_t i = 0;
  std::string attribute;
  if (attr) {
    if (args.empty() || !args[0].is_string()) Fail(name + " needs an attribute name");
    attribute = args[i++].str();
  }
  std::string test;
  if (i < args.size()) {
    if (!args[i].is_string()) Fail(name + ": the test name must be a string");
    test = args[i++].str();
  }
  std::vector<Value> test_args(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  Array out;
  if (!input.Truthy()) return Value::Generator({});  // as jinja2: `if value:` first
  for (const Value& item : Iterate(input)) {
    const Value v = attr ? AttributePath(item, attribute) : item;
    const bool pass = test.empty() ? v.Truthy() : ApplyTest(test, v, test_args);
    if (pass == keep_if) out.push_back(item);
  }
  return Value::Generator(std::move(out));
}

Value MapFilter(const Value& input, std::vector<Value>& args, Kwargs& kwargs) {
  const Value attribute = kwargs.Take("attribute");
  Array out;
  if (!input.Truthy()) return Value::Generator({});  // as jinja2: `if value:` first
  if (!attribute.is_undefined()) {
    const Value dflt = kwargs.Take("default");
    for (const Value& item : Iterate(input)) {
      Value v = AttributePath(item, attribute.Str());
      out.push_back(v.is_undefined() && !dflt.is_undefined() ? dflt : v);
    }
    return Value::Generator(std::move(out));
  }
  if (args.empty() || !args[0].is_string()) Fail("map needs a filter name or attribute=");
  const std::string filter = args[0].str();
  std::vector<Value> rest(args.begin() + 1, args.end());
  for (const Value& item : Iterate(input)) {
    std::vector<Value> a = rest;
    Kwargs k = kwargs;
    out.push_back(ApplyFilter(filter, item, a, k));
  }
  return Value::Generator(std::move(out));
}

Value SortFilter(const std::string& name, const Value& input, std::vector<Value>& args,
                 Kwargs& kwargs) {
  const bool reverse = name == "sort" && Arg(args, kwargs, 0, "reverse", Value(false)).Truthy();
  const bool case_sensitive =
      Arg(args, kwargs, name == "sort" ? 1 : 0, "case_sensitive", Value(false)).Truthy();
  const Value attribute = Arg(args, kwargs, name == "sort" ? 2 : 1, "attribute");
  const auto key = [&](const Value& v) {
    return SortKey(
        attribute.is_undefined() || attribute.is_none() ? v : AttributePath(v, attribute.Str()),
        case_sensitive);
  };
  std::vector<Value> items = Iterate(input);
  if (name == "unique") {
    Array out;
    std::vector<Value> seen;
    for (const Value& v : items) {
      const Value k = key(v);
      if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return s.Equals(k); })) {
        seen.push_back(k);
        out.push_back(v);
      }
    }
    return out;
  }
  if (name == "min" || name == "max") {
    if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
    const Value* best = &items[0];
    for (const Value& v : items) {
      if (name == "min" ? key(v).Less(key(*best)) : key(*best).Less(key(v))) best = &v;
    }
    return *best;
  }
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return reverse ? key(b).Less(key(a)) : key(a).Less(key(b));
  });
  return Array(std::move(items));
}

Value DictSort(const Value& input, std::vector<Value>& args, Kwargs& kwargs) {
  if (!input.is_object()) Fail("dictsort: can only sort a mapping");
  const bool case_sensitive = Arg(args, kwargs, 0, "case_sensitive", Value(false)).Truthy();
  const Value by = Arg(args, kwargs, 1, "by", Value("key"));
  const bool reverse = Arg(args, kwargs, 2, "reverse", Value(false)).Truthy();
  const size_t pos = by.is_string() && by.str() == "value" ? 1 : 0;
  Array pairs;
  for (const auto& [k, v] : input.object().items) pairs.push_back(Value::Tuple({k, v}));
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
    const Value ka = SortKey(a.array()[pos], case_sensitive),
                kb = SortKey(b.array()[pos], case_sensitive);
    return reverse ? kb.Less(ka) : ka.Less(kb);
  });
  return pairs;
}

// A float truncated toward zero as Python's int(); one outside 64 bits is an
// overflow (Python's ints are unbounded), NaN and infinities `fallback`.
Value FloatToInt(double d, const Value& fallback) {
  if (std::isnan(d) || std::isinf(d)) return fallback;
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
    throw LimitError("integer overflow in 'int' (integers are 64-bit)");
  }
  return static_cast<int64_t>(d);
}

Value IntFilter(const Value& input, const Value& dflt) {
  if (input.is_int() || input.is_bool()) return input.as_int();
  if (input.is_float()) return FloatToInt(input.as_double(), dflt);
  if (input.is_string()) {
    const std::string& s = input.str();
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (end != s.c_str() && *end == '\0') return static_cast<int64_t>(v);
    const double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() && *end == '\0') return FloatToInt(d, dflt);
  }
  return dflt;
}

// int, float, abs, round, sum; nullopt for another name.
std::optional<Value> NumberFilter(const std::string& name, const Value& input,
                                  std::vector<Value>& args, Kwargs& kwargs) {
  if (name == "int") return IntFilter(input, Arg(args, kwargs, 0, "default", Value(0)));
  if (name == "float") {
    if (input.is_number()) return input.as_double();
    char* end = nullptr;
    const std::string s = input.Str();
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == '\0') return d;
    return Arg(args, kwargs, 0, "default", Value(0.0));
  }
  if (name == "abs") {
    if (input.is_int()) {
      if (input.as_int() == INT64_MIN)
        throw LimitError("integer overflow in 'abs' (integers are 64-bit)");
      return static_cast<int64_t>(std::llabs(input.as_int()));
    }
    if (input.is_float()) return std::fabs(input.as_double());
    Fail("bad operand type for abs(): '" + input.TypeName() + "'");
  }
  if (name == "round") {
    const int64_t precision = Arg(args, kwargs, 0, "precision", Value(0)).as_int();
    const Value method = Arg(args, kwargs, 1, "method", Value("common"));
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = input.as_double() * scale;
    const std::string m = method.Str();
    const double r = m == "floor" ? std::floor(x) : m == "ceil" ? std::ceil(x) : std::round(x);
    return r / scale;
  }
  if (name == "sum") {
    const Value attribute = Arg(args, kwargs, 0, "attribute");
    Value total = Arg(args, kwargs, 1, "start", Value(0));
    for (const Value& v : Iterate(input)) {
      total =
          BinaryOp("+", total, attribute.is_undefined() ? v : AttributePath(v, attribute.Str()));
    }
    return total;
  }
  return std::nullopt;
}

}  // namespace

Value ApplyFilter(const std::string& name, const Value& input, std::vector<Value>& args,
                  Kwargs& kwargs) {
  if (name == "tojson") return ToJsonFilter(input, args, kwargs);
  if (name == "length" || name == "count") return input.Length();
  if (name == "default" || name == "d") {
    const Value dflt = Arg(args, kwargs, 0, "default_value", Value(""));
    const bool boolean = Arg(args, kwargs, 1, "boolean", Value(false)).Truthy();
    return input.is_undefined() || (boolean && !input.Truthy()) ? dflt : input;
  }
  if (name == "trim") {
    std::vector<Value> a{Arg(args, kwargs, 0, "chars")};
    return GetAttr(Value(input.Str()), "strip").function()(a, kwargs);
  }
  if (name == "string") return input.Str();
  if (name == "safe") return Value::Markup(input.Str());
  if (name == "upper" || name == "lower") {
    std::vector<Value> none;
    return GetAttr(Value(input.Str()), name).function()(none, kwargs);
  }
  if (name == "title") return CaseWords(input.Str(), true);
  if (name == "capitalize") return CaseWords(input.Str(), false);
  if (name == "replace") {
    return GetAttr(Value(input.Str()), "replace").function()(args, kwargs);
  }
  if (name == "escape" || name == "e") {
    std::string escaped = HtmlEscape(input);
    CheckStringSize(escaped.size(), "escape");
    return Value::Markup(std::move(escaped));
  }
  if (name == "join") {
    const Value sep = Arg(args, kwargs, 0, "d", Value(""));
    const Value attribute = Arg(args, kwargs, 1, "attribute");
    std::string out;
    bool first = true;
    const std::string separator = sep.Str();
    for (const Value& v : Iterate(input)) {
      const std::string item =
          (attribute.is_undefined() ? v : AttributePath(v, attribute.Str())).Str();
      CheckStringSize(out.size() + (first ? 0 : separator.size()) + item.size(), "join");
      StepMeter::ChargeBytes(separator.size() + item.size());
      if (!first) out += separator;
      out += item;
      first = false;
    }
    return out;
  }
  if (name == "list") return Array(Iterate(input));
  if (name == "items") {
    if (input.is_undefined()) return Array{};
    if (!input.is_object()) Fail("Can only get item pairs from a mapping.");
    std::vector<Value> none;
    return GetAttr(input, "items").function()(none, kwargs);
  }
  if (name == "dictsort") return DictSort(input, args, kwargs);
  if (name == "first" || name == "last") {
    std::vector<Value> items = Iterate(input);
    if (items.empty()) return Value::Undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (input.is_string()) {
      std::vector<std::string_view> cps = SplitCodePoints(input.str());
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
      return out;
    }
    std::vector<Value> items = Iterate(input);
    std::reverse(items.begin(), items.end());
    return Array(std::move(items));
  }
  if (name == "sort" || name == "unique" || name == "min" || name == "max") {
    return SortFilter(name, input, args, kwargs);
  }
  if (name == "map") return MapFilter(input, args, kwargs);
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    return SelectFilter(name, input, args);
  }
  if (name == "indent") {
    const Value width = Arg(args, kwargs, 0, "width", Value(4));
    const bool first = Arg(args, kwargs, 1, "first", Value(false)).Truthy();
    const bool blank = Arg(args, kwargs, 2, "blank", Value(false)).Truthy();
    return Indent(input.Str(), width, first, blank);
  }
  if (std::optional<Value> v = NumberFilter(name, input, args, kwargs)) return *v;
  if (name == "wordcount") {
    std::vector<Value> none;
    return GetAttr(Value(input.Str()), "split").function()(none, kwargs).Length();
  }
  if (name == "attr") {
    if (args.empty()) Fail("attr needs a name");
    return GetAttr(input, args[0].Str());
  }
  Fail("no filter named '" + name + "'");
}

bool ApplyTest(const std::string& name, const Value& v, const std::vector<Value>& args) {
  const auto arg = [&]() -> const Value& {
    if (args.empty()) Fail("test '" + name + "' needs an argument");
    return args[0];
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_object() && !v.object().is_namespace;
  if (name == "iterable") {
    return v.is_undefined() || v.is_array() || v.is_string() ||
           (v.is_object() && !v.object().is_namespace);
  }
  if (name == "sequence") {
    return v.is_undefined() || v.is_array() || v.is_string() ||
           (v.is_object() && !v.object().is_namespace);
  }
  if (name == "callable") return v.is_function();
  if (name == "lower" || name == "upper") {
    std::vector<Value> none;
    Kwargs k;
    return v.is_string() &&
           GetAttr(v, name == "lower" ? "islower" : "isupper").function()(none, k).Truthy();
  }
  if (name == "odd" || name == "even") {
    if (!v.is_int()) Fail("test '" + name + "' needs an integer");
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    if (!v.is_int() || !(arg().is_int() || arg().is_bool())) Fail("divisibleby needs integers");
    if (arg().as_int() == 0) Fail("integer division or modulo by zero");
    if (arg().as_int() == -1) return true;  // INT64_MIN % -1 traps
    return v.as_int() % arg().as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return v.Equals(arg());
  if (name == "ne" || name == "!=") return !v.Equals(arg());
  if (name == "lt" || name == "lessthan" || name == "<") return v.Less(arg());
  if (name == "gt" || name == "greaterthan" || name == ">") return arg().Less(v);
  if (name == "le" || name == "<=") return !arg().Less(v);
  if (name == "ge" || name == ">=") return !v.Less(arg());
  if (name == "in") return Contains(arg(), v);
  if (name == "sameas") return v.kind() == arg().kind() && v.Equals(arg());
  if (name == "escaped") return false;
  Fail("no test named '" + name + "'");
}

}  // namespace ellm::jinja
