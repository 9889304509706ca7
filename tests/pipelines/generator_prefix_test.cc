// Prefix reuse in the generator, on the real model: a job whose first
// document was seen before restores that document's KV state instead of
// prefilling it, and answers exactly as without the cache.
#include <gtest/gtest.h>
#include <sys/stat.h>
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

// `cache`: whether the generation may use the prefix cache (the pipeline's
// prefix_cache key).
StatusOr<Generation> Ask(Generator& g, const std::string& doc_a, const std::string& doc_b,
                         bool cache = true) {
  const std::string prompt = doc_a + "\n\n=== Document 2 ===\n" + doc_b +
                             "\n\nThe price in Document 2 differs from Document 1 because";
  GenerationSettings settings;
  settings.max_tokens = 12;
  std::atomic<bool> cancel{false};
  return g.GenerateSections("", prompt, PromptFormat::kPlain, settings, {{"", 12, {}}}, cancel,
                            nullptr, {.chars = doc_a.size(), .cache = cache});
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

// A section asked from_prompt continues the prompt's KV, not the sections
// before it: its answer is the one it gets asked alone, after a runaway
// answer, with no lead, and after an answer so long that the
// sliding-window layers no longer hold the prompt's end (prefilled again).
TEST(GeneratorSections, FromPromptSectionsAnswerAsIfAskedAlone) {
  ELLM_REQUIRE_MODEL(path);
  GeneratorOptions o;
  o.engine.threads = 2;
  o.session.n_ctx = 4096;
  auto g = Generator::Load(path, o);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const std::string prompt = Contract("The supplier", 30) + "\nKey terms:\n";
  GenerationSettings settings;
  settings.temperature = 0;
  settings.repeat_penalty = 1.1;  // the penalty's history restarts with the prompt too
  settings.stop_on_repeated_line = false;
  std::atomic<bool> cancel{false};
  using Section = TextGenerator::Section;
  const Section runaway{"\nThe clauses say that", 300, {"@@@"}};
  const Section notice{"\nEither party may terminate with", 8, {"\n"}, true};
  const Section bare{"", 8, {"\n"}, true};
  // Over 500 tokens past a prompt of ~1,300: the ring of 256-position
  // blocks that holds the 512-token window has moved on.
  const Section longer{runaway.lead, 640, runaway.stop, true};
  auto all = (*g)->GenerateSections("", prompt, PromptFormat::kPlain, settings,
                                    {runaway, notice, longer, bare}, cancel, nullptr);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->sections.size(), 4u);
  EXPECT_GT(all->generated_tokens, 800) << all->sections[2];  // the runaways ran on
  auto alone =
      (*g)->GenerateSections("", prompt, PromptFormat::kPlain, settings, {notice}, cancel, nullptr);
  ASSERT_TRUE(alone.ok());
  EXPECT_FALSE(alone->sections[0].empty());
  EXPECT_EQ(all->sections[1], alone->sections[0]);
  auto bare_alone =
      (*g)->GenerateSections("", prompt, PromptFormat::kPlain, settings, {bare}, cancel, nullptr);
  ASSERT_TRUE(bare_alone.ok());
  EXPECT_EQ(all->sections[3], bare_alone->sections[0]);
  // Without from_prompt the same section continues after the runaway.
  const Section after{notice.lead, notice.max_tokens, notice.stop};
  auto running = (*g)->GenerateSections("", prompt, PromptFormat::kPlain, settings,
                                        {runaway, after}, cancel, nullptr);
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->sections[0], all->sections[0]);
}

// Issue 37 item 7: a saved state encodes its document. A generation that
// does not ask for the cache (a pipeline without prefix_cache: true) writes
// nothing, not even the directory, and answers as one that does; one that
// asks writes its state 0600 in a directory made 0700, under umask 022.
TEST(GeneratorPrefix, StatesAreWrittenOnlyWhenAskedForAndOwnerOnly) {
  ELLM_REQUIRE_MODEL(path);
  const fs::path dir =
      fs::temp_directory_path() / ("ellm-prefix-mode-" + std::to_string(::getpid())) / "cache";
  GeneratorOptions o;
  o.engine.threads = 2;
  o.session.n_ctx = 4096;
  o.prefix_cache_dir = dir.string();
  auto g = Generator::Load(path, o);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const std::string a = Contract("The supplier", 8);
  const mode_t old_umask = ::umask(022);

  auto off = Ask(**g, a, "The buyer pays 1.1 million EUR per turbine.", /*cache=*/false);
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(fs::exists(dir));
  auto again = Ask(**g, a, "The buyer pays 1.1 million EUR per turbine.", /*cache=*/false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->reused_prefix_tokens, 0);
  EXPECT_FALSE(fs::exists(dir));

  auto on = Ask(**g, a, "The buyer pays 1.1 million EUR per turbine.", /*cache=*/true);
  ::umask(old_umask);
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_EQ(on->text, off->text);
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  int states = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++states;
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << e.path();
  }
  EXPECT_EQ(states, 1);
  fs::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace ellm::pipelines
