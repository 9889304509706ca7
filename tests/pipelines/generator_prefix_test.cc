// Prefix reuse in the generator, on the real model: a job whose first
// document was seen before restores that document's KV state instead of
// prefilling it, and answers exactly as without the cache.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "ellm/pipelines/generator.h"
#include "test_env.h"

namespace ellm::pipelines {
namespace {

namespace fs = std::filesystem;

std::string Contract(const std::string& party, int clauses) {
  std::string s = "=== Document 1: supply agreement ===\n";
  for (int i = 1; i <= clauses; ++i) {
    s += "Clause " + std::to_string(i) + ". " + party +
         " shall deliver 40 turbines by 1 March 2027 at 1.2 million EUR each; either party may "
         "terminate with 90 days notice.\n";
  }
  return s;
}

StatusOr<Generation> Ask(Generator& g, const std::string& doc_a, const std::string& doc_b) {
  const std::string prompt = doc_a + "\n\n=== Document 2 ===\n" + doc_b +
                             "\n\nThe price in Document 2 differs from Document 1 because";
  GenerationSettings settings;
  settings.max_tokens = 12;
  std::atomic<bool> cancel{false};
  return g.GenerateSections("", prompt, PromptFormat::kPlain, settings, {{"", 12, {}}}, cancel,
                            nullptr, doc_a.size());
}

TEST(GeneratorPrefix, SharedFirstDocumentIsRestoredAndAnswersDoNotChange) {
  ELLM_REQUIRE_MODEL(path);
  const fs::path dir = fs::temp_directory_path() / ("ellm-prefix-" + std::to_string(::getpid()));
  GeneratorOptions o;
  o.engine.threads = 2;
  o.session.n_ctx = 4096;
  o.prefix_cache_dir = dir.string();
  auto cached = Generator::Load(path, o);
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  o.prefix_cache_dir.clear();
  auto plain = Generator::Load(path, o);
  ASSERT_TRUE(plain.ok());
  const std::string a = Contract("The supplier", 30);

  auto first = Ask(**cached, a, "The buyer pays 1.1 million EUR per turbine.");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->reused_prefix_tokens, 0);
  auto second = Ask(**cached, a, "The buyer pays 0.9 million EUR per turbine, in two parts.");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_GT(second->reused_prefix_tokens, 500);
  std::printf("reused %lld of %lld prompt tokens; prefill %lld ms vs %lld ms\n",
              static_cast<long long>(second->reused_prefix_tokens),
              static_cast<long long>(second->prompt_tokens),
              static_cast<long long>(second->prefill_ms),
              static_cast<long long>(first->prefill_ms));
  auto want = Ask(**plain, a, "The buyer pays 0.9 million EUR per turbine, in two parts.");
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(second->text, want->text);
  EXPECT_EQ(second->prompt_tokens, want->prompt_tokens);

  // A different first document is a miss, not a wrong restore.
  auto other = Ask(**cached, Contract("The vendor", 30), "The buyer pays 1.0 million EUR.");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->reused_prefix_tokens, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm::pipelines
