// Native tool calls end to end: the synthetic Qwen 2.5 0.5B of
// tests/reference/families/sizes/ (random weights, Qwen's vocabulary and
// its real chat template, which teaches <tool_call> blocks) served by the
// API server `ellm serve` runs, over HTTP. Whatever the random model would
// write, tool_choice required / a named function come back as parseable
// calls of the request's tools, whole and streamed; auto, text or calls.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../engine/model/family_model_builder.h"
#include "ellm/engine/engine.h"
#include "ellm/server/api_server.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

using nlohmann::json;

// A tool whose arguments are nearly fixed by its schema, so that a random
// model's call is short.
const json kTools = json::array({{{"type", "function"},
                                  {"function",
                                   {{"name", "get_weather"},
                                    {"description", "The weather in a city"},
                                    {"parameters",
                                     {{"type", "object"},
                                      {"properties", {{"unit", {{"enum", {"C", "F"}}}}}},
                                      {"required", {"unit"}},
                                      {"additionalProperties", false}}}}}},
                                 {{"type", "function"},
                                  {"function",
                                   {{"name", "get_time"},
                                    {"parameters",
                                     {{"type", "object"},
                                      {"properties", {{"zone", {{"enum", {"UTC", "CET"}}}}}},
                                      {"required", {"zone"}},
                                      {"additionalProperties", false}}}}}}});

class HermesToolCalls : public ::testing::Test {
 protected:
  void SetUp() override {
    ELLM_REQUIRE_VOCABS(shared);
    const std::string ref_path = SourceDir() + "/tests/reference/families/sizes/qwen2.5-0.5b.json";
    std::ifstream in(ref_path);
    ASSERT_TRUE(in) << "missing reference file " << ref_path;
    const json ref = json::parse(in);
    dir_ = MakeTempDir("hermes_tools");
    const std::string path = dir_ + "/qwen2.5-0.5b.gguf";
    ASSERT_EQ(BuildFamilyModel(ref, shared + "/" + ref["vocab"].get<std::string>(), path).error,
              "");
    auto engine = Engine::Load(path, {.threads = 2});
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(*engine);
    server::ApiServerOptions o;
    o.port = 0;
    o.sessions = 1;
    o.n_ctx = 1024;
    server_ = std::make_unique<server::ApiServer>(o);
    ASSERT_TRUE(server_->Bind().ok());
    ASSERT_TRUE(server_->SetModel(engine_.get(), "qwen", "fp").ok());
    thread_ = std::thread([this] { server_->Run(); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
    engine_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // POSTs a chat request; the response body.
  std::string Post(const json& extra) {
    json body = {{"model", "qwen"},
                 {"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
                 {"tools", kTools},
                 {"temperature", 0},
                 {"max_tokens", 200}};
    body.update(extra);
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(300);
    auto res = client.Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_TRUE(res) << "no response";
    if (!res) return "";
    EXPECT_EQ(res->status, 200) << res->body;
    return res->body;
  }

  std::string dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<server::ApiServer> server_;
  std::thread thread_;
};

TEST_F(HermesToolCalls, RequiredGivesParseableCallsOfTheTools) {
  const json resp =
      json::parse(Post({{"tool_choice", "required"}, {"parallel_tool_calls", false}}));
  const json& choice = resp["choices"][0];
  ASSERT_EQ(choice["finish_reason"], "tool_calls") << resp.dump();
  const json& calls = choice["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << resp.dump();
  EXPECT_TRUE(choice["message"]["content"].is_null()) << resp.dump();
  const std::string id = calls[0]["id"];
  EXPECT_EQ(id.rfind("call_", 0), 0u);
  EXPECT_EQ(id.size(), 29u);
  EXPECT_EQ(calls[0]["type"], "function");
  const std::string name = calls[0]["function"]["name"];
  const json args = json::parse(calls[0]["function"]["arguments"].get<std::string>());
  if (name == "get_weather") {
    EXPECT_TRUE(args["unit"] == "C" || args["unit"] == "F") << args;
  } else {
    ASSERT_EQ(name, "get_time");
    EXPECT_TRUE(args["zone"] == "UTC" || args["zone"] == "CET") << args;
  }
}

// auto is lazy: the random model may write text; whatever it writes, the
// response is text or calls of the tools, never a broken call.
TEST_F(HermesToolCalls, AutoAnswersInTextOrCalls) {
  const json resp = json::parse(Post({{"max_tokens", 24}}));
  const json& choice = resp["choices"][0];
  const json& message = choice["message"];
  if (choice["finish_reason"] == "tool_calls") {
    ASSERT_GE(message["tool_calls"].size(), 1u) << resp.dump();
    for (const json& call : message["tool_calls"]) {
      EXPECT_TRUE(json::parse(call["function"]["arguments"].get<std::string>()).is_object());
    }
  } else {
    EXPECT_TRUE(choice["finish_reason"] == "stop" || choice["finish_reason"] == "length")
        << resp.dump();
    EXPECT_TRUE(message["content"].is_string()) << resp.dump();
    EXPECT_FALSE(message.contains("tool_calls")) << resp.dump();
  }
  EXPECT_LE(resp["usage"]["completion_tokens"].get<int>(), 24) << resp.dump();
}

TEST_F(HermesToolCalls, NamedFunctionStreamsItsCall) {
  const std::string body =
      Post({{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}},
            {"stream", true},
            {"parallel_tool_calls", false}});
  // Reassembled as the openai client does: by the call's index.
  std::map<int, json> calls;
  std::string finish;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    const std::string data = body.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") break;
    const json chunk = json::parse(data);
    const json& c = chunk["choices"][0];
    if (c["finish_reason"].is_string()) finish = c["finish_reason"];
    if (!c["delta"].contains("tool_calls")) continue;
    for (const json& d : c["delta"]["tool_calls"]) {
      json& call = calls[d["index"].get<int>()];
      if (d.contains("id")) call["id"] = d["id"];
      if (d["function"].contains("name")) call["name"] = d["function"]["name"];
      call["arguments"] =
          call.value("arguments", "") + d["function"]["arguments"].get<std::string>();
    }
  }
  EXPECT_EQ(finish, "tool_calls") << body;
  ASSERT_GE(calls.size(), 1u) << body;
  for (auto& [index, call] : calls) {
    EXPECT_EQ(call["name"], "get_time") << body;
    const json args = json::parse(call["arguments"].get<std::string>());
    EXPECT_TRUE(args["zone"] == "UTC" || args["zone"] == "CET") << args;
  }
}

}  // namespace
}  // namespace ellm::testing
