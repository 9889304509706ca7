// Function calling in /v1/chat/completions without a server: tools and tool
// turns parsed and checked with errors naming the field, the JSON schema a
// reply is held to, the generic format's prompt, the model's reply read back
// into calls, the response and stream shapes; and a real tool-calling
// template (Qwen 2.5's) rendered from an OpenAI request exactly as Python's
// jinja2 renders the same conversation. The native Hermes / Qwen 2.5
// syntax: which templates teach it, its tags, and replies read back.
#include "ellm/server/tool_calls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "ellm/engine/constraint.h"
#include "ellm/server/openai.h"
#include "test_env.h"

namespace ellm::server {
namespace {

using nlohmann::json;

ParsedRequest Chat(const json& body) { return ParseCompletionRequest(body.dump(), true); }

const json kWeather = {{"type", "function"},
                       {"function",
                        {{"name", "get_weather"},
                         {"description", "The weather in a city"},
                         {"parameters",
                          {{"type", "object"},
                           {"properties", {{"city", {{"type", "string"}}}}},
                           {"required", {"city"}}}}}}};
const json kTime = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
const json kAsk = json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}});

// user, assistant calling get_weather (call_1), and a tool message answering it.
json Turns(const json& tool_message) {
  return json::array(
      {{{"role", "user"}, {"content", "Weather in Paris?"}},
       {{"role", "assistant"},
        {"content", nullptr},
        {"tool_calls",
         {{{"id", "call_1"},
           {"type", "function"},
           {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}}}}},
       tool_message});
}

TEST(ToolRequest, ReadsToolsChoiceAndParallelCalls) {
  ParsedRequest p =
      Chat({{"messages", kAsk},
            {"tools", {kWeather, kTime}},
            {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}},
            {"parallel_tool_calls", false}});
  ASSERT_FALSE(p.error) << p.error->message;
  const ToolRequest& t = p.request.tools;
  ASSERT_EQ(t.tools.size(), 2u);
  EXPECT_EQ(t.tools[0].name, "get_weather");
  EXPECT_EQ(t.tools[0].description, "The weather in a city");
  EXPECT_EQ(t.tools[0].parameters["required"].dump(), R"(["city"])");
  EXPECT_TRUE(t.tools[0].enforceable);
  // No parameters: an object without properties.
  EXPECT_EQ(t.tools[1].parameters["type"], "object");
  EXPECT_EQ(t.choice, ToolChoice::kFunction);
  EXPECT_EQ(t.function, "get_time");
  EXPECT_FALSE(t.parallel);
  EXPECT_TRUE(t.active());
}

TEST(ToolRequest, ChoiceIsAutoWithToolsAndNoneWithout) {
  ParsedRequest with = Chat({{"messages", kAsk}, {"tools", {kWeather}}});
  ASSERT_FALSE(with.error) << with.error->message;
  EXPECT_EQ(with.request.tools.choice, ToolChoice::kAuto);
  EXPECT_TRUE(with.request.tools.parallel);
  ParsedRequest none = Chat({{"messages", kAsk}, {"tools", {kWeather}}, {"tool_choice", "none"}});
  ASSERT_FALSE(none.error) << none.error->message;
  EXPECT_FALSE(none.request.tools.active());
  ParsedRequest without = Chat({{"messages", kAsk}, {"tools", json::array()}});
  ASSERT_FALSE(without.error) << without.error->message;
  EXPECT_FALSE(without.request.tools.active());
  // A schema beyond constrained decoding is taken, its arguments held to any object.
  json loose = kWeather;
  loose["function"]["parameters"]["properties"]["city"]["pattern"] = "^[A-Z]";
  ParsedRequest p = Chat({{"messages", kAsk}, {"tools", {loose}}});
  ASSERT_FALSE(p.error) << p.error->message;
  EXPECT_FALSE(p.request.tools.tools[0].enforceable);
  EXPECT_TRUE(ValidateJsonSchema(ToolReplySchema(p.request.tools)).ok());
}

