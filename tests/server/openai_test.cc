// The OpenAI wire format without a server: requests parsed into our types
// with OpenAI's defaults and errors that name the field; responses and
// stream chunks shaped as OpenAI's; binding the server's port.
#include "ellm/server/openai.h"

#include "ellm/server/api_server.h"

#include <gtest/gtest.h>

namespace ellm::server {
namespace {

using nlohmann::json;

ParsedRequest Chat(const json& body) { return ParseCompletionRequest(body.dump(), true); }

const json kMessages = json::array({{{"role", "user"}, {"content", "hi"}}});

TEST(OpenAiRequest, DefaultsAreOpenAisAndLlamaCppsWhereOpenAiHasNone) {
  ParsedRequest p = Chat({{"model", "m"}, {"messages", kMessages}});
  ASSERT_FALSE(p.error) << p.error->message;
  const CompletionRequest& r = p.request;
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].content, "hi");
  EXPECT_FLOAT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 1.0f);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_FALSE(r.seeded);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.format, ResponseFormat::kText);
}

TEST(OpenAiRequest, ReadsEveryFieldItHonours) {
  ParsedRequest p =
      Chat({{"messages",
             {{{"role", "developer"}, {"content", "be brief"}},
              {{"role", "user"},
               {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}},
              {{"role", "assistant"}, {"content", nullptr}}}},
            {"max_tokens", 50},
            {"max_completion_tokens", 20},
            {"temperature", 0.2},
            {"top_p", 0.5},
            {"top_k", 7},
            {"min_p", 0.1},
            {"seed", 9},
            {"presence_penalty", 0.5},
            {"frequency_penalty", -0.5},
            {"stop", "END"},
            {"stream", true},
            {"stream_options", {{"include_usage", true}}},
            {"user", "ignored"}});
  ASSERT_FALSE(p.error) << p.error->message;
  const CompletionRequest& r = p.request;
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(*r.max_tokens, 20);  // the smaller of the two
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.2f);
  EXPECT_EQ(r.sampling.top_k, 7);
  EXPECT_TRUE(r.seeded);
  EXPECT_EQ(r.sampling.seed, 9u);
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, -0.5f);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(OpenAiRequest, ErrorsNameTheField) {
  struct Case {
    json body;
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"messages", json::array()}}, "messages"},
      {{{"model", "m"}}, "messages"},
      {{{"messages", {{{"role", "robot"}, {"content", "x"}}}}}, "messages[0].role"},
      {{{"messages", {{{"role", "user"}}}}}, "messages[0].content"},
      {{{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}},
       "messages[0].content[0].type"},
      {{{"messages", kMessages}, {"n", 17}}, "n"},
      {{{"messages", kMessages}, {"n", 0}}, "n"},
      {{{"messages", kMessages}, {"max_tokens", 0}}, "max_tokens"},
      {{{"messages", kMessages}, {"temperature", 3}}, "temperature"},
      {{{"messages", kMessages}, {"temperature", "hot"}}, "temperature"},
      {{{"messages", kMessages}, {"stop", {1, 2}}}, "stop"},
      {{{"messages", kMessages}, {"tools", {{{"type", "function"}}}}}, "tools[0].function"},
      {{{"messages", kMessages}, {"functions", {{{"name", "f"}}}}}, "functions"},
      {{{"messages", kMessages}, {"logprobs", 2}}, "logprobs"},
      {{{"messages", kMessages}, {"top_logprobs", 2}}, "top_logprobs"},
      {{{"messages", kMessages}, {"logprobs", true}, {"top_logprobs", 21}}, "top_logprobs"},
      {{{"messages", kMessages}, {"echo", true}}, "echo"},
      {{{"messages", kMessages}, {"stream_options", {{"include_usage", true}}}}, "stream_options"},
      {{{"messages", kMessages}, {"response_format", {{"type", "xml"}}}}, "response_format.type"},
      {{{"messages", kMessages},
        {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}}}}}},
       "response_format.json_schema.schema"},
      {{{"messages", kMessages},
        {"response_format",
         {{"type", "json_schema"},
          {"json_schema", {{"schema", {{"type", "string"}, {"pattern", "a+"}}}}}}}},
       "response_format.json_schema.schema"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body.dump());
    ParsedRequest p = Chat(c.body);
    ASSERT_TRUE(p.error.has_value()) << c.body.dump();
    EXPECT_EQ(p.error->status, 400) << c.body.dump();
    EXPECT_EQ(p.error->param, c.param) << c.body.dump() << ": " << p.error->message;
    EXPECT_EQ(p.error->type, "invalid_request_error");
  }
  ParsedRequest bad = ParseCompletionRequest("{not json", true);
  ASSERT_TRUE(bad.error);
  EXPECT_EQ(bad.error->code, "invalid_json");
  // Off is not a request for the feature.
  EXPECT_FALSE(
      Chat({{"messages", kMessages}, {"logprobs", false}, {"tools", json::array()}}).error);
}

