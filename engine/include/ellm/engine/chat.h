// Chat templates: turning a conversation into the exact text a model was
// trained on. A file's own tokenizer.chat_template (Jinja) is rendered by our
// interpreter as Python's jinja2 renders it (engine/chat/README.md); files
// without one use a built-in format recognised from the architecture.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/gguf.h"
#include "ellm/engine/tokenizer.h"

namespace ellm {

// The built-in formats, for files without a template. Serialized in configs
// by name (model.chat_template: gemma, llama3, chatml); append-only.
enum class ChatFormat {
  kGemma,   // <start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n
  kLlama3,  // <|start_header_id|>user<|end_header_id|>\n\n...<|eot_id|>
  kChatMl,  // <|im_start|>user\n...<|im_end|>\n<|im_start|>assistant\n (Qwen)
};

struct ChatMessage {
  std::string role;  // system, user, assistant, tool
  std::string content;
  // assistant: the calls it made, a JSON array as OpenAI sends them
  // ([{"id", "type": "function", "function": {"name", "arguments"}}]);
  // empty: none. A Jinja template sees them as message.tool_calls, with
  // arguments that are a JSON object's text parsed into that object (as
  // Hugging Face's templates expect), and content None when it is empty.
  std::string tool_calls;
  // tool: the id of the call this message answers, and the function's name.
  std::string tool_call_id;
  std::string name;
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

namespace jinja {
class Template;
}

// The template a model's conversations are rendered with: a Jinja template
// (the file's own, or a .jinja file a user names) or a built-in format.
// Copyable; thread-safe to render from several threads.
class ChatTemplate {
 public:
  // `spec` chooses: "" = the file's tokenizer.chat_template when it has one,
  // else the built-in format DetectChatFormat recognises; a built-in name
  // (gemma, llama3, chatml); or a path ending in ".jinja". A template that
  // does not parse is an error naming its line, never a fallback.
  // bos_token/eos_token are the tokenizer's texts for them.
  static StatusOr<ChatTemplate> FromGguf(const gguf::GgufFile& file, const Tokenizer& tokenizer,
                                         const std::string& spec);
  // `origin` names the source in errors and in name().
  static StatusOr<ChatTemplate> FromJinja(std::string_view source, std::string origin,
                                          const Tokenizer& tokenizer);
  static ChatTemplate FromFormat(ChatFormat format);

  // The prompt text, without the BOS that the tokenizer adds (as llama.cpp,
  // a template's leading bos_token is dropped when the vocabulary adds BOS).
  // It contains control tokens: tokenize with parse_special = true. Errors:
  // the template's own raise_exception (e.g. roles that do not alternate),
  // or a construct it uses that we do not support, with its line.
  // `tools`: a JSON array of OpenAI's tool definitions ({"type":
  // "function", "function": {"name", "description", "parameters"}}), given
  // to a Jinja template as `tools`; empty: none. Built-in formats ignore
  // tools and tool calls.
  StatusOr<std::string> Apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                              std::string_view tools = {}) const;
  // The Jinja template reads `tools` (a template written for function
  // calling, e.g. Qwen 2.5's, Hermes', Llama 3.1's); false for built-ins
  // and templates that ignore tools (Gemma 3's).
  bool handles_tools() const { return handles_tools_; }
  // The Jinja source ("" for a built-in format): callers recognise a
  // template's own conventions in it (the server, its tool-call syntax).
  const std::string& source() const { return source_; }

  // "gemma (built-in)", "tokenizer.chat_template", or the .jinja path.
  const std::string& name() const { return name_; }
  bool is_jinja() const { return jinja_ != nullptr; }

 private:
  ChatTemplate() = default;
  std::string name_;
  ChatFormat format_ = ChatFormat::kGemma;
  std::shared_ptr<const jinja::Template> jinja_;  // null: the built-in format_
  std::string bos_token_, eos_token_;
  bool strip_bos_ = false;
  bool handles_tools_ = false;
  std::string source_;
};

// True when `spec` names a Jinja file rather than a built-in format.
bool IsChatTemplateFile(const std::string& spec);
// Checks a spec as config and flags do before a model is loaded: a known
// built-in name, or a readable .jinja file that parses.
Status ValidateChatTemplateSpec(const std::string& spec);

}  // namespace ellm
