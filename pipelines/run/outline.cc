// The `outline` section: the document's own top-level sections, each with
// its pages and one sentence the model writes from that section alone
// (pipeline_spec.h, PipelineSpec::outline).
#include <algorithm>

#include "ellm/pipelines/pipeline_processor.h"

#include "ellm/pipelines/backbone.h"
#include "ellm/pipelines/statements.h"
#include "run/pipeline_internal.h"

namespace ellm::pipelines {
namespace {

using ordered_json = nlohmann::ordered_json;
using internal::AddGeneration;
using internal::kMargin;
using internal::Trim;

// A section is read from its start, at most this many tokens: its opening
// says what it is about, and a small model reads a few thousand tokens well.
constexpr int64_t kMaxSectionTokens = 3072;
constexpr int kGistTokens = 48;
constexpr int kFigureTokens = 32;
const char kLead[] = "This section";
const char kFigureLead[] = "\nKey figure of this section:";

// A kept section sentence names this many content stems that its heading
// and the document's title do not.
constexpr int kMinNewStems = 2;

// Words of how a summary talks about itself, beyond statements.h's stop
// words: they carry nothing about a section.
bool MetaStem(const std::string& s) {
  static const char* const kMeta[] = {"intend", "genera", "quick",  "concis",
                                      "brief",  "detail", "explan", "follow"};
  for (const char* m : kMeta) {
    if (s == m) return true;
  }
  return false;
}

// Content stems of `sentence` not among those of `known` and not meta.
int NewStems(const std::string& sentence, const std::string& known) {
  const std::vector<std::string> have = ContentStems(known);
  int n = 0;
  for (const std::string& s : ContentStems(sentence)) {
    n += !MetaStem(s) && std::find(have.begin(), have.end(), s) == have.end();
  }
  return n;
}

std::string Pages(const OutlineEntry& e) {
  if (e.first_page <= 0) return "";
  return e.first_page == e.last_page
             ? "p. " + std::to_string(e.first_page)
             : "pp. " + std::to_string(e.first_page) + "-" + std::to_string(e.last_page);
}

}  // namespace

PipelineResult PipelineProcessor::Outline(const PipelineDoc& doc, const std::vector<Page>& pages,
                                          const std::atomic<bool>& cancel, PipelineOutput* r,
                                          std::string* text, ordered_json* json,
                                          std::vector<std::string>* figures) {
  auto count = [&](const std::string& t) { return generator_->CountTokens(t); };
  const std::vector<OutlineEntry> outline = DocumentOutline(pages, doc.headings);
  const std::vector<std::vector<KeyTerm>> terms = SectionKeyTerms(outline, spec_.outline_terms);
  *json = ordered_json::array();
  text->clear();
  GenerationSettings settings = spec_.generation;
  settings.max_tokens = kGistTokens;
  settings.stop = {". ", ".\n", "\n"};
  for (size_t i = 0; i < outline.size(); ++i) {
    if (cancel.load()) return PipelineResult::Cancelled();
    const OutlineEntry& e = outline[i];
    if (progress_) {
      progress_({"outline " + std::to_string(i + 1) + "/" + std::to_string(outline.size()),
                 static_cast<int64_t>(i), static_cast<int64_t>(outline.size())});
    }
    const std::string head = "Section \"" + e.heading + "\" of \"" + doc.title + "\":\n\n";
    const std::string tail = "\n\nThe section \"" + e.heading + "\" in one sentence:\n";
    const int64_t budget = std::min<int64_t>(
        kMaxSectionTokens, generator_->context() - count(head + tail) - kGistTokens - kMargin);
    if (budget < 64) break;
    const std::string body = FirstForBudget(e.text, budget, count);
    // One prefill: the sentence, then the section's key figure.
    auto g = generator_->GenerateSections(
        spec_.system_prompt, head + body + tail, spec_.format, settings,
        {{kLead, kGistTokens}, {kFigureLead, kFigureTokens, {"\n"}}}, cancel, nullptr);
    if (!g.ok()) {
      return PipelineResult::FailedWith("engine_error", g.status().ToString(), g.status());
    }
    if (g->cancelled) return PipelineResult::Cancelled();
    AddGeneration(*r, *g);
    std::string gist = g->sections.empty() ? "" : Trim(kLead + g->sections[0]);
    if (!gist.empty() && gist.back() != '.') gist += ".";
    // The sentence must rest on this section's own pages.
    std::vector<Page> own;
    for (const Page& p : pages) {
      if (p.number >= e.first_page && p.number <= e.last_page) own.push_back(p);
    }
    const StatementCheck check = VerifyStatements(gist, own);
    // Its figures (years, dates, amounts, percentages) must be this
    // section's own, or its heading's or the title's, the rest of what the
    // model was shown: a page or a text file holds other sections too, and
    // a year taken from them is not what this section says.
    std::vector<Page> shown = SplitPages(e.text);
    shown.push_back({0, doc.title});
    const bool supported =
        check.supported == 1 && check.unsupported.empty() && UnstatedFigures(gist, shown).empty();
    // A sentence that only restates the heading ("This section describes the
    // maximum depth of an expression tree.") or the model's meta-talk ("is
    // intended to provide a quick overview of ...") tells the reader nothing.
    const bool adds = NewStems(gist, e.heading + " " + doc.title) >= kMinNewStems;
    const bool kept = supported && adds;
    if (kept) gist = check.text;  // with its page
    std::string figure;
    if (g->sections.size() > 1) {
      const FigureCheck f = VerifyFigureLines("- " + Trim(g->sections[1]), own);
      if (f.figures_total > 0 && f.unverified.empty()) figure = Trim(f.text);
    }
    if (!figure.empty()) figures->push_back(figure);
    // Else the section's own sentence that states its figure best
    // (backbone.h), quoted: the section's key figure does not depend on the
    // model writing it (issue 56 item 3).
    std::string own_figure;
    if (figure.empty()) {
      std::vector<ChosenSentence> chosen =
          ChooseSentences(SplitPages(e.text), BackbonePart::kFigures, 1);
      if (!chosen.empty()) own_figure = QuotedLines(chosen).substr(2);  // without "- "
    }
    // The section's own key terms, each with its page: what it is about in
    // the document's words, whatever the model made of it.
    std::string term_list;
    ordered_json term_json = ordered_json::array();
    for (const KeyTerm& t : terms[i]) {
      term_list += (term_list.empty() ? "" : ", ") + t.term +
                   (t.page > 0 ? " [p. " + std::to_string(t.page) + "]" : "");
      term_json.push_back({{"term", t.term}, {"page", t.page}, {"count", t.count}});
    }
    const std::string where = Pages(e);
    std::string line = "- " + e.heading + (where.empty() ? "" : " (" + where + ")");
    if (kept || !term_list.empty() || !own_figure.empty()) line += ":";
    if (kept) line += " " + gist;
    if (!term_list.empty()) line += " Terms: " + term_list + ".";
    if (!own_figure.empty()) line += " Key figure: " + own_figure;
    *text += line + "\n";
    json->push_back({{"heading", e.heading},
                     {"pages", {e.first_page, e.last_page}},
                     {"sentence", gist},
                     {"supported", supported},
                     {"kept", kept},
                     {"figure", !figure.empty()       ? ordered_json(figure)
                                : !own_figure.empty() ? ordered_json(own_figure)
                                                      : ordered_json(nullptr)},
                     {"figure_from", !figure.empty()       ? "model"
                                     : !own_figure.empty() ? "document"
                                                           : "none"},
                     {"terms", term_json}});
  }
  return {};
}

}  // namespace ellm::pipelines
