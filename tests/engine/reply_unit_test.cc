// CompleteUtf8Prefix: streamed text is cut only between whole characters.
#include <gtest/gtest.h>

#include "ellm/engine/reply.h"

namespace ellm {
namespace {

TEST(CompleteUtf8Prefix, HoldsBackOnlyAnUnfinishedLastCharacter) {
  EXPECT_EQ(CompleteUtf8Prefix(""), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("abc"), 3u);
  const std::string euro = "\xE2\x82\xAC";       // 3 bytes
  const std::string smile = "\xF0\x9F\x98\x80";  // 4 bytes
  EXPECT_EQ(CompleteUtf8Prefix("a" + euro), 4u);
  EXPECT_EQ(CompleteUtf8Prefix("a" + euro.substr(0, 1)), 1u);
  EXPECT_EQ(CompleteUtf8Prefix("a" + euro.substr(0, 2)), 1u);
  EXPECT_EQ(CompleteUtf8Prefix("ab" + smile.substr(0, 3)), 2u);
  EXPECT_EQ(CompleteUtf8Prefix(smile), 4u);
  EXPECT_EQ(CompleteUtf8Prefix("\xC3\xA9"), 2u);  // é
  EXPECT_EQ(CompleteUtf8Prefix("x\xC3"), 1u);
}

TEST(FinishReasonName, AreOpenAiNames) {
  EXPECT_EQ(FinishReasonName(FinishReason::kStop), "stop");
  EXPECT_EQ(FinishReasonName(FinishReason::kLength), "length");
}

}  // namespace
}  // namespace ellm
