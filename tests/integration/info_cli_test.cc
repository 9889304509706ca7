// `ellm info MODEL` ends with the verdict: `runs: yes`, or `runs: no — ` and
// the first reason (the key or tensor, and why); `--json` carries the same
// as "runs" and "runs_error". Checked on the real model and on files this
// build must refuse.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf_builder.h"
#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

std::string LastLine(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') + 1);
}

// Every command answers --help and -h on stdout with exit code 0.
TEST(Cli, EveryCommandAnswersHelp) {
  for (const std::string cmd :
       {"info", "tokenize", "generate", "perplexity", "bench", "extract", "summarize", "compare",
        "batch", "submit", "jobs", "model", "cpu"}) {
    for (const char* flag : {"--help", "-h"}) {
      std::string out;
      EXPECT_EQ(RunCli(cmd + " " + flag + " 2>/dev/null", &out), 0) << cmd << " " << flag;
      EXPECT_NE(out.find("ellm " + cmd), std::string::npos) << cmd << " " << flag << ": " << out;
    }
  }
  std::string out;
  RunCli("generate --help", &out);
  EXPECT_NE(out.find("--messages"), std::string::npos) << out;
  EXPECT_NE(RunCli("nonsense --help 2>/dev/null", &out), 0);
}

TEST(InfoCli, TheRealModelRuns) {
  ELLM_REQUIRE_MODEL(model);
  std::string out;
  ASSERT_EQ(RunCli("info '" + model + "'", &out), 0) << out;
  EXPECT_EQ(LastLine(out), "runs: yes") << out;
  std::string json;
  ASSERT_EQ(RunCli("info --json '" + model + "' 2>/dev/null", &json), 0) << json;
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["runs"], true);
  EXPECT_FALSE(j.contains("runs_error"));
}

TEST(InfoCli, FilesThisBuildCannotRunSayWhy) {
  ELLM_REQUIRE_SHARED(shared);
  const std::string dir = MakeTempDir("ellm-info");
  struct Case {
    std::string name;
    std::string file;
    std::string reason;  // in the verdict
  };
  // A vocabulary-only file: the tokenizer is fine, the weights are missing.
  const std::string vocab = shared + "/testdata/tokenizers/ggml-vocab-llama-spm.gguf";
  GgufBuilder unknown_pre;
  unknown_pre.Str("general.architecture", "llama")
      .Str("tokenizer.ggml.model", "gpt2")
      .Str("tokenizer.ggml.pre", "no-such-pre")
      .StrArray("tokenizer.ggml.tokens", {"a", "b", "ab"})
      .StrArray("tokenizer.ggml.merges", {"a b"});
  ASSERT_TRUE(unknown_pre.WriteTo(dir + "/pre.gguf"));
  GgufBuilder template_error;
  template_error.Str("general.architecture", "llama")
      .Str("tokenizer.ggml.model", "gpt2")
      .Str("tokenizer.ggml.pre", "gpt-2")
      .StrArray("tokenizer.ggml.tokens", {"a", "b", "ab"})
      .StrArray("tokenizer.ggml.merges", {"a b"})
      .Str("tokenizer.chat_template", "{% for m in messages %}\n{{ m.content }\n{% endfor %}");
  ASSERT_TRUE(template_error.WriteTo(dir + "/tmpl.gguf"));
  const Case cases[] = {
      {"weights missing", vocab, "tensor 'token_embd.weight'"},
      {"unknown pre-tokenizer", dir + "/pre.gguf", "no-such-pre"},
      {"chat template", dir + "/tmpl.gguf", "tokenizer.chat_template"},
  };
  for (const Case& c : cases) {
    std::string out;
    ASSERT_EQ(RunCli("info '" + c.file + "'", &out), 0) << c.name << "\n" << out;
    const std::string verdict = LastLine(out);
    EXPECT_EQ(verdict.rfind("runs: no \u2014 ", 0), 0u) << c.name << ": " << verdict;
    EXPECT_NE(verdict.find(c.reason), std::string::npos) << c.name << ": " << verdict;
    std::string json;
    ASSERT_EQ(RunCli("info --json '" + c.file + "' 2>/dev/null", &json), 0) << json;
    const auto j = nlohmann::json::parse(json);
    EXPECT_EQ(j["runs"], false) << c.name;
    EXPECT_NE(j["runs_error"].get<std::string>().find(c.reason), std::string::npos) << c.name;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
