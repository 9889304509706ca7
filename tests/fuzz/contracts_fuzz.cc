// libFuzzer target for the contract comparison (pipelines/contracts.h):
// clause splitting, party definitions, values, alignment, the word diff and
// the reports, on text nobody here wrote. Built only with -DELLM_FUZZ=ON and
// clang (tests/fuzz/CMakeLists.txt); run it with `scripts/fuzz SECONDS
// contracts`. The input is contract A, a NUL byte, contract B; form feeds
// split pages.
//
// For any bytes: no crash (ASan, UBSan), and every clause of A and of B is
// in exactly one aligned pair, and the HTML is made from the JSON. A's text
// also goes through a summary's extractive backbone (backbone.h) and the
// clause history of a base and its amendments.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/pipelines/backbone.h"
#include "ellm/pipelines/contracts.h"

namespace {

std::vector<ellm::pipelines::Page> Pages(std::string_view text) {
  std::vector<ellm::pipelines::Page> out;
  int n = 1;
  while (true) {
    const size_t ff = text.find('\f');
    out.push_back({n++, std::string(text.substr(0, ff))});
    if (ff == std::string_view::npos) break;
    text.remove_prefix(ff + 1);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view a = input.substr(0, nul);
  const std::string_view b = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  const ellm::pipelines::ContractComparison c =
      ellm::pipelines::CompareContracts(Pages(a), Pages(b));
  std::vector<int> seen_a(c.a.size(), 0), seen_b(c.b.size(), 0);
  for (const auto& x : c.aligned) {
    if (x.a >= static_cast<int>(c.a.size()) || x.b >= static_cast<int>(c.b.size())) {
      __builtin_trap();
    }
    if (x.a >= 0) ++seen_a[static_cast<size_t>(x.a)];
    if (x.b >= 0) ++seen_b[static_cast<size_t>(x.b)];
  }
  for (int n : seen_a) {
    if (n != 1) __builtin_trap();
  }
  for (int n : seen_b) {
    if (n != 1) __builtin_trap();
  }
  const std::string html =
      ellm::pipelines::ComparisonHtml(ellm::pipelines::ComparisonJson(c), "a", "b");
  if (html.find("</html>") == std::string::npos) __builtin_trap();
  // Every key-term row has a value on some side and one of four statuses.
  for (const ellm::pipelines::KeyTermRow& r : ellm::pipelines::KeyTermsView(c)) {
    const bool same = r.status == "same";
    if (r.a.empty() && r.b.empty()) __builtin_trap();
    if (!same && r.status != "different" && r.status != "only in A" && r.status != "only in B") {
      __builtin_trap();
    }
    if (same && (r.a.empty() || r.b.empty())) __builtin_trap();
  }
  // A's text as a summary's source: the document's own sentences for each
  // part (backbone.h), no more than asked, each from a page of A.
  const std::vector<ellm::pipelines::Page> pages = Pages(a);
  using ellm::pipelines::BackbonePart;
  const auto own = ellm::pipelines::ChooseForParts(pages, {{BackbonePart::kPurpose, 2},
                                                           {BackbonePart::kFigures, 4},
                                                           {BackbonePart::kRisks, 3},
                                                           {BackbonePart::kConclusions, 2}});
  const size_t want[] = {2, 4, 3, 2};
  for (size_t i = 0; i < own.size(); ++i) {
    if (own[i].size() > want[i]) __builtin_trap();
    for (const auto& c : own[i]) {
      if (c.page < 1 || c.page > static_cast<int>(pages.size()) || c.text.empty()) {
        __builtin_trap();
      }
    }
  }
  // A base and two amendments (B, then A again): a history for each clause.
  const auto back = ellm::pipelines::CompareContracts(Pages(b), pages);
  const auto histories = ellm::pipelines::ClauseHistories({c, back});
  if (histories.size() < c.a.size()) __builtin_trap();
  return 0;
}
