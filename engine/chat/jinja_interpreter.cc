// Runs a parsed template: Jinja2's scoping (a for loop's body and a macro
// have their own variables; `if` does not; namespaces carry values out of a
// loop), its globals, and the conversion of TemplateErrors into Status.
#include <ctime>

#include "chat/jinja.h"
#include "chat/jinja_ast.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_lexer.h"

namespace ellm::jinja {
namespace {

struct Frame {
  std::vector<std::pair<std::string, Value>> vars;

  Value* Find(const std::string& name) {
    for (auto& [k, v] : vars) {
      if (k == name) return &v;
    }
    return nullptr;
  }
  void Set(const std::string& name, Value value) {
    if (Value* v = Find(name)) {
      *v = std::move(value);
    } else {
      vars.emplace_back(name, std::move(value));
    }
  }
};

enum class Flow { kNormal, kBreak, kContinue };

bool HasLine(const std::string& message) { return message.rfind("line ", 0) == 0; }

// The length of range(start, stop, step), without overflow. REQUIRES: step != 0.
int64_t RangeLength(int64_t start, int64_t stop, int64_t step) {
  if (step > 0 ? stop <= start : stop >= start) return 0;
  // The distance and the step's size as unsigned: both fit in 64 bits.
  const uint64_t span = step > 0 ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start)
                                 : static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
  const uint64_t size = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  const uint64_t n = span / size + (span % size != 0 ? 1 : 0);
  return n > static_cast<uint64_t>(kMaxRange) ? kMaxRange + 1 : static_cast<int64_t>(n);
}

// Work units an operand or result stands for: its top-level size.
int64_t Weight(const Value& v) {
  if (v.is_string()) return static_cast<int64_t>(v.str().size() / kBytesPerStep);
  if (v.is_array()) return static_cast<int64_t>(v.array().size());
  if (v.is_object()) return static_cast<int64_t>(v.object().items.size());
  return 0;
}

// Namespaces are the only values that change after they are made; kept out
// of every container, no value can hold itself (a cycle) or grow deeper
// after it was made (Value::depth stays true).
void RefuseNamespaceInside(const Value& v) {
  if (v.is_object() && v.object().is_namespace) {
    throw LimitError(
        "a namespace cannot be stored in a list, dict or namespace (values that could be cyclic "
        "are refused)");
  }
}

// A value a template made: within the nesting, string and list bounds.
void CheckValue(const Value& v, const char* where) {
  if (v.depth() > kMaxValueDepth) {
    throw LimitError("value nested deeper than " + std::to_string(kMaxValueDepth) + " in " + where);
  }
  if (v.is_string()) CheckStringSize(v.str().size(), where);
  if (v.is_array()) CheckListSize(v.array().size(), where);
  if (v.is_object()) CheckListSize(v.object().items.size(), where);
}

// Counts one level of the interpreter's recursion for its life.
class Nest {
 public:
  explicit Nest(int& depth) : depth_(depth) {
    if (depth_ + 1 > kMaxRenderDepth) {
      throw LimitError("template nesting deeper than " + std::to_string(kMaxRenderDepth) +
                       " at run time");
    }
    ++depth_;
  }
  ~Nest() { --depth_; }
  Nest(const Nest&) = delete;
  Nest& operator=(const Nest&) = delete;

 private:
  int& depth_;
};

class Interpreter {
 public:
  Interpreter(const Object& context, const RenderOptions& options)
      : options_(options), meter_(options.max_steps) {
    AddGlobals();
    for (const auto& [k, v] : context.items) {
      CheckValue(v, "the context");
      root_.Set(k.Str(), v);
    }
    scopes_.push_back(&root_);
  }
  ~Interpreter() {
    if (options_.steps_used) *options_.steps_used = meter_.steps();
  }

  std::string Run(const Body& body) {
    StepMeter::Scope scope(meter_);
    std::string out;
    out_ = &out;
    Exec(body);
    return out;
  }