TEST(ToolRequest, ErrorsNameTheField) {
  json bad_name = kWeather;
  bad_name["function"]["name"] = "get weather";
  json string_params = kWeather;
  string_params["function"]["parameters"] = {{"type", "string"}};
  json retrieval = {{"type", "retrieval"}};
  json user_calls = Turns({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "x"}});
  user_calls[0]["tool_calls"] = user_calls[1]["tool_calls"];
  json args_object = Turns({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "x"}});
  args_object[1]["tool_calls"][0]["function"]["arguments"] = {{"city", "Paris"}};
  struct Case {
    json body;
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"messages", kAsk}, {"tools", kWeather}}, "tools"},
      {{{"messages", kAsk}, {"tools", {retrieval}}}, "tools[0].type"},
      {{{"messages", kAsk}, {"tools", {bad_name}}}, "tools[0].function.name"},
      {{{"messages", kAsk}, {"tools", {string_params}}}, "tools[0].function.parameters"},
      {{{"messages", kAsk}, {"tools", {kWeather, kWeather}}}, "tools[1].function.name"},
      {{{"messages", kAsk}, {"tools", {kWeather}}, {"tool_choice", "sometimes"}}, "tool_choice"},
      {{{"messages", kAsk}, {"tool_choice", "required"}}, "tool_choice"},
      {{{"messages", kAsk},
        {"tools", {kWeather}},
        {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}},
       "tool_choice.function.name"},
      {{{"messages", kAsk}, {"tools", {kWeather}}, {"parallel_tool_calls", "yes"}},
       "parallel_tool_calls"},
      {{{"messages", Turns({{"role", "tool"}, {"content", "20 C"}})}}, "messages[2].tool_call_id"},
      {{{"messages", Turns({{"role", "tool"}, {"tool_call_id", "call_9"}, {"content", "20 C"}})}},
       "messages[2].tool_call_id"},
      {{{"messages", Turns({{"role", "tool"}, {"tool_call_id", "call_1"}})}},
       "messages[2].content"},
      {{{"messages",
         {{{"role", "user"}, {"content", "hi"}},
          {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "x"}}}}},
       "messages[1].tool_call_id"},
      {{{"messages", user_calls}}, "messages[0].tool_calls"},
      {{{"messages", args_object}}, "messages[1].tool_calls[0].function.arguments"},
      {{{"messages", kAsk}, {"tools", {kWeather}}, {"response_format", {{"type", "json_object"}}}},
       "response_format"},
      {{{"messages", kAsk}, {"tools", {kWeather}}, {"logprobs", true}}, "logprobs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body.dump());
    ParsedRequest p = Chat(c.body);
    ASSERT_TRUE(p.error.has_value());
    EXPECT_EQ(p.error->status, 400);
    EXPECT_EQ(p.error->param, c.param) << p.error->message;
    EXPECT_EQ(p.error->type, "invalid_request_error");
  }
}

TEST(ToolRequest, ToolTurnsReachTheMessages) {
  ParsedRequest p = Chat(
      {{"messages", Turns({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "20 C"}})}});
  ASSERT_FALSE(p.error) << p.error->message;
  const std::vector<ChatMessage>& m = p.request.messages;
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[1].content, "");
  EXPECT_EQ(json::parse(m[1].tool_calls)[0]["function"]["name"], "get_weather");
  EXPECT_EQ(m[2].role, "tool");
  EXPECT_EQ(m[2].tool_call_id, "call_1");
  EXPECT_EQ(m[2].name, "get_weather");  // from the call it answers
  EXPECT_EQ(m[2].content, "20 C");
}

TEST(ToolReplySchema, HoldsTheReplyToTheChoice) {
  ToolRequest r;
  ASSERT_FALSE(
      ParseTools(nlohmann::ordered_json::parse(json{{"tools", {kWeather, kTime}}}.dump()), &r));
  auto schema = [&] { return json::parse(ToolReplySchema(r)); };
  // auto: calls or a text reply.
  json s = schema();
  ASSERT_TRUE(s.contains("anyOf"));
  EXPECT_EQ(s["anyOf"][1]["required"], json::array({"response"}));
  json calls = s["anyOf"][0]["properties"]["tool_calls"];
  EXPECT_EQ(calls["minItems"], 1);
  EXPECT_FALSE(calls.contains("maxItems"));
  EXPECT_EQ(calls["items"]["anyOf"][0]["properties"]["name"]["const"], "get_weather");
  EXPECT_EQ(calls["items"]["anyOf"][0]["properties"]["arguments"]["required"],
            json::array({"city"}));
  EXPECT_EQ(calls["items"]["anyOf"][1]["properties"]["name"]["const"], "get_time");
  EXPECT_TRUE(ValidateJsonSchema(s.dump()).ok());
  // required, one call at a time: calls only, at most one.
  r.choice = ToolChoice::kRequired;
  r.parallel = false;
  s = schema();
  EXPECT_FALSE(s.contains("anyOf"));
  EXPECT_EQ(s["properties"]["tool_calls"]["maxItems"], 1);
  // A named function: only it.
  r.choice = ToolChoice::kFunction;
  r.function = "get_time";
  s = schema();
  EXPECT_EQ(s["properties"]["tool_calls"]["items"]["properties"]["name"]["const"], "get_time");
  EXPECT_TRUE(ValidateJsonSchema(s.dump()).ok());
}

