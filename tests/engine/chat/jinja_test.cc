// The interpreter's own behaviours, each checked against what Python's jinja2
// (configured as Hugging Face configures it) printed for the same template:
// whitespace control, scoping, Python's printing and arithmetic, filters,
// tests, methods, Markup and generators; and the errors and limits that keep
// a bad or hostile template from passing silently or running away.
#include "chat/jinja.h"

#include <gtest/gtest.h>

namespace ellm::jinja {
namespace {

StatusOr<std::string> Render(const std::string& source, const Object& context = {},
                             RenderOptions options = {}) {
  auto t = Template::Parse(source);
  if (!t.ok()) return t.status();
  if (!options.strftime_now) {
    options.strftime_now = [](const std::string& fmt) {
      std::tm tm{};
      tm.tm_year = 2026 - 1900;
      tm.tm_mon = 2;
      tm.tm_mday = 14;
      tm.tm_hour = 15;
      tm.tm_min = 9;
      tm.tm_sec = 26;
      tm.tm_wday = 6;
      return Strftime(fmt, tm);
    };
  }
  return t->Render(context, options);
}

// Expected outputs printed by jinja2 3.1.6 (scripts/reference/
// make_chat_template_reference.py's environment) for each template.
TEST(Jinja, RendersAsJinja2Does) {
  const std::pair<std::string, std::string> cases[] = {
      {R"J(  {% if true %}
  x
  {% endif %}
)J",
       R"J(  x
)J"},
      {R"J(a  {%- if true -%}  b  {%- endif %}
c)J",
       R"J(abc)J"},
      {R"J({%+ if true %}x{% endif +%}
y)J",
       R"J(x
y)J"},
      {R"J({# c #}
  {# d #}
z)J",
       R"J(z)J"},
      {R"J({% set x = 1 %}{% for i in [1,2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }})J",
       R"J(231)J"},
      {R"J({% set ns = namespace(n=0) %}{% for i in range(4) if i is odd %}{% set ns.n = ns.n + i %}{{ loop.index }}/{{ loop.length }}{% endfor %}{{ ns.n }})J",
       R"J(1/22/24)J"},
      {R"J({{ [1, 2.5, 'a', none, true, {'k': [1]}] }}|{{ {'b': 1, 'a': 'x\ny'} | tojson }}|{{ {'b': 1} | tojson(indent=2) }})J",
       R"J([1, 2.5, 'a', None, True, {'k': [1]}]|{"b": 1, "a": "x\ny"}|{
  "b": 1
})J"},
      {R"J({{ 'a,b,,c'.split(',') }}{{ '  x y  '.split() }}{{ 'abc'[::-1] }}{{ 'héllo'[1:3] }}{{ [1,2,3][-2:] }})J",
       R"J(['a', 'b', '', 'c']['x', 'y']cbaél[2, 3])J"},
      {R"J({{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1/3 }})J",
       R"J(3 -4 -2 3.5 1024 1e+20 0.30000000000000004 0.3333333333333333)J"},
      {R"J({{ 'x' ~ none ~ true ~ undefined_thing }}|{{ undefined_thing | default('d') }}|{{ '' | default('e', true) }})J",
       R"J(xNoneTrue|d|e)J"},
      {R"J({% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, b=3) }})J",
       R"J([1B][23])J"},
      {R"J({{ ['b','A','c'] | sort | join(',') }} {{ [3,1,2] | max }} {{ ['a','A','b'] | unique | list }} {{ {'b':1,'a':2} | dictsort }})J",
       R"J(A,b,c 3 ['a', 'b'] [('a', 2), ('b', 1)])J"},
      {R"J({{ 'Hello World' | lower | replace('o', '0') }} {{ 'x' | safe + '<b>' }} {{ 'a\nb\n\nc' | indent(2, first=true) }})J",
       R"J(hell0 w0rld x&lt;b&gt;   a
  b

  c)J"},
      {R"J({{ [{'t':'a','v':1},{'t':'b','v':2}] | selectattr('t','equalto','b') | map(attribute='v') | list }} {{ [1,2,3] | reject('odd') | list }})J",
       R"J([2] [2])J"},
      {R"J({% for k, v in {'a': 1, 'b': 2} | items %}{{ k }}={{ v }}{% if not loop.last %}, {% endif %}{% endfor %})J",
       R"J(a=1, b=2)J"},
      {R"J({% set t %}  body {{ 1 }} {% endset %}[{{ t }}]{% filter upper %}up{% endfilter %})J",
       R"J([  body 1 ]UP)J"},
      {R"J({{ '{} and {name}'.format(1, name='n') }} {{ 'abc'.startswith(('x','a')) }} {{ '  s  '.strip() }} {{ 'a-b'.rsplit('-', 1) }})J",
       R"J(1 and n True s ['a', 'b'])J"},
      {R"J({% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %})J",
       R"J(02)J"},
      {R"J({{ strftime_now('%d %b %Y') }} {{ x is defined }} {{ none is none }} {{ 'a' in 'cat' }} {{ 2 not in [1] }} {{ 1 if false }})J",
       R"J(14 Mar 2026 False True True True )J"},
      {R"J({% set x = 0 %}{% for i in [1,1,1] %}{% set x = x + i %}{{x}}{% endfor %}{{x}})J",
       R"J(1110)J"},
      {R"J({% for i in [1] %}{% set y = 5 %}{% endfor %}{{ y is defined }})J", R"J(False)J"},
      {R"J({{ (1,) }} {{ (1, 'a') }} {{ {'a': 1}.items() | list }})J",
       R"J((1,) (1, 'a') [('a', 1)])J"},
      {R"J({% for m in [1,2] %}{{ loop.previtem is defined }}{{ loop.cycle('a','b') }}{% endfor %})J",
       R"J(FalseaTrueb)J"},
      {R"J({% if true %}{% set z = 3 %}{% endif %}{{ z }})J", R"J(3)J"},
  };
  for (const auto& [source, want] : cases) {
    auto got = Render(source);
    ASSERT_TRUE(got.ok()) << source << ": " << got.status().ToString();
    EXPECT_EQ(*got, want) << source;
  }
}

