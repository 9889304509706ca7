// --chat-template NAME|FILE.jinja, for the commands that put prompts through
// a chat template: generate (with --chat), and summarize, compare and batch
// (through OpenLocalRuntime, over the config's model.chat_template). NAME is a
// built-in format (gemma, llama3, chatml), FILE.jinja a Jinja template;
// without the flag the template is the configured one, else the model
// file's own tokenizer.chat_template, else a built-in recognised from it.
#pragma once

#include <string>

#include "ellm/base/status.h"
#include "flags.h"

namespace ellm::cli {

inline constexpr const char* kChatTemplateFlag = "chat-template";

// The name given with --chat-template, else `fallback` (empty = the file's
// own). An unknown name, or a .jinja file that cannot be read or parsed, is
// an error naming the flag; checked before any model is loaded.
StatusOr<std::string> ChatTemplateFromFlags(const Flags& f, const std::string& fallback);

}  // namespace ellm::cli
