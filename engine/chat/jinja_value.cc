#include "chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/jinja_limits.h"

namespace ellm::jinja {
namespace {

uint16_t NestedDepth(int inner) { return static_cast<uint16_t>(std::min(inner + 1, 65535)); }

void CheckDepth(int depth, const char* doing) {
  if (depth > kMaxValueDepth) {
    throw LimitError("value nested deeper than " + std::to_string(kMaxValueDepth) + " " + doing);
  }
}

}  // namespace

Value::Value(Array a) : kind_(Kind::kArray) {
  int inner = 0;
  for (const Value& v : a) inner = std::max(inner, v.depth());
  depth_ = NestedDepth(inner);
  array_ = std::make_shared<Array>(std::move(a));
}

Value::Value(Object o) : kind_(Kind::kObject) {
  int inner = 0;
  for (const auto& [k, v] : o.items) inner = std::max({inner, k.depth(), v.depth()});
  depth_ = NestedDepth(inner);
  object_ = std::make_shared<Object>(std::move(o));
}

const Value* Object::Find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

const Value* Object::Find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (k.Equals(key)) return &v;
  }
  return nullptr;
}

void Object::Set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (k.Equals(key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

Value Kwargs::Take(std::string_view name, Value fallback) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].first == name) {
      Value v = std::move(items[i].second);
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(i));
      return v;
    }
  }
  return fallback;
}

Value Value::FromFunction(std::string name, Function f) {
  Value v(Kind::kFunction);
  v.str_ = std::make_shared<std::string>(std::move(name));
  v.function_ = std::make_shared<Function>(std::move(f));
  return v;
}

std::string Value::undefined_message() const {
  return str_ ? *str_ : std::string("value is undefined");
}

std::vector<std::string_view> SplitCodePoints(std::string_view s) {
  // Sixteen bytes of views per byte of text: charged as copying sixteen.
  StepMeter::ChargeBytes(s.size() * 16);
  std::vector<std::string_view> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    n = std::min(n, s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

namespace {

uint32_t DecodeCodePoint(std::string_view cp) {
  const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(cp[i])); };
  switch (cp.size()) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1f) << 6) | (b(1) & 0x3f);
    case 3:
      return ((b(0) & 0x0f) << 12) | ((b(1) & 0x3f) << 6) | (b(2) & 0x3f);
    default:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3f) << 12) | ((b(2) & 0x3f) << 6) | (b(3) & 0x3f);
  }
}

void AppendHex(std::string& out, const char* prefix, uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%s%0*x", prefix, digits, v);
  out += buf;
}

// Python's json.dumps string encoding with ensure_ascii=False.
void JsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          AppendHex(out, "\\u", static_cast<unsigned char>(ch), 4);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

}  // namespace

// Python's repr(float): the shortest digits that round-trip, positional for
// exponents in [-4, 16), else scientific with at least two exponent digits.
std::string PyFloatRepr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  const bool neg = mantissa[0] == '-';
  if (neg) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exp) + 1) + "." +
            digits.substr(static_cast<size_t>(exp) + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  }
  return neg ? "-" + out : out;
}

// Python's repr(str): single quotes unless the text has one and no double
// quote; backslash escapes for the quote, \\, \n, \r, \t and other
// non-printable characters.
std::string PyStringRepr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (std::string_view cp : SplitCodePoints(s)) {
    const uint32_t c = DecodeCodePoint(cp);
    if (c == static_cast<uint32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      AppendHex(out, "\\x", c, 2);
    } else if (c >= 0x80 && c < 0xa0) {
      AppendHex(out, "\\x", c, 2);
    } else {
      out += cp;
    }
  }
  out += quote;
  return out;
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
    case Kind::kInt:
      return int_ != 0;
    case Kind::kFloat:
      return float_ != 0;
    case Kind::kString:
      return !str_->empty();
    case Kind::kArray:
      return is_generator() || !array_->empty();
    case Kind::kObject:
      return object_->is_namespace || !object_->items.empty();
    case Kind::kFunction:
      return true;
  }
  return false;
}

std::string Value::Str() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return *str_;
    default:
      return Repr();
  }
}

std::string Value::Repr() const {
  std::string out;
  ReprTo(out, 0);
  return out;
}

void Value::ReprTo(std::string& out, int depth) const {
  CheckDepth(depth, "to print");
  StepMeter::Charge(1);
  switch (kind_) {
    case Kind::kUndefined:
      return;
    case Kind::kNone:
      out += "None";
      return;
    case Kind::kBool:
      out += int_ ? "True" : "False";
      return;
    case Kind::kInt:
      out += std::to_string(int_);
      return;
    case Kind::kFloat:
      out += PyFloatRepr(float_);
      return;
    case Kind::kString:
      StepMeter::ChargeBytes(str_->size());
      out += PyStringRepr(*str_);
      break;
    case Kind::kArray: {
      if (is_generator()) {
        out += "<generator object>";
        return;
      }
      out += is_tuple() ? "(" : "[";
      for (size_t i = 0; i < array_->size(); ++i) {
        if (i) out += ", ";
        (*array_)[i].ReprTo(out, depth + 1);
      }
      out += !is_tuple() ? "]" : array_->size() == 1 ? ",)" : ")";
      break;
    }
    case Kind::kObject: {
      out += object_->is_namespace ? "<Namespace {" : "{";
      for (size_t i = 0; i < object_->items.size(); ++i) {
        if (i) out += ", ";
        object_->items[i].first.ReprTo(out, depth + 1);
        out += ": ";
        object_->items[i].second.ReprTo(out, depth + 1);
      }
      out += object_->is_namespace ? "}>" : "}";
      break;
    }
    case Kind::kFunction:
      out += "<function " + *str_ + ">";
      return;
  }
  CheckStringSize(out.size(), "printing a value");
}

