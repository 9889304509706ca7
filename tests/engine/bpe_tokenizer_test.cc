// Byte-level BPE tokenizer ("gpt2") tests: llama.cpp's golden vectors for its
// llama-bpe, qwen2 and gpt-2 test vocabularies (llama.cpp's models/,
// scripts/reference/llama-source), one test case per string; round trips; special and
// end-of-generation tokens; clear errors for unsupported files; merge order on a tiny synthetic
// vocabulary.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include "ellm/engine/tokenizer.h"
#include "gguf_builder.h"
#include "test_env.h"
#include "tokenizer_golden.h"

namespace ellm {
namespace {

using ::ellm::testing::GgufBuilder;
using ::ellm::testing::Ids;
using ::ellm::testing::Quoted;
using ::ellm::testing::ReadInputs;
using ::ellm::testing::ReadOutputs;

std::string VocabPath(const std::string& shared, const std::string& name) {
  return shared + "/ggml-vocab-" + name + ".gguf";
}

// One tokenizer per vocabulary per process (the llama-bpe file has 280,000
// merges); nullptr if it cannot be loaded, with the failure reported.
const Tokenizer* LoadShared(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second.get();
  const std::string path = VocabPath(::ellm::testing::VocabDir(), name);
  auto file = gguf::GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::FromGguf(*file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  if (!tok.ok()) return nullptr;
  return cache.emplace(name, std::move(tok).value()).first->second.get();
}

// --- Golden vectors and round trips, one suite instance per vocabulary. ---
//
// One test per vocabulary rather than per string: ctest runs every test in a
// process of its own, and loading the llama-bpe vocabulary (128,000 tokens,
// 280,000 merges) takes about half a second. Each string is still its own
// expectation, and a mismatch prints the string.

class BpeVocab : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    shared_ = ::ellm::testing::VocabDir();
    ELLM_REQUIRE_OR_SKIP_(!shared_.empty(),
                          "llama.cpp's test vocabularies (scripts/reference/llama-source)");
    tok_ = LoadShared(GetParam());
    ASSERT_NE(tok_, nullptr);
    base_ = VocabPath(shared_, GetParam());
  }
  std::string shared_, base_;
  const Tokenizer* tok_ = nullptr;
};

TEST_P(BpeVocab, MatchesLlamaCppGoldenVectors) {
  const auto inputs = ReadInputs(base_ + ".inp");
  const auto outputs = ReadOutputs(base_ + ".out");
  ASSERT_GT(inputs.size(), 40u) << base_ << ".inp";
  ASSERT_EQ(inputs.size(), outputs.size()) << base_;
  size_t mismatches = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // llama.cpp's test-tokenizer-0: add_special = false, parse_special = false.
    const std::string actual = Ids(tok_->Encode(inputs[i], false, false));
    const std::string expected = Ids(outputs[i]);
    mismatches += actual != expected;
    EXPECT_EQ(actual, expected) << GetParam() << " string " << i << ": " << Quoted(inputs[i]);
  }
  EXPECT_EQ(mismatches, 0u) << "of " << inputs.size() << " strings";
}

TEST_P(BpeVocab, DecodeInvertsEncodeOnTheGoldenStrings) {
  for (const std::string& text : ReadInputs(base_ + ".inp")) {
    EXPECT_EQ(tok_->Decode(tok_->Encode(text, false, false)), text) << Quoted(text);
  }
}

std::string Utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | cp >> 6);
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | cp >> 12);
    s += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | cp >> 18);
    s += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
    s += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