TEST(ToolMessages, GenericFormatDescribesToolsAndWritesTurnsAsJson) {
  ParsedRequest p = Chat(
      {{"messages", Turns({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "20 C"}})},
       {"tools", {kWeather}}});
  ASSERT_FALSE(p.error) << p.error->message;
  p.request.messages.push_back({"user", "Thanks"});
  const std::vector<ChatMessage> m = ToolMessages(p.request.messages, p.request.tools, false);
  ASSERT_EQ(m.size(), 4u);  // system, user, assistant, user (result + thanks)
  EXPECT_EQ(m[0].role, "system");
  EXPECT_NE(m[0].content.find("\"name\": \"get_weather\""), std::string::npos) << m[0].content;
  EXPECT_NE(m[0].content.find("`tool_calls`"), std::string::npos);
  EXPECT_EQ(m[2].role, "assistant");
  EXPECT_EQ(json::parse(m[2].content),
            json::parse(R"({"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]})"));
  EXPECT_EQ(m[3].role, "user");
  EXPECT_EQ(m[3].content,
            R"({"tool_response":{"tool_call_id":"call_1","name":"get_weather","content":"20 C"}})"
            "\n\nThanks");
  // A template that reads tools gets the turns as they are and only the instruction.
  const std::vector<ChatMessage> native = ToolMessages(p.request.messages, p.request.tools, true);
  ASSERT_EQ(native.size(), 5u);
  EXPECT_EQ(native[0].role, "system");
  EXPECT_EQ(native[0].content.find("get_weather"), std::string::npos);
  EXPECT_EQ(native[3].role, "tool");
}

TEST(ToolReply, ReadsCallsOrText) {
  ToolReply calls = ParseToolReply(
      R"({"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris","unit":"C"}},)"
      R"({"name":"get_time","arguments":{}}]})");
  ASSERT_TRUE(calls.ok);
  ASSERT_EQ(calls.calls.size(), 2u);
  EXPECT_EQ(calls.calls[0].name, "get_weather");
  EXPECT_EQ(calls.calls[0].arguments, R"({"city":"Paris","unit":"C"})");  // as written
  EXPECT_EQ(calls.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_NE(calls.calls[0].id, calls.calls[1].id);
  EXPECT_TRUE(calls.text.empty());
  ToolReply text = ParseToolReply(R"({"response": "It is sunny."})");
  ASSERT_TRUE(text.ok);
  EXPECT_TRUE(text.calls.empty());
  EXPECT_EQ(text.text, "It is sunny.");
  ToolReply cut = ParseToolReply(R"({"tool_calls":[{"name":"get_wea)");
  EXPECT_FALSE(cut.ok);
  EXPECT_EQ(cut.text, R"({"tool_calls":[{"name":"get_wea)");
  ToolReply cut_text = ParseToolReply(R"({"response": "It is sunny \)");
  EXPECT_FALSE(cut_text.ok);
  EXPECT_EQ(cut_text.text, "It is sunny ");
}

TEST(HermesReply, ReadsBlocksAndTheTextBesideThem) {
  // Two blocks, whitespace variants, text before and after.
  ToolReply r = ParseHermesReply(
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Paris\", \"unit\": \"C\"}}\n</tool_call>"
      "<tool_call>  {\"name\":\"get_time\",\"arguments\":{}}</tool_call>\n\n Done. ");
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris","unit":"C"})");  // in the model's order
  EXPECT_EQ(r.calls[1].name, "get_time");
  EXPECT_EQ(r.calls[1].arguments, "{}");
  EXPECT_EQ(r.calls[0].id.size(), 5u + 24u);
  EXPECT_EQ(r.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_NE(r.calls[0].id, r.calls[1].id);
  EXPECT_EQ(r.text, "Let me look.\nDone.");  // the pieces outside, trimmed, a line each
  // Only a block: no text. Arguments as JSON text, and none at all.
  r = ParseHermesReply(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_time\"}\n</tool_call>");
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(r.calls[1].arguments, "{}");
  EXPECT_EQ(r.text, "");
  // No block: the text as written.
  r = ParseHermesReply(" It is sunny.\n");
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.text, " It is sunny.\n");
  // A malformed block makes the whole reply text.
  for (const char* bad :
       {"<tool_call>\n{\"name\": \"get_weather\", \"argum",          // cut by max_tokens
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}",  // unclosed
        "ok <tool_call>\n[1, 2]\n</tool_call>",                      // not a call
        "<tool_call>{\"arguments\": {}}</tool_call>",                // no name
        "<tool_call>{\"name\": \"f\", \"arguments\": 3}</tool_call>",
        "<tool_call>{\"name\": \"f\", \"arguments\": \"not json\"}</tool_call>"}) {
    SCOPED_TRACE(bad);
    r = ParseHermesReply(bad);
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(r.calls.empty());
    EXPECT_EQ(r.text, bad);
  }
}