int64_t Value::Length() const {
  switch (kind_) {
    case Kind::kUndefined:
      return 0;
    case Kind::kString: {
      StepMeter::ChargeBytes(str_->size());
      // Code points: every byte but UTF-8's continuation bytes (10xxxxxx).
      return std::count_if(str_->begin(), str_->end(),
                           [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; });
    }
    case Kind::kArray:
      if (is_generator()) break;
      return static_cast<int64_t>(array_->size());
    case Kind::kObject:
      return static_cast<int64_t>(object_->items.size());
    default:
      break;
  }
  throw TemplateError("object of type '" + TypeName() + "' has no len()");
}

std::string Value::ToJson(int indent, const std::string& item_sep, const std::string& key_sep,
                          bool sort_keys) const {
  std::string out;
  ToJsonTo(out, indent, 0, item_sep, key_sep, sort_keys);
  return out;
}

void Value::ToJsonTo(std::string& out, int indent, int depth, const std::string& item_sep,
                     const std::string& key_sep, bool sort_keys) const {
  CheckDepth(depth, "to print as JSON");
  StepMeter::Charge(1);
  const auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    const size_t pad = static_cast<size_t>(indent) * static_cast<size_t>(d);
    CheckStringSize(out.size() + pad, "tojson");
    StepMeter::ChargeBytes(pad);
    out.append(pad, ' ');
  };
  switch (kind_) {
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += int_ ? "true" : "false";
      return;
    case Kind::kInt:
    case Kind::kFloat:
      out += Repr();
      return;
    case Kind::kString:
      StepMeter::ChargeBytes(str_->size());
      JsonString(out, *str_);
      CheckStringSize(out.size(), "tojson");
      return;
    case Kind::kArray: {
      if (is_generator()) throw TemplateError("Object of type generator is not JSON serializable");
      if (array_->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < array_->size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        (*array_)[i].ToJsonTo(out, indent, depth + 1, item_sep, key_sep, sort_keys);
        CheckStringSize(out.size(), "tojson");
      }
      newline(depth);
      out += ']';
      return;
    }
    case Kind::kObject: {
      if (object_->items.empty()) {
        out += "{}";
        return;
      }
      // json.dumps turns None, bool and number keys into strings.
      std::vector<std::pair<std::string, const Value*>> items;
      for (const auto& [k, v] : object_->items) {
        std::string key = k.is_string() ? k.str()
                          : k.is_none() ? "null"
                          : k.is_bool() ? (k.as_bool() ? "true" : "false")
                          : k.is_number()
                              ? k.Repr()
                              : throw TemplateError("keys must be str, int, float, bool or None");
        items.emplace_back(std::move(key), &v);
      }
      if (sort_keys) {
        std::stable_sort(items.begin(), items.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        JsonString(out, items[i].first);
        out += key_sep;
        items[i].second->ToJsonTo(out, indent, depth + 1, item_sep, key_sep, sort_keys);
        CheckStringSize(out.size(), "tojson");
      }
      newline(depth);
      out += '}';
      return;
    }
    case Kind::kUndefined:
    case Kind::kFunction:
      throw TemplateError("Object of type " + TypeName() + " is not JSON serializable");
  }
}

bool Value::Equals(const Value& other) const { return EqualsAt(other, 0); }

bool Value::EqualsAt(const Value& other, int depth) const {
  CheckDepth(depth, "to compare");
  StepMeter::Charge(1);
  if (is_number() && other.is_number()) {
    if (is_float() || other.is_float()) return as_double() == other.as_double();
    return int_ == other.int_;
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      if (str_ == other.str_) return true;
      if (str_->size() == other.str_->size()) StepMeter::ChargeBytes(str_->size());
      return *str_ == *other.str_;
    case Kind::kArray: {
      if (array_ == other.array_) return true;
      if (array_->size() != other.array_->size()) return false;
      for (size_t i = 0; i < array_->size(); ++i) {
        if (!(*array_)[i].EqualsAt((*other.array_)[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::kObject: {
      if (object_ == other.object_) return true;
      if (object_->items.size() != other.object_->items.size()) return false;
      for (const auto& [k, v] : object_->items) {
        const Value* o = other.object_->Find(Value(k));
        if (!o || !v.EqualsAt(*o, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kFunction:
      return function_ == other.function_;
    default:
      return false;
  }
}

bool Value::Less(const Value& other) const { return LessAt(other, 0); }

bool Value::LessAt(const Value& other, int depth) const {
  CheckDepth(depth, "to compare");
  StepMeter::Charge(1);
  if (is_number() && other.is_number()) {
    if (is_float() || other.is_float()) return as_double() < other.as_double();
    return int_ < other.int_;
  }
  if (is_string() && other.is_string()) {
    StepMeter::ChargeBytes(std::min(str_->size(), other.str_->size()));
    return *str_ < *other.str_;
  }
  if (is_array() && other.is_array()) {
    const Array& a = *array_;
    const Array& b = *other.array_;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (!a[i].EqualsAt(b[i], depth + 1)) return a[i].LessAt(b[i], depth + 1);
    }
    return a.size() < b.size();
  }
  throw TemplateError("'<' not supported between instances of '" + TypeName() + "' and '" +
                      other.TypeName() + "'");
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kArray:
      return is_generator() ? "generator" : is_tuple() ? "tuple" : "list";
    case Kind::kObject:
      return object_->is_namespace ? "Namespace" : "dict";
    case Kind::kFunction:
      return "function";
  }
  return "?";
}

}  // namespace ellm::jinja
