// The tokenizer on the real Gemma 3 270M vocabulary: hand-checked facts of
// llama.cpp's behaviour (label `model`; needs scripts/fetch-model). The full
// comparison with llama.cpp's output is tokenizer_reference_test.cc.
#include <gtest/gtest.h>

#include <memory>

#include "ellm/engine/tokenizer.h"
#include "test_env.h"

namespace ellm {
namespace {

// Gemma 3's vocabulary: byte tokens <0x00>..<0xFF> start at id 238.
constexpr TokenId kFirstByteToken = 238;
constexpr TokenId kStartOfTurn = 105, kEndOfTurn = 106, kNewline = 107, kTwoSpaces = 138;
constexpr TokenId kEndStrike = 212;  // "</s>", an HTML tag in Gemma's vocabulary

class GemmaTokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string path = ::ellm::testing::ModelPath();
    if (path.empty()) return;
    auto file = gguf::GgufFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto tok = Tokenizer::FromGguf(*file);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tok_ = std::move(tok).value().release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    tok_ = nullptr;
  }
  void SetUp() override {
    ELLM_REQUIRE_MODEL(path);
    ASSERT_NE(tok_, nullptr);
  }
  static const Tokenizer& tok() { return *tok_; }

 private:
  static Tokenizer* tok_;
};
Tokenizer* GemmaTokenizer::tok_ = nullptr;

TEST_F(GemmaTokenizer, ReadsTheVocabularyFacts) {
  EXPECT_EQ(tok().vocab_size(), 262144);
  EXPECT_EQ(tok().bos(), 2);
  EXPECT_EQ(tok().eos(), 1);
  EXPECT_TRUE(tok().add_bos());
  EXPECT_EQ(tok().Find("<start_of_turn>"), kStartOfTurn);
  EXPECT_EQ(tok().type(kStartOfTurn), TokenType::kControl);
  EXPECT_EQ(tok().type(kNewline), TokenType::kUserDefined);
  EXPECT_EQ(tok().type(kFirstByteToken), TokenType::kByte);
  EXPECT_TRUE(tok().IsEndOfGeneration(1));
  EXPECT_TRUE(tok().IsEndOfGeneration(kEndOfTurn));
  EXPECT_FALSE(tok().IsEndOfGeneration(kStartOfTurn));
  EXPECT_FALSE(tok().IsEndOfGeneration(-1));
}

TEST_F(GemmaTokenizer, PrependsBosOnlyWhenAsked) {
  auto with = tok().Encode("Hello", true, false);
  auto without = tok().Encode("Hello", false, false);
  ASSERT_EQ(with.size(), without.size() + 1);
  EXPECT_EQ(with[0], 2);
  EXPECT_EQ(std::vector<TokenId>(with.begin() + 1, with.end()), without);
  EXPECT_EQ(tok().Encode("", true, false), std::vector<TokenId>{2});
  EXPECT_TRUE(tok().Encode("", false, false).empty());
  // add_space_prefix is false for Gemma: no "▁" before the first word.
  ASSERT_EQ(without.size(), 1u);
  EXPECT_EQ(tok().TokenToPiece(without[0]), "Hello");
}

TEST_F(GemmaTokenizer, RecognisesControlTokensOnlyWithParseSpecial) {
  const std::string text = "<start_of_turn>user\nHi<end_of_turn>";
  auto special = tok().Encode(text, true, true);
  ASSERT_GE(special.size(), 5u);
  EXPECT_EQ(special[0], 2);
  EXPECT_EQ(special[1], kStartOfTurn);
  EXPECT_EQ(special[2], tok().Find("user"));
  EXPECT_EQ(special[3], kNewline);
  EXPECT_EQ(special.back(), kEndOfTurn);

  auto plain = tok().Encode(text, true, false);
  for (TokenId id : plain) {
    EXPECT_NE(id, kStartOfTurn);
    EXPECT_NE(id, kEndOfTurn);
  }
  EXPECT_EQ(tok().Decode(plain), text);
  // Control tokens render empty unless asked for.
  EXPECT_EQ(tok().Decode(special), "user\nHi");
  EXPECT_EQ(tok().Decode(special, true), "<bos>" + text);
}