 private:
  void AddGlobals() {
    root_.Set("range",
              Value::FromFunction("range", [this](std::vector<Value>& a, Kwargs&) -> Value {
                if (a.empty() || a.size() > 3)
                  throw TemplateError("range expects 1 to 3 arguments");
                for (const Value& v : a) {
                  if (!v.is_int())
                    throw TemplateError("range() takes integers, not " + v.TypeName());
                }
                const int64_t start = a.size() > 1 ? a[0].as_int() : 0;
                const int64_t stop = a.size() > 1 ? a[1].as_int() : a[0].as_int();
                const int64_t step = a.size() > 2 ? a[2].as_int() : 1;
                if (step == 0) throw TemplateError("range() arg 3 must not be zero");
                const int64_t n = RangeLength(start, stop, step);
                if (n > kMaxRange) {
                  throw LimitError("range() longer than the sandbox's limit of " +
                                   std::to_string(kMaxRange));
                }
                meter_.Spend(n);
                Array out;
                out.reserve(static_cast<size_t>(n));
                for (int64_t i = 0; i < n; ++i) out.emplace_back(start + i * step);
                return out;
              }));
    const auto make_object = [](bool ns) {
      return [ns](std::vector<Value>& a, Kwargs& k) -> Value {
        Object o;
        o.is_namespace = ns;
        for (const Value& v : a) {
          if (!v.is_object()) throw TemplateError("namespace()/dict() takes a mapping or keywords");
          for (const auto& [key, val] : v.object().items) o.Set(key, val);
        }
        for (auto& [key, val] : k.items) {
          RefuseNamespaceInside(val);
          o.Set(key, val);
        }
        return o;
      };
    };
    root_.Set("namespace", Value::FromFunction("namespace", make_object(true)));
    root_.Set("dict", Value::FromFunction("dict", make_object(false)));
    root_.Set("raise_exception",
              Value::FromFunction("raise_exception", [](std::vector<Value>& a, Kwargs&) -> Value {
                throw TemplateError(a.empty() ? "raise_exception()" : a[0].Str());
              }));
    root_.Set("strftime_now",
              Value::FromFunction("strftime_now", [this](std::vector<Value>& a, Kwargs&) -> Value {
                if (a.empty() || !a[0].is_string())
                  throw TemplateError("strftime_now(format) takes a string");
                if (!options_.strftime_now) return StrftimeNow(a[0].str());
                return options_.strftime_now(a[0].str());
              }));
  }

  Value Lookup(const std::string& name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (Value* v = (*it)->Find(name)) return *v;
    }
    return Value::Undefined("'" + name + "' is undefined");
  }

  void Emit(const std::string& s) {
    meter_.Spend(1 + static_cast<int64_t>(s.size() / kBytesPerStep));
    if (out_->size() + s.size() > options_.max_output_bytes) {
      throw LimitError("output longer than " + std::to_string(options_.max_output_bytes) +
                       " bytes");
    }
    *out_ += s;
  }

  std::string Capture(const Body& body) {
    std::string text;
    std::string* saved = out_;
    out_ = &text;
    Exec(body);
    out_ = saved;
    return text;
  }

  Flow Exec(const Body& body) {
    Nest nest(depth_);
    for (const StmtPtr& s : body) {
      Flow f;
      try {
        meter_.Spend(1);
        f = ExecStmt(*s);
      } catch (const TemplateError& e) {
        if (HasLine(e.what())) throw;
        throw TemplateError("line " + std::to_string(s->line) + ": " + e.what(), e.limit());
      }
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow ExecStmt(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::kText:
        Emit(s.text);
        return Flow::kNormal;
      case StmtKind::kOutput:
        Emit(Eval(*s.expr).Str());
        return Flow::kNormal;
      case StmtKind::kIf:
        for (size_t i = 0; i < s.conds.size(); ++i) {
          if (Eval(*s.conds[i]).Truthy()) return Exec(s.bodies[i]);
        }
        return Exec(s.else_body);
      case StmtKind::kFor:
        return For(s);
      case StmtKind::kSet:
        Set(s);
        return Flow::kNormal;
      case StmtKind::kMacro:
        scopes_.back()->Set(s.targets[0], MakeMacro(s));
        return Flow::kNormal;
      case StmtKind::kBreak:
        return Flow::kBreak;
      case StmtKind::kContinue:
        return Flow::kContinue;
      case StmtKind::kFilter: {
        block_input_ = Value(Capture(s.bodies[0]));
        Emit(Eval(*s.expr).Str());
        return Flow::kNormal;
      }
      case StmtKind::kCallBody:
        return Exec(s.bodies[0]);
    }
    return Flow::kNormal;
  }

  void Bind(Frame& frame, const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
      frame.Set(targets[0], v);
      return;
    }
    std::vector<Value> items = Iterate(v);
    if (items.size() != targets.size()) {
      throw TemplateError("cannot unpack " + std::to_string(items.size()) + " values into " +
                          std::to_string(targets.size()));
    }
    for (size_t i = 0; i < items.size(); ++i) frame.Set(targets[i], items[i]);
  }

