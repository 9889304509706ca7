// Tokenizer unit tests: llama.cpp's golden vectors for its SPM test vocabulary
// (llama.cpp's models/, scripts/reference/llama-source), and clear errors for malformed
// vocabularies.
#include "ellm/engine/tokenizer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <list>
#include <random>
#include <sstream>

#include "gguf_builder.h"
#include "test_env.h"

namespace ellm {
namespace {

using ::ellm::testing::GgufBuilder;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// *.inp: strings separated by lines reading "__ggml_vocab_test__"; the newline
// before each separator ends the string and is not part of it.
std::vector<std::string> ReadVocabTestInputs(const std::string& path) {
  const std::string content = ReadAll(path);
  std::vector<std::string> out;
  std::string current;
  bool first_line = true;
  for (size_t pos = 0; pos < content.size();) {
    size_t eol = content.find('\n', pos);
    if (eol == std::string::npos) eol = content.size();
    const std::string line = content.substr(pos, eol - pos);
    pos = eol + 1;
    if (line == "__ggml_vocab_test__") {
      out.push_back(current);
      current.clear();
      first_line = true;
      continue;
    }
    if (!first_line) current += '\n';
    current += line;
    first_line = false;
  }
  return out;
}

std::vector<std::vector<TokenId>> ReadVocabTestOutputs(const std::string& path) {
  std::istringstream in(ReadAll(path));
  std::vector<std::vector<TokenId>> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<TokenId> ids;
    for (TokenId id; words >> id;) ids.push_back(id);
    out.push_back(std::move(ids));
  }
  return out;
}

std::string Ids(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) s += " " + std::to_string(id);
  return s;
}

TEST(SpmTokenizer, MatchesLlamaCppGoldenVectors) {
  ELLM_REQUIRE_VOCABS(shared);
  const std::string base = shared + "/ggml-vocab-llama-spm.gguf";
  auto file = gguf::GgufFile::Open(base);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->vocab_size(), 32000);
  EXPECT_EQ((*tok)->bos(), 1);
  EXPECT_EQ((*tok)->eos(), 2);

  const auto inputs = ReadVocabTestInputs(base + ".inp");
  const auto outputs = ReadVocabTestOutputs(base + ".out");
  ASSERT_GT(inputs.size(), 40u);
  ASSERT_EQ(inputs.size(), outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    // llama.cpp's test-tokenizer-0: add_special = false, parse_special = false.
    EXPECT_EQ(Ids((*tok)->Encode(inputs[i], false, false)), Ids(outputs[i]))
        << "string " << i << ": '" << inputs[i] << "'";
  }
  // With BOS, and without the prefix space on decode (Decode only concatenates).
  auto ids = (*tok)->Encode("Hello world", true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ((*tok)->Decode(ids), " Hello world");
  EXPECT_EQ((*tok)->TokenToPiece(1), "");
  EXPECT_EQ((*tok)->TokenToPiece(1, true), "<s>");
  EXPECT_TRUE((*tok)->IsEndOfGeneration(2));
  EXPECT_FALSE((*tok)->IsEndOfGeneration(1));
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

TEST(SpmTokenizer, RoundTripsValidUtf8AndSurvivesArbitraryBytes) {
  ELLM_REQUIRE_VOCABS(shared);
  auto file = gguf::GgufFile::Open(shared + "/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 300; ++iter) {
    std::string text;
    const size_t n = 1 + rng() % 48;
    for (size_t i = 0; i < n; ++i) {
      uint32_t cp = rng() % 4 == 0 ? rng() % 0x110000 : 0x20 + rng() % 0x60;
      if ((cp >= 0xD800 && cp < 0xE000) || cp == 0x2581 || cp == 0) cp = ' ';
      text += Utf8(cp);
    }
    // Byte fallback covers every character; add_space_prefix puts one space in front.
    EXPECT_EQ((*tok)->Decode((*tok)->Encode(text, false, false)), " " + text) << iter;

    // Invalid UTF-8 is tokenized too (llama.cpp escapes spaces before it cuts
    // characters, so a space after a stray lead byte may come back as "▁").
    std::string bytes(1 + rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 256);
    for (TokenId id : (*tok)->Encode(bytes, true, true)) {
      EXPECT_TRUE(id >= 0 && id < (*tok)->vocab_size()) << id;
    }
  }
}

// A tiny SPM vocabulary; tests change one key to break it.
struct VocabSpec {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<0x41>", "\xE2\x96\x81",
                                     "a",     "b",   "ab",   "<ctl>",  "<ud>"};
  std::vector<float> scores = {0, 0, 0, 0, -1, -2, -3, -0.5f, 0, 0};
  std::vector<int32_t> types = {2, 3, 3, 6, 1, 1, 1, 1, 3, 4};
  bool with_tokens = true;
  bool with_scores = true;
  bool with_types = true;
  std::string model = "llama";
  std::string name;  // general.name, if set
  int64_t bos = 1;
};