TEST_F(GemmaTokenizer, SplitsUserDefinedTokensEvenWithoutParseSpecial) {
  // "\n" and runs of spaces are user-defined tokens in Gemma 3.
  auto ids = tok().Encode("a  b\n", false, false);
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[1], kTwoSpaces);
  EXPECT_EQ(ids[3], kNewline);
}

// llama.cpp lists "</s>" among end-of-generation texts and makes it a control
// token, so in Gemma 3 (where it is a user-defined HTML tag) it is split out
// only with parse_special, and renders empty unless render_special.
TEST_F(GemmaTokenizer, EndStrikeTagIsTreatedAsControlLikeLlamaCpp) {
  EXPECT_EQ(tok().Encode("</s>", false, true), std::vector<TokenId>{kEndStrike});
  EXPECT_NE(tok().Encode("</s>", false, false), std::vector<TokenId>{kEndStrike});
  EXPECT_TRUE(tok().IsEndOfGeneration(kEndStrike));
  EXPECT_EQ(tok().TokenToPiece(kEndStrike), "");
  EXPECT_EQ(tok().TokenToPiece(kEndStrike, true), "</s>");
}

TEST_F(GemmaTokenizer, FallsBackToByteTokensForUnknownCharacters) {
  // U+10900 PHOENICIAN LETTER ALF is not in the vocabulary: F0 90 A4 80.
  auto ids = tok().Encode("\xF0\x90\xA4\x80", false, false);
  EXPECT_EQ(ids, (std::vector<TokenId>{kFirstByteToken + 0xF0, kFirstByteToken + 0x90,
                                       kFirstByteToken + 0xA4, kFirstByteToken + 0x80}));
  EXPECT_EQ(tok().Decode(ids), "\xF0\x90\xA4\x80");
  // A stray continuation byte is its own symbol and becomes its byte token.
  EXPECT_EQ(tok().Encode("\x80", false, false), std::vector<TokenId>{kFirstByteToken + 0x80});
  EXPECT_EQ(tok().TokenToPiece(kFirstByteToken + 'A'), "A");
}

TEST_F(GemmaTokenizer, DecodeInvertsEncode) {
  const std::vector<std::string> texts = {
      "Hello, world!",
      " leading space",
      "trailing space ",
      "   three leading spaces",
      "tabs\tand\t\ttabs",
      "new\nlines\n\n\nand\r\nCRLF",
      std::string(100, ' ') + "x" + std::string(70, '\n'),
      "emoji 😀👍🏽 👨‍👩‍👧‍👦 flags 🇩🇪🇯🇵",
      "日本語のテキストと中文文本，还有한국어.",
      "Ünïcödé: café naïve façade Ελληνικά русский עברית العربية हिन्दी",
      "math ∑∫√∞ ≤≥≠ and symbols ©®™ §¶",
      "code: for (int i = 0; i < n; ++i) { x[i] = y[i] * 2; }",
      "html <table><tr><td>cell</td></tr></table> <b>bold</b>",
      "<start_of_turn>user\nnot special here<end_of_turn>",
      "numbers 3.14159 1,000,000 0x1F 1e-9",
      "\xF0\x90\xA4\x80 phoenician and a lone \xE2\xBF\x95 radical",
  };
  for (const std::string& t : texts) {
    EXPECT_EQ(tok().Decode(tok().Encode(t, true, false)), t);
    EXPECT_EQ(tok().Decode(tok().Encode(t, false, true)),
              t.find("<start_of_turn>") == 0 ? "user\nnot special here" : t);
  }
  // A literal U+2581 in the text is indistinguishable from an escaped space.
  EXPECT_EQ(tok().Decode(tok().Encode("a\xE2\x96\x81"
                                      "b",
                                      false, false)),
            "a b");
}

}  // namespace
}  // namespace ellm
