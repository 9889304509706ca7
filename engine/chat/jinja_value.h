// The values a chat template computes with, with Python's semantics as
// Jinja2 (the reference Hugging Face renders chat templates with) gives them:
// undefined, None, bool, int, float, str, list, dict (insertion-ordered),
// namespace and callables. Lists and dicts are shared, immutable once built
// (Hugging Face renders in an immutable sandbox); only a namespace changes.
// Strings are UTF-8; lengths, indices and slices count code points, as
// Python's do.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ellm::jinja {

// A template error at render or parse time. Thrown inside the interpreter
// only; Template::Parse/Render turn it into a Status (never crosses the
// engine's interfaces).
// limit(): a bound of jinja_limits.h was hit (reported as RESOURCE_EXHAUSTED;
// LimitError() makes one), rather than an error of the template's logic.
class TemplateError : public std::runtime_error {
 public:
  explicit TemplateError(const std::string& what, bool limit = false)
      : std::runtime_error(what), limit_(limit) {}
  bool limit() const { return limit_; }

 private:
  bool limit_;
};

class Value;
using Array = std::vector<Value>;

struct Object {
  // Insertion order, as Python dicts. Keys are usually strings; a dict
  // literal may have numbers ({1024: 256}).
  std::vector<std::pair<Value, Value>> items;
  bool is_namespace = false;  // a namespace(): attributes may be assigned

  const Value* Find(std::string_view key) const;  // a string key
  const Value* Find(const Value& key) const;      // Python's == on keys
  void Set(Value key, Value value);               // replaces or appends
};

struct Kwargs;
// A built-in or a macro: positional arguments, then keyword arguments.
using Function = std::function<Value(std::vector<Value>& args, Kwargs& kwargs)>;

enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kFunction };

class Value {
 public:
  Value() = default;  // undefined
  static Value Undefined(std::string what) {
    Value v;
    v.str_ = std::make_shared<std::string>(std::move(what));
    return v;
  }
  static Value None() { return Value(Kind::kNone); }
  Value(bool b) : kind_(Kind::kBool), int_(b) {}       // NOLINT: as Python literals
  Value(int v) : kind_(Kind::kInt), int_(v) {}         // NOLINT
  Value(int64_t v) : kind_(Kind::kInt), int_(v) {}     // NOLINT
  Value(double v) : kind_(Kind::kFloat), float_(v) {}  // NOLINT
  Value(std::string s)                                 // NOLINT
      : kind_(Kind::kString), str_(std::make_shared<std::string>(std::move(s))) {}
  // Jinja2's Markup (from |safe or |escape): `+` with a plain string escapes
  // the plain one.
  static Value Markup(std::string s) {
    Value v(std::move(s));
    v.flavor_ = Flavor::kMarkup;
    return v;
  }
  // What map/select/reject/selectattr/rejectattr return in Jinja2: a
  // generator, which iterates like a list but has no len(), is always true,
  // prints as "<generator object>" and is not JSON serializable.
  static Value Generator(Array a) {
    Value v(std::move(a));
    v.flavor_ = Flavor::kGenerator;
    return v;
  }
  // A Python tuple: a list that prints as (a, b).
  static Value Tuple(Array a) {
    Value v(std::move(a));
    v.flavor_ = Flavor::kTuple;
    return v;
  }
  Value(const char* s) : Value(std::string(s)) {}  // NOLINT
  Value(Array a);                                  // NOLINT
  Value(Object o);                                 // NOLINT
  static Value FromFunction(std::string name, Function f);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_function() const { return kind_ == Kind::kFunction; }
  bool is_markup() const { return flavor_ == Flavor::kMarkup; }
  bool is_generator() const { return flavor_ == Flavor::kGenerator; }
  bool is_tuple() const { return flavor_ == Flavor::kTuple; }
  // How deeply lists and dicts nest in this value when it was made (a
  // scalar: 0; [[1]]: 2), saturating at 65535. A namespace's attributes may
  // change after; the interpreter never lets a namespace into a container.
  int depth() const { return depth_; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }  // REQUIRES: is_int() or is_bool()
  double as_double() const { return is_float() ? float_ : static_cast<double>(int_); }
  const std::string& str() const { return *str_; }     // REQUIRES: is_string()
  const Array& array() const { return *array_; }       // REQUIRES: is_array()
  const Object& object() const { return *object_; }    // REQUIRES: is_object()
  Object& mutable_object() const { return *object_; }  // namespaces only
  const Function& function() const { return *function_; }
  const std::string& function_name() const { return *str_; }
  // For an undefined value: what was looked up ("'x' is undefined").
  std::string undefined_message() const;

  // Python's bool().
  bool Truthy() const;
  // Python's str(): what {{ value }} prints (undefined prints nothing).
  std::string Str() const;
  // Python's repr() (inside str() of lists and dicts).
  std::string Repr() const;
  // Python's len() for strings (code points), lists and dicts; undefined: 0.
  int64_t Length() const;
  // Python's json.dumps(value, ensure_ascii=False, indent, separators,
  // sort_keys), Hugging Face's tojson. indent < 0: one line.
  std::string ToJson(int indent, const std::string& item_sep, const std::string& key_sep,
                     bool sort_keys) const;
  // Python's ==.
  bool Equals(const Value& other) const;
  // Python's <: numbers, strings, lists; otherwise a TemplateError.
  bool Less(const Value& other) const;
  // Python's type name, for error messages ("str", "dict", "NoneType").
  std::string TypeName() const;

 private:
  explicit Value(Kind k) : kind_(k) {}
  void ToJsonTo(std::string& out, int indent, int depth, const std::string& item_sep,
                const std::string& key_sep, bool sort_keys) const;
  void ReprTo(std::string& out, int depth) const;
  bool EqualsAt(const Value& other, int depth) const;
  bool LessAt(const Value& other, int depth) const;

  // Python types that behave as a str or a list here but differ in a way a
  // template can see.
  enum class Flavor : uint8_t { kPlain, kMarkup, kGenerator, kTuple };

  Kind kind_ = Kind::kUndefined;
  Flavor flavor_ = Flavor::kPlain;
  uint16_t depth_ = 0;
  int64_t int_ = 0;
  double float_ = 0;
  std::shared_ptr<std::string> str_;  // string, function name, undefined's message
  std::shared_ptr<Array> array_;
  std::shared_ptr<Object> object_;
  std::shared_ptr<Function> function_;
};

struct Kwargs {
  std::vector<std::pair<std::string, Value>> items;
  // Removes and returns the keyword `name`, else `fallback`.
  Value Take(std::string_view name, Value fallback = Value());
};

// UTF-8 helpers with Python's code point indexing.
std::vector<std::string_view> SplitCodePoints(std::string_view s);
std::string PyFloatRepr(double v);
std::string PyStringRepr(std::string_view s);

}  // namespace ellm::jinja