  Flow For(const Stmt& s) {
    std::vector<Value> items = Iterate(Eval(*s.expr));
    if (s.cond) {  // `for x in xs if cond`: filtered before loop.* counts
      std::vector<Value> kept;
      for (const Value& v : items) {
        Frame f;
        Bind(f, s.targets, v);
        scopes_.push_back(&f);
        const bool keep = Eval(*s.cond).Truthy();
        scopes_.pop_back();
        if (keep) kept.push_back(v);
      }
      items = std::move(kept);
    }
    if (items.empty()) return Exec(s.else_body);
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      meter_.Spend(1);
      if (++iterations_ > options_.max_iterations) {
        throw LimitError("more than " + std::to_string(options_.max_iterations) +
                         " loop iterations");
      }
      Frame f;
      Bind(f, s.targets, items[static_cast<size_t>(i)]);
      f.Set("loop", LoopObject(items, i));
      scopes_.push_back(&f);
      Flow flow;
      try {
        flow = Exec(s.bodies[0]);
      } catch (...) {
        scopes_.pop_back();
        throw;
      }
      scopes_.pop_back();
      if (flow == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  static Value LoopObject(const std::vector<Value>& items, int64_t i) {
    const int64_t n = static_cast<int64_t>(items.size());
    Object o;
    // Distinct keys: appended, not Set (which compares each with the others).
    const auto add = [&o](const char* key, Value v) { o.items.emplace_back(key, std::move(v)); };
    add("index", i + 1);
    add("index0", i);
    add("revindex", n - i);
    add("revindex0", n - i - 1);
    add("first", i == 0);
    add("last", i == n - 1);
    add("length", n);
    add("depth", 1);
    add("depth0", 0);
    add("previtem",
        i > 0 ? items[static_cast<size_t>(i - 1)] : Value::Undefined("there is no previous item"));
    add("nextitem",
        i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::Undefined("there is no next item"));
    add("cycle", Value::FromFunction("loop.cycle", [i](std::vector<Value>& a, Kwargs&) -> Value {
          if (a.empty()) throw TemplateError("no items for cycling given");
          return a[static_cast<size_t>(i) % a.size()];
        }));
    return o;
  }

  void Set(const Stmt& s) {
    Value v;
    if (!s.bodies.empty()) {  // {% set x %}...{% endset %}, optionally filtered
      v = Value(Capture(s.bodies[0]));
      if (s.expr) {
        block_input_ = v;
        v = Eval(*s.expr);
      }
    } else {
      v = Eval(*s.expr);
    }
    if (!s.text.empty()) {  // set ns.attr = v
      Value target = Lookup(s.targets[0]);
      if (!target.is_object() || !target.object().is_namespace) {
        throw TemplateError("cannot assign attribute on non-namespace object");
      }
      RefuseNamespaceInside(v);
      CheckValue(v, "a namespace");
      target.mutable_object().Set(s.text, std::move(v));
      return;
    }
    Bind(*scopes_.back(), s.targets, v);
  }

  Value MakeMacro(const Stmt& s) {
    return Value::FromFunction(
        s.targets[0], [this, &s](std::vector<Value>& args, Kwargs& kwargs) -> Value {
          if (args.size() > s.params.size()) {
            throw TemplateError("macro '" + s.targets[0] + "' takes not more than " +
                                std::to_string(s.params.size()) + " argument(s)");
          }
          if (++macro_calls_ > options_.max_macro_calls) {
            throw LimitError("more than " + std::to_string(options_.max_macro_calls) +
                             " macro calls");
          }
          if (call_depth_ + 1 > options_.max_call_depth) {
            throw LimitError("macro calls nested deeper than " +
                             std::to_string(options_.max_call_depth));
          }
          ++call_depth_;
          Frame f;
          std::vector<Frame*> saved = scopes_;
          scopes_ = {&root_, &f};
          for (size_t i = 0; i < s.params.size(); ++i) {
            const MacroParam& p = s.params[i];
            Value v = i < args.size() ? args[i] : kwargs.Take(p.name);
            if (v.is_undefined() && p.default_value) v = Eval(*p.default_value);
            if (v.is_undefined()) v = Value::Undefined("'" + p.name + "' is undefined");
            f.Set(p.name, v);
          }
          if (!kwargs.items.empty()) {
            scopes_ = saved;
            --call_depth_;
            throw TemplateError("macro '" + s.targets[0] + "' takes no keyword argument '" +
                                kwargs.items[0].first + "'");
          }
          std::string text;
          try {
            text = Capture(s.bodies[0]);
          } catch (...) {
            scopes_ = saved;
            --call_depth_;
            throw;
          }
          scopes_ = saved;
          --call_depth_;
          return Value(std::move(text));
        });
  }

  // Arguments of a call, filter or test; charged for their size, which the
  // builtin may read whole.
  void EvalArguments(const Expr& e, std::vector<Value>& args, Kwargs& kwargs) {
    for (const ExprPtr& a : e.args) {
      args.push_back(Eval(*a));
      meter_.Spend(Weight(args.back()));
    }
    for (const auto& [k, a] : e.kwargs) {
      kwargs.items.emplace_back(k, Eval(*a));
      meter_.Spend(Weight(kwargs.items.back().second));
    }
  }

  // Evaluates `e` within the bounds: one step for the node, the size of
  // what a builtin reads and makes, and the result's size and nesting.
  Value Eval(const Expr& e) {
    Nest nest(depth_);
    meter_.Spend(1);
    Value v = EvalNode(e);
    switch (e.kind) {
      case ExprKind::kList:
      case ExprKind::kTuple:
      case ExprKind::kDict:
      case ExprKind::kCall:
      case ExprKind::kFilter:
      case ExprKind::kBinary:
      case ExprKind::kSlice:
        meter_.Spend(Weight(v));
        CheckValue(v, "an expression");
        break;
      default:
        break;
    }
    return v;
  }

  Value EvalNode(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return e.value;
      case ExprKind::kName:
        return Lookup(e.name);
      case ExprKind::kList:
      case ExprKind::kTuple: {
        Array items;
        for (const ExprPtr& a : e.args) {
          items.push_back(Eval(*a));
          RefuseNamespaceInside(items.back());
        }
        return e.kind == ExprKind::kTuple ? Value::Tuple(std::move(items))
                                          : Value(std::move(items));
      }
      case ExprKind::kDict: {
        Object o;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          Value key = Eval(*e.args[i]);
          Value value = Eval(*e.args[i + 1]);
          RefuseNamespaceInside(key);
          RefuseNamespaceInside(value);
          o.Set(std::move(key), std::move(value));
        }
        return o;
      }
      case ExprKind::kAttr: {
        const Value obj = Eval(*e.a);
        if (obj.is_string()) meter_.Spend(Weight(obj));  // a method will read it
        return GetAttr(obj, e.name);
      }
      case ExprKind::kItem:
        return GetItem(Eval(*e.a), Eval(*e.b));
      case ExprKind::kSlice: {
        const auto part = [&](const ExprPtr& p) { return p ? Eval(*p) : Value(); };
        return Slice(Eval(*e.a), part(e.args[0]), part(e.args[1]), part(e.args[2]));
      }
      case ExprKind::kCall: {
        const Value callee = Eval(*e.a);
        if (callee.is_undefined()) throw TemplateError(callee.undefined_message());
        if (!callee.is_function())
          throw TemplateError("'" + callee.TypeName() + "' object is not callable");
        std::vector<Value> args;
        Kwargs kwargs;
        EvalArguments(e, args, kwargs);
        return callee.function()(args, kwargs);
      }
      case ExprKind::kFilter: {
        const Value input = e.a ? Eval(*e.a) : block_input_;
        meter_.Spend(Weight(input));
        std::vector<Value> args;
        Kwargs kwargs;
        EvalArguments(e, args, kwargs);
        return ApplyFilter(e.name, input, args, kwargs);
      }
      case ExprKind::kTest: {
        const Value v = Eval(*e.a);
        meter_.Spend(Weight(v));
        std::vector<Value> args;
        Kwargs kwargs;
        EvalArguments(e, args, kwargs);
        return ApplyTest(e.name, v, args) != e.negated;
      }
      case ExprKind::kNot:
        return !Eval(*e.a).Truthy();
      case ExprKind::kNeg:
      case ExprKind::kPos: {
        const Value v = Eval(*e.a);
        if (v.is_undefined()) throw TemplateError(v.undefined_message());
        if (!v.is_number())
          throw TemplateError("bad operand type for unary -: '" + v.TypeName() + "'");
        if (e.kind == ExprKind::kPos)
          return v.is_float() ? Value(v.as_double()) : Value(v.as_int());
        if (v.is_float()) return Value(-v.as_double());
        if (v.as_int() == INT64_MIN)
          throw LimitError("integer overflow in unary '-' (integers are 64-bit)");
        return Value(-v.as_int());
      }
      case ExprKind::kBinary: {
        Value a = Eval(*e.a);
        if (e.name == "and") return a.Truthy() ? Eval(*e.b) : a;
        if (e.name == "or") return a.Truthy() ? a : Eval(*e.b);
        Value b = Eval(*e.b);
        meter_.Spend(Weight(a) + Weight(b));
        return BinaryOp(e.name, a, b);
      }
      case ExprKind::kCond:
        if (Eval(*e.args[1]).Truthy()) return Eval(*e.args[0]);
        return e.args[2] ? Eval(*e.args[2])
                         : Value::Undefined("the inline if was false and has no else");
    }
    return Value();
  }

