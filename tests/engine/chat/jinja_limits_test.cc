// The bounds of jinja_limits.h: hostile templates (code from whoever made a
// GGUF file) end quickly with an error naming the bound they hit, reported
// as RESOURCE_EXHAUSTED with reason kLimitReason, and never crash or hang.
// Regressions of issue 53: each template of TEST(JinjaLimits,
// IssueTemplatesFailQuicklyWithTheirNamedLimit) took the process down.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "chat/jinja.h"
#include "chat/jinja_limits.h"
#include "cpu_time.h"

namespace ellm::jinja {
namespace {

StatusOr<std::string> Render(const std::string& source, RenderOptions options = {}) {
  auto t = Template::Parse(source);
  if (!t.ok()) return t.status();
  options.strftime_now = [](const std::string&) { return std::string("2026-03-14"); };
  return t->Render(Object{}, options);
}

// The template fails with a limit error whose message contains `want`, and
// ends: spending the whole step budget takes about 0.3 s of CPU in a release
// build; the guard allows ten times that (a copy of a big value per step,
// not charged, would take minutes).
void ExpectLimit(const std::string& source, const std::string& want, RenderOptions options = {}) {
  const double start = ellm::testing::ThreadCpuSeconds();
  auto got = Render(source, options);
  const double seconds = ellm::testing::ThreadCpuSeconds() - start;
  const std::string shown = source.size() > 120 ? source.substr(0, 120) + "..." : source;
  ASSERT_FALSE(got.ok()) << shown << " rendered " << got->substr(0, 100);
  EXPECT_EQ(got.status().code(), StatusCode::kResourceExhausted)
      << shown << ": " << got.status().ToString();
  EXPECT_EQ(got.status().reason(), kLimitReason) << shown;
  EXPECT_NE(got.status().message().find(want), std::string::npos)
      << shown << ": " << got.status().message();
  EXPECT_LT(seconds, 3.0 * ellm::testing::kSanitizerSlowdown) << shown;
  std::cout << seconds << " s: " << got.status().message().substr(0, 100) << "\n";
}

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(JinjaLimits, IssueTemplatesFailQuicklyWithTheirNamedLimit) {
  // Was SIGFPE.
  ExpectLimit("{{ (-9223372036854775807-1) // -1 }}", "line 1: integer overflow in '//'");
  // Was SIGSEGV printing a cyclic value.
  ExpectLimit("{% set ns=namespace(a=0) %}{% set ns.a=ns %}{{ ns }}", "cyclic");
  // Was SIGSEGV: the parser's recursion.
  ExpectLimit("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}",
              "line 1: parser nesting deeper than " + std::to_string(kMaxParseDepth));
  // Ran until killed: exponent by repeated multiplication.
  ExpectLimit("{{ 2 ** 9223372036854775807 }}", "integer overflow in '**'");
  // Ran until killed: 2^40 macro calls.
  ExpectLimit(
      "{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}"
      "{{ f(40) }}",
      "more than " + std::to_string(kMaxMacroCalls) + " macro calls");
  // Ran until killed at 2.2 GB.
  ExpectLimit("{{ \"x\" * 10**11 }}", "string longer than the limit of " +
                                          std::to_string(kMaxStringBytes) + " bytes in '*'");
}

// 1 ** 9223372036854775807 is 1 in Python: squaring takes 63 steps, so the
// issue's template now renders what jinja2 renders, at once.
TEST(JinjaLimits, PowerBySquaringEndsAtOnce) {
  const double start = ellm::testing::ThreadCpuSeconds();
  auto one = Render(
      "{{ 1 ** 9223372036854775807 }} {{ (-1) ** 9223372036854775807 }} "
      "{{ 0 ** 9223372036854775807 }} {{ 3 ** 39 }} {{ 2 ** 62 }} {{ 2 ** -1 }}");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(*one, "1 -1 0 4052555153018976267 4611686018427387904 0.5");
  EXPECT_LT(ellm::testing::ThreadCpuSeconds() - start, 1.0 * ellm::testing::kSanitizerSlowdown);
}

TEST(JinjaLimits, IntegerArithmeticReportsOverflow) {
  const std::string max = "9223372036854775807", min = "(-9223372036854775807-1)";
  ExpectLimit("{{ " + max + " + 1 }}", "integer overflow in '+'");
  ExpectLimit("{{ " + min + " - 1 }}", "integer overflow in '-'");
  ExpectLimit("{{ 4294967296 * 4294967296 }}", "integer overflow in '*'");
  ExpectLimit("{{ 2 ** 63 }}", "integer overflow in '**'");
  ExpectLimit("{{ (-3) ** 41 }}", "integer overflow in '**'");
  ExpectLimit("{{ -" + min + " }}", "integer overflow in unary '-'");
  ExpectLimit("{{ " + min + " | abs }}", "integer overflow in 'abs'");
  ExpectLimit("{{ 1e300 | int }}", "integer overflow in 'int'");
  ExpectLimit("{{ 99999999999999999999 }}", "integer literal 99999999999999999999 overflows");
  // What does not overflow gives Python's answers.
  auto ok = Render("{{ " + min + " % -1 }} {{ " + max + " + " + min + " }} {{ -" + max +
                   " - 1 }} {{ " + min + " // 1 }} {{ 7 // -2 }} {{ -7 % 3 }} {{ (-2) ** 63 }}");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "0 -1 -9223372036854775808 -9223372036854775808 -4 2 -9223372036854775808");
  // Division by zero stays Python's error (a template's logic), not a crash.
  for (const char* src : {"{{ 1 // 0 }}", "{{ 1 % 0 }}", "{{ 4 is divisibleby 0 }}"}) {
    auto got = Render(src);
    ASSERT_FALSE(got.ok()) << src;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << src;
  }
  auto divisible = Render("{{ " + min + " is divisibleby(-1) }}");
  ASSERT_TRUE(divisible.ok()) << divisible.status().ToString();
  EXPECT_EQ(*divisible, "True");
}

TEST(JinjaLimits, StepBudgetStopsLongRenders) {
  // 100,000 x 9 iterations of a body of a dozen expressions: past the budget
  // before the loop bound.
  ExpectLimit(
      "{% for i in range(100000) %}{% for j in range(9) %}"
      "{% if i + j + i + j + i + j + i + j > 0 %}{% endif %}{% endfor %}{% endfor %}",
      "step budget of " + std::to_string(kMaxSteps) + " exceeded");
  RenderOptions small;
  small.max_steps = 1000;
  ExpectLimit("{% for i in range(1000) %}{{ i }}{% endfor %}", "step budget of 1000 exceeded",
              small);
  int64_t used = 0;
  small.steps_used = &used;
  ASSERT_TRUE(Render("{% for i in range(10) %}{{ i }}{% endfor %}", small).ok());
  EXPECT_GT(used, 10);
  EXPECT_LT(used, 200);
}

// Work on big values that share their storage (cheap to make) is charged by
// what it reads, so it cannot run for long either.
TEST(JinjaLimits, WorkOnBigSharedValuesIsCharged) {
  const std::string big = "{% set a = 'y' * 1000000 %}{% set b = 'y' * 1000000 %}";
  ExpectLimit(big +
                  "{% set l = [a] * 1000 %}{% set m = [b] * 1000 %}"
                  "{% for i in range(100000) %}{{ l == m }}{% endfor %}",
              "step budget");
  ExpectLimit(big + "{% for i in range(100000) %}{{ a.count('z') }}{% endfor %}", "step budget");
  ExpectLimit(big + "{% for i in range(100000) %}{{ a | length }}{% endfor %}", "step budget");
  ExpectLimit(big + "{% for i in range(100000) %}{{ 'z' in a }}{% endfor %}", "step budget");
  // A list of a list of ... shared 2^40 times over: printing or comparing
  // it is bounded by the step budget or the string size, not by its memory.
  const std::string doubling =
      "{% set ns = namespace(v='x') %}{% for i in range(40) %}{% set ns.v = [ns.v, ns.v] %}"
      "{% endfor %}";
  ExpectLimit(doubling + "{{ ns.v }}", "");
  ExpectLimit(doubling + "{{ ns.v | tojson }}", "");
  // Equal but not shared, all the way down.
  const std::string other =
      "{% set ms = namespace(v='x') %}{% for i in range(40) %}{% set ms.v = [ms.v, ms.v] %}"
      "{% endfor %}";
  ExpectLimit(doubling + other + "{{ ns.v == ms.v }}", "step budget");
}

TEST(JinjaLimits, StringsAndListsAreCapped) {
  const std::string half = "{% set h = 'x' * " + std::to_string(kMaxStringBytes / 2 + 1) + " %}";
  ExpectLimit(half + "{{ (h + h) | length }}", "in '+'");
  ExpectLimit(half + "{{ (h ~ h) | length }}", "in '~'");
  ExpectLimit(half + "{{ [h, h] | join | length }}", "in join");
  ExpectLimit(half + "{{ ''.join([h, h]) | length }}", "in join");
  ExpectLimit("{% set s = 'ab' * 1000 %}{{ s.replace('a', s * 1000) | length }}", "in replace");
  ExpectLimit("{{ ([1] * 10000000) | length }}",
              "list longer than the limit of " + std::to_string(kMaxListItems) + " items in '*'");
  RenderOptions roomy;  // making the lists alone takes most of the default budget
  roomy.max_steps = 100'000'000;
  ExpectLimit("{% set l = [1] * 600000 %}{{ (l + l) | length }}", "items in '+'", roomy);
  // Checked while splitting: 16M empty strings would take gigabytes.
  const std::string as = "{% set a = 'a' * 16000000 %}";
  ExpectLimit(as + "{{ a.split('a') | length }}", "items in split");
  ExpectLimit(as + "{{ a.rsplit('a') | length }}", "items in rsplit");
  ExpectLimit("{{ ('\\n' * 2000000).splitlines() | length }}", "items in splitlines");
  ExpectLimit("{{ ('a ' * 2000000).split() | length }}", "items in split");
  ExpectLimit("{{ range(100001) | length }}", "range() longer than the sandbox's limit of 100000");
  ExpectLimit("{{ range(0, 9223372036854775807, 2) | length }}", "range() longer");
  ExpectLimit("{{ 'a\nb' | indent(10**10) }}", "in indent");
  ExpectLimit("{{ [[1]] | tojson(indent=10**10) }}", "tojson");
  ExpectLimit(half + "{{ h }}{{ h }}", "output longer than " + std::to_string(kMaxOutputBytes));
  // range() far outside 64 bits' reach of a loop's counter still ends.
  auto r = Render(
      "{{ range(9223372036854775806, 9223372036854775807, 9223372036854775807) | "
      "list }} {{ [1, 2, 3][::9223372036854775807] }} {{ 'abc'[1::9223372036854775807] }}");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "[9223372036854775806] [1] b");
}