TEST(OpenAiRequest, CompletionsTakeOnePrompt) {
  ParsedRequest p = ParseCompletionRequest(R"({"prompt": ["once upon"], "max_tokens": 3})", false);
  ASSERT_FALSE(p.error);
  EXPECT_EQ(p.request.prompt, "once upon");
  EXPECT_FALSE(p.request.chat);
  EXPECT_TRUE(ParseCompletionRequest(R"({"prompt": ["a", "b"]})", false).error);
  EXPECT_TRUE(ParseCompletionRequest(R"({"max_tokens": 3})", false).error);
}

TEST(OpenAiRequest, LogprobsAsEachEndpointTakesThem) {
  ParsedRequest c = Chat({{"messages", kMessages}, {"logprobs", true}, {"top_logprobs", 3}});
  ASSERT_FALSE(c.error) << c.error->message;
  EXPECT_TRUE(c.request.logprobs);
  EXPECT_EQ(c.request.top_logprobs, 3);
  ParsedRequest plain = Chat({{"messages", kMessages}, {"logprobs", true}});
  ASSERT_FALSE(plain.error);
  EXPECT_TRUE(plain.request.logprobs);
  EXPECT_EQ(plain.request.top_logprobs, 0);
  // Completions: the legacy integer, 0..5.
  ParsedRequest t = ParseCompletionRequest(R"({"prompt": "a", "logprobs": 2})", false);
  ASSERT_FALSE(t.error);
  EXPECT_TRUE(t.request.logprobs);
  EXPECT_EQ(t.request.top_logprobs, 2);
  EXPECT_FALSE(ParseCompletionRequest(R"({"prompt": "a"})", false).request.logprobs);
  ParsedRequest six = ParseCompletionRequest(R"({"prompt": "a", "logprobs": 6})", false);
  ASSERT_TRUE(six.error);
  EXPECT_EQ(six.error->param, "logprobs");
}

TEST(OpenAiResponse, SeveralChoicesAreIndexed) {
  ParsedRequest p = Chat({{"messages", kMessages}, {"n", 3}});
  ASSERT_FALSE(p.error);
  EXPECT_EQ(p.request.n, 3);
  EXPECT_EQ(Chat({{"messages", kMessages}}).request.n, 1);
  json resp = CompletionResponse(p.request, "chatcmpl-1", 5, "m", "fp",
                                 {{"a", "stop", nullptr}, {"b", "length", nullptr}}, {4, 3, 0});
  ASSERT_EQ(resp["choices"].size(), 2u);
  EXPECT_EQ(resp["choices"][1]["index"], 1);
  EXPECT_EQ(resp["choices"][1]["message"]["content"], "b");
  EXPECT_EQ(resp["choices"][1]["finish_reason"], "length");
  EXPECT_TRUE(resp["choices"][0]["logprobs"].is_null());
  const std::string d = "x";
  EXPECT_EQ(StreamChunk(p.request, "c", 5, "m", "fp", &d, true, nullptr, nullptr,
                        2)["choices"][0]["index"],
            2);
}

