// Golden tests against llama.cpp v0.5.0's own tokenizer test vocabularies:
// every models/ggml-vocab-*.gguf with an .inp/.out pair in LlamaSourceDir()
// is tokenized (no BOS, no special parsing, as its test-tokenizer-0) and
// compared token for token, or, for a tokenizer model we do not implement,
// must be refused with an error naming it. Also checks that our
// pre-tokenizer table is llama.cpp's: every tokenizer.ggml.pre name that
// llama_vocab::impl::load accepts, with its pre-type, and every pre-type's
// expressions as llm_tokenizer_bpe lists them; and that our Unicode tables
// (classes, lowercase, NFD) are those of its src/unicode-data.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ellm/engine/gguf.h"
#include "ellm/engine/tokenizer.h"
#include "test_env.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer_golden.h"

namespace ellm {
namespace {

using ::ellm::testing::Ids;
using ::ellm::testing::Quoted;
using ::ellm::testing::ReadAll;
using ::ellm::testing::ReadInputs;
using ::ellm::testing::ReadOutputs;

struct VocabCase {
  const char* name;     // ggml-vocab-<name>.gguf
  const char* refused;  // tokenizer.ggml.model we refuse, or nullptr if it must match
};

// Every vocabulary of llama.cpp v0.5.0 that has a golden pair. A file added
// or removed upstream fails VocabCases.ListMatchesTheSourceFolder.
constexpr VocabCase kCases[] = {
    {"bert-bge", nullptr},     {"command-r", nullptr}, {"deepseek-coder", nullptr},
    {"deepseek-llm", nullptr}, {"falcon", nullptr},    {"gemma-4", nullptr},
    {"gpt-2", nullptr},        {"llama-bpe", nullptr}, {"llama-spm", nullptr},
    {"mpt", nullptr},          {"phi-3", nullptr},     {"qwen2", nullptr},
    {"qwen35", nullptr},       {"refact", nullptr},    {"starcoder", nullptr},
};

std::string VocabBase(const std::string& src, const std::string& name) {
  return src + "/models/ggml-vocab-" + name + ".gguf";
}

TEST(VocabCases, ListMatchesTheSourceFolder) {
  ELLM_REQUIRE_LLAMA_SRC(src);
  std::set<std::string> found;
  const std::string prefix = "ggml-vocab-", suffix = ".gguf";
  for (const auto& entry : std::filesystem::directory_iterator(src + "/models")) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(prefix, 0) != 0 || file.size() <= prefix.size() + suffix.size() ||
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string path = entry.path().string();
    if (!std::filesystem::exists(path + ".inp") || !std::filesystem::exists(path + ".out"))
      continue;
    found.insert(file.substr(prefix.size(), file.size() - prefix.size() - suffix.size()));
  }
  std::set<std::string> listed;
  for (const VocabCase& c : kCases) listed.insert(c.name);
  EXPECT_EQ(found, listed);
  EXPECT_EQ(found.size(), 15u);
}

class LlamaVocab : public ::testing::TestWithParam<VocabCase> {};

TEST_P(LlamaVocab, MatchesLlamaCppGoldenVectorsOrIsRefusedByName) {
  ELLM_REQUIRE_LLAMA_SRC(src);
  const VocabCase& c = GetParam();
  const std::string base = VocabBase(src, c.name);
  auto file = gguf::GgufFile::Open(base);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(*file);
  if (c.refused != nullptr) {
    ASSERT_FALSE(tok.ok()) << base << " was expected to be refused";
    EXPECT_EQ(tok.status().code(), StatusCode::kUnimplemented) << tok.status().ToString();
    EXPECT_NE(tok.status().message().find("'" + std::string(c.refused) + "'"), std::string::npos)
        << tok.status().ToString();
    std::cout << c.name << ": refused as expected: " << tok.status().message() << "\n";
    return;
  }
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const auto inputs = ReadInputs(base + ".inp");
  const auto outputs = ReadOutputs(base + ".out");
  ASSERT_GT(inputs.size(), 30u) << base << ".inp";
  ASSERT_EQ(inputs.size(), outputs.size()) << base;
  size_t mismatches = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string actual = Ids((*tok)->Encode(inputs[i], false, false));
    const std::string expected = Ids(outputs[i]);
    mismatches += actual != expected;
    EXPECT_EQ(actual, expected) << c.name << " string " << i << ": " << Quoted(inputs[i]);
  }
  EXPECT_EQ(mismatches, 0u) << "of " << inputs.size() << " strings";
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, LlamaVocab, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<VocabCase>& p) {
                           std::string name = p.param.name;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

// --- Our table against llama.cpp's source. ---

// The text of `path` between the first `from` and the next `to` after it.
std::string Section(const std::string& path, const std::string& from, const std::string& to) {
  const std::string text = ReadAll(path);
  const size_t a = text.find(from);
  const size_t b = a == std::string::npos ? a : text.find(to, a);
  if (b == std::string::npos) return "";
  return text.substr(a, b - a);
}

// The value of the C++ string literal starting at s[at] (a '"').
std::string Literal(const std::string& s, size_t at) {
  std::string out;
  for (size_t i = at + 1; i < s.size() && s[i] != '"'; ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    const char e = s[++i];
    out += e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e;
  }
  return out;
}

TEST(PreTokenizerTable, NamesAndPreTypesAreLlamaCppLoads) {
  ELLM_REQUIRE_LLAMA_SRC(src);
  const std::string load =
      Section(src + "/src/llama-vocab.cpp", "if (type == LLAMA_VOCAB_TYPE_BPE) {",
              "} else if (type == LLAMA_VOCAB_TYPE_SPM) {");
  ASSERT_FALSE(load.empty());
  // Each run of `tokenizer_pre == "name"` tests ends at its pre_type assignment.
  const std::regex token(
      R"re(tokenizer_pre == "([^"]+)"|pre_type = LLAMA_VOCAB_PRE_TYPE_(\w+);)re");
  std::map<std::string, std::string> llama;  // name -> pre-type
  std::vector<std::string> pending;
  for (std::sregex_iterator it(load.begin(), load.end(), token), end; it != end; ++it) {
    if ((*it)[1].matched) {
      pending.push_back((*it)[1]);
      continue;
    }
    for (const std::string& name : pending) llama[name] = (*it)[2];
    pending.clear();
  }
  ASSERT_GT(llama.size(), 80u);
  std::map<std::string, std::string> ours;
  for (std::string_view name : tokenizer::PreTokenizerNames()) {
    auto spec = tokenizer::FindPreTokenizer(name);
    ASSERT_TRUE(spec.has_value()) << name;
    ours[std::string(name)] = std::string(spec->pre_type);
  }
  EXPECT_EQ(ours, llama);
}

TEST(PreTokenizerTable, ExpressionsAreLlamaCppsVerbatimAndCompile) {
  ELLM_REQUIRE_LLAMA_SRC(src);
  const std::string ctor =
      Section(src + "/src/llama-vocab.cpp", "llm_tokenizer_bpe(const llama_vocab & vocab) {",
              "std::vector<std::string> regex_exprs;");
  ASSERT_FALSE(ctor.empty());
  struct Type {
    std::vector<std::string> exprs;
    bool byte_encode = true;
  };
  std::map<std::string, Type> llama;
  std::vector<std::string> cases;
  Type current;
  std::istringstream lines(ctor);
  const std::regex case_label(R"re(case LLAMA_VOCAB_PRE_TYPE_(\w+):)re");
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos || line.compare(first, 2, "//") == 0) continue;
    std::smatch m;
    if (std::regex_search(line, m, case_label)) {
      cases.push_back(m[1]);
    } else if (line.compare(first, 8, "default:") == 0) {
      cases.push_back("DEFAULT");
    } else if (line[first] == '"') {
      current.exprs.push_back(Literal(line, first));
    } else if (line.find("byte_encode = false") != std::string::npos) {
      current.byte_encode = false;
    } else if (line.compare(first, 6, "break;") == 0) {
      for (const std::string& c : cases) llama[c] = current;
      cases.clear();
      current = Type();
    }
  }
  ASSERT_GT(llama.size(), 50u);
  for (std::string_view name : tokenizer::PreTokenizerNames()) {
    auto spec = tokenizer::FindPreTokenizer(name);
    ASSERT_TRUE(spec.has_value()) << name;
    auto it = llama.find(std::string(spec->pre_type));
    ASSERT_NE(it, llama.end()) << name << " " << spec->pre_type;
    std::vector<std::string> ours(spec->exprs.begin(), spec->exprs.end());
    EXPECT_EQ(ours, it->second.exprs) << name;
    EXPECT_EQ(spec->byte_encode, it->second.byte_encode) << name;
    auto pre = tokenizer::PreTokenizer::Create(spec->exprs);
    EXPECT_TRUE(pre.ok()) << name << ": " << pre.status().ToString();
  }
}

// The hexadecimal numbers ("0x...") in `text`, in order.
std::vector<uint32_t> HexNumbers(const std::string& text) {
  std::vector<uint32_t> out;
  for (size_t at = text.find("0x"); at != std::string::npos; at = text.find("0x", at + 2)) {
    out.push_back(static_cast<uint32_t>(std::stoul(text.substr(at + 2, 8), nullptr, 16)));
  }
  return out;
}

// Every code point's class bits, lowercase and first NFD code point against
// the tables of llama.cpp's src/unicode-data.cpp, read as unicode.cpp reads
// them (unicode_cpt_flags_array, unicode_tolower, unicode_cpts_normalize_nfd).
TEST(UnicodeTables, AreLlamaCppsUnicodeData) {
  ELLM_REQUIRE_LLAMA_SRC(src);
  const std::string path = src + "/src/unicode-data.cpp";
  const auto flags = HexNumbers(Section(path, "unicode_ranges_flags = {", "};"));
  const auto spaces = HexNumbers(Section(path, "unicode_set_whitespace = {", "};"));
  const auto lower = HexNumbers(Section(path, "unicode_map_lowercase = {", "};"));
  const auto nfd = HexNumbers(Section(path, "unicode_ranges_nfd = {", "};"));
  ASSERT_GT(flags.size(), 4000u);
  ASSERT_GT(spaces.size(), 20u);
  ASSERT_GT(lower.size(), 2000u);
  ASSERT_GT(nfd.size(), 3000u);
  ASSERT_EQ(lower.size() % 2, 0u);
  ASSERT_EQ(nfd.size() % 3, 0u);

  constexpr uint32_t kCodepoints = 0x110000;
  std::vector<uint16_t> want_flags(kCodepoints, tokenizer::cpflag::kUndefined);
  for (size_t i = 2; i < flags.size(); i += 2) {
    for (uint32_t cp = flags[i - 2]; cp < flags[i] && cp < kCodepoints; ++cp) {
      want_flags[cp] = static_cast<uint16_t>(flags[i - 1]);
    }
  }
  for (uint32_t cp : spaces) want_flags[cp] |= tokenizer::cpflag::kWhitespace;
  std::vector<uint32_t> want_lower(kCodepoints), want_nfd(kCodepoints);
  for (uint32_t cp = 0; cp < kCodepoints; ++cp) want_lower[cp] = want_nfd[cp] = cp;
  for (size_t i = 0; i < lower.size(); i += 2) want_lower[lower[i]] = lower[i + 1];
  for (size_t i = 0; i < nfd.size(); i += 3) {
    for (uint32_t cp = nfd[i]; cp <= nfd[i + 1]; ++cp) want_nfd[cp] = nfd[i + 2];
  }

  size_t mismatches = 0;
  for (uint32_t cp = 0; cp < kCodepoints && mismatches < 10; ++cp) {
    const bool same = tokenizer::CodepointFlags(cp) == want_flags[cp] &&
                      tokenizer::ToLower(cp) == want_lower[cp] &&
                      tokenizer::NfdFirst(cp) == want_nfd[cp];
    mismatches += !same;
    EXPECT_TRUE(same) << "U+" << std::hex << cp << ": flags " << tokenizer::CodepointFlags(cp)
                      << " vs " << want_flags[cp] << ", lower " << tokenizer::ToLower(cp) << " vs "
                      << want_lower[cp] << ", nfd " << tokenizer::NfdFirst(cp) << " vs "
                      << want_nfd[cp];
  }
  EXPECT_EQ(tokenizer::ToLower(0x110000), 0x110000u);
  EXPECT_EQ(tokenizer::NfdFirst(0x1FFFFF), 0x1FFFFFu);
}

}  // namespace
}  // namespace ellm
