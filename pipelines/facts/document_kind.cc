// Which kind of document (see document_kind.h).
#include "ellm/pipelines/document_kind.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "ellm/pipelines/contracts.h"

namespace ellm::pipelines {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

size_t Count(std::string_view text, std::string_view word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    ++n;
  }
  return n;
}

// The first word of `words` found in `text` as a whole word; empty if none.
std::string FirstWord(std::string_view text, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words) {
    for (size_t at = text.find(w); at != std::string_view::npos; at = text.find(w, at + 1)) {
      const bool start = at == 0 || !std::isalpha(static_cast<unsigned char>(text[at - 1]));
      const size_t end = at + w.size();
      const bool stop = end >= text.size() || !std::isalpha(static_cast<unsigned char>(text[end]));
      if (start && stop) return std::string(w);
    }
  }
  return "";
}

}  // namespace

DocumentKind ClassifyDocument(const std::string& title, const std::vector<Page>& pages,
                              size_t headings) {
  const std::vector<Page> read(pages.begin(),
                               pages.begin() + std::min(pages.size(), kMaxKindPages));
  const std::vector<Page> front(read.begin(), read.begin() + std::min<size_t>(read.size(), 2));
  std::string front_text;
  for (const Page& p : front) front_text += p.text + "\n";
  const std::string head = Lower(title) + "\n" + Lower(front_text.substr(0, 4000));

  const std::vector<Party> parties = FindParties(front);
  if (parties.size() >= 2) {
    return {"contract", "it defines the parties " + parties[0].role + " and " + parties[1].role};
  }
  std::string all;
  for (const Page& p : read) all += Lower(p.text) + "\n";
  const std::string self = FirstWord(head, {"this agreement", "this contract", "this licence",
                                            "this license", "terms and conditions"});
  if (!self.empty() && Count(all, " shall ") >= 5) {
    size_t numbered = 0;
    for (const Clause& c : SplitClauses(read)) numbered += c.number.empty() ? 0 : 1;
    if (numbered >= 4) {
      return {"contract", "it calls itself \"" + self + "\" and binds with \"shall\" in " +
                              std::to_string(numbered) + " numbered clauses"};
    }
  }
  const std::string lower_title = Lower(title);
  const bool says_report = !FirstWord(lower_title, {"report", "review", "annual"}).empty() ||
                           !FirstWord(head, {"this report", "the report"}).empty();
  const std::string manual =
      FirstWord(head, {"manual", "user's guide", "user guide", "guide", "handbook", "tutorial",
                       "specification", "howto", "cookbook", "faq"});
  if (!says_report && !manual.empty() && (headings >= 3 || read.size() >= 3)) {
    return {"manual", "it calls itself a " + manual};
  }
  return {"report", says_report ? "it calls itself a report" : "the default"};
}

}  // namespace ellm::pipelines
