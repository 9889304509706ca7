// Every chat template of llama.cpp v0.5.0 (models/templates/*.jinja), rendered
// by our interpreter for the conversations in
// tests/reference/chat_templates/conversations.json, must equal Python
// jinja2's rendering byte for byte (expected.json beside it, made by
// scripts/reference/make_chat_template_reference.py); where jinja2 raised,
// we must refuse too, with the template's own message when it raised one.
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chat/jinja.h"
#include "test_env.h"

namespace ellm::jinja {
namespace {

Value FromJson(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      for (const auto& x : j) a.push_back(FromJson(x));
      return a;
    }
    default: {
      Object o;
      for (const auto& [k, v] : j.items()) o.Set(k, FromJson(v));
      return o;
    }
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(JinjaGolden, EveryLlamaCppTemplateRendersAsJinja2Does) {
  ELLM_REQUIRE_LLAMA_SRC(src);
  const std::string dir = ellm::testing::SourceDir() + "/tests/reference/chat_templates/";
  const auto spec = nlohmann::ordered_json::parse(ReadFile(dir + "conversations.json"));
  const auto expected = nlohmann::ordered_json::parse(ReadFile(dir + "expected.json"));

  std::tm fixed{};
  std::istringstream(spec["strftime_now"].get<std::string>()) >>
      std::get_time(&fixed, "%Y-%m-%dT%H:%M:%S");
  mktime(&fixed);  // fills tm_wday / tm_yday
  RenderOptions options;
  options.strftime_now = [&](const std::string& fmt) { return Strftime(fmt, fixed); };

  int templates = 0, renders = 0, failures = 0;
  int64_t steps = 0, max_steps = 0;
  options.steps_used = &steps;
  for (const auto& [name, entry] : expected.items()) {
    SCOPED_TRACE(name);
    const std::string source = ReadFile(src + "/models/templates/" + name);
    ASSERT_FALSE(source.empty()) << "missing template " << name;
    ++templates;
    auto tmpl = Template::Parse(source);
    if (!tmpl.ok()) {
      ADD_FAILURE() << name << ": " << tmpl.status().ToString();
      ++failures;
      continue;
    }
    for (const auto& [conv, want] : entry["renders"].items()) {
      Object context;
      for (const auto& [k, v] : spec["conversations"][conv].items()) context.Set(k, FromJson(v));
      context.Set("bos_token", spec["bos_token"].get<std::string>());
      context.Set("eos_token", spec["eos_token"].get<std::string>());
      auto got = tmpl->Render(context, options);
      max_steps = std::max(max_steps, steps);
      ++renders;
      if (want.contains("text")) {
        if (!got.ok()) {
          ADD_FAILURE() << name << " / " << conv << ": " << got.status().ToString();
          ++failures;
        } else if (*got != want["text"].get<std::string>()) {
          ADD_FAILURE() << name << " / " << conv << ": differs\n--- ours ---\n"
                        << *got << "\n--- jinja2 ---\n"
                        << want["text"].get<std::string>();
          ++failures;
        }
      } else {
        const std::string err = want["error"].get<std::string>();
        if (got.ok()) {
          ADD_FAILURE() << name << " / " << conv << ": jinja2 raised (" << err
                        << ") but we rendered";
          ++failures;
        } else if (err.rfind("TemplateError: ", 0) == 0) {
          EXPECT_NE(got.status().message().find(err.substr(15)), std::string::npos)
              << name << " / " << conv << ": " << got.status().message() << " vs " << err;
        }
      }
    }
  }
  EXPECT_EQ(templates, 70);  // llama.cpp v0.5.0 ships 70 templates
  EXPECT_EQ(renders, 70 * 7);
  std::cout << templates << " templates, " << renders << " renders, " << failures
            << " failures; the most steps one render took: " << max_steps << "\n";
  // The step budget leaves real templates a wide margin (jinja_limits.h).
  EXPECT_LT(max_steps, kMaxSteps / 20);
}

}  // namespace
}  // namespace ellm::jinja