GgufBuilder& F32Array(GgufBuilder& b, const std::string& key, const std::vector<float>& v) {
  std::vector<uint8_t> bytes;
  testing::PutU32(bytes, 6);  // float32 elements
  testing::PutU64(bytes, v.size());
  for (float x : v) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    testing::PutU32(bytes, u);
  }
  return b.Raw(key, 9, bytes);
}

// GgufFile::Parse keeps views into its input; the buffers live as long as the test binary.
StatusOr<gguf::GgufFile> Build(const VocabSpec& spec) {
  GgufBuilder b;
  b.Str("general.architecture", "llama").Str("tokenizer.ggml.model", spec.model);
  if (!spec.name.empty()) b.Str("general.name", spec.name);
  if (spec.with_tokens) b.StrArray("tokenizer.ggml.tokens", spec.tokens);
  if (spec.with_scores) F32Array(b, "tokenizer.ggml.scores", spec.scores);
  if (spec.with_types) b.I32Array("tokenizer.ggml.token_type", spec.types);
  b.U32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(spec.bos));
  b.U32("tokenizer.ggml.eos_token_id", 2);
  static std::list<std::vector<uint8_t>> keep;
  keep.push_back(b.Build());
  return gguf::GgufFile::Parse(std::span<const uint8_t>(keep.back().data(), keep.back().size()),
                               "vocab.gguf");
}

Status FromSpec(const VocabSpec& spec) {
  auto file = Build(spec);
  if (!file.ok()) return file.status();
  auto tok = Tokenizer::FromGguf(*file);
  return tok.ok() ? OkStatus() : tok.status();
}

void ExpectErrorNames(const Status& s, StatusCode code, const std::string& key) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find("vocab.gguf"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(key), std::string::npos) << s.ToString();
}

TEST(SpmTokenizer, SyntheticVocabularyLoadsAndEncodes) {
  auto file = Build(VocabSpec{});
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // add_space_prefix defaults to true for "llama": " ab" -> "▁ab" -> ▁, ab.
  EXPECT_EQ((*tok)->Encode("ab", true, false), (std::vector<TokenId>{1, 4, 7}));
  // 'A' is only a byte token; 'c' has neither a token nor a byte token -> UNK.
  EXPECT_EQ((*tok)->Encode("Ac", false, false), (std::vector<TokenId>{4, 3, 0}));
  // User-defined tokens are split out always, control tokens only with parse_special.
  EXPECT_EQ((*tok)->Encode("a<ud>", false, false), (std::vector<TokenId>{4, 5, 9}));
  EXPECT_EQ((*tok)->Encode("<ctl>a", false, true), (std::vector<TokenId>{8, 4, 5}));
  EXPECT_EQ((*tok)->Decode({8, 4, 5, 3, 9}), " aA<ud>");
  EXPECT_EQ((*tok)->Decode({8, 4, 5}, true), "<ctl> a");
  EXPECT_EQ((*tok)->Find("ab"), 7);
  EXPECT_EQ((*tok)->Find("zz"), -1);
  EXPECT_EQ((*tok)->type(3), TokenType::kByte);
}

