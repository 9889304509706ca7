// Chat templates: turning a conversation into the exact text a model was
// trained on. Recognised from the file's tokenizer.chat_template (by the
// markers it uses) or, failing that, from the architecture.
#pragma once

#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/gguf.h"

namespace ellm {

// Serialized in configs (chat_template: gemma); append-only.
enum class ChatFormat {
  kGemma,  // <start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n
};

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};

StatusOr<ChatFormat> DetectChatFormat(const gguf::GgufFile& file);
StatusOr<ChatFormat> ParseChatFormat(const std::string& name);

// The prompt text (without BOS, which the tokenizer adds). With
// add_generation_prompt the text ends where the model's reply begins.
// The text contains control tokens: tokenize it with parse_special = true.
std::string RenderChat(ChatFormat format, const std::vector<ChatMessage>& messages,
                       bool add_generation_prompt);

}  // namespace ellm
