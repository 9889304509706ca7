// The parsed form of a chat template: expressions and statements, each with
// the template line it came from (for errors that name it).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace ellm::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  kLiteral,  // value
  kName,     // name
  kList,     // args: items
  kTuple,    // args: items (a list at run time)
  kDict,     // args: keys and values alternating
  kAttr,     // a.name
  kItem,     // a[b]
  kSlice,    // a[b:c:d]; absent parts are null in args
  kCall,     // a(args, kwargs)
  kFilter,   // a | name(args, kwargs)
  kTest,     // a is [not] name(args)
  kNot,      // not a
  kNeg,      // -a
  kPos,      // +a
  kBinary,   // a op b
  kCond,     // args[0] if args[1] else args[2] (args[2] null: undefined)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  std::string name;      // name, attribute, filter, test, binary operator
  Value value;           // kLiteral
  bool negated = false;  // kTest: `is not`
  ExprPtr a, b;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  kText,    // text
  kOutput,  // {{ expr }}
  kIf,      // conds[i] -> bodies[i]; else_body
  kFor,     // for targets in expr [if cond] ... [else ...]
  kSet,     // set targets = expr | set target.attr = expr | set name %}body{% endset
  kMacro,   // macro name(params) body
  kBreak,   // loop controls
  kContinue,
  kFilter,    // filter name %}body{% endfilter: expr is the filter chain over null
  kCallBody,  // a block that just renders its body ({% generation %})
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;                  // kText; kSet: attribute for `set ns.attr`
  std::vector<std::string> targets;  // kFor, kSet; kMacro: [name]
  ExprPtr expr;                    // output, iterable, value; filter chain of a filter or set block
  ExprPtr cond;                    // kFor: the `if` filter
  std::vector<ExprPtr> conds;      // kIf
  std::vector<Body> bodies;        // kIf: one per cond; kFor/kSet/kMacro: [body]
  Body else_body;                  // kIf, kFor
  std::vector<MacroParam> params;  // kMacro
};

// Parses tokens from Lex(); throws TemplateError naming the line and the
// construct it cannot parse.
Body Parse(const std::vector<struct Token>& tokens);

}  // namespace ellm::jinja