// Special tokens are matched longest first over the whole text, not leftmost
// first: in "abcd", "bcd" wins over "ab" (llama.cpp's tokenizer_st_partition).
TEST(SpmTokenizer, SplitsSpecialTokensLongestFirst) {
  VocabSpec spec;
  spec.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "c", "d", "ab", "bcd"};
  spec.scores = {0, 0, 0, -1, -1, -1, -1, 0, 0};
  spec.types = {2, 3, 3, 1, 1, 1, 1, 4, 4};
  auto file = Build(spec);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->Encode("abcd", false, false), (std::vector<TokenId>{3, 4, 8}));
  EXPECT_EQ((*tok)->Encode("abab", false, false), (std::vector<TokenId>{7, 7}));
  // The first raw fragment after a special token gets the prefix space again.
  EXPECT_EQ((*tok)->Encode("abc", false, false), (std::vector<TokenId>{7, 3, 5}));

  // Phi-3 files get RSTRIP on their special tokens: the spaces after "ab" go.
  spec.name = "Phi-3-mini";
  auto phi_file = Build(spec);
  ASSERT_TRUE(phi_file.ok());
  auto phi = Tokenizer::FromGguf(*phi_file);
  ASSERT_TRUE(phi.ok()) << phi.status().ToString();
  EXPECT_EQ((*phi)->Encode("ab  c", false, false), (std::vector<TokenId>{7, 3, 5}));
  EXPECT_EQ((*tok)->Encode("ab  c", false, false), (std::vector<TokenId>{7, 3, 3, 3, 5}));
}

TEST(TokenizerFromGguf, MissingTokensKeyNamesFileAndKey) {
  VocabSpec spec;
  spec.with_tokens = false;
  ExpectErrorNames(FromSpec(spec), StatusCode::kNotFound, "tokenizer.ggml.tokens");
}

TEST(TokenizerFromGguf, MissingModelKeyNamesFileAndKey) {
  GgufBuilder b;
  b.Str("general.architecture", "llama").StrArray("tokenizer.ggml.tokens", {"a"});
  std::vector<uint8_t> bytes = b.Build();
  auto file =
      gguf::GgufFile::Parse(std::span<const uint8_t>(bytes.data(), bytes.size()), "vocab.gguf");
  ASSERT_TRUE(file.ok());
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_FALSE(tok.ok());
  ExpectErrorNames(tok.status(), StatusCode::kNotFound, "tokenizer.ggml.model");
}

TEST(TokenizerFromGguf, ScoresLengthMismatchNamesKey) {
  VocabSpec spec;
  spec.scores.pop_back();
  ExpectErrorNames(FromSpec(spec), StatusCode::kInvalidArgument, "tokenizer.ggml.scores");
  spec.scores.push_back(0);
  spec.scores.push_back(0);
  ExpectErrorNames(FromSpec(spec), StatusCode::kInvalidArgument, "tokenizer.ggml.scores");
}

TEST(TokenizerFromGguf, TokenTypeOutOfRangeNamesKeyAndToken) {
  VocabSpec spec;
  spec.types[6] = 7;
  Status s = FromSpec(spec);
  ExpectErrorNames(s, StatusCode::kInvalidArgument, "tokenizer.ggml.token_type");
  EXPECT_NE(s.message().find("token 6"), std::string::npos) << s.ToString();
  spec.types[6] = -1;
  ExpectErrorNames(FromSpec(spec), StatusCode::kInvalidArgument, "tokenizer.ggml.token_type");
}

TEST(TokenizerFromGguf, TokenTypeLengthMismatchNamesKey) {
  VocabSpec spec;
  spec.types.pop_back();
  ExpectErrorNames(FromSpec(spec), StatusCode::kInvalidArgument, "tokenizer.ggml.token_type");
}

TEST(TokenizerFromGguf, BosIdOutOfRangeNamesKey) {
  VocabSpec spec;
  spec.bos = 10;
  ExpectErrorNames(FromSpec(spec), StatusCode::kOutOfRange, "tokenizer.ggml.bos_token_id");
}