  const RenderOptions& options_;
  StepMeter meter_;
  Frame root_;
  std::vector<Frame*> scopes_;
  std::string* out_ = nullptr;
  Value block_input_;  // the body text a filter block or filtered set block applies to
  int64_t iterations_ = 0;
  int call_depth_ = 0;
  int64_t macro_calls_ = 0;
  int depth_ = 0;  // Nest levels open
};

// A TemplateError (or anything else thrown inside) as a Status.
Status ToStatus(const std::exception& e) {
  const auto* t = dynamic_cast<const TemplateError*>(&e);
  if (t != nullptr && t->limit()) {
    return ResourceExhaustedError(std::string("chat template ") + e.what())
        .WithReason(kLimitReason);
  }
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return ResourceExhaustedError("chat template: out of memory").WithReason(kLimitReason);
  }
  return InvalidArgumentError(std::string("chat template ") + e.what());
}

}  // namespace

StatusOr<Template> Template::Parse(std::string_view source) {
  if (source.size() > kMaxTemplateBytes) {
    return ResourceExhaustedError("chat template of " + std::to_string(source.size()) +
                                  " bytes is longer than the limit of " +
                                  std::to_string(kMaxTemplateBytes))
        .WithReason(kLimitReason);
  }
  try {
    Template t;
    t.body_ = std::make_shared<const Body>(jinja::Parse(Lex(source)));
    return t;
  } catch (const std::exception& e) {
    return ToStatus(e);
  }
}

StatusOr<std::string> Template::Render(const Object& context, const RenderOptions& options) const {
  try {
    return Interpreter(context, options).Run(*body_);
  } catch (const std::exception& e) {
    return ToStatus(e);
  }
}

std::string Strftime(const std::string& format, const std::tm& tm) {
  char buf[256];
  // The format is the template's: as Python's strftime, which it mirrors.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  const size_t n = std::strftime(buf, sizeof buf, format.c_str(), &tm);
#pragma GCC diagnostic pop
  return std::string(buf, n);
}

std::string StrftimeNow(const std::string& format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  return Strftime(format, tm);
}

}  // namespace ellm::jinja
