// `ellm model install` and `ellm model path`: a truncated download or a file
// that is not a GGUF model is refused with a message naming it, and the model
// already installed is left exactly as it was; a good file is copied whole,
// world-readable, with no temporary file left behind.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Files in `dir` other than `keep`.
std::vector<std::string> Others(const std::string& dir, const std::string& keep) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename() != keep) out.push_back(e.path().filename());
  }
  return out;
}

TEST(ModelInstall, RefusesTruncatedAndForeignFilesAndKeepsTheInstalledModel) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-model-install");
  const std::string dest_dir = dir + "/models";
  fs::create_directories(dest_dir);
  const std::string dest = dest_dir + "/model.gguf";
  std::ofstream(dest, std::ios::binary) << "the model that was here before";

  // The first MiB of the real model: a download cut short.
  const std::string truncated = dir + "/truncated.gguf";
  {
    std::ifstream in(model, std::ios::binary);
    std::string head(1 << 20, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(truncated, std::ios::binary) << head;
  }
  const std::string foreign = dir + "/report.gguf";
  std::ofstream(foreign, std::ios::binary) << "%PDF-1.7\nnot a model at all\n";

  for (const std::string& bad : {truncated, foreign, dir + "/missing.gguf"}) {
    std::string out;
    EXPECT_EQ(RunCli("model install '" + bad + "' --to '" + dest + "'", &out), 1) << out;
    EXPECT_NE(out.find("refusing '" + bad + "'"), std::string::npos) << out;
    EXPECT_EQ(ReadAll(dest), "the model that was here before") << bad;
    EXPECT_TRUE(Others(dest_dir, "model.gguf").empty()) << bad;
  }
  // The message says what is wrong, not only that something is.
  std::string out;
  RunCli("model install '" + truncated + "' --to '" + dest + "'", &out);
  EXPECT_TRUE(out.find("truncated") != std::string::npos ||
              out.find("past the end") != std::string::npos ||
              out.find("outside the file") != std::string::npos)
      << out;
  fs::remove_all(dir);
}

TEST(ModelInstall, CopiesAGoodModelWholeAndPathReadsTheConfig) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-model-install");
  const std::string dest = dir + "/state/models/gemma.gguf";  // parents are created
  std::ofstream(dir + "/ellm.yaml") << "model:\n  path: " << dest << "\n";

  std::string out;
  ASSERT_EQ(RunCli("model path --config '" + dir + "/ellm.yaml'", &out), 0) << out;
  EXPECT_EQ(out, dest + "\n");

  out.clear();
  ASSERT_EQ(RunCli("model install '" + model + "' --config '" + dir + "/ellm.yaml'", &out), 0)
      << out;
  EXPECT_NE(out.find("(gemma3)"), std::string::npos) << out;
  ASSERT_TRUE(fs::exists(dest));
  EXPECT_EQ(fs::file_size(dest), fs::file_size(model));
  EXPECT_TRUE(ReadAll(dest) == ReadAll(model)) << "the installed copy differs from the source";
  struct stat st;
  ASSERT_EQ(stat(dest.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_TRUE(Others(dir + "/state/models", "gemma.gguf").empty());

  // Installing again replaces the file in place (same content, still whole).
  out.clear();
  ASSERT_EQ(RunCli("model install '" + model + "' --config '" + dir + "/ellm.yaml'", &out), 0)
      << out;
  EXPECT_EQ(fs::file_size(dest), fs::file_size(model));
  EXPECT_TRUE(Others(dir + "/state/models", "gemma.gguf").empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