TEST(TokenizerFromGguf, DuplicateTokenIsAnError) {
  VocabSpec spec;
  spec.tokens[6] = "a";
  ExpectErrorNames(FromSpec(spec), StatusCode::kInvalidArgument, "tokenizer.ggml.tokens");
}

TEST(TokenizerFromGguf, OtherTokenizerModelsAreUnimplemented) {
  VocabSpec spec;
  for (const char* model : {"t5", "rwkv", "no-such-model"}) {
    spec.model = model;
    Status s = FromSpec(spec);
    ExpectErrorNames(s, StatusCode::kUnimplemented, "tokenizer.ggml.model");
    EXPECT_NE(s.message().find(std::string("'") + model + "'"), std::string::npos) << s.ToString();
  }
}

// "bert" is WordPiece now: this SPM vocabulary has no [SEP] at the default
// id 102, which the error names instead of "not supported".
TEST(TokenizerFromGguf, BertIsSupportedAndNeedsItsSpecialTokens) {
  VocabSpec spec;
  spec.model = "bert";
  ExpectErrorNames(FromSpec(spec), StatusCode::kInvalidArgument,
                   "tokenizer.ggml.seperator_token_id");
}

// --- WordPiece ("bert"). Expected ids are llama.cpp's (llama-cpp-python on
// the same vocabulary written as a GGUF file). ---

// ids 0-4: BERT's special tokens; "▁" (U+2581) starts a word, a
// token without it continues one (BERT's "##").
const std::vector<std::string> kWpmTokens = {
    "[PAD]",  "[UNK]", "[CLS]",  "[SEP]", "[MASK]",        // 0-4
    "▁hello", "▁cafe", "▁,",     "▁中",   "▁文",           // 5-9
    "▁world", "▁un",   "able",   "▁$",    "▁a",            // 10-14
    "▁b",     "▁café", "▁Hello", "€",     "▁\xE1\x84\x92"  // 15-19: U+1112
};

struct WpmSpec {
  std::vector<std::string> tokens = kWpmTokens;
  int lowercase = -1;  // tokenizer.ggml.normalizer.lowercase: -1 absent, else 0/1
  int strip_accents = -1;
};

