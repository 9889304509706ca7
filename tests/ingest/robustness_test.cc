// Robustness: every PDF this machine has under /usr/share/doc (plain or
// gzipped; scripts/bootstrap installs a docs package that ships some), plus
// deterministic mutations of each (truncations, byte flips, a zeroed block),
// goes through ExtractDocument. Each result must be a Document or an error
// of a known kind with a message naming the file, within the time limit:
// no crash or hang escapes the child. With CI=true, finding no PDF fails.
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include "ellm/base/sanitizers.h"
#include "ellm/ingest/extract.h"
#include "pdf_test_util.h"
#include "test_env.h"

namespace ellm::ingest {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxFiles = 12;               // bounds the run time on a machine with many
constexpr uintmax_t kMaxFileBytes = 4u << 20;  // compressed or not

std::vector<fs::path> FindDocPdfs(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec),
       end;
       it != end; it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    const bool pdf = name.ends_with(".pdf") || name.ends_with(".pdf.gz");
    // Symbolic links (r-doc-pdf's manuals point into /usr/share/R) are left
    // out: each file once, and the set is what packages ship under doc/.
    if (pdf && !it->is_symlink(ec) && it->is_regular_file(ec) &&
        it->file_size(ec) <= kMaxFileBytes) {
      out.push_back(it->path());
    }
  }
  std::sort(out.begin(), out.end());
  if (out.size() > kMaxFiles) out.resize(kMaxFiles);
  return out;
}

std::string Gunzip(const fs::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

// Deterministic damaged variants of `pdf`: name suffix -> bytes.
std::vector<std::pair<std::string, std::string>> Mutations(const std::string& pdf) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("orig", pdf);
  out.emplace_back("cut50", pdf.substr(0, pdf.size() / 2));
  out.emplace_back("cut97", pdf.substr(0, pdf.size() * 97 / 100));
  std::string flipped = pdf;
  std::mt19937 rng(20240601);
  for (int i = 0; i < 64 && !flipped.empty(); ++i) flipped[rng() % flipped.size()] ^= 0x5A;
  out.emplace_back("flip64", flipped);
  // Flips inside the body only, so the xref survives and poppler parses
  // damaged content streams, fonts and images instead of giving up early.
  std::string body = pdf;
  for (int i = 0; i < 64 && body.size() > 100; ++i) {
    body[body.size() / 10 + rng() % (body.size() * 7 / 10)] ^= 0x5A;
  }
  out.emplace_back("flipbody", body);
  std::string zeroed = pdf;
  const size_t at = zeroed.size() / 3;
  for (size_t i = at; i < std::min(zeroed.size(), at + 4096); ++i) zeroed[i] = '\0';
  out.emplace_back("zero4k", zeroed);
#if ELLM_ASAN
  // Sanitized builds run the layout code ~6x slower: keep the run near a
  // minute with the variants that reach deepest into the parser.
  std::erase_if(out, [](const auto& v) {
    return v.first == "cut50" || v.first == "cut97" || v.first == "flip64";
  });
#endif
  return out;
}

TEST(ExtractRobustness, EveryDocPdfAndMutationEndsCleanly) {
  const std::vector<fs::path> found = FindDocPdfs("/usr/share/doc");
  ELLM_REQUIRE_OR_SKIP_(!found.empty(), "PDFs under /usr/share/doc (scripts/bootstrap)");
  const std::string dir = ellm::testing::MakeTempDir("ellm-robustness");
  ASSERT_FALSE(dir.empty());
  ExtractOptions options = testing::TestOptions();
  options.wall_timeout = std::chrono::seconds(30);
  options.cpu_seconds = 30;
  std::map<std::string, int> outcomes;
  for (const fs::path& src : found) {
    const bool gz = src.extension() == ".gz";
    const std::string bytes = gz ? Gunzip(src) : testing::ReadText(src.string());
    const std::string stem = src.filename().string().substr(0, src.filename().string().find('.'));
    for (const auto& [suffix, variant] : Mutations(bytes)) {
      const std::string path = dir + "/" + stem + "-" + suffix + ".pdf";
      testing::WriteBytes(path, variant);
      const auto start = Clock::now();
      StatusOr<Document> doc = ExtractDocument(path, options);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      EXPECT_LT(seconds, 35.0) << path;
      if (doc.ok()) {
        ++outcomes["ok"];
        EXPECT_EQ(doc->pages.size(), static_cast<size_t>(doc->metadata.page_count)) << path;
        EXPECT_GT(doc->metadata.page_count, 0) << path;
      } else {
        const auto kind = ExtractErrorOf(doc.status());
        ASSERT_TRUE(kind.has_value()) << path << ": " << doc.status().ToString();
        ++outcomes[std::string(ExtractErrorName(*kind))];
        EXPECT_NE(doc.status().message().find(path), std::string::npos) << doc.status().ToString();
        // Unmodified documentation PDFs must extract, unless they are only
        // pictures (groff's mom examples ship penguin.pdf: no text at all).
        if (*kind != ExtractError::kNoTextLayer) {
          EXPECT_NE(suffix, "orig") << src << ": " << doc.status().ToString();
        }
      }
      std::cout << src.filename().string() << " " << suffix << ": "
                << (doc.ok() ? "ok, " + std::to_string(doc->metadata.page_count) + " pages"
                             : doc.status().ToString().substr(0, 160))
                << " (" << seconds << " s)\n";
      fs::remove(path);
    }
  }
  std::cout << found.size() << " PDFs:";
  for (const auto& [what, n] : outcomes) std::cout << " " << what << "=" << n;
  std::cout << "\n";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm::ingest
