// A recursive-descent parser with Jinja2's grammar and operator precedence
// (jinja2/parser.py): conditional expression < or < and < not < comparisons
// and `in` < + - < ~ < * / // % < ** < unary - + < postfix (. [] ()) and
// filters/tests, which bind tighter than every binary operator.
#include <charconv>
#include <string_view>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"
#include "chat/jinja_limits.h"

namespace ellm::jinja {
namespace {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  // Counts one level of nesting (a recursion or a link of an operator
  // chain) for its life: past kMaxParseDepth, a limit error.
  class Nest {
   public:
    explicit Nest(Parser& p, int levels = 1) : p_(p) {
      for (int i = 0; i < levels; ++i) Add();
    }
    ~Nest() { p_.depth_ -= n_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
    void Add() {
      ++n_;
      if (++p_.depth_ > kMaxParseDepth) {
        throw LimitError("line " + std::to_string(p_.Peek().line) +
                         ": parser nesting deeper than " + std::to_string(kMaxParseDepth));
      }
    }

   private:
    Parser& p_;
    int n_ = 0;
  };

  Body Template() {
    Body body = Statements({});
    if (Peek().type != TokenType::kEof) Fail("unexpected '" + BlockKeyword() + "'");
    return body;
  }

 private:
  const Token& Peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token& Next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool IsOp(std::string_view op, size_t ahead = 0) const {
    return Peek(ahead).type == TokenType::kOperator && Peek(ahead).text == op;
  }
  bool IsName(std::string_view name, size_t ahead = 0) const {
    return Peek(ahead).type == TokenType::kName && Peek(ahead).text == name;
  }
  bool AcceptOp(std::string_view op) {
    if (!IsOp(op)) return false;
    ++i_;
    return true;
  }
  bool AcceptName(std::string_view name) {
    if (!IsName(name)) return false;
    ++i_;
    return true;
  }
  [[noreturn]] void Fail(const std::string& what) const {
    throw TemplateError("line " + std::to_string(Peek().line) + ": " + what);
  }
  void ExpectOp(std::string_view op) {
    if (!AcceptOp(op)) Fail("expected '" + std::string(op) + "', found " + Describe(Peek()));
  }
  std::string ExpectName() {
    if (Peek().type != TokenType::kName) Fail("expected a name, found " + Describe(Peek()));
    return Next().text;
  }
  void ExpectBlockEnd() {
    if (Peek().type != TokenType::kBlockEnd) {
      Fail("expected the end of the tag '%}', found " + Describe(Peek()));
    }
    ++i_;
  }
  static std::string Describe(const Token& t) {
    switch (t.type) {
      case TokenType::kEof:
        return "the end of the template";
      case TokenType::kBlockEnd:
        return "'%}'";
      case TokenType::kVarEnd:
        return "'}}'";
      case TokenType::kString:
        return "a string";
      default:
        return "'" + t.text + "'";
    }
  }
  // The keyword of the block tag at the cursor ("" if none).
  std::string BlockKeyword() const {
    return Peek().type == TokenType::kBlockBegin && Peek(1).type == TokenType::kName ? Peek(1).text
                                                                                     : "";
  }

  // Digits (perhaps with `_` separators, as Python's) into an int64.
  int64_t IntLiteral(const std::string& text) const {
    std::string digits;
    for (char c : text) {
      if (c != '_') digits += c;
    }
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec == std::errc::result_out_of_range) {
      throw LimitError("line " + std::to_string(Peek().line) + ": integer literal " + text +
                       " overflows (integers are 64-bit)");
    }
    if (ec != std::errc() || end != digits.data() + digits.size()) {
      Fail("bad integer literal " + text);
    }
    return v;
  }

