// --chat-template NAME, for the commands that put prompts through a chat
// template: generate (with --chat), and summarize, compare and batch
// (through LocalRuntime, over the config's model.chat_template). NAME is
// one ParseChatFormat knows (gemma, llama3, chatml); without the flag the
// template is the configured one, else recognised from the model file.
#pragma once

#include <string>

#include "ellm/base/status.h"
#include "flags.h"

namespace ellm::cli {

inline constexpr const char* kChatTemplateFlag = "chat-template";

// The name given with --chat-template, else `fallback` (empty = recognise
// it from the file). An unknown name is InvalidArgument naming the flag and
// the name and listing the known ones; checked before any model is loaded.
StatusOr<std::string> ChatTemplateFromFlags(const Flags& f, const std::string& fallback);

}  // namespace ellm::cli
