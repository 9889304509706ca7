#include "ellm/engine/chat.h"

#include <algorithm>

#include "model/arch_spec.h"

namespace ellm {
namespace {

struct Known {
  ChatFormat format;
  std::string_view name;
  std::string_view marker;  // found in tokenizer.chat_template
};

constexpr Known kKnown[] = {
    {ChatFormat::kGemma, "gemma", "<start_of_turn>"},
    {ChatFormat::kLlama3, "llama3", "<|start_header_id|>"},
    {ChatFormat::kChatMl, "chatml", "<|im_start|>"},
};

// As llama.cpp's trim() of message contents in its Llama 3 template.
std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r\f\v");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\n\r\f\v");
  return s.substr(b, e - b + 1);
}

bool VocabularyHas(const gguf::GgufFile& file, std::string_view token) {
  auto tokens = file.GetArray("tokenizer.ggml.tokens", gguf::ValueType::kString);
  if (!tokens.ok()) return false;
  const auto& v = (*tokens)->strings;
  return std::find(v.begin(), v.end(), token) != v.end();
}

}  // namespace

StatusOr<ChatFormat> ParseChatFormat(const std::string& name) {
  std::string names;
  for (const Known& k : kKnown) {
    if (name == k.name) return k.format;
    names += (names.empty() ? "" : ", ") + std::string(k.name);
  }
  return InvalidArgumentError("unknown chat template '" + name + "'; known: " + names +
                              " (or a path to a .jinja file)");
}

std::string_view ChatFormatName(ChatFormat format) {
  for (const Known& k : kKnown) {
    if (k.format == format) return k.name;
  }
  return "?";
}

StatusOr<ChatFormat> DetectChatFormat(const gguf::GgufFile& file) {
  auto tmpl = file.GetString("tokenizer.chat_template");
  if (tmpl.ok()) {
    for (const Known& k : kKnown) {
      if (tmpl->find(k.marker) != std::string_view::npos) return k.format;
    }
  }
  // No template, or one we do not recognise: the family's own, where it has
  // only one. Llama 2 and 3 share the architecture; Llama 3's vocabulary has
  // its header tokens.
  auto arch = file.GetString("general.architecture");
  const model::ArchSpec* spec = arch.ok() ? model::FindArch(*arch) : nullptr;
  switch (spec != nullptr ? spec->chat : model::ChatFallback::kNone) {
    case model::ChatFallback::kGemma:
      return ChatFormat::kGemma;
    case model::ChatFallback::kChatMl:
      return ChatFormat::kChatMl;
    case model::ChatFallback::kLlama3:
      if (VocabularyHas(file, "<|start_header_id|>")) return ChatFormat::kLlama3;
      break;
    case model::ChatFallback::kNone:
      break;
  }
  return UnimplementedError(
      "model '" + file.path() + "': cannot tell its chat template (" +
      (tmpl.ok() ? "tokenizer.chat_template not recognised" : "no tokenizer.chat_template") +
      "); name one explicitly (gemma, llama3, chatml)");
}

std::string RenderChat(ChatFormat format, const std::vector<ChatMessage>& messages,
                       bool add_generation_prompt) {
  std::string out;
  switch (format) {
    case ChatFormat::kGemma: {
      // Gemma has no system role: as llama.cpp does, a system message is
      // prepended to the first user turn, separated by a blank line.
      std::string system;
      for (const ChatMessage& m : messages) {
        if (m.role == "system") {
          system += m.content;
          continue;
        }
        const bool is_model = m.role == "assistant" || m.role == "model";
        out += "<start_of_turn>";
        out += is_model ? "model" : "user";
        out += "\n";
        if (!system.empty() && !is_model) {
          out += system + "\n\n";
          system.clear();
        }
        out += m.content;
        out += "<end_of_turn>\n";
      }
      if (add_generation_prompt) out += "<start_of_turn>model\n";
      break;
    }
    case ChatFormat::kLlama3:
      // llama.cpp's LLM_CHAT_TEMPLATE_LLAMA_3 (src/llama-chat.cpp): contents
      // trimmed; <|begin_of_text|> is the tokenizer's BOS.
      for (const ChatMessage& m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + Trim(m.content) +
               "<|eot_id|>";
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case ChatFormat::kChatMl:
      // llama.cpp's LLM_CHAT_TEMPLATE_CHATML. Qwen 2.5's own Jinja template
      // adds a default system message when there is none; llama.cpp's
      // built-in (which we follow) does not.
      for (const ChatMessage& m : messages) {
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      }
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      break;
  }
  return out;
}

}  // namespace ellm