  ExprPtr Make(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // ---- statements ------------------------------------------------------

  // Parses until a block tag whose keyword is in `ends` (left unconsumed).
  Body Statements(std::initializer_list<std::string_view> ends) {
    Body body;
    while (true) {
      const Token& tok = Peek();
      if (tok.type == TokenType::kEof) {
        if (ends.size() != 0) Fail("missing '{% " + std::string(*(ends.end() - 1)) + " %}'");
        return body;
      }
      if (tok.type == TokenType::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kText;
        s->line = tok.line;
        s->text = tok.text;
        body.push_back(std::move(s));
        ++i_;
      } else if (tok.type == TokenType::kVarBegin) {
        ++i_;
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kOutput;
        s->line = tok.line;
        s->expr = TupleOrExpression();
        if (Peek().type != TokenType::kVarEnd) Fail("expected '}}', found " + Describe(Peek()));
        ++i_;
        body.push_back(std::move(s));
      } else {
        const std::string kw = BlockKeyword();
        for (std::string_view end : ends) {
          if (kw == end) return body;
        }
        body.push_back(Statement());
      }
    }
  }

  StmtPtr Statement() {
    Nest nest(*this);
    ++i_;  // {%
    const int line = Peek().line;
    const std::string kw = ExpectName();
    auto s = std::make_unique<Stmt>();
    s->line = line;
    if (kw == "if") {
      If(*s);
    } else if (kw == "for") {
      For(*s);
    } else if (kw == "set") {
      Set(*s);
    } else if (kw == "macro") {
      Macro(*s);
    } else if (kw == "break" || kw == "continue") {
      s->kind = kw == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      ExpectBlockEnd();
    } else if (kw == "filter") {
      s->kind = StmtKind::kFilter;
      s->expr = FilterChain(nullptr, line);
      ExpectBlockEnd();
      s->bodies.push_back(Statements({"endfilter"}));
      EndTag("endfilter");
    } else if (kw == "generation") {  // Hugging Face's AssistantTracker tag
      s->kind = StmtKind::kCallBody;
      ExpectBlockEnd();
      s->bodies.push_back(Statements({"endgeneration"}));
      EndTag("endgeneration");
    } else {
      --i_;
      Fail("unsupported statement '{% " + kw + " %}'");
    }
    return s;
  }

  void EndTag(const char* kw) {
    ++i_;  // {%
    ExpectName();
    (void)kw;
    ExpectBlockEnd();
  }

  void If(Stmt& s) {
    s.kind = StmtKind::kIf;
    s.conds.push_back(Expression());
    ExpectBlockEnd();
    while (true) {
      s.bodies.push_back(Statements({"elif", "else", "endif"}));
      const std::string kw = BlockKeyword();
      i_ += 2;
      if (kw == "elif") {
        s.conds.push_back(Expression());
        ExpectBlockEnd();
      } else if (kw == "else") {
        ExpectBlockEnd();
        s.else_body = Statements({"endif"});
        EndTag("endif");
        return;
      } else {
        ExpectBlockEnd();
        return;
      }
    }
  }

  void For(Stmt& s) {
    s.kind = StmtKind::kFor;
    do {
      s.targets.push_back(ExpectName());
    } while (AcceptOp(","));
    if (!AcceptName("in")) Fail("expected 'in' in a for loop");
    s.expr = Or();  // no condexpr: `if` here filters the loop
    if (AcceptName("if")) s.cond = Expression();
    if (IsName("recursive")) Fail("unsupported 'recursive' loop");
    ExpectBlockEnd();
    s.bodies.push_back(Statements({"else", "endfor"}));
    if (BlockKeyword() == "else") {
      i_ += 2;
      ExpectBlockEnd();
      s.else_body = Statements({"endfor"});
    }
    EndTag("endfor");
  }

  void Set(Stmt& s) {
    s.kind = StmtKind::kSet;
    s.targets.push_back(ExpectName());
    if (AcceptOp(".")) {
      s.text = ExpectName();
    } else {
      while (AcceptOp(",")) s.targets.push_back(ExpectName());
    }
    if (AcceptOp("=")) {
      s.expr = TupleOrExpression();
      ExpectBlockEnd();
      return;
    }
    if (s.targets.size() != 1 || !s.text.empty()) Fail("expected '=' in a set statement");
    if (IsOp("|")) s.expr = FilterChain(nullptr, s.line);  // set x | filter %}...
    ExpectBlockEnd();
    s.bodies.push_back(Statements({"endset"}));
    EndTag("endset");
  }

  void Macro(Stmt& s) {
    s.kind = StmtKind::kMacro;
    s.targets.push_back(ExpectName());
    ExpectOp("(");
    while (!AcceptOp(")")) {
      if (!s.params.empty()) ExpectOp(",");
      if (AcceptOp(")")) break;
      MacroParam p;
      p.name = ExpectName();
      if (AcceptOp("=")) p.default_value = Expression();
      s.params.push_back(std::move(p));
    }
    ExpectBlockEnd();
    s.bodies.push_back(Statements({"endmacro"}));
    EndTag("endmacro");
  }

  // ---- expressions -----------------------------------------------------

  // `a, b` without brackets is a tuple (in {{ }} and set values).
  ExprPtr TupleOrExpression() {
    const int line = Peek().line;
    ExprPtr first = Expression();
    if (!IsOp(",")) return first;
    ExprPtr t = Make(ExprKind::kTuple, line);
    t->args.push_back(std::move(first));
    while (AcceptOp(",")) {
      if (Peek().type == TokenType::kBlockEnd || Peek().type == TokenType::kVarEnd) break;
      t->args.push_back(Expression());
    }
    return t;
  }

  ExprPtr Expression() {
    Nest nest(*this);
    ExprPtr e = Or();
    while (IsName("if")) {
      nest.Add();
      const int line = Next().line;
      ExprPtr c = Make(ExprKind::kCond, line);
      c->args.push_back(std::move(e));
      c->args.push_back(Or());
      c->args.push_back(AcceptName("else") ? Expression() : nullptr);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr Binary(std::string op, ExprPtr a, ExprPtr b, int line) {
    ExprPtr e = Make(ExprKind::kBinary, line);
    e->name = std::move(op);
    e->a = std::move(a);
    e->b = std::move(b);
    return e;
  }

  ExprPtr Or() {
    ExprPtr e = And();
    Nest links(*this, 0);
    while (IsName("or")) {
      links.Add();
      const int line = Next().line;
      e = Binary("or", std::move(e), And(), line);
    }
    return e;
  }

  ExprPtr And() {
    ExprPtr e = Not();
    Nest links(*this, 0);
    while (IsName("and")) {
      links.Add();
      const int line = Next().line;
      e = Binary("and", std::move(e), Not(), line);
    }
    return e;
  }

  ExprPtr Not() {
    if (IsName("not")) {
      Nest nest(*this);
      const int line = Next().line;
      ExprPtr e = Make(ExprKind::kNot, line);
      e->a = Not();
      return e;
    }
    return Compare();
  }

  ExprPtr Compare() {
    ExprPtr e = Math1();
    Nest links(*this, 0);
    while (true) {
      const int line = Peek().line;
      std::string op;
      if (Peek().type == TokenType::kOperator &&
          (Peek().text == "==" || Peek().text == "!=" || Peek().text == "<" || Peek().text == ">" ||
           Peek().text == "<=" || Peek().text == ">=")) {
        op = Next().text;
      } else if (AcceptName("in")) {
        op = "in";
      } else if (IsName("not") && IsName("in", 1)) {
        i_ += 2;
        op = "not in";
      } else {
        break;
      }
      links.Add();
      e = Binary(op, std::move(e), Math1(), line);
      if (IsOp("==") || IsOp("!=") || IsOp("<") || IsOp(">") || IsOp("<=") || IsOp(">=")) {
        Fail("chained comparisons are not supported");
      }
    }
    return e;
  }

  ExprPtr Math1() {
    ExprPtr e = Concat();
    Nest links(*this, 0);
    while (IsOp("+") || IsOp("-")) {
      links.Add();
      const Token& t = Next();
      e = Binary(t.text, std::move(e), Concat(), t.line);
    }
    return e;
  }

  ExprPtr Concat() {
    ExprPtr e = Math2();
    Nest links(*this, 0);
    while (IsOp("~")) {
      links.Add();
      const int line = Next().line;
      e = Binary("~", std::move(e), Math2(), line);
    }
    return e;
  }

  ExprPtr Math2() {
    ExprPtr e = Pow();
    Nest links(*this, 0);
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      links.Add();
      const Token& t = Next();
      e = Binary(t.text, std::move(e), Pow(), t.line);
    }
    return e;
  }

  ExprPtr Pow() {
    ExprPtr e = Unary(true);
    Nest links(*this, 0);
    while (IsOp("**")) {
      links.Add();
      const int line = Next().line;
      e = Binary("**", std::move(e), Unary(true), line);
    }
    return e;
  }

  ExprPtr Unary(bool with_filter) {
    Nest nest(*this);
    const int line = Peek().line;
    ExprPtr e;
    if (AcceptOp("-")) {
      e = Make(ExprKind::kNeg, line);
      e->a = Unary(false);
    } else if (AcceptOp("+")) {
      e = Make(ExprKind::kPos, line);
      e->a = Unary(false);
    } else {
      e = Primary();
    }
    e = Postfix(std::move(e));
    if (with_filter) e = FilterExpr(std::move(e));
    return e;
  }

  ExprPtr Primary() {
    const Token& t = Next();
    ExprPtr e = Make(ExprKind::kLiteral, t.line);
    switch (t.type) {
      case TokenType::kName:
        if (t.text == "true" || t.text == "True") {
          e->value = Value(true);
        } else if (t.text == "false" || t.text == "False") {
          e->value = Value(false);
        } else if (t.text == "none" || t.text == "None") {
          e->value = Value::None();
        } else {
          e->kind = ExprKind::kName;
          e->name = t.text;
        }
        return e;
      case TokenType::kString: {
        std::string s = t.text;
        while (Peek().type == TokenType::kString) s += Next().text;  // 'a' 'b' == 'ab'
        e->value = Value(std::move(s));
        return e;
      }
      case TokenType::kInt:
        e->value = Value(IntLiteral(t.text));
        return e;
      case TokenType::kFloat:
        e->value = Value(std::stod(t.text));
        return e;
      case TokenType::kOperator:
        if (t.text == "(") return Parenthesised(t.line);
        if (t.text == "[") return ListLiteral(t.line);
        if (t.text == "{") return DictLiteral(t.line);
        [[fallthrough]];
      default:
        --i_;
        Fail("unexpected " + Describe(t) + " in an expression");
    }
  }

  ExprPtr Parenthesised(int line) {
    if (AcceptOp(")")) return Make(ExprKind::kTuple, line);
    ExprPtr first = Expression();
    if (AcceptOp(")")) return first;
    ExprPtr t = Make(ExprKind::kTuple, line);
    t->args.push_back(std::move(first));
    while (AcceptOp(",")) {
      if (IsOp(")")) break;
      t->args.push_back(Expression());
    }
    ExpectOp(")");
    return t;
  }

  ExprPtr ListLiteral(int line) {
    ExprPtr l = Make(ExprKind::kList, line);
    while (!AcceptOp("]")) {
      if (!l->args.empty()) ExpectOp(",");
      if (AcceptOp("]")) break;
      l->args.push_back(Expression());
    }
    return l;
  }

  ExprPtr DictLiteral(int line) {
    ExprPtr d = Make(ExprKind::kDict, line);
    while (!AcceptOp("}")) {
      if (!d->args.empty()) ExpectOp(",");
      if (AcceptOp("}")) break;
      d->args.push_back(Expression());
      ExpectOp(":");
      d->args.push_back(Expression());
    }
    return d;
  }

  ExprPtr Postfix(ExprPtr e) {
    Nest links(*this, 0);
    while (true) {
      links.Add();
      const int line = Peek().line;
      if (AcceptOp(".")) {
        ExprPtr a = Make(ExprKind::kAttr, line);
        if (Peek().type == TokenType::kInt) {  // foo.0 is foo[0]
          a->kind = ExprKind::kItem;
          a->b = Make(ExprKind::kLiteral, line);
          a->b->value = Value(IntLiteral(Next().text));
        } else {
          a->name = ExpectName();
        }
        a->a = std::move(e);
        e = std::move(a);
      } else if (AcceptOp("[")) {
        e = Subscript(std::move(e), line);
      } else if (IsOp("(")) {
        e = Call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr Subscript(ExprPtr target, int line) {
    ExprPtr parts[3];
    int n = 0;
    bool slice = false;
    while (true) {
      if (!IsOp(":") && !IsOp("]")) parts[n] = Expression();
      if (AcceptOp(":")) {
        slice = true;
        if (++n > 2) Fail("a slice takes at most three parts");
        continue;
      }
      ExpectOp("]");
      break;
    }
    ExprPtr e = Make(slice ? ExprKind::kSlice : ExprKind::kItem, line);
    e->a = std::move(target);
    if (slice) {
      for (auto& p : parts) e->args.push_back(std::move(p));
    } else {
      if (!parts[0]) Fail("empty subscript");
      e->b = std::move(parts[0]);
    }
    return e;
  }

  // Parses "(args, name=value, ...)" into `e`.
  void Arguments(Expr& e) {
    ExpectOp("(");
    bool first = true;
    while (!AcceptOp(")")) {
      if (!first) ExpectOp(",");
      first = false;
      if (AcceptOp(")")) break;
      if (Peek().type == TokenType::kName && IsOp("=", 1)) {
        std::string name = Next().text;
        ++i_;
        e.kwargs.emplace_back(std::move(name), Expression());
      } else {
        if (!e.kwargs.empty()) Fail("positional argument after a keyword argument");
        e.args.push_back(Expression());
      }
    }
  }

  ExprPtr Call(ExprPtr callee) {
    ExprPtr c = Make(ExprKind::kCall, Peek().line);
    c->a = std::move(callee);
    Arguments(*c);
    return c;
  }

  ExprPtr FilterExpr(ExprPtr e) {
    Nest links(*this, 0);
    while (true) {
      links.Add();
      if (IsOp("|")) {
        e = FilterChain(std::move(e), Peek().line, /*single=*/true);
      } else if (IsName("is")) {
        e = Test(std::move(e));
      } else if (IsOp("(")) {
        e = Call(std::move(e));
      } else {
        return e;
      }
    }
  }

  // `| name(args)`: one filter when `single`, else a chain of them. `input`
  // is null for the chain of a filter block or a set block (the body's text
  // goes there); `filter trim` has no leading bar.
  ExprPtr FilterChain(ExprPtr input, int line, bool single = false) {
    Nest links(*this, 0);
    do {
      links.Add();
      AcceptOp("|");
      ExprPtr f = Make(ExprKind::kFilter, line);
      f->name = ExpectName();
      if (IsOp("(")) Arguments(*f);
      f->a = std::move(input);
      input = std::move(f);
    } while (!single && IsOp("|"));
    return input;
  }

  ExprPtr Test(ExprPtr e) {
    const int line = Next().line;  // is
    ExprPtr t = Make(ExprKind::kTest, line);
    t->negated = AcceptName("not");
    t->name = ExpectName();
    t->a = std::move(e);
    if (IsOp("(")) {
      Arguments(*t);
    } else {
      const Token& n = Peek();
      const bool starts_arg =
          n.type == TokenType::kString || n.type == TokenType::kInt ||
          n.type == TokenType::kFloat ||
          (n.type == TokenType::kOperator && (n.text == "[" || n.text == "{")) ||
          (n.type == TokenType::kName && n.text != "else" && n.text != "or" && n.text != "and" &&
           n.text != "if" && n.text != "is" && n.text != "in" && n.text != "not");
      if (starts_arg) t->args.push_back(Postfix(Primary()));
    }
    return t;
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;  // Nest levels open
};

}  // namespace

Body Parse(const std::vector<Token>& tokens) { return Parser(tokens).Template(); }

}  // namespace ellm::jinja
