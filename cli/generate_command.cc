// ellm generate: run the model on a prompt and print only the generated
// text on stdout (streamed); progress and speed go to stderr. With --chat
// the prompt goes through the model's chat template (--chat-template NAME
// picks one and implies --chat); --messages gives a whole conversation.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "chat_template_flag.h"
#include "commands.h"
#include "ellm/base/json.h"
#include "ellm/engine/chat.h"
#include "ellm/engine/constraint.h"
#include "ellm/engine/engine.h"
#include "ellm/engine/reply.h"
#include "ellm/engine/sampler.h"
#include "flags.h"

namespace ellm::cli {
namespace {

constexpr const char* kUsage =
    "usage: ellm generate --model M (--prompt TEXT | --file F | --messages F.json)\n"
    "                     [--chat] [--chat-template NAME|FILE.jinja] [--system TEXT]\n"
    "                     [--max-tokens N] [--temperature T] [--top-k K] [--top-p P]\n"
    "                     [--min-p P] [--repeat-penalty R] [--seed S] [--threads N] [--ctx N]\n"
    "  --file F          the prompt is the contents of F ('-': standard input)\n"
    "  --messages F      a conversation, as a JSON array of {\"role\", \"content\"} objects\n"
    "                    ('-': standard input); implies --chat; a --prompt is a last user turn\n"
    "  --chat-template   gemma, llama3, chatml or a .jinja file instead of the model's own\n"
    "                    (implies --chat)\n"
    "  --json-schema F   the output is JSON that validates against the JSON Schema in F\n"
    "                    (grammar-constrained decoding; '-': standard input)\n"
    "  --json            the output is a JSON object (any keys)\n";

StatusOr<std::string> ReadInput(const std::string& path, const char* flag) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError(std::string(flag) + ": cannot read '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// An OpenAI-style messages array: [{"role": "user", "content": "..."}, ...].
StatusOr<std::vector<ChatMessage>> ParseMessages(const std::string& text, const std::string& path) {
  const std::string where = "--messages '" + path + "'";
  StatusOr<nlohmann::json> parsed = ParseJson(text);
  if (!parsed.ok()) return parsed.status().WithContext(where);
  const nlohmann::json& j = *parsed;
  if (!j.is_array()) return InvalidArgumentError(where + ": expected a JSON array of messages");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& m = j[i];
    const std::string at = where + ": message " + std::to_string(i);
    if (!m.is_object()) return InvalidArgumentError(at + " is not an object");
    if (!m.contains("role") || !m["role"].is_string()) {
      return InvalidArgumentError(at + " has no string \"role\"");
    }
    if (!m.contains("content") || !m["content"].is_string()) {
      return InvalidArgumentError(at + " has no string \"content\"");
    }
    out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  if (out.empty()) return InvalidArgumentError(where + ": the conversation is empty");
  return out;
}

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

Status Run(const Flags& f) {
  const std::string model_path = f.Get("model");
  const int sources = f.Has("prompt") + f.Has("file");
  if (model_path.empty() || (sources == 0 && !f.Has("messages"))) {
    return InvalidArgumentError("--model and one of --prompt, --file or --messages are required");
  }
  if (sources > 1) return InvalidArgumentError("--prompt and --file are alternatives");
  std::vector<ChatMessage> messages;
  if (f.Has("messages")) {
    ELLM_ASSIGN_OR_RETURN(std::string json, ReadInput(f.Get("messages"), "--messages"));
    ELLM_ASSIGN_OR_RETURN(messages, ParseMessages(json, f.Get("messages")));
  }
  std::string prompt = f.Get("prompt");
  if (f.Has("file")) {
    ELLM_ASSIGN_OR_RETURN(prompt, ReadInput(f.Get("file"), "--file"));
  }
  ELLM_ASSIGN_OR_RETURN(int64_t threads, f.GetInt("threads", 0));
  ELLM_ASSIGN_OR_RETURN(int64_t ctx, f.GetInt("ctx", 4096));
  ELLM_ASSIGN_OR_RETURN(int64_t max_tokens, f.GetInt("max-tokens", 256));
  SamplingOptions so;
  ELLM_ASSIGN_OR_RETURN(double temperature, f.GetDouble("temperature", 0.0));
  ELLM_ASSIGN_OR_RETURN(int64_t top_k, f.GetInt("top-k", so.top_k));
  ELLM_ASSIGN_OR_RETURN(double top_p, f.GetDouble("top-p", so.top_p));
  ELLM_ASSIGN_OR_RETURN(double min_p, f.GetDouble("min-p", so.min_p));
  ELLM_ASSIGN_OR_RETURN(double repeat_penalty, f.GetDouble("repeat-penalty", so.repeat_penalty));
  ELLM_ASSIGN_OR_RETURN(int64_t seed, f.GetInt("seed", 0));
  so.temperature = static_cast<float>(temperature);
  so.top_k = static_cast<int>(top_k);
  so.top_p = static_cast<float>(top_p);
  so.min_p = static_cast<float>(min_p);
  so.repeat_penalty = static_cast<float>(repeat_penalty);
  so.seed = static_cast<uint64_t>(seed);

  ELLM_ASSIGN_OR_RETURN(std::string chat_template, ChatTemplateFromFlags(f, ""));

  ELLM_ASSIGN_OR_RETURN(auto engine, Engine::Load(model_path, {.threads = static_cast<int>(threads),
                                                               .chat_template = chat_template}));
  const Tokenizer& tok = engine->tokenizer();
  bool chat = f.Has("chat") || !chat_template.empty() || !messages.empty();
  if (chat) {
    ELLM_RETURN_IF_ERROR(engine->chat_template().status());
    if (f.Has("system")) messages.insert(messages.begin(), ChatMessage{"system", f.Get("system")});
    if (sources > 0) messages.push_back(ChatMessage{"user", prompt});
    ELLM_ASSIGN_OR_RETURN(prompt, engine->chat_template()->Apply(messages, true));
  }
  std::vector<TokenId> ids = tok.Encode(prompt, true, chat);
  ELLM_ASSIGN_OR_RETURN(auto session, engine->NewSession({.n_ctx = ctx}));
  if (static_cast<int64_t>(ids.size()) >= ctx) {
    return OutOfRangeError("the prompt has " + std::to_string(ids.size()) + " tokens; --ctx " +
                           std::to_string(ctx) + " leaves no room to generate");
  }
  // Grammar-constrained decoding: every token the schema cannot continue
  // with is masked before sampling; its cost is timed and reported.
  std::unique_ptr<JsonConstraint> constraint;
  const auto setup0 = std::chrono::steady_clock::now();
  if (f.Has("json-schema")) {
    ELLM_ASSIGN_OR_RETURN(std::string schema, ReadInput(f.Get("json-schema"), "--json-schema"));
    auto c = JsonConstraint::FromSchema(schema, tok);
    // A schema we cannot enforce is a bad argument, whatever its code.
    if (!c.ok()) {
      return InvalidArgumentError("--json-schema '" + f.Get("json-schema") +
                                  "': " + c.status().message());
    }
    constraint = std::move(*c);
  } else if (f.Has("json")) {
    constraint = JsonConstraint::AnyObject(tok);
  }
  const double setup_seconds = Seconds(setup0, std::chrono::steady_clock::now());
  ReplyOptions ro;
  ro.sampling = so;
  ro.max_tokens = max_tokens;
  ro.constraint = constraint.get();
  // The text streams to stdout as it is released (whole characters).
  ELLM_ASSIGN_OR_RETURN(Reply reply, GenerateReply(*session, tok, ids, ro, [](std::string_view t) {
                          std::fwrite(t.data(), 1, t.size(), stdout);
                          std::fflush(stdout);
                          return true;
                        }));
  std::fputs("\n", stdout);
  std::fflush(stdout);
  const int64_t generated = reply.completion_tokens;
  if (constraint) {
    if (!constraint->Complete()) {
      return ResourceExhaustedError("the JSON was not complete after " + std::to_string(generated) +
                                    " tokens; raise --max-tokens");
    }
    // Per token against decode's own time per token (the constraint's share
    // of each decode step); setup (the vocabulary sorted once) apart.
    const double per_token = reply.constraint_seconds / static_cast<double>(generated + 1);
    const double decode_per_token =
        generated > 0 ? reply.decode_seconds / static_cast<double>(generated) : 0;
    std::fprintf(stderr, "constraint: %.2f ms/token (%.1f%% of a decode step), setup %.0f ms\n",
                 1000.0 * per_token,
                 decode_per_token > 0 ? 100.0 * per_token / decode_per_token : 0.0,
                 1000.0 * setup_seconds);
  }
  std::fprintf(
      stderr,
      "prefill: %zu tokens, %.1f tokens/s; decode: %lld tokens, %.1f tokens/s (%d threads)\n",
      ids.size(), static_cast<double>(ids.size()) / reply.prefill_seconds,
      static_cast<long long>(generated),
      generated > 0 ? static_cast<double>(generated) / reply.decode_seconds : 0.0,
      engine->threads());
  return OkStatus();
}

}  // namespace

int Generate(const Args& args) {
  auto flags = Flags::Parse(args,
                            {"model", "prompt", "file", "messages", "system", "max-tokens",
                             "temperature", "top-k", "top-p", "min-p", "repeat-penalty", "seed",
                             "threads", "ctx", "json-schema", kChatTemplateFlag},
                            {"chat", "json"});
  if (!flags.ok()) {
    std::fprintf(stderr, "ellm generate: %s\n%s", flags.status().message().c_str(), kUsage);
    return 2;
  }
  Status s = Run(*flags);
  if (!s.ok()) {
    std::fprintf(stderr, "ellm generate: %s\n", s.ToString().c_str());
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace ellm::cli