TEST(HermesReply, TagsFollowTheChoice) {
  ToolRequest r;
  ASSERT_FALSE(
      ParseTools(nlohmann::ordered_json::parse(json{{"tools", {kWeather, kTime}}}.dump()), &r));
  TaggedJson tags = HermesToolTags(r);  // auto, parallel
  EXPECT_EQ(tags.open, "<tool_call>\n");
  EXPECT_EQ(tags.close, "\n</tool_call>");
  EXPECT_EQ(tags.trigger, "<tool_call>");  // text may come instead
  EXPECT_EQ(tags.max_blocks, -1);
  r.choice = ToolChoice::kRequired;
  r.parallel = false;
  tags = HermesToolTags(r);
  EXPECT_EQ(tags.trigger, "");  // a call from the first byte
  EXPECT_EQ(tags.min_blocks, 1);
  EXPECT_EQ(tags.max_blocks, 1);
  r.choice = ToolChoice::kFunction;
  r.function = "get_time";
  const json call = json::parse(ToolCallSchema(r));
  EXPECT_EQ(call["properties"]["name"]["const"], "get_time");
  EXPECT_TRUE(ValidateJsonSchema(call.dump()).ok());
  // The template instructs the model: nothing is added to the messages.
  ParsedRequest p = Chat({{"messages", kAsk}, {"tools", {kWeather}}});
  ASSERT_FALSE(p.error) << p.error->message;
  const std::vector<ChatMessage> m =
      ToolMessages(p.request.messages, p.request.tools, true, ToolSyntax::kHermes);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].content, "Weather in Paris?");
}

