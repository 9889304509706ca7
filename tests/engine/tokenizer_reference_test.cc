// Golden tests against llama.cpp (tests/reference/gemma3-270m/, made by
// scripts/reference/make_gemma3_reference.py): every string of
// tokenize.jsonl ({"text", "add_bos", "parse_special", "tokens"} per line)
// and the 71 KB document of tokenize_document.json tokenize exactly as
// llama.cpp did. Label `model`. The reference files are committed, so their
// absence is a failure in CI and a skip on a developer machine.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "ellm/engine/tokenizer.h"
#include "test_env.h"

namespace ellm {
namespace {

std::string ReferenceDir() { return ::ellm::testing::SourceDir() + "/tests/reference/"; }

std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& model) {
  auto file = gguf::GgufFile::Open(model);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::FromGguf(*file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

std::string Ids(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) s += " " + std::to_string(id);
  return s;
}

TEST(GemmaTokenizerReference, MatchesLlamaCppOnEveryCorpusString) {
  ELLM_REQUIRE_MODEL(model);
  const std::string reference = ReferenceDir() + "gemma3-270m/tokenize.jsonl";
  ELLM_REQUIRE_OR_SKIP_(std::filesystem::exists(reference),
                        "the tokenizer reference " + reference + " (scripts/reference/)");
  auto tok = LoadTokenizer(model);
  ASSERT_NE(tok, nullptr);

  std::ifstream in(reference, std::ios::binary);
  size_t n = 0, mismatches = 0;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << reference << ":" << line_no << ": not JSON";
    ASSERT_TRUE(j.contains("text") && j.contains("tokens")) << reference << ":" << line_no;
    const std::string text = j["text"].get<std::string>();
    const bool add_bos = j.value("add_bos", true);
    const bool parse_special = j.value("parse_special", false);
    const auto expected = j["tokens"].get<std::vector<TokenId>>();
    const auto actual = tok->Encode(text, add_bos, parse_special);
    ++n;
    if (actual != expected) {
      ++mismatches;
      ADD_FAILURE() << reference << ":" << line_no << " (add_bos=" << add_bos
                    << ", parse_special=" << parse_special << ") text " << j["text"].dump()
                    << "\n  llama.cpp:" << Ids(expected) << "\n  ellm:     " << Ids(actual);
    }
  }
  EXPECT_GE(n, 200u) << "expected the 200+-string corpus in " << reference;
  EXPECT_EQ(mismatches, 0u) << "of " << n << " strings";
}

TEST(GemmaTokenizerReference, MatchesLlamaCppOnALongDocument) {
  ELLM_REQUIRE_MODEL(model);
  const std::string reference = ReferenceDir() + "gemma3-270m/tokenize_document.json";
  ELLM_REQUIRE_OR_SKIP_(std::filesystem::exists(reference),
                        "the tokenizer reference " + reference + " (scripts/reference/)");
  auto tok = LoadTokenizer(model);
  ASSERT_NE(tok, nullptr);

  std::ifstream in(reference, std::ios::binary);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << reference << ": not JSON";
  const std::string doc_path = ::ellm::testing::SourceDir() + "/" + j["file"].get<std::string>();
  std::ifstream doc(doc_path, std::ios::binary);
  ASSERT_TRUE(doc) << "cannot read " << doc_path;
  const std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
  ASSERT_EQ(text.size(), j["bytes"].get<size_t>()) << doc_path;

  const auto expected = j["tokens"].get<std::vector<TokenId>>();
  const auto actual = tok->Encode(text, j.value("add_bos", true), j.value("parse_special", false));
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(actual[i], expected[i]) << "first difference at token " << i;
  }
  EXPECT_EQ(tok->Decode(actual), text);
}

}  // namespace
}  // namespace ellm