TEST_P(BpeVocab, RoundTripsRandomUnicodeAndSurvivesArbitraryBytes) {
  std::mt19937 rng(4321);
  for (int iter = 0; iter < 300; ++iter) {
    std::string text;
    const size_t n = 1 + rng() % 48;
    for (size_t i = 0; i < n; ++i) {
      uint32_t cp = rng() % 4 == 0 ? rng() % 0x110000 : 0x20 + rng() % 0x60;
      if (cp >= 0xD800 && cp < 0xE000) cp = ' ';
      text += Utf8(cp);
    }
    // Every byte has a byte-level token, so valid UTF-8 comes back unchanged.
    EXPECT_EQ(tok_->Decode(tok_->Encode(text, false, false)), text) << iter;

    // Invalid UTF-8 is read as llama.cpp reads it (U+FFFD per bad byte);
    // the ids must stay in range.
    std::string bytes(1 + rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 256);
    for (TokenId id : tok_->Encode(bytes, true, true)) {
      EXPECT_TRUE(id >= 0 && id < tok_->vocab_size()) << id;
    }
  }
}

// 100 KB of mixed text: well under a second in a Release build (the time is
// printed; the bound only catches a quadratic blow-up, also under ASan).
// Speed is a benchmark matter; this prints the time for the reader only.
TEST_P(BpeVocab, RoundTripsALargeText) {
  std::string text;
  std::mt19937 rng(7);
  const char* words[] = {"the ",  "tokenizer ", "Qwen2 ",   "Llama 3 ", "12345 ",  "don't ",
                         "\n\n",  "  ",         "ünïcödé ", "日本語 ",  "🦙 ",   "(x+y)*2; ",
                         "I've ", "\t",         "3.14159 ", "CAPS ",    "e-mail ", "мир "};
  while (text.size() < 100 * 1024) text += words[rng() % std::size(words)];
  const auto start = std::chrono::steady_clock::now();
  const auto ids = tok_->Encode(text, false, false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << GetParam() << ": " << text.size() << " bytes -> " << ids.size() << " tokens in "
            << seconds * 1000 << " ms\n";
  EXPECT_EQ(tok_->Decode(ids), text);
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, BpeVocab, ::testing::Values("llama-bpe", "qwen2", "gpt-2"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

// --- Behaviour on the real test vocabularies. ---

TEST(BpeTokenizer, InvalidUtf8BecomesReplacementCharacters) {
  ELLM_REQUIRE_VOCABS(shared);
  const Tokenizer* tok = LoadShared("llama-bpe");
  ASSERT_NE(tok, nullptr);
  // A lone continuation byte and a truncated sequence each read as U+FFFD.
  EXPECT_EQ(tok->Decode(tok->Encode("a\x80z\xE2\x82", false, false)),
            "a\xEF\xBF\xBDz\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(BpeTokenizer, Llama3AddsBosAndParsesSpecialTokensOnlyWhenAsked) {
  ELLM_REQUIRE_VOCABS(shared);
  const Tokenizer* tok = LoadShared("llama-bpe");
  ASSERT_NE(tok, nullptr);
  const TokenId begin = tok->Find("<|begin_of_text|>");
  const TokenId eot = tok->Find("<|eot_id|>");
  ASSERT_NE(begin, -1);
  ASSERT_NE(eot, -1);
  EXPECT_TRUE(tok->add_bos());
  EXPECT_EQ(tok->bos(), begin);
  EXPECT_EQ(tok->type(begin), TokenType::kControl);

  const std::string text = "<|begin_of_text|>Hi<|eot_id|>";
  const auto special = tok->Encode(text, false, true);
  ASSERT_EQ(special.size(), 3u) << Ids(special);
  EXPECT_EQ(special[0], begin);
  EXPECT_EQ(special[2], eot);
  EXPECT_EQ(tok->Decode(special), "Hi");  // control tokens render only on request
  EXPECT_EQ(tok->Decode(special, true), text);

  const auto plain = tok->Encode(text, false, false);
  EXPECT_GT(plain.size(), 3u);
  for (TokenId id : plain) {
    EXPECT_NE(id, begin);
    EXPECT_NE(id, eot);
  }
  EXPECT_EQ(tok->Decode(plain), text);

  const auto with_bos = tok->Encode("Hello", true, false);
  ASSERT_FALSE(with_bos.empty());
  EXPECT_EQ(with_bos[0], begin);
  EXPECT_EQ(tok->Decode(with_bos), "Hello");
}

TEST(BpeTokenizer, Qwen2DoesNotAddBosAndParsesImStart) {
  ELLM_REQUIRE_VOCABS(shared);
  const Tokenizer* tok = LoadShared("qwen2");
  ASSERT_NE(tok, nullptr);
  EXPECT_FALSE(tok->add_bos());
  const TokenId im_start = tok->Find("<|im_start|>");
  ASSERT_NE(im_start, -1);
  const auto ids = tok->Encode("<|im_start|>user\nHi", true, true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], im_start);
  EXPECT_EQ(tok->Decode(ids, true), "<|im_start|>user\nHi");
  for (TokenId id : tok->Encode("<|im_start|>user", true, false)) EXPECT_NE(id, im_start);
}

TEST(BpeTokenizer, MarksLlamaCppEndOfGenerationTokens) {
  ELLM_REQUIRE_VOCABS(shared);
  struct Expect {
    const char* vocab;
    const char* text;
    bool eog;
  };
  const Expect cases[] = {
      {"llama-bpe", "<|eot_id|>", true},
      {"llama-bpe", "<|end_of_text|>", true},
      {"llama-bpe", "<|begin_of_text|>", false},
      {"llama-bpe", "Hello", false},
      {"qwen2", "<|im_end|>", true},
      {"qwen2", "<|endoftext|>", true},
      {"qwen2", "<|im_start|>", false},
      {"gpt-2", "<|endoftext|>", true},
  };
  for (const Expect& c : cases) {
    const Tokenizer* tok = LoadShared(c.vocab);
    ASSERT_NE(tok, nullptr);
    const TokenId id = tok->Find(c.text);
    ASSERT_NE(id, -1) << c.vocab << " " << c.text;
    EXPECT_EQ(tok->IsEndOfGeneration(id), c.eog) << c.vocab << " " << c.text;
  }
}

TEST(BpeTokenizer, TokenToPieceRendersRawBytes) {
  ELLM_REQUIRE_VOCABS(shared);
  const Tokenizer* tok = LoadShared("gpt-2");
  ASSERT_NE(tok, nullptr);
  const TokenId space_hello = tok->Find("\xC4\xA0hello");  // "Ġhello"
  ASSERT_NE(space_hello, -1);
  EXPECT_EQ(tok->TokenToPiece(space_hello), " hello");
  const TokenId newline = tok->Find("\xC4\x8A");  // "Ċ"
  ASSERT_NE(newline, -1);
  EXPECT_EQ(tok->TokenToPiece(newline), "\n");
  EXPECT_EQ(tok->TokenToPiece(-1), "");
  EXPECT_EQ(tok->TokenToPiece(tok->vocab_size()), "");
}

// --- Synthetic vocabularies. ---

// GgufFile::Parse keeps views into its input; the buffers live as long as the test binary.
StatusOr<gguf::GgufFile> Keep(const GgufBuilder& b) {
  static std::list<std::vector<uint8_t>> keep;
  keep.push_back(b.Build());
  return gguf::GgufFile::Parse(std::span<const uint8_t>(keep.back().data(), keep.back().size()),
                               "bpe.gguf");
}

struct BpeSpec {
  std::string model = "gpt2";
  std::string pre = "gpt-2";  // empty: key absent
  bool with_merges = true;
  std::vector<std::string> tokens = {"a", "b", "c", "ab", "bc", "abc", "<|end|>"};
  std::vector<int32_t> types = {1, 1, 1, 1, 1, 1, 3};
  std::vector<std::string> merges = {"b c", "a b", "a bc"};
};

StatusOr<std::unique_ptr<Tokenizer>> FromSpec(const BpeSpec& spec) {
  GgufBuilder b;
  b.Str("general.architecture", "gpt2").Str("tokenizer.ggml.model", spec.model);
  if (!spec.pre.empty()) b.Str("tokenizer.ggml.pre", spec.pre);
  b.StrArray("tokenizer.ggml.tokens", spec.tokens);
  b.I32Array("tokenizer.ggml.token_type", spec.types);
  if (spec.with_merges) b.StrArray("tokenizer.ggml.merges", spec.merges);
  b.U32("tokenizer.ggml.bos_token_id", 6).U32("tokenizer.ggml.eos_token_id", 6);
  auto file = Keep(b);
  if (!file.ok()) return file.status();
  return Tokenizer::FromGguf(*file);
}

void ExpectErrorNames(const Status& s, StatusCode code, const std::vector<std::string>& parts) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find("bpe.gguf"), std::string::npos) << s.ToString();
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' in " << s.ToString();
  }
}