TEST(Jinja, ErrorsNameTheLineAndTheConstruct) {
  const std::pair<std::string, std::string> cases[] = {
      {"a\nb\n{{ [1] | from_json }}", "line 3: no filter named 'from_json'"},
      {"x\n{% include 'other.jinja' %}", "line 2: unsupported statement '{% include %}'"},
      {"{{ x", "unterminated '{{'"},
      // Regression: a tag left open is reported where it opened, not where
      // the file ends.
      {"{% for m in messages %}{{ m.role }\n{% endfor", "line 1: unterminated '{{'"},
      {"a\n{% if x\n\n", "line 2: unterminated '{%'"},
      {"{% if true %}x", "missing '{% endif %}'"},
      {"{{ 'abc }}", "line 1: unterminated string"},
      {"\n\n{{ x.y }}", "line 3: 'x' is undefined"},
      {"{{ 'a' + 1 }}", "can only concatenate str (not \"int\") to str"},
      {"{% for x in none %}{% endfor %}", "'NoneType' object is not iterable"},
      {"{{ [1].append(2) }}", "access to attribute 'append' of 'list' object is unsafe."},
      {"{{ x is frobnicated }}", "no test named 'frobnicated'"},
      {"{% for x in [1] %}\n{{ raise_exception('Conversation roles must alternate') }}{% endfor %}",
       "line 2: Conversation roles must alternate"},
  };
  for (const auto& [source, want] : cases) {
    auto got = Render(source);
    ASSERT_FALSE(got.ok()) << source << " rendered " << *got;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(want), std::string::npos)
        << source << ": " << got.status().message();
  }
}

TEST(Jinja, LimitsStopRunawayTemplates) {
  RenderOptions small;
  small.max_iterations = 1000;
  small.max_call_depth = 8;
  small.max_output_bytes = 4096;
  // range() refuses what jinja2's sandbox refuses (MAX_RANGE).
  auto loop = Render("{% for i in range(100001) %}{% endfor %}", {}, small);
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.status().message().find("longer than the sandbox's limit of 100000"),
            std::string::npos)
      << loop.status().message();
  auto nested =
      Render("{% for i in range(40) %}{% for j in range(40) %}{% endfor %}{% endfor %}", {}, small);
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("more than 1000 loop iterations"), std::string::npos);
  auto recursion = Render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", {}, small);
  ASSERT_FALSE(recursion.ok());
  EXPECT_NE(recursion.status().message().find("nested deeper than 8"), std::string::npos);
  auto big = Render("{% for i in range(500) %}0123456789{% endfor %}", {}, small);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("output longer than 4096"), std::string::npos);
  EXPECT_TRUE(Render("{% for i in range(300) %}0123456789{% endfor %}", {}, small).ok());
}

TEST(Jinja, ContextVariablesAndMessages) {
  Object msg;
  msg.Set("role", "user");
  msg.Set("content", "Hi");
  Object ctx;
  ctx.Set("messages", Array{Value(msg)});
  ctx.Set("bos_token", "<s>");
  ctx.Set("add_generation_prompt", true);
  auto got = Render(
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m['content'] }}]{% endfor %}"
      "{% if add_generation_prompt %}[assistant:{% endif %}",
      ctx);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "<s>[user:Hi][assistant:");
}

}  // namespace
}  // namespace ellm::jinja
