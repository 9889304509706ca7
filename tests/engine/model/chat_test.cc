#include "ellm/engine/chat.h"

#include <gtest/gtest.h>

#include "gguf_builder.h"

namespace ellm {
namespace {

TEST(ChatTemplate, GemmaTurnsAndSystemPrefix) {
  std::string s = RenderChat(
      ChatFormat::kGemma,
      {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}}, true);
  EXPECT_EQ(s,
            "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
            "<start_of_turn>model\nHello<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n"
            "<start_of_turn>model\n");
  EXPECT_TRUE(ParseChatFormat("gemma").ok());
  EXPECT_FALSE(ParseChatFormat("nope").ok());
}

TEST(ChatTemplate, Llama3HeadersTrimmedContents) {
  std::string s =
      RenderChat(ChatFormat::kLlama3, {{"system", "Be brief. "}, {"user", "Hi\n"}}, true);
  EXPECT_EQ(s,
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, ChatMlTurns) {
  std::string s = RenderChat(
      ChatFormat::kChatMl, {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}}, true);
  EXPECT_EQ(s,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, ParsesEveryNameItPrints) {
  for (ChatFormat f : {ChatFormat::kGemma, ChatFormat::kLlama3, ChatFormat::kChatMl}) {
    auto parsed = ParseChatFormat(std::string(ChatFormatName(f)));
    ASSERT_TRUE(parsed.ok()) << ChatFormatName(f);
    EXPECT_EQ(*parsed, f);
  }
  auto bad = ParseChatFormat("llama2");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gemma, llama3, chatml"), std::string::npos);
}

// Recognised from the template's markers, else from the family.
TEST(ChatTemplate, DetectsFromTemplateOrFamily) {
  struct Case {
    std::string arch, tmpl;
    std::vector<std::string> tokens;
    bool ok;
    ChatFormat want;
  };
  const std::vector<Case> cases = {
      {"llama", "{{ '<|start_header_id|>' + message['role'] }}", {}, true, ChatFormat::kLlama3},
      {"qwen2", "{{ '<|im_start|>' + message['role'] }}", {}, true, ChatFormat::kChatMl},
      {"llama", "{{ '<|im_start|>' }}", {}, true, ChatFormat::kChatMl},
      {"qwen2", "", {}, true, ChatFormat::kChatMl},
      {"llama", "", {"a", "<|start_header_id|>"}, true, ChatFormat::kLlama3},
      {"llama", "", {"a", "b"}, false, ChatFormat::kGemma},        // Llama 2? cannot tell
      {"llama", "[INST]", {"a", "b"}, false, ChatFormat::kGemma},  // unknown template
      // The family's own, from its architecture spec (arch_spec.h `chat`).
      {"gemma3", "", {}, true, ChatFormat::kGemma},
      {"phi3", "", {}, false, ChatFormat::kGemma},     // no fallback declared
      {"mystery", "", {}, false, ChatFormat::kGemma},  // no such family
  };
  for (const Case& c : cases) {
    ellm::testing::GgufBuilder b;
    b.Str("general.architecture", c.arch);
    if (!c.tmpl.empty()) b.Str("tokenizer.chat_template", c.tmpl);
    if (!c.tokens.empty()) b.StrArray("tokenizer.ggml.tokens", c.tokens);
    std::vector<uint8_t> bytes = b.Build();
    auto file = gguf::GgufFile::Parse(bytes, "test.gguf");
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto f = DetectChatFormat(*file);
    ASSERT_EQ(f.ok(), c.ok) << c.arch << " '" << c.tmpl << "'";
    if (c.ok) {
      EXPECT_EQ(*f, c.want) << c.arch << " '" << c.tmpl << "'";
    } else {
      EXPECT_NE(f.status().message().find("name one explicitly"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace ellm
