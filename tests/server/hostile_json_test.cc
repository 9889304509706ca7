// Issue 53: JSON nested past the limit (ellm/base/json.h) at every place the
// HTTP API reads it, without a server: the request body, response_format's
// schema, tool parameters, a tool call's arguments text, the model's reply.
#include <gtest/gtest.h>

#include <string>

#include "ellm/server/openai.h"
#include "ellm/server/tool_calls.h"

namespace ellm::server {
namespace {

using nlohmann::json;

constexpr size_t kHostile = 2000000;  // levels: far past any thread's stack

std::string Arrays(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

const std::string kMessages = R"("messages":[{"role":"user","content":"hi"}])";

void ExpectTooDeep(const ParsedRequest& p) {
  ASSERT_TRUE(p.error.has_value());
  EXPECT_EQ(p.error->status, 400);
  EXPECT_EQ(p.error->type, "invalid_request_error");
  EXPECT_EQ(p.error->code, "json_too_deep");
  EXPECT_NE(p.error->message.find("JSON nested deeper than 64 levels at byte "), std::string::npos)
      << p.error->message;
}

TEST(HostileJson, DeepBodyIsA400NamingTheLimit) {
  ParsedRequest open = ParseCompletionRequest("{\"x\":" + std::string(kHostile, '['), true);
  ExpectTooDeep(open);
  EXPECT_EQ(open.error->message, "the request body: JSON nested deeper than 64 levels at byte 68");
  ExpectTooDeep(ParseCompletionRequest("{" + kMessages + ",\"x\":" + Arrays(kHostile) + "}", true));
  ExpectTooDeep(ParseCompletionRequest("{\"prompt\":\"a\",\"x\":" + Arrays(kHostile) + "}", false));
}

TEST(HostileJson, DeepResponseFormatSchemaIsRefused) {
  const std::string schema = R"({"type":"object","properties":{"a":)" + Arrays(kHostile) + "}}";
  ExpectTooDeep(ParseCompletionRequest(
      "{" + kMessages +
          R"(,"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":)" +
          schema + "}}}",
      true));
}

TEST(HostileJson, DeepToolParametersAreRefused) {
  ExpectTooDeep(ParseCompletionRequest(
      "{" + kMessages +
          R"(,"tools":[{"type":"function","function":{"name":"f","parameters":)"
          R"({"type":"object","properties":{"a":)" +
          Arrays(kHostile) + "}}}}]}",
      true));
}

TEST(HostileJson, SchemaAtTheLimitIsAccepted) {
  // The body, response_format, json_schema: 3 levels; then `schemas` nested
  // objects, each an array schema around the next.
  auto request = [](int schemas) {
    std::string schema = R"({"type":"string"})";
    for (int i = 1; i < schemas; ++i) schema = R"({"type":"array","items":)" + schema + "}";
    return ParseCompletionRequest(
        "{" + kMessages +
            R"(,"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":)" +
            schema + "}}}",
        true);
  };
  ParsedRequest p = request(61);
  ASSERT_FALSE(p.error) << p.error->message;
  EXPECT_EQ(p.request.format, ResponseFormat::kJsonSchema);
  ExpectTooDeep(request(62));
}

// A tool call's "arguments" is a string: the body's bound cannot see into
// it. Past the limit it stays text, in the prompt as in the reply.
TEST(HostileJson, DeepArgumentsTextStaysText) {
  const std::string args = Arrays(kHostile);
  const json body = {{"messages",
                      {{{"role", "user"}, {"content", "hi"}},
                       {{"role", "assistant"},
                        {"content", nullptr},
                        {"tool_calls",
                         {{{"id", "call_1"},
                           {"type", "function"},
                           {"function", {{"name", "f"}, {"arguments", args}}}}}}},
                       {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "ok"}}}},
                     {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}}};
  ParsedRequest p = ParseCompletionRequest(body.dump(), true);
  ASSERT_FALSE(p.error) << p.error->message;
  const std::vector<ChatMessage> m = ToolMessages(p.request.messages, p.request.tools, false);
  ASSERT_EQ(m.size(), 4u);  // system, user, assistant (the call), user (the result)
  EXPECT_NE(m[2].content.find(args), std::string::npos);
}

TEST(HostileJson, DeepModelRepliesAreNotCalls) {
  const std::string deep = Arrays(kHostile);
  EXPECT_FALSE(ParseToolReply(R"({"tool_calls":[{"name":"f","arguments":)" + deep + "}]}").ok);
  EXPECT_FALSE(
      ParseHermesReply("<tool_call>\n{\"name\":\"f\",\"arguments\":" + deep + "}\n</tool_call>")
          .ok);
  EXPECT_FALSE(ParseHermesReply("<tool_call>\n" + json{{"name", "f"}, {"arguments", deep}}.dump() +
                                "\n</tool_call>")
                   .ok);
}

}  // namespace
}  // namespace ellm::server