TEST(JinjaLimits, RecursionIsBounded) {
  const std::string depth = std::to_string(kMaxParseDepth);
  ExpectLimit("{{ " + Repeat("[", 100000) + Repeat("]", 100000) + " }}", "nesting deeper than");
  ExpectLimit("{{ " + Repeat("not ", 100000) + "1 }}", "nesting deeper than " + depth);
  ExpectLimit("{{ " + Repeat("- ", 100000) + "1 }}", "nesting deeper than " + depth);
  // Chains build deep trees without recursing while parsing.
  ExpectLimit("{{ 1" + Repeat(" + 1", 100000) + " }}", "nesting deeper than " + depth);
  ExpectLimit("{{ x" + Repeat(".a", 100000) + " }}", "nesting deeper than " + depth);
  ExpectLimit("{{ 'a'" + Repeat(" | trim", 100000) + " }}", "nesting deeper than " + depth);
  ExpectLimit(Repeat("{% if true %}", 10000) + Repeat("{% endif %}", 10000),
              "nesting deeper than " + depth);
  // Within the parser's bound, macros nest statements past the run-time one
  // (about 100 levels of it per call).
  ExpectLimit("{% macro f(n) %}" + Repeat("{% if true %}", 100) + "{{ f(n + 1) }}" +
                  Repeat("{% endif %}", 100) + "{% endmacro %}{{ f(0) }}",
              "template nesting deeper than " + std::to_string(kMaxRenderDepth) + " at run time");
  // Values nested through a namespace, one level per iteration.
  ExpectLimit(
      "{% set ns = namespace(a=[]) %}{% for i in range(100000) %}{% set ns.a = [ns.a] %}"
      "{% endfor %}",
      "value nested deeper than " + std::to_string(kMaxValueDepth));
  // Macro recursion.
  ExpectLimit("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
              "macro calls nested deeper than " + std::to_string(kMaxMacroDepth));
  // A namespace in any container could close a cycle.
  ExpectLimit("{% set ns = namespace() %}{{ [ns] }}", "cyclic");
  ExpectLimit("{% set ns = namespace() %}{{ {'a': ns} }}", "cyclic");
  ExpectLimit("{% set ns = namespace() %}{{ namespace(a=ns) }}", "cyclic");
  // Within the bounds, nesting still works.
  auto ok = Render("{{ " + Repeat("(", 50) + "1" + Repeat(")", 50) + " }} {{ 1" +
                   Repeat(" + 1", 60) + " }} {{ " + Repeat("[", 50) + Repeat("]", 50) + " }}");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "1 61 " + Repeat("[", 50) + Repeat("]", 50));
}

TEST(JinjaLimits, DeepContextValuesAreRefused) {
  Value v = Array{};
  for (int i = 0; i < kMaxValueDepth + 5; ++i) v = Array{v};
  Object ctx;
  ctx.Set("messages", v);
  auto t = Template::Parse("{{ messages }}");
  ASSERT_TRUE(t.ok());
  auto got = t->Render(ctx, RenderOptions{});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("value nested deeper than"), std::string::npos)
      << got.status().message();
}

TEST(JinjaLimits, OversizedSourceIsRefused) {
  auto t = Template::Parse(std::string(kMaxTemplateBytes + 1, 'x'));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(t.status().reason(), kLimitReason);
}

}  // namespace
}  // namespace ellm::jinja
