#include "ellm/base/json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace ellm {
namespace {

// `depth` arrays, one inside the other, around `inner`.
std::string Nested(int depth, const std::string& inner = "1") {
  return std::string(static_cast<size_t>(depth), '[') + inner +
         std::string(static_cast<size_t>(depth), ']');
}

TEST(ParseJson, DepthAtTheLimitParses) {
  auto j = ParseJson(Nested(kMaxJsonDepth));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  const nlohmann::json* at = &*j;
  for (int i = 0; i < kMaxJsonDepth; ++i) at = &(*at)[0];
  EXPECT_EQ(*at, 1);
}

TEST(ParseJson, OneLevelPastTheLimitFailsNamingIt) {
  auto j = ParseJson(Nested(kMaxJsonDepth + 1));
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(j.status().reason(), kJsonTooDeep);
  EXPECT_EQ(j.status().message(), "JSON nested deeper than 64 levels at byte 64");
}

TEST(ParseJson, ObjectsAndArraysCountAlike) {
  std::string text;
  for (int i = 0; i < kMaxJsonDepth; ++i) text += i % 2 ? "[" : "{\"k\":";
  text += "0";
  for (int i = kMaxJsonDepth - 1; i >= 0; --i) text += i % 2 ? "]" : "}";
  EXPECT_TRUE(ParseJson(text).ok());
  EXPECT_EQ(ParseOrderedJson("{\"a\":" + text + "}").status().reason(), kJsonTooDeep);
}

TEST(ParseJson, BracketsInsideStringsDoNotCount) {
  const std::string deep_text(100000, '[');
  auto j = ParseJson("{\"s\": \"" + deep_text + "\", \"t\": \"\\\"[[[{{{\"}");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["s"].get<std::string>().size(), 100000u);
  EXPECT_EQ((*j)["t"], "\"[[[{{{");
}

TEST(ParseJson, EscapedBackslashEndsTheEscape) {
  // "\\" is one backslash: the quote after it closes the string, and the
  // brackets after that count.
  const std::string text = "[\"\\\\\"," + Nested(kMaxJsonDepth) + "]";
  auto j = ParseJson(text);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().reason(), kJsonTooDeep);
}

TEST(ParseJson, TwoMillionLevelsFailFast) {
  const std::string text = "{\"x\":" + std::string(2000000, '[');
  const auto start = std::chrono::steady_clock::now();
  auto j = ParseJson(text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "JSON nested deeper than 64 levels at byte 68");
  EXPECT_LT(seconds, 1.0);
  // Balanced, and inside a larger valid document: still refused.
  EXPECT_EQ(ParseOrderedJson("{\"x\":" + Nested(2000000) + "}").status().reason(), kJsonTooDeep);
}

TEST(ParseJson, ExtraClosersDoNotBuyDepth) {
  const std::string text = std::string(1000, ']') + std::string(kMaxJsonDepth + 1, '[');
  EXPECT_EQ(CheckJsonLimits(text).reason(), kJsonTooDeep);
}

TEST(ParseJson, LimitsAreTheCallers) {
  EXPECT_TRUE(ParseJson(Nested(3), {.max_depth = 3}).ok());
  EXPECT_EQ(ParseJson(Nested(4), {.max_depth = 3}).status().message(),
            "JSON nested deeper than 3 levels at byte 3");
  EXPECT_TRUE(ParseJson("7", {.max_depth = 0}).ok());
  auto big = ParseJson("[1, 2, 3]", {.max_bytes = 8});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().reason(), kJsonTooLarge);
  EXPECT_EQ(big.status().message(), "JSON text is 9 bytes; the limit is 8");
}

// ordered_json finds keys by linear search: an object of a million members
// would take hours to read, so it is refused before.
TEST(ParseJson, ObjectMembersAreBounded) {
  auto object = [](size_t members, const std::string& key_tail = "") {
    std::string text = "{";
    for (size_t i = 0; i < members; ++i) {
      text += (i ? ",\"k" : "\"k") + std::to_string(i) + key_tail + "\":[{\"a\":1,\"b\":2}]";
    }
    return text + "}";
  };
  auto at_limit = ParseOrderedJson(object(kMaxJsonObjectMembers));
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().ToString();
  EXPECT_EQ(at_limit->size(), kMaxJsonObjectMembers);
  auto past = ParseOrderedJson(object(kMaxJsonObjectMembers + 1));
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().reason(), kJsonTooManyMembers);
  EXPECT_EQ(past.status().message().rfind("JSON object with more than 4096 members at byte ", 0),
            0u)
      << past.status().message();
  // Colons inside keys do not count; a million members fail fast.
  EXPECT_TRUE(ParseJson(object(100, ":::")).ok());
  const std::string million = object(1000000);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ParseOrderedJson(million).status().reason(), kJsonTooManyMembers);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_EQ(ParseJson("{\"a\":1,\"b\":2}", {.max_object_members = 1}).status().reason(),
            kJsonTooManyMembers);
  // Arrays are not objects: any number of elements.
  std::string many = "[0";
  for (int i = 0; i < 20000; ++i) many += ",{\"a\":1}";
  EXPECT_TRUE(ParseOrderedJson(many + "]").ok());
}

TEST(ParseJson, SyntaxErrorIsAStatusWithWhere) {
  auto j = ParseJson("{\"a\": [1, 2,]}");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(j.status().reason(), kJsonSyntax);
  EXPECT_EQ(j.status().message().rfind("not valid JSON: parse error at line 1, column ", 0), 0u)
      << j.status().message();
  EXPECT_EQ(ParseJson("").status().reason(), kJsonSyntax);
  EXPECT_EQ(ParseJson("[1] [2]").status().reason(), kJsonSyntax);
  EXPECT_EQ(ParseJson("\"unterminated [[[").status().reason(), kJsonSyntax);
}

TEST(ParseOrderedJson, KeepsKeyOrder) {
  auto j = ParseOrderedJson("{\"b\": 1, \"a\": 2}");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->dump(), "{\"b\":1,\"a\":2}");
}

}  // namespace
}  // namespace ellm
