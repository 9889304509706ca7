#include "chat_template_flag.h"

#include "ellm/engine/chat.h"

namespace ellm::cli {

StatusOr<std::string> ChatTemplateFromFlags(const Flags& f, const std::string& fallback) {
  if (!f.Has(kChatTemplateFlag)) return fallback;
  std::string name = f.Get(kChatTemplateFlag);
  if (Status s = ValidateChatTemplateSpec(name); !s.ok()) return s.WithContext("--chat-template");
  return name;
}

}  // namespace ellm::cli
