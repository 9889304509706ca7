// PipelineProcessor with a fake TextGenerator: the outline and its terms,
// statements checked against the document, map-reduce, truncation, a
// context overflow, JSON answers checked against the schema, cancellation —
// without a model. The documents are real Markdown files read by ingest.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ellm/pipelines/generator.h"
#include "ellm/pipelines/pipeline_processor.h"
#include "ellm/pipelines/pipeline_spec.h"
#include "test_env.h"

namespace ellm::pipelines {
namespace {

// Words are tokens; answers come from `answer(prompt, lead)` per section.
class FakeGenerator : public TextGenerator {
 public:
  using Answer = std::function<std::string(const std::string& prompt, const std::string& lead)>;
  FakeGenerator(int64_t context, Answer answer) : context_(context), answer_(std::move(answer)) {}

  int64_t CountTokens(const std::string& text) const override {
    std::istringstream in(text);
    int64_t n = 0;
    for (std::string w; in >> w;) ++n;
    return n;
  }
  int64_t context() const override { return context_; }
  const std::string& fingerprint() const override { return fingerprint_; }
  std::string model_name() const override { return "Fake 1B"; }
  std::string model_path() const override { return "/models/fake-1b.gguf"; }

  StatusOr<Generation> Generate(const std::string& system, const std::string& prompt,
                                PromptFormat format, const GenerationSettings& settings,
                                const std::atomic<bool>& cancel,
                                const ProgressFn& progress) override {
    const std::vector<Section> one = {{"", settings.max_tokens, {}}};
    return GenerateSections(system, prompt, format, settings, one, cancel, progress, {});
  }
  StatusOr<Generation> GenerateSections(const std::string&, const std::string& prompt, PromptFormat,
                                        const GenerationSettings&,
                                        const std::vector<Section>& sections,
                                        const std::atomic<bool>& cancel, const ProgressFn&,
                                        SharedPrefix shared_prefix) override {
    prompts.push_back(prompt);
    shared_prefixes.push_back(shared_prefix);
    Generation g;
    if (cancel.load()) {
      g.cancelled = true;
      return g;
    }
    const int64_t tokens = CountTokens(prompt);
    if (tokens > context_)
      return OutOfRangeError("prompt of " + std::to_string(tokens) + " tokens");
    g.prompt_tokens = tokens;
    for (const Section& s : sections) {
      std::string a = answer_(prompt, s.lead);
      g.sections.push_back(a);
      g.text += s.lead + a;
      g.generated_tokens += CountTokens(a);
    }
    return g;
  }

  std::vector<std::string> prompts;
  std::vector<SharedPrefix> shared_prefixes;  // one per prompt