TEST(BpeTokenizer, MergesLowestRankFirst) {
  BpeSpec spec;
  auto tok = FromSpec(spec);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // "b c" (rank 0) before "a b" (rank 1); then "a bc" makes "abc".
  EXPECT_EQ((*tok)->Encode("abc", true, false), (std::vector<TokenId>{5}));
  spec.merges = {"a b", "b c", "a bc"};
  tok = FromSpec(spec);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // "a b" wins now, and no merge joins "ab" and "c".
  EXPECT_EQ((*tok)->Encode("abc", true, false), (std::vector<TokenId>{3, 2}));
  // A control token only with parse_special; otherwise its bytes that are tokens.
  EXPECT_EQ((*tok)->Encode("a<|end|>", false, true), (std::vector<TokenId>{0, 6}));
  EXPECT_EQ((*tok)->Encode("a<|end|>", false, false), (std::vector<TokenId>{0}));
  EXPECT_TRUE((*tok)->IsEndOfGeneration(6));
  EXPECT_FALSE((*tok)->add_bos());
}

// llama.cpp's end-of-generation set is found by token text; the Llama 3 test
// vocabulary predates <|eom_id|> (Llama 3.1), so it is checked here.
TEST(BpeTokenizer, EndOfGenerationTokensAreFoundByText) {
  BpeSpec spec;
  spec.tokens = {"a",
                 "<|eot_id|>",
                 "<|eom_id|>",
                 "<|im_end|>",
                 "<|endoftext|>",
                 "<|im_start|>",
                 "<|begin_of_text|>"};
  spec.types = {1, 3, 3, 3, 3, 3, 3};
  auto tok = FromSpec(spec);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  for (TokenId id : {1, 2, 3, 4}) EXPECT_TRUE((*tok)->IsEndOfGeneration(id)) << spec.tokens[id];
  for (TokenId id : {0, 5}) EXPECT_FALSE((*tok)->IsEndOfGeneration(id)) << spec.tokens[id];
}