TEST(ToolResponse, MessageAndStreamAreOpenAis) {
  ParsedRequest p = Chat({{"messages", kAsk}, {"tools", {kWeather}}, {"stream", true}});
  ASSERT_FALSE(p.error) << p.error->message;
  const std::vector<ToolCall> calls = {
      {"call_a", "get_weather", R"({"city":"Saint-Étienne, Loire, France"})"},
      {"call_b", "get_weather", R"({"city":"Lyon"})"}};
  ChoiceResult c{"", "tool_calls", nullptr, calls};
  json resp = CompletionResponse(p.request, "chatcmpl-1", 5, "m", "fp", {c}, {3, 2});
  const json& msg = resp["choices"][0]["message"];
  EXPECT_TRUE(msg["content"].is_null());
  EXPECT_EQ(resp["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(msg["tool_calls"][1],
            json::parse(R"({"id":"call_b","type":"function",)"
                        R"("function":{"name":"get_weather","arguments":"{\"city\":\"Lyon\"}"}})"));

  // The stream, reassembled as the openai client does (by index).
  std::vector<json> chunks = ToolCallChunks(p.request, "chatcmpl-1", 5, "m", "fp", calls, 0);
  ASSERT_GT(chunks.size(), 3u);  // the first call's arguments come in pieces
  const json& first = chunks[0]["choices"][0]["delta"];
  EXPECT_EQ(first["role"], "assistant");
  EXPECT_TRUE(first["content"].is_null());
  EXPECT_EQ(first["tool_calls"][0]["id"], "call_a");
  EXPECT_EQ(first["tool_calls"][0]["function"]["name"], "get_weather");
  std::map<int, json> got;
  for (const json& chunk : chunks) {
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
    for (const json& d : chunk["choices"][0]["delta"]["tool_calls"]) {
      json& call = got[d["index"].get<int>()];
      if (d.contains("id")) call["id"] = d["id"];
      if (d["function"].contains("name")) call["name"] = d["function"]["name"];
      call["arguments"] =
          call.value("arguments", "") + d["function"]["arguments"].get<std::string>();
    }
  }
  ASSERT_EQ(got.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(got[i]["id"], calls[static_cast<size_t>(i)].id);
    EXPECT_EQ(got[i]["name"], "get_weather");
    EXPECT_EQ(got[i]["arguments"], calls[static_cast<size_t>(i)].arguments);
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The conversation "tools_openai" of tests/reference/chat_templates, sent
// as an OpenAI client sends it (arguments as JSON text), parsed and applied
// with a template that reads tools, equals jinja2's rendering of it.
TEST(ToolTemplate, RendersAsJinja2DoesFromAnOpenAiRequest) {
  ELLM_REQUIRE_LLAMA_SRC(src);
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = ellm::testing::SourceDir() + "/tests/reference/chat_templates/";
  const auto spec = nlohmann::ordered_json::parse(ReadFile(dir + "conversations.json"));
  const auto expected = json::parse(ReadFile(dir + "expected.json"));
  nlohmann::ordered_json body = spec["conversations"]["tools_openai"];
  for (auto& m : body["messages"]) {
    if (!m.contains("tool_calls")) continue;
    for (auto& c : m["tool_calls"]) c["function"]["arguments"] = c["function"]["arguments"].dump();
  }
  ParsedRequest p = ParseCompletionRequest(body.dump(), true);
  ASSERT_FALSE(p.error) << p.error->message;
  ASSERT_TRUE(p.request.tools.active());

  auto file = gguf::GgufFile::Open(model);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  for (const char* name :
       {"Qwen-Qwen2.5-7B-Instruct.jinja", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"}) {
    SCOPED_TRACE(name);
    auto tmpl = ChatTemplate::FromJinja(ReadFile(src + "/models/templates/" + name), name, **tok);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
    EXPECT_TRUE(tmpl->handles_tools());
    auto text = tmpl->Apply(p.request.messages, true, p.request.tools.tools_json.dump());
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    // Our tokenizer's BOS text is dropped (the tokenizer adds BOS), as is
    // the reference's.
    std::string want = expected[name]["renders"]["tools_openai"]["text"].get<std::string>();
    const std::string bos = spec["bos_token"].get<std::string>();
    if (want.rfind(bos, 0) == 0) want.erase(0, bos.size());
    EXPECT_EQ(*text, want);
  }
}

// Which templates teach the <tool_call> syntax; with the tools, Qwen 2.5's
// prompt then shows them and that syntax, and no generic JSON instruction.
TEST(ToolTemplate, DetectsHermesSyntaxInRealTemplates) {
  ELLM_REQUIRE_LLAMA_SRC(src);
  ELLM_REQUIRE_MODEL(model);
  auto file = gguf::GgufFile::Open(model);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const std::pair<const char*, ToolSyntax> cases[] = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolSyntax::kHermes},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", ToolSyntax::kHermes},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolSyntax::kHermes},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolSyntax::kGeneric},
      {"google-gemma-2-2b-it.jinja", ToolSyntax::kGeneric},
  };
  for (const auto& [name, want] : cases) {
    SCOPED_TRACE(name);
    auto tmpl = ChatTemplate::FromJinja(ReadFile(src + "/models/templates/" + name), name, **tok);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
    EXPECT_EQ(DetectToolSyntax(*tmpl), want);
  }
  EXPECT_EQ(DetectToolSyntax(ChatTemplate::FromFormat(ChatFormat::kChatMl)), ToolSyntax::kGeneric);

  auto qwen = ChatTemplate::FromJinja(
      ReadFile(src + "/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"), "qwen", **tok);
  ASSERT_TRUE(qwen.ok()) << qwen.status().ToString();
  ParsedRequest p = Chat({{"messages", kAsk}, {"tools", {kWeather}}, {"tool_choice", "required"}});
  ASSERT_FALSE(p.error) << p.error->message;
  auto text =
      qwen->Apply(ToolMessages(p.request.messages, p.request.tools, true, DetectToolSyntax(*qwen)),
                  true, p.request.tools.tools_json.dump());
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("<tools>\n{\"function\": {\"description\": \"The weather in a city\", "
                       "\"name\": \"get_weather\""),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("<tool_call>\n{\"name\": <function-name>, \"arguments\": "
                       "<args-json-object>}\n</tool_call>"),
            std::string::npos)
      << *text;
  EXPECT_EQ(text->find("Respond in JSON"), std::string::npos) << *text;
  EXPECT_NE(text->find("<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"),
            std::string::npos)
      << *text;
}

}  // namespace
}  // namespace ellm::server