TEST(OpenAiResponse, LogprobsShapes) {
  const std::vector<LogprobEntry> entries = {{"He", -0.25, {{"He", -0.25}, {"Hi", -1.5}}, 0},
                                             {"llo", -0.5, {{"llo", -0.5}, {"y", -2}}, 2}};
  CompletionRequest chat;
  json c = LogprobsJson(chat, entries);
  ASSERT_EQ(c["content"].size(), 2u);
  EXPECT_EQ(c["content"][1]["token"], "llo");
  EXPECT_EQ(c["content"][1]["logprob"], -0.5);
  EXPECT_EQ(c["content"][0]["bytes"], json::array({72, 101}));
  EXPECT_EQ(c["content"][0]["top_logprobs"][1]["token"], "Hi");
  EXPECT_EQ(c["content"][0]["top_logprobs"][1]["logprob"], -1.5);
  EXPECT_TRUE(c["refusal"].is_null());
  json resp = CompletionResponse(chat, "chatcmpl-1", 5, "m", "fp", "Hello", "stop", {1, 2}, &c);
  EXPECT_EQ(resp["choices"][0]["logprobs"], c);

  CompletionRequest text;
  text.chat = false;
  json t = LogprobsJson(text, entries);
  EXPECT_EQ(t["tokens"], json::array({"He", "llo"}));
  EXPECT_EQ(t["token_logprobs"], json::array({-0.25, -0.5}));
  EXPECT_EQ(t["top_logprobs"][1]["y"], -2);
  EXPECT_EQ(t["text_offset"], json::array({0, 2}));
  const std::string first = "He";
  json chunk = StreamChunk(text, "cmpl-1", 5, "m", "fp", &first, true, nullptr, &t);
  EXPECT_EQ(chunk["choices"][0]["logprobs"]["tokens"][0], "He");
}

TEST(OpenAiRequest, JsonFormats) {
  ParsedRequest o = Chat({{"messages", kMessages}, {"response_format", {{"type", "json_object"}}}});
  ASSERT_FALSE(o.error);
  EXPECT_EQ(o.request.format, ResponseFormat::kJsonObject);
  json schema = {{"type", "object"}, {"properties", {{"a", {{"type", "string"}}}}}};
  ParsedRequest s =
      Chat({{"messages", kMessages},
            {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", schema}}}}}});
  ASSERT_FALSE(s.error) << s.error->message;
  EXPECT_EQ(s.request.format, ResponseFormat::kJsonSchema);
  EXPECT_EQ(json::parse(s.request.json_schema), schema);
}

TEST(OpenAiResponse, ShapesAreOpenAis) {
  CompletionRequest r;
  r.chat = true;
  json full = CompletionResponse(r, "chatcmpl-1", 5, "m", "fp", "hello", "stop", {3, 2});
  EXPECT_EQ(full["object"], "chat.completion");
  EXPECT_EQ(full["choices"][0]["message"]["content"], "hello");
  EXPECT_EQ(full["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(full["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(full["usage"]["total_tokens"], 5);

  r.include_usage = true;
  const std::string piece = "he";
  json first = StreamChunk(r, "chatcmpl-1", 5, "m", "fp", &piece, true, nullptr);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "he");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(first.contains("usage") && first["usage"].is_null());
  const std::string finish = "length";
  json last = StreamChunk(r, "chatcmpl-1", 5, "m", "fp", nullptr, false, &finish);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  json usage = UsageChunk(r, "chatcmpl-1", 5, "m", "fp", {3, 2, 1});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 2);
  EXPECT_EQ(usage["usage"]["total_tokens"], 5);
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 1);

  CompletionRequest t;
  t.chat = false;
  json text = CompletionResponse(t, "cmpl-1", 5, "m", "fp", "x", "stop", {1, 1});
  EXPECT_EQ(text["object"], "text_completion");
  EXPECT_EQ(text["choices"][0]["text"], "x");

  // Invalid UTF-8 never throws: it is replaced.
  EXPECT_EQ(SseEvent(json{{"t", std::string("a\xC3")}}).rfind("data: {", 0), 0u);
  ApiError e = InvalidRequest("bad", "n");
  EXPECT_EQ(e.ToJson()["error"]["param"], "n");
  EXPECT_TRUE(e.ToJson()["error"]["code"].is_null());
}

// cpp-httplib binds with SO_REUSEPORT by default, which would let a second
// server share the port (and its requests) silently.
TEST(ApiServer, ASecondServerOnTheSamePortIsRefused) {
  ApiServerOptions o;
  o.port = 0;
  ApiServer first(o);
  ASSERT_TRUE(first.Bind().ok());
  ApiServerOptions same = o;
  same.port = first.port();
  ApiServer second(same);
  const Status st = second.Bind();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find(std::to_string(first.port())), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace ellm::server