TEST(BpeTokenizer, UnknownPreTokenizerNamesFileKeyAndValue) {
  BpeSpec spec;
  spec.pre = "no-such-pre";
  auto tok = FromSpec(spec);
  ASSERT_FALSE(tok.ok());
  ExpectErrorNames(tok.status(), StatusCode::kUnimplemented,
                   {"tokenizer.ggml.pre", "no-such-pre", "llama-bpe"});
}

TEST(BpeTokenizer, MissingPreTokenizerNamesFileAndKey) {
  BpeSpec spec;
  spec.pre.clear();
  auto tok = FromSpec(spec);
  ASSERT_FALSE(tok.ok());
  ExpectErrorNames(tok.status(), StatusCode::kNotFound, {"tokenizer.ggml.pre"});
}

TEST(BpeTokenizer, MissingMergesNamesFileAndKey) {
  BpeSpec spec;
  spec.with_merges = false;
  auto tok = FromSpec(spec);
  ASSERT_FALSE(tok.ok());
  ExpectErrorNames(tok.status(), StatusCode::kNotFound, {"tokenizer.ggml.merges"});
}

TEST(BpeTokenizer, UnknownTokenizerModelNamesFileKeyAndValue) {
  BpeSpec spec;
  spec.model = "no-such-model";
  auto tok = FromSpec(spec);
  ASSERT_FALSE(tok.ok());
  ExpectErrorNames(tok.status(), StatusCode::kUnimplemented,
                   {"tokenizer.ggml.model", "no-such-model"});
}

}  // namespace
}  // namespace ellm
