// Chat templates: turning a conversation into the exact text a model was
// trained on. Recognised from the file's tokenizer.chat_template (by the
// markers it uses) or, failing that, from the architecture.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/gguf.h"

namespace ellm {

// Serialized in configs by name (model.chat_template: gemma, llama3,
// chatml); append-only.
enum class ChatFormat {
  kGemma,   // <start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n
  kLlama3,  // <|start_header_id|>user<|end_header_id|>\n\n...<|eot_id|>
  kChatMl,  // <|im_start|>user\n...<|im_end|>\n<|im_start|>assistant\n (Qwen)
};

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};

// Recognises the template by the markers in tokenizer.chat_template, else
// by the family (gemma*: gemma; qwen2: chatml; llama with Llama 3's header
// tokens in its vocabulary: llama3); UNIMPLEMENTED when it cannot tell.
StatusOr<ChatFormat> DetectChatFormat(const gguf::GgufFile& file);
// "gemma", "llama3", "chatml"; the error lists them.
StatusOr<ChatFormat> ParseChatFormat(const std::string& name);
std::string_view ChatFormatName(ChatFormat format);

// The prompt text (without BOS, which the tokenizer adds). With
// add_generation_prompt the text ends where the model's reply begins.
// The text contains control tokens: tokenize it with parse_special = true.
std::string RenderChat(ChatFormat format, const std::vector<ChatMessage>& messages,
                       bool add_generation_prompt);

}  // namespace ellm