std::unique_ptr<Tokenizer> BuildWpm(const WpmSpec& spec) {
  GgufBuilder b;
  b.Str("general.architecture", "bert").Str("tokenizer.ggml.model", "bert");
  b.StrArray("tokenizer.ggml.tokens", spec.tokens);
  std::vector<int32_t> types(spec.tokens.size(), 1);
  for (int i = 0; i < 5; ++i) types[i] = 3;
  b.I32Array("tokenizer.ggml.token_type", types);
  b.U32("tokenizer.ggml.bos_token_id", 2);
  b.U32("tokenizer.ggml.seperator_token_id", 3);
  b.U32("tokenizer.ggml.unknown_token_id", 1);
  if (spec.lowercase >= 0) b.Bool("tokenizer.ggml.normalizer.lowercase", spec.lowercase != 0);
  if (spec.strip_accents >= 0) {
    b.Bool("tokenizer.ggml.normalizer.strip_accents", spec.strip_accents != 0);
  }
  static std::list<std::vector<uint8_t>> keep;
  keep.push_back(b.Build());
  auto file = gguf::GgufFile::Parse(
      std::span<const uint8_t>(keep.back().data(), keep.back().size()), "vocab.gguf");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::FromGguf(*file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

using IdList = std::vector<TokenId>;

// llama.cpp keeps only the first code point of each NFD decomposition and
// drops marks, then lower-cases: composed and decomposed accents both go,
// and a Hangul syllable keeps only its leading consonant.
TEST(WpmTokenizer, StripsAccentsAndLowercasesAsLlamaCpp) {
  auto tok = BuildWpm(WpmSpec{});
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("Café", false, false), IdList({6}));
  EXPECT_EQ(tok->Encode("CAFÉ", false, false), IdList({6}));
  EXPECT_EQ(tok->Encode("cafe\u0301", false, false), IdList({6}));
  EXPECT_EQ(tok->Encode("HELLO World", false, false), IdList({5, 10}));
  EXPECT_EQ(tok->Encode("한", false, false), IdList({19}));

  // strip_accents off: "é" stays; a combining accent stays too, and then
  // nothing matches after "▁cafe", so the word is [UNK].
  auto keep_accents = BuildWpm(WpmSpec{.strip_accents = 0});
  ASSERT_NE(keep_accents, nullptr);
  EXPECT_EQ(keep_accents->Encode("Café", false, false), IdList({16}));
  EXPECT_EQ(keep_accents->Encode("cafe\u0301", false, false), IdList({1}));

  // lowercase off turns strip_accents off by default.
  auto cased = BuildWpm(WpmSpec{.lowercase = 0});
  ASSERT_NE(cased, nullptr);
  EXPECT_EQ(cased->Encode("Hello hello", false, false), IdList({17, 5}));
  EXPECT_EQ(cased->Encode("café", false, false), IdList({16}));
}

// Words end at whitespace; punctuation, ASCII symbols and CJK ideographs are
// words of their own; other symbols stay inside words; controls vanish.
TEST(WpmTokenizer, SplitsPunctuationSymbolsAndCjk) {
  auto tok = BuildWpm(WpmSpec{});
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("hello,world", false, false), IdList({5, 7, 10}));
  EXPECT_EQ(tok->Encode("中文", false, false), IdList({8, 9}));
  EXPECT_EQ(tok->Encode("hello中文world", false, false), IdList({5, 8, 9, 10}));
  EXPECT_EQ(tok->Encode("a$b", false, false), IdList({14, 13, 15}));
  EXPECT_EQ(tok->Encode("a€", false, false), IdList({14, 18}));
  EXPECT_EQ(tok->Encode(" a\tb\u3000a\n", false, false), IdList({14, 15, 14}));
  EXPECT_EQ(tok->Encode("hel\alo wor\u200dld", false, false), IdList({5, 10}));
  EXPECT_TRUE(tok->Encode(" \t\n", false, false).empty());
}

// Greedy longest match from the word's start; one position without a token
// turns the whole word into a single [UNK].
TEST(WpmTokenizer, WordWithoutAMatchIsOneUnknownToken) {
  auto tok = BuildWpm(WpmSpec{});
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("unable", false, false), IdList({11, 12}));
  EXPECT_EQ(tok->Encode("xyz", false, false), IdList({1}));
  EXPECT_EQ(tok->Encode("helloxyz", false, false), IdList({1}));
  EXPECT_EQ(tok->Encode("hello xyz world", false, false), IdList({5, 1, 10}));
}

TEST(WpmTokenizer, AddsClsAndSepAndSplitsSpecialTokens) {
  auto tok = BuildWpm(WpmSpec{});
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->bos(), 2);
  EXPECT_TRUE(tok->add_bos());
  EXPECT_EQ(tok->Encode("hello", true, false), IdList({2, 5, 3}));
  EXPECT_EQ(tok->Encode("", true, false), IdList({2, 3}));
  EXPECT_EQ(tok->Encode("[MASK] hello", false, true), IdList({4, 5}));
  // Without parse_special, "[", "mask" and "]" are three unknown words.
  EXPECT_EQ(tok->Encode("[MASK]", false, false), IdList({1, 1, 1}));
  EXPECT_EQ(tok->Decode({2, 5, 10, 12, 3}), " hello worldable");
  EXPECT_EQ(tok->Decode({2, 5, 3}, true), "[CLS] hello[SEP]");
}

TEST(TokenizerFromGguf, OptionalScoresAndTypesMayBeAbsent) {
  VocabSpec spec;
  spec.with_scores = false;
  spec.with_types = false;
  EXPECT_TRUE(FromSpec(spec).ok());
}

}  // namespace
}  // namespace ellm
