#include "ellm/engine/chat.h"

namespace ellm {

StatusOr<ChatFormat> ParseChatFormat(const std::string& name) {
  if (name == "gemma") return ChatFormat::kGemma;
  return InvalidArgumentError("unknown chat template '" + name + "'; known: gemma");
}

StatusOr<ChatFormat> DetectChatFormat(const gguf::GgufFile& file) {
  auto tmpl = file.GetString("tokenizer.chat_template");
  if (tmpl.ok() && tmpl->find("<start_of_turn>") != std::string_view::npos)
    return ChatFormat::kGemma;
  auto arch = file.GetString("general.architecture");
  if (arch.ok() && arch->substr(0, 5) == "gemma") return ChatFormat::kGemma;
  return UnimplementedError("model '" + file.path() +
                            "': cannot tell its chat template (no recognised "
                            "tokenizer.chat_template); name one explicitly");
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
  }
  return out;
}

}  // namespace ellm
