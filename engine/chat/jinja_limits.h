// The bounds that keep a chat template, code from whoever made the GGUF
// file, from crashing or hanging the process (issue 53): how deep the parser
// and the interpreter may recurse, how much work one rendering may do (its
// step budget), how big a string or list may grow, how many macro calls it
// may make. Every bound is a named constant; hitting one is a TemplateError
// with limit() set, which Template::Parse/Render report as
// RESOURCE_EXHAUSTED naming the bound, and which ChatTemplate's dry run at
// load turns into "this template does not run".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/jinja_value.h"

namespace ellm::jinja {

// A template's source. The largest template llama.cpp ships is under 20 KiB.
inline constexpr size_t kMaxTemplateBytes = size_t{1} << 20;
// Nesting the parser accepts: brackets, unary operators, nested blocks, and
// the links of an operator chain (a + b + c is two deep). It bounds the
// parser's recursion and the depth of every syntax tree (whose evaluation
// and destruction recurse too). Real templates nest under 20.
inline constexpr int kMaxParseDepth = 128;
// Nesting of the interpreter at run time (expressions inside statements
// inside macro calls): bounds the C++ stack a rendering uses to a few
// hundred kilobytes (more under ASan), well inside a thread's 8 MiB.
inline constexpr int kMaxRenderDepth = 512;
// Work units of one rendering: one per expression evaluated, statement run
// and loop iteration, one per item a list operation touches, one per
// kBytesPerStep bytes copied, compared or printed. The largest real template
// over a long conversation with tools uses a few tens of thousands; the
// whole budget is spent in well under a second.
inline constexpr int64_t kMaxSteps = 2'000'000;
inline constexpr size_t kBytesPerStep = 256;
// Loop iterations in all (a bound older than the step budget, kept).
inline constexpr int64_t kMaxLoopIterations = 1'000'000;
// range(): jinja2's sandbox refuses longer ranges (sandbox.MAX_RANGE), so a
// template that needs more does not run under Hugging Face either.
inline constexpr int64_t kMaxRange = 100'000;
// Strings, and the rendered output: a prompt of 16 MiB is about 4M tokens,
// several times any context window; a few copies of one stay well within
// the step budget.
inline constexpr size_t kMaxStringBytes = size_t{16} << 20;
inline constexpr size_t kMaxOutputBytes = kMaxStringBytes;
// Items of one list or dict (the lines of a 16 MiB document fit).
inline constexpr size_t kMaxListItems = size_t{1} << 20;
// Lists and dicts nested in one another (JSON schemas of tools nest under
// 10). Also bounds printing, comparing and destroying a value, which recurse.
inline constexpr int kMaxValueDepth = 128;
// Macro calls nested (Python's recursion limit allows about 200 for jinja2),
// and in all (a template calls one per message, tool or parameter).
inline constexpr int kMaxMacroDepth = 64;
inline constexpr int64_t kMaxMacroCalls = 100'000;

// A bound was hit: `what` names it.
TemplateError LimitError(const std::string& what);

// Throw LimitError unless `n` is within the string / list bound; `where`
// names the operation ("'*'", "join").
void CheckStringSize(size_t bytes, const std::string& where);
void CheckListSize(size_t items, const std::string& where);

// Counts one rendering's steps against its budget. The interpreter installs
// one for the current thread (Scope) for the length of a Render, so that the
// value operations deep inside (==, <, printing, splitting a string into code
// points), which are pure functions over values, charge their work without
// every builtin taking a meter argument; outside a Render, charging is free.
class StepMeter {
 public:
  explicit StepMeter(int64_t max_steps) : max_steps_(max_steps) {}
  StepMeter(const StepMeter&) = delete;
  StepMeter& operator=(const StepMeter&) = delete;

  // Throws LimitError "step budget of N exceeded" past the budget.
  void Spend(int64_t steps) {
    steps_ += steps;
    if (steps_ > max_steps_) Exceeded();
  }
  int64_t steps() const { return steps_; }

  // The current thread's meter, if any, spends `steps`.
  static void Charge(int64_t steps) {
    if (current_ != nullptr) current_->Spend(steps);
  }
  static void ChargeBytes(size_t bytes) { Charge(static_cast<int64_t>(bytes / kBytesPerStep) + 1); }

  // Makes `meter` the current thread's for the scope's life.
  class Scope {
   public:
    explicit Scope(StepMeter& meter) : saved_(current_) { current_ = &meter; }
    ~Scope() { current_ = saved_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StepMeter* saved_;
  };

 private:
  [[noreturn]] void Exceeded() const;

  int64_t max_steps_;
  int64_t steps_ = 0;
  static thread_local StepMeter* current_;
};

}  // namespace ellm::jinja