 private:
  int64_t context_;
  Answer answer_;
  std::string fingerprint_ = "fake-1b.gguf:Fake 1B:1";
};

PipelineSpec ShippedSpec(const std::string& name) {
  auto spec = LoadPipelineFile(::ellm::testing::SourceDir() + "/pipelines/defs/" + name + ".yaml");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : PipelineSpec{};
}

PipelineRequest Job(const std::string& name, const std::string& text) {
  PipelineRequest job;
  job.job_id = "j1";
  ingest::JobDocument d;
  d.is_inline = true;
  d.name = name;
  d.inline_bytes = text;
  job.documents.push_back(d);
  return job;
}

// A manual with numbered sections: each says what it holds in its own words.
const char kManual[] =
    "Full-text search manual\n\n"
    "1. Queries\n\n"
    "A query uses MATCH to search the index. MATCH takes a phrase, and NEAR finds terms close "
    "together. With NEAR the distance is given as NEAR/3. MATCH and NEAR combine freely.\n\n"
    "2. Tokenizers\n\n"
    "The porter tokenizer stems English words. The unicode61 tokenizer folds case and removes "
    "diacritics. Choose porter for English text; unicode61 handles other scripts. The porter and "
    "unicode61 tokenizers are built in.\n\n"
    "3. Maintenance\n\n"
    "The optimize command merges segments. The integrity-check command verifies the index. Run "
    "optimize after bulk loads and integrity-check after a crash. Both optimize and "
    "integrity-check read every segment.\n\n"
    "4. Backup Files\n\n"
    "A backup file is a copy of the database taken with the backup command. Keep backup files "
    "on another disk; restore them with the restore command after a failure.\n";

std::string ManualAnswer(const std::string& prompt, const std::string& lead) {
  if (prompt.find("in one sentence:") != std::string::npos) {
    if (lead != "This section") return " 42 bananas";  // the key figure: not in the section
    if (prompt.find("\"2. Tokenizers\"") != std::string::npos) {
      return " compares the porter tokenizer with the unicode61 tokenizer";
    }
    if (prompt.find("\"4. Backup Files\"") != std::string::npos) {
      return " describes the backup files";  // supported, but only says the heading again
    }
    if (prompt.find("\"3. Maintenance\"") != std::string::npos) {
      return " explains how bananas grow on Mars";  // unsupported: dropped
    }
    return " explains queries with MATCH and NEAR";
  }
  if (lead.find("Key figures") != std::string::npos) return " The manual has no figures.";
  return " The porter tokenizer stems English words.";
}

TEST(PipelineProcessor, OutlineListsEachSectionWithASupportedSentenceAndItsTerms) {
  FakeGenerator gen(8192, ManualAnswer);
  PipelineProcessor p(ShippedSpec("summarize-report"), &gen, {});
  std::atomic<bool> cancel{false};
  PipelineResult r = p.Run(Job("manual.md", kManual), cancel);
  ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
  const std::string& text = r.output->output_text;
  EXPECT_EQ(r.output->strategy, "single-pass");
  // A text file has no pages, so nothing cites one. Names and codes first.
  EXPECT_NE(text.find("- 1. Queries: This section explains queries with MATCH and NEAR. "
                      "Terms: NEAR, MATCH.\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("- 2. Tokenizers: This section compares the porter tokenizer with the "
                      "unicode61 tokenizer. Terms: unicode61, English, porter.\n"),
            std::string::npos)
      << text;
  // The unsupported sentence is gone; the terms stay.
  EXPECT_NE(text.find("- 3. Maintenance: Terms: integrity-check, optimize."), std::string::npos)
      << text;
  EXPECT_EQ(text.find("bananas"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(r.output->output_json.value_or(""));
  ASSERT_EQ(json["outline"].size(), 4u) << json.dump(1);
  EXPECT_FALSE(json["outline"][2]["supported"].get<bool>());
  EXPECT_FALSE(json["outline"][2]["kept"].get<bool>());
  // Supported by its page, yet only the heading again: left out.
  EXPECT_TRUE(json["outline"][3]["supported"].get<bool>());
  EXPECT_FALSE(json["outline"][3]["kept"].get<bool>());
  EXPECT_TRUE(json["outline"][1]["kept"].get<bool>());
  // (and no terms: "backup" is the heading's, the others recur too little)
  EXPECT_EQ(text.substr(text.size() - 18), "\n- 4. Backup Files") << text;
  EXPECT_EQ(json["outline"][2]["terms"][0]["term"], "integrity-check");
  EXPECT_EQ(json["outline"][2]["terms"][0]["count"], 3);
  EXPECT_TRUE(json["outline"][0]["figure"].is_null());  // "42 bananas" is not in section 1
  // Each section was read on its own: its prompt holds its text and not the next one's.
  int section_prompts = 0;
  for (const std::string& prompt : gen.prompts) {
    if (prompt.find("\"2. Tokenizers\" in one sentence:") == std::string::npos) continue;
    ++section_prompts;
    EXPECT_NE(prompt.find("unicode61 tokenizer folds case"), std::string::npos);
    EXPECT_EQ(prompt.find("optimize command"), std::string::npos);
  }
  EXPECT_EQ(section_prompts, 1);
}

// A review in a .txt file: one page, numbered sections.
const char kReview[] =
    "Harbor Logistics Annual Review 2025\n\n"
    "1 Introduction\n\n"
    "Harbor Logistics operates twelve container terminals across northern Europe. This review "
    "covers the financial year 2025 and the plans of the board for the next two years.\n\n"
    "2 Financial results\n\n"
    "Revenue rose to EUR 2.3 billion, up 8 percent. Operating profit was EUR 310 million. Net "
    "debt fell to EUR 900 million after the sale of the Gdansk warehouse.\n\n"
    "3 Risks\n\n"
    "The main risks are lower trade volumes in the Baltic, a strike at the Rotterdam terminal "
    "and higher fuel prices for the tug fleet.\n\n"
    "4 Outlook\n\n"
    "The board expects revenue growth of 5 percent in 2026 and will open a new terminal in "
    "Aarhus in the autumn.\n";

// summarize-report on kReview with `gen`'s answers.
PipelineResult SummarizeReview(FakeGenerator& gen) {
  PipelineProcessor p(ShippedSpec("summarize-report"), &gen, {});
  std::atomic<bool> cancel{false};
  return p.Run(Job("review.txt", kReview), cancel);
}

std::string ReviewAnswer(const std::string& prompt, const std::string& lead) {
  if (prompt.find("in one sentence:") == std::string::npos) {
    return " Harbor Logistics operates container terminals.";
  }
  if (lead != "This section") return " none";
  if (prompt.find("\"1 Introduction\"") != std::string::npos) {
    return " covers the financial year 2025 and the plans of the board";  // its own year
  }
  if (prompt.find("\"2 Financial results\"") != std::string::npos) {
    return " is a summary of the financial results for the year ended 31 December 2019";
  }
  if (prompt.find("\"3 Risks\"") != std::string::npos) {
    return " names lower trade volumes, a strike and fuel prices in 2025";  // section 1's year
  }
  return " describes the revenue growth the board expects in the 2022 financial year";
}

// Regression (sec2.txt): a Contents sentence with a year the document never
// gives was supported and kept, its words being in the section. Its figures
// must be the section's own (or its heading's, or the title's).
TEST(PipelineProcessor, AnOutlineSentenceWithFiguresNotInItsSectionIsNotKept) {
  FakeGenerator gen(8192, ReviewAnswer);
  PipelineResult r = SummarizeReview(gen);
  ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
  const std::string& text = r.output->output_text;
  EXPECT_NE(text.find("- 1 Introduction: This section covers the financial year 2025 and the "
                      "plans of the board."),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("2019"), std::string::npos) << text;
  EXPECT_EQ(text.find("2022"), std::string::npos) << text;
  EXPECT_EQ(text.find("fuel prices in 2025"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(r.output->output_json.value_or(""));
  ASSERT_EQ(json["outline"].size(), 4u) << json.dump(1);
  EXPECT_TRUE(json["outline"][0]["supported"].get<bool>());
  EXPECT_TRUE(json["outline"][0]["kept"].get<bool>());
  for (int i = 1; i < 4; ++i) {
    EXPECT_FALSE(json["outline"][i]["supported"].get<bool>()) << json["outline"][i].dump();
    EXPECT_FALSE(json["outline"][i]["kept"].get<bool>()) << json["outline"][i].dump();
  }
}

// Issue 56: a model whose every sentence fails the checks (the shipped 270M
// model on long documents) once left Purpose, Key figures, Risks and
// Conclusions empty. Each now shows the document's own sentences of its
// kind, quoted, listed in `extracted`; the model's words are gone.
TEST(PipelineProcessor, SectionsTheModelCouldNotFillShowTheDocumentsOwnSentences) {
  FakeGenerator gen(8192, [](const std::string&, const std::string&) {
    return std::string(" Bananas grow on Mars in 1850 and cost 7 dollars.");
  });
  PipelineResult r = SummarizeReview(gen);
  ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
  const std::string& text = r.output->output_text;
  EXPECT_EQ(text.find("Bananas"), std::string::npos) << text;
  EXPECT_EQ(text.find("(no statement could be traced"), std::string::npos) << text;
  EXPECT_NE(
      text.find("## Key figures\n- \u201cRevenue rose to EUR 2.3 billion, up 8 percent.\u201d"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("## Risks\n- \u201cThe main risks are lower trade volumes in the Baltic"),
            std::string::npos)
      << text;
  // The outlook has a figure too, but it serves the conclusions better.
  EXPECT_NE(text.find("## Conclusions\n- \u201cThe board expects revenue growth of 5 percent"),
            std::string::npos)
      << text;
  const auto json = nlohmann::json::parse(r.output->output_json.value_or(""));
  ASSERT_TRUE(json["extracted"].is_array()) << json.dump(1);
  std::set<std::string> sections;
  for (const auto& e : json["extracted"]) {
    sections.insert(e["section"].get<std::string>());
    EXPECT_NE(std::string(kReview).find(e["sentence"].get<std::string>()), std::string::npos)
        << e.dump();
  }
  EXPECT_EQ(sections.count("Key figures"), 1u) << json["extracted"].dump(1);
  EXPECT_EQ(sections.count("Risks"), 1u) << json["extracted"].dump(1);
  EXPECT_EQ(json["faithfulness"]["extracted_sentences"], json["extracted"].size());
}

// A model sentence the checks keep can still say little; the document's
// best sentence of the kind joins it (figure lines stand alone).
TEST(PipelineProcessor, TheDocumentsOwnSentenceJoinsModelProseThatSurvives) {
  FakeGenerator gen(8192, [](const std::string&, const std::string& lead) {
    if (lead.find("## Purpose") != std::string::npos) {
      return std::string(" covers the financial year 2025 for the board.");
    }
    return std::string(" Bananas grow on Mars in 1850 and cost 7 dollars.");
  });
  PipelineResult r = SummarizeReview(gen);
  ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
  const std::string& text = r.output->output_text;
  EXPECT_NE(text.find("## Purpose\nThe report covers the financial year 2025 for the board.\n- "
                      "\u201cHarbor Logistics operates twelve container terminals"),
            std::string::npos)
      << text;
  const auto json = nlohmann::json::parse(r.output->output_json.value_or(""));
  int purpose = 0;
  for (const auto& e : json["extracted"]) purpose += e["section"] == "Purpose";
  EXPECT_EQ(purpose, 1) << json["extracted"].dump(1);
}

// Regression: the model's pipelines said "document 2" and document-stats
// "document 1" of the same second document. Messages for people count from
// 1 and say of how many.
TEST(PipelineProcessor, AFailedDocumentIsNamedFromOneInEveryPipeline) {
  PipelineRequest job = Job("a.md", kManual);
  ingest::JobDocument missing;
  missing.path = missing.resolved_path = "/nonexistent/b.pdf";
  job.documents.push_back(missing);
  FakeGenerator gen(8192, ManualAnswer);
  PipelineProcessor compare(ShippedSpec("compare-contracts"), &gen, {});
  std::unique_ptr<Processor> stats = MakeDocumentStatsProcessor({});
  std::atomic<bool> cancel{false};
  for (Processor* p : {static_cast<Processor*>(&compare), stats.get()}) {
    PipelineResult r = p->Run(job, cancel);
    ASSERT_FALSE(r.output.has_value()) << p->name();
    EXPECT_EQ(r.error.rfind("document 2 of 2 ('/nonexistent/b.pdf'): ", 0), 0u)
        << p->name() << ": " << r.error;
  }
}

TEST(PipelineProcessor, ADocumentOverTheContextIsMappedThenReduced) {
  std::string long_doc;
  for (int i = 0; i < 60; ++i) {
    long_doc += "Paragraph " + std::to_string(i) +
                " says revenue rose 12% to EUR 4.2 billion while the porter tokenizer stems "
                "English words in the annual report of the company.\n\n";
  }
  FakeGenerator gen(1400, [](const std::string&, const std::string&) {
    return std::string(" Revenue rose 12% to EUR 4.2 billion [page 1].");
  });
  PipelineProcessor p(ShippedSpec("summarize-report"), &gen, {});
  std::atomic<bool> cancel{false};
  PipelineResult r = p.Run(Job("long.txt", long_doc), cancel);
  ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
  EXPECT_EQ(r.output->strategy.rfind("map-reduce", 0), 0u) << r.output->strategy;
  EXPECT_NE(r.output->strategy.find("tokens > the context's room"), std::string::npos)
      << r.output->strategy;
  EXPECT_GT(gen.prompts.size(), 2u);  // map steps, then the answer
  for (const std::string& prompt : gen.prompts) EXPECT_LE(gen.CountTokens(prompt), 1400);
  EXPECT_NE(r.output->output_text.find("EUR 4.2 billion"), std::string::npos)
      << r.output->output_text;
}

PipelineSpec PlainSpec(const std::string& overflow, const std::string& extra = "") {
  auto spec = ParsePipeline(
      "name: plain\nversion: \"1\"\nprompt: \"{{documents}}\\nAnswer:\"\n"
      "generation: {max_tokens: 20}\noverflow: " +
          overflow + "\n" + extra,
      "test");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : PipelineSpec{};
}

std::string Words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "word" + std::to_string(i) + (i % 12 == 11 ? ".\n\n" : " ");
  return s;
}

TEST(PipelineProcessor, TruncateCutsTheDocumentToFitAndFailRefusesIt) {
  FakeGenerator gen(300, [](const std::string&, const std::string&) { return " ok"; });
  std::atomic<bool> cancel{false};
  PipelineProcessor truncate(PlainSpec("truncate"), &gen, {});
  PipelineResult t = truncate.Run(Job("a.txt", Words(600)), cancel);
  ASSERT_TRUE(t.output.has_value()) << t.error_code << ": " << t.error;
  EXPECT_EQ(t.output->strategy.rfind("truncate", 0), 0u) << t.output->strategy;
  ASSERT_EQ(gen.prompts.size(), 1u);
  EXPECT_NE(gen.prompts[0].find("word0 "), std::string::npos);
  EXPECT_EQ(gen.prompts[0].find("word599"), std::string::npos);
  EXPECT_LE(gen.CountTokens(gen.prompts[0]), 300);

  PipelineProcessor fail(PlainSpec("fail"), &gen, {});
  PipelineResult f = fail.Run(Job("a.txt", Words(600)), cancel);
  EXPECT_FALSE(f.output.has_value());
  EXPECT_EQ(f.error_code, "context_overflow");
  EXPECT_NE(f.error.find("tokens"), std::string::npos) << f.error;
  EXPECT_EQ(gen.prompts.size(), 1u);  // the model was not asked
}

TEST(PipelineProcessor, AJsonAnswerMustParseAndMatchTheSchema) {
  const std::string extra = "output: json\nschema: {title: string, pages: number}\n";
  std::atomic<bool> cancel{false};
  FakeGenerator good(4096, [](const std::string&, const std::string&) {
    return std::string(R"({"title": "Manual", "pages": 3})");
  });
  PipelineProcessor ok(PlainSpec("fail", extra), &good, {});
  PipelineResult r = ok.Run(Job("a.txt", Words(20)), cancel);
  ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
  EXPECT_EQ(nlohmann::json::parse(r.output->output_json.value_or(""))["pages"], 3);

  for (const char* bad : {R"({"title": "Manual")", R"({"title": 7, "pages": 3})"}) {
    FakeGenerator gen(4096, [&](const std::string&, const std::string&) { return bad; });
    PipelineProcessor p(PlainSpec("fail", extra), &gen, {});
    PipelineResult b = p.Run(Job("a.txt", Words(20)), cancel);
    EXPECT_FALSE(b.output.has_value()) << bad;
    EXPECT_EQ(b.error_code, "output_invalid") << bad;
    // The answer (document content) apart from the message, which logs show.
    EXPECT_NE(b.error_answer.find(bad), std::string::npos) << b.error_answer;
    EXPECT_EQ(b.error.find("Manual"), std::string::npos) << b.error;
    EXPECT_NE(b.ErrorWithAnswer().find("the answer began: " + std::string(bad)), std::string::npos)
        << b.ErrorWithAnswer();
  }
}

// Issue 37 item 7: a saved KV state encodes its document, so only a
// pipeline with `prefix_cache: true` offers its first document to the
// prefix cache; the prompt is split there either way (answers do not
// depend on the key). No shipped pipeline opts in.
TEST(PipelineProcessor, OnlyAPipelineThatOptsInOffersItsPrefixToTheCache) {
  std::atomic<bool> cancel{false};
  for (const bool opted_in : {false, true}) {
    FakeGenerator gen(4096, [](const std::string&, const std::string&) { return " ok"; });
    PipelineProcessor p(PlainSpec("fail", opted_in ? "prefix_cache: true\n" : ""), &gen, {});
    PipelineResult r = p.Run(Job("a.txt", Words(20)), cancel);
    ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
    ASSERT_EQ(gen.shared_prefixes.size(), 1u);
    EXPECT_GT(gen.shared_prefixes[0].chars, 0u) << opted_in;
    EXPECT_EQ(gen.shared_prefixes[0].cache, opted_in);
  }
  for (const char* name : {"summarize-report", "compare-contracts", "extract-key-terms"}) {
    EXPECT_FALSE(ShippedSpec(name).prefix_cache) << name;
  }
  FakeGenerator gen(8192, ManualAnswer);
  PipelineProcessor shipped(ShippedSpec("summarize-report"), &gen, {});
  PipelineResult r = shipped.Run(Job("manual.md", kManual), cancel);
  ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
  ASSERT_FALSE(gen.shared_prefixes.empty());
  for (const SharedPrefix& s : gen.shared_prefixes) EXPECT_FALSE(s.cache);
  // Fields read each document on its own and offer its block the same way.
  for (const bool opted_in : {false, true}) {
    PipelineSpec spec = ShippedSpec("extract-key-terms");
    spec.prefix_cache = opted_in;
    FakeGenerator fields(8192, [](const std::string&, const std::string&) { return " none"; });
    PipelineProcessor p(spec, &fields, {});
    p.Run(Job("manual.md", kManual), cancel);
    ASSERT_FALSE(fields.shared_prefixes.empty());
    EXPECT_GT(fields.shared_prefixes[0].chars, 0u);
    for (const SharedPrefix& s : fields.shared_prefixes) EXPECT_EQ(s.cache, opted_in);
  }
}

TEST(PipelineProcessor, ACancelledJobStopsWithoutAResult) {
  FakeGenerator gen(4096, [](const std::string&, const std::string&) { return " ok"; });
  PipelineProcessor p(PlainSpec("fail"), &gen, {});
  std::atomic<bool> cancel{true};
  PipelineResult r = p.Run(Job("a.txt", Words(20)), cancel);
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.output.has_value());
  EXPECT_TRUE(r.error_code.empty());
}

// Issue 56 item 4: the shipped summary fits the document. A contract gets
// its parties, money, obligations and liabilities (the model's failed
// sentences replaced by the contract's own), and the result says which
// kind was used and why; a job may name the kind, and an unknown one is
// refused.
TEST(PipelineProcessor, TheSummaryFitsTheKindOfDocument) {
  FakeGenerator gen(8192, [](const std::string&, const std::string&) {
    return std::string(" Bananas grow on Mars in 1850 and cost 7 dollars.");
  });
  PipelineProcessor p(ShippedSpec("summarize-report"), &gen, {});
  const std::string contract =
      "SUPPLY AGREEMENT\n\nThis Agreement is made between Alpha Ltd (the \"Supplier\") and "
      "Beta plc (the \"Buyer\").\n\n1. Delivery. The Supplier shall deliver the goods within 30 "
      "days of each order.\n\n2. Price. The Buyer shall pay EUR 120,000 per year, invoiced "
      "quarterly.\n\n3. Liability. The Supplier's liability shall not exceed EUR 500,000.\n";
  std::atomic<bool> cancel{false};
  PipelineResult r = p.Run(Job("supply.md", contract), cancel);
  ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
  const std::string& text = r.output->output_text;
  for (const char* heading : {"## Parties and purpose", "## Money and dates", "## Obligations",
                              "## Liabilities and risks"}) {
    EXPECT_NE(text.find(heading), std::string::npos) << heading << " in:\n" << text;
  }
  EXPECT_EQ(text.find("## Key figures"), std::string::npos) << text;
  EXPECT_NE(text.find("The Supplier shall deliver the goods within 30 days"), std::string::npos)
      << text;
  auto json = nlohmann::json::parse(r.output->output_json.value_or("{}"));
  EXPECT_EQ(json["kind"]["name"], "contract") << json.dump(1);
  EXPECT_EQ(json["kind"]["from"], "detected");
  EXPECT_EQ(json["kind"]["why"], "it defines the parties Supplier and Buyer");

  PipelineRequest named = Job("supply.md", contract);
  named.params_json = R"({"kind": "report"})";
  r = p.Run(named, cancel);
  ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
  EXPECT_NE(r.output->output_text.find("## Key figures"), std::string::npos);
  json = nlohmann::json::parse(r.output->output_json.value_or("{}"));
  EXPECT_EQ(json["kind"]["name"], "report");
  EXPECT_EQ(json["kind"]["from"], "params");

  named.params_json = R"({"kind": "poem"})";
  r = p.Run(named, cancel);
  EXPECT_EQ(r.error_code, "invalid_params");
  EXPECT_NE(r.error.find("params.kind 'poem'"), std::string::npos) << r.error;
}

// Issue 56 item 3: a section's key figure does not depend on the model
// writing it. Where the model's figure is not the section's ("42 bananas"),
// the section's own sentence that states its figure best is quoted on its
// Contents line, and the result says it is the document's.
TEST(PipelineProcessor, EachSectionKeepsItsOwnKeyFigureWhereTheModelsFails) {
  FakeGenerator gen(8192, ManualAnswer);
  PipelineProcessor p(ShippedSpec("summarize-report"), &gen, {});
  const std::string limits =
      "Limits of the store\n\n"
      "1. Rows\n\nA table holds at most 2000 columns in each row of the store. Wider rows are "
      "refused with an error.\n\n"
      "2. Joins\n\nA query joins at most 64 tables in the planner of the store. More tables "
      "make the query fail.\n\n"
      "3. Pages\n\nPages are stored on disk and read into memory when needed.\n";
  std::atomic<bool> cancel{false};
  PipelineRequest job = Job("limits.md", limits);
  job.params_json = R"({"kind": "report"})";
  PipelineResult r = p.Run(job, cancel);
  ASSERT_TRUE(r.output.has_value()) << r.error_code << ": " << r.error;
  const std::string& text = r.output->output_text;
  EXPECT_NE(text.find("Key figure: \u201cA table holds at most 2000 columns in each row of the "
                      "store.\u201d"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Key figure: \u201cA query joins at most 64 tables in the planner of the "
                      "store.\u201d"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("bananas"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(r.output->output_json.value_or(""));
  ASSERT_EQ(json["outline"].size(), 3u) << json.dump(1);
  EXPECT_EQ(json["outline"][0]["figure_from"], "document");
  EXPECT_EQ(json["outline"][1]["figure_from"], "document");
  // A section with no figure gets none.
  EXPECT_EQ(json["outline"][2]["figure_from"], "none");
  EXPECT_TRUE(json["outline"][2]["figure"].is_null());
}

}  // namespace
}  // namespace ellm::pipelines
