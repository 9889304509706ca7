// `ellm generate --messages F.json` on the synthetic models of real sizes
// (issue 35; recipes in tests/reference/families/sizes/): the binary's chat
// path (the file's own template, our tokenizer, greedy decoding) prints the
// 16 tokens llama.cpp chose for the same two-turn conversation. Llama 3.2's
// template prints today's date, which the reference pins: it is checked in
// process by family_size_golden_test.cc instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../engine/model/family_model_builder.h"
#include "ellm/engine/engine.h"
#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

using nlohmann::json;

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

class FamilySizeChatCli : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilySizeChatCli, GreedyTokensMatchLlamaCpp) {
  const std::string size = GetParam();
  const std::string ref_path = SourceDir() + "/tests/reference/families/sizes/" + size + ".json";
  std::ifstream in(ref_path);
  ASSERT_TRUE(in) << "missing reference file " << ref_path;
  const json ref = json::parse(in);
  std::string vocab = ref["vocab"];
  if (vocab.rfind("model:", 0) == 0) {
    ELLM_REQUIRE_MODEL(model);
    vocab = model;
  } else {
    ELLM_REQUIRE_VOCABS(shared);
    vocab = shared + "/" + vocab;
  }
  const std::string dir = MakeTempDir("family_size_cli");
  const std::string path = dir + "/" + size + ".gguf";
  ASSERT_EQ(BuildFamilyModel(ref, vocab, path).error, "");
  const std::string messages = dir + "/messages.json";
  std::ofstream(messages) << ref["chat"]["messages"].dump();

  // What llama.cpp's 16 tokens print as, up to the first end-of-generation
  // token (where `ellm generate` stops).
  std::string want;
  {
    auto engine = Engine::Load(path, {.threads = 1});
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    for (const json& step : ref["chat"]["greedy"]) {
      const TokenId id = step["token"];
      if ((*engine)->tokenizer().IsEndOfGeneration(id)) break;
      want += (*engine)->tokenizer().TokenToPiece(id);
    }
  }
  std::string out;
  const int rc = RunCli("generate --model '" + path + "' --messages '" + messages +
                            "' --max-tokens 16 --ctx 1024 --threads 2",
                        &out);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(rc, 0) << out;
  const size_t speed = out.rfind("prefill: ");
  ASSERT_NE(speed, std::string::npos) << out;
  EXPECT_EQ(out.substr(0, speed), want + "\n") << size;
  EXPECT_NE(FromHex(ref["chat"]["generated_hex"]).find(want), std::string::npos);
  EXPECT_NE(out.find("prefill: " + std::to_string(ref["chat"]["tokens"].size()) + " tokens"),
            std::string::npos)
      << "the prompt's token count differs from llama.cpp's: " << out;
}

INSTANTIATE_TEST_SUITE_P(Sizes, FamilySizeChatCli,
                         ::testing::Values("qwen2.5-0.5b", "qwen3-0.6b", "gemma3-1b"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           std::replace(s.begin(), s.end(), '.', '_');
                           return s;
                         });

}  // namespace
}  // namespace ellm::testing
