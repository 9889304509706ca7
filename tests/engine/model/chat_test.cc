#include "ellm/engine/chat.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ellm
