// ChatTemplate: a model's chat template, Jinja (engine/chat/jinja.h) or one
// of the built-in formats (chat.cc).
#include <fstream>
#include <sstream>

#include "chat/jinja.h"
#include "ellm/engine/chat.h"

namespace ellm {
namespace {

StatusOr<std::string> ReadTemplateFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  // InvalidArgument, not NotFound: the path is a setting the user gave.
  if (!f) return InvalidArgumentError("chat template file '" + path + "' cannot be read");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

bool IsChatTemplateFile(const std::string& spec) {
  return spec.size() > 6 && spec.compare(spec.size() - 6, 6, ".jinja") == 0;
}

Status ValidateChatTemplateSpec(const std::string& spec) {
  if (spec.empty()) return OkStatus();
  if (!IsChatTemplateFile(spec)) return ParseChatFormat(spec).status();
  ELLM_ASSIGN_OR_RETURN(std::string source, ReadTemplateFile(spec));
  return jinja::Template::Parse(source).status().WithContext("'" + spec + "'");
}

StatusOr<ChatTemplate> ChatTemplate::FromJinja(std::string_view source, std::string origin,
                                               const Tokenizer& tokenizer) {
  auto parsed = jinja::Template::Parse(source);
  if (!parsed.ok()) return parsed.status().WithContext(origin);
  ChatTemplate t;
  t.name_ = std::move(origin);
  t.jinja_ = std::make_shared<const jinja::Template>(std::move(*parsed));
  // As llama.cpp (common_chat_templates_init): the texts of BOS and EOS with
  // special tokens rendered.
  if (tokenizer.bos() >= 0) t.bos_token_ = tokenizer.TokenToPiece(tokenizer.bos(), true);
  if (tokenizer.eos() >= 0) t.eos_token_ = tokenizer.TokenToPiece(tokenizer.eos(), true);
  t.strip_bos_ = tokenizer.add_bos();
  return t;
}

ChatTemplate ChatTemplate::FromFormat(ChatFormat format) {
  ChatTemplate t;
  t.format_ = format;
  t.name_ = std::string(ChatFormatName(format)) + " (built-in)";
  return t;
}

StatusOr<ChatTemplate> ChatTemplate::FromGguf(const gguf::GgufFile& file,
                                              const Tokenizer& tokenizer, const std::string& spec) {
  if (IsChatTemplateFile(spec)) {
    ELLM_ASSIGN_OR_RETURN(std::string source, ReadTemplateFile(spec));
    return FromJinja(source, spec, tokenizer);
  }
  if (!spec.empty()) {
    ELLM_ASSIGN_OR_RETURN(ChatFormat format, ParseChatFormat(spec));
    return FromFormat(format);
  }
  auto source = file.GetString("tokenizer.chat_template");
  if (source.ok() && !source->empty()) {
    return FromJinja(*source, "tokenizer.chat_template of '" + file.path() + "'", tokenizer);
  }
  ELLM_ASSIGN_OR_RETURN(ChatFormat format, DetectChatFormat(file));
  return FromFormat(format);
}

StatusOr<std::string> ChatTemplate::Apply(const std::vector<ChatMessage>& messages,
                                          bool add_generation_prompt) const {
  if (!jinja_) return RenderChat(format_, messages, add_generation_prompt);
  jinja::Array list;
  for (const ChatMessage& m : messages) {
    jinja::Object o;
    o.Set("role", m.role);
    o.Set("content", m.content);
    list.emplace_back(std::move(o));
  }
  jinja::Object context;
  context.Set("messages", std::move(list));
  context.Set("add_generation_prompt", add_generation_prompt);
  context.Set("bos_token", bos_token_);
  context.Set("eos_token", eos_token_);
  auto text = jinja_->Render(context, jinja::RenderOptions{});
  if (!text.ok()) return text.status().WithContext(name_);
  if (strip_bos_ && !bos_token_.empty() && text->rfind(bos_token_, 0) == 0) {
    text->erase(0, bos_token_.size());
  }
  return text;
}

}  // namespace ellm
