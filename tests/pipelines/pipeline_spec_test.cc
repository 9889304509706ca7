#include "ellm/pipelines/pipeline_spec.h"

#include <gtest/gtest.h>

#include <set>

#include "ellm/pipelines/pipeline_processor.h"

namespace ellm::pipelines {
namespace {

constexpr const char* kValid = R"(
name: summarize-report
version: "1"
system: You summarise reports.
prompt: "Summarise:\n{{document}}"
generation:
  max_tokens: 512
  stop: ["<end_of_turn>"]
output: markdown
)";

TEST(PipelineSpec, ParsesAValidFile) {
  auto s = ParsePipeline(kValid, "summarize.yaml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->name, "summarize-report");
  EXPECT_EQ(s->generation.max_tokens, 512);
  ASSERT_EQ(s->generation.stop.size(), 1u);
  EXPECT_EQ(s->output, OutputForm::kMarkdown);
  EXPECT_EQ(s->overflow, OverflowStrategy::kMapReduce);
}

TEST(PipelineSpec, ErrorsNameFileAndLine) {
  auto s = ParsePipeline("name: x\nversion: 1\nprompt: p\nbogus: 3\n", "p.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("p.yaml:4"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("bogus"), std::string::npos);

  auto syntax = ParsePipeline("name: [unclosed\n", "bad.yaml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().message().find("bad.yaml:"), std::string::npos);

  EXPECT_FALSE(ParsePipeline("name: x\nversion: 1\n", "p.yaml").ok());  // no prompt
  EXPECT_FALSE(ParsePipeline("name: Bad Name\nversion: 1\nprompt: p\n", "p.yaml").ok());
  EXPECT_FALSE(
      ParsePipeline("name: x\nversion: 1\nprompt: p\ngeneration: {max_tokens: -1}\n", "p").ok());
  EXPECT_FALSE(ParsePipeline("name: x\nversion: 1\nprompt: p\noutput: html\n", "p").ok());
}

// generation.json_schema: a JSON output generated under a schema. The
// schema is checked at load (a keyword constrained decoding cannot enforce
// is named with the file and line), and it writes the whole object.
TEST(PipelineSpec, JsonSchemaGenerationIsCheckedAtLoad) {
  const std::string base = "name: x\nversion: 1\nprompt: p\noutput: json\nschema: {a: string}\n";
  auto ok = ParsePipeline(base +
                              "generation:\n  json_schema: '{\"type\": \"object\", \"properties\": "
                              "{\"a\": {\"type\": \"string\"}}, \"required\": [\"a\"], "
                              "\"additionalProperties\": false}'\n",
                          "p.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_NE(ok->generation.json_schema.find("\"required\""), std::string::npos);

  auto pattern = ParsePipeline(
      base + "generation:\n  json_schema: '{\"type\": \"string\", \"pattern\": \"x\"}'\n",
      "p.yaml");
  ASSERT_FALSE(pattern.ok());
  EXPECT_NE(pattern.status().message().find("p.yaml:7"), std::string::npos)
      << pattern.status().message();
  EXPECT_NE(pattern.status().message().find("keyword 'pattern'"), std::string::npos);

  auto with_lead =
      ParsePipeline(base + "output_prefix: '{'\ngeneration:\n  json_schema: '{}'\n", "p.yaml");
  ASSERT_FALSE(with_lead.ok());
  EXPECT_NE(with_lead.status().message().find("no sections or output_prefix"), std::string::npos);

  auto markdown =
      ParsePipeline("name: x\nversion: 1\nprompt: p\ngeneration:\n  json_schema: '{}'\n", "p.yaml");
  ASSERT_FALSE(markdown.ok());
  EXPECT_NE(markdown.status().message().find("for output: json"), std::string::npos);
}

TEST(RenderTemplate, SubstitutesAndRejectsUnknownNames) {
  auto r = RenderTemplate("A {{x}} B {{ y }} {{{{literal}}", {{"x", "1"}, {"y", "2"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "A 1 B 2 {{literal}}");
  auto unknown = RenderTemplate("{{nope}}", {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("nope"), std::string::npos);
  EXPECT_FALSE(RenderTemplate("{{open", {}).ok());
}

}  // namespace
}  // namespace ellm::pipelines

namespace ellm::pipelines {
namespace {

// fields: extraction with provenance; errors name the line and the key.
TEST(PipelineSpec, ParsesFieldsAndRefusesWhatTheyExclude) {
  const std::string base = R"(name: cmp
version: "1"
prompt: "{{document}}"
documents: {min: 2, max: 2}
differences_prompt: "{{differences}}"
differences_lead: "In short,"
fields:
  - {name: price, label: Total price, type: amount, lead: "the price is", keywords: [price]}
  - {name: law, lead: "the law is"}
)";
  auto s = ParsePipeline(base, "cmp.yaml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->fields.size(), 2u);
  EXPECT_EQ(s->fields[0].type, FactKind::kAmount);
  EXPECT_EQ(s->fields[0].keywords, std::vector<std::string>{"price"});
  EXPECT_EQ(s->fields[1].type, FactKind::kText);
  EXPECT_EQ(s->fields[1].label, "law");
  EXPECT_EQ(s->differences_lead, "In short,");
  auto bad_type = ParsePipeline(base + "  - {name: x, type: money, lead: q}\n", "cmp.yaml");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_NE(bad_type.status().message().find("cmp.yaml:10"), std::string::npos)
      << bad_type.status().message();
  EXPECT_NE(bad_type.status().message().find("'money'"), std::string::npos);
  EXPECT_FALSE(ParsePipeline(base + "  - {name: price, lead: again}\n", "p").ok()) << "twice";
  EXPECT_FALSE(ParsePipeline(base + "  - {name: Bad-Name, lead: q}\n", "p").ok());
  EXPECT_FALSE(ParsePipeline(base + "  - {name: y}\n", "p").ok()) << "lead is required";
  EXPECT_FALSE(ParsePipeline(base + "sections:\n  - {lead: '-'}\n", "p").ok());
  EXPECT_FALSE(ParsePipeline("name: x\nversion: 1\nprompt: p\ndifferences_prompt: d\n", "p").ok())
      << "differences_prompt needs fields";
  // verify: figures on a section.
  auto v = ParsePipeline(
      "name: x\nversion: 1\nprompt: p\nsections:\n  - {heading: K, lead: '-', verify: figures}\n",
      "p");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->sections[0].verify_figures);
  EXPECT_FALSE(
      ParsePipeline("name: x\nversion: 1\nprompt: p\nsections:\n  - {heading: K, verify: all}\n",
                    "p")
          .ok());
  // verify: both checks; single_pass_max_tokens by model, default last.
  v = ParsePipeline(
      "name: x\nversion: 1\nprompt: p\nsections:\n  - {heading: K, verify: [figures, "
      "statements]}\n  - {heading: L, verify: statements}\nsingle_pass_max_tokens: {default: "
      "9000, gemma-3-270m: 6144}\n",
      "p");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->sections[0].verify_figures && v->sections[0].verify_statements);
  EXPECT_TRUE(!v->sections[1].verify_figures && v->sections[1].verify_statements);
  ASSERT_EQ(v->single_pass_max_tokens.size(), 2u);
  EXPECT_EQ(v->single_pass_max_tokens[0].model, "gemma-3-270m");
  EXPECT_EQ(v->single_pass_max_tokens[0].tokens, 6144);
  EXPECT_EQ(v->single_pass_max_tokens[1].model, "");
  EXPECT_EQ(v->single_pass_max_tokens[1].tokens, 9000);
  v = ParsePipeline("name: x\nversion: 1\nprompt: p\nsingle_pass_max_tokens: 4096\n", "p");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(v->single_pass_max_tokens.size(), 1u);
  EXPECT_EQ(v->single_pass_max_tokens[0].tokens, 4096);
  for (const char* bad : {"single_pass_max_tokens: lots\n", "single_pass_max_tokens: -1\n",
                          "single_pass_max_tokens: {gemma: [1]}\n"}) {
    auto b = ParsePipeline(std::string("name: x\nversion: 1\nprompt: p\n") + bad, "p");
    EXPECT_FALSE(b.ok()) << bad;
    if (!b.ok()) {
      EXPECT_NE(b.status().message().find("single_pass_max_tokens"), std::string::npos);
    }
  }
  // outline_terms: with an outline, 0 to 20.
  v = ParsePipeline("name: x\nversion: 1\nprompt: p\noutline: Contents\noutline_terms: 5\n", "p");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->outline_terms, 5);
  for (const char* bad : {"outline: C\noutline_terms: 21\n", "outline: C\noutline_terms: -1\n",
                          "outline_terms: 3\n", "outline: C\noutline_terms: many\n"}) {
    auto b = ParsePipeline(std::string("name: x\nversion: 1\nprompt: p\n") + bad, "p");
    EXPECT_FALSE(b.ok()) << bad;
    if (!b.ok()) {
      EXPECT_NE(b.status().message().find("outline_terms"), std::string::npos) << bad;
    }
  }
}

TEST(PipelineSpec, ParsesSectionsSchemaAndFormat) {
  auto s = ParsePipeline(R"(
name: terms
version: "2"
format: chat
prompt: "{{document}}"
output: json
output_prefix: "{"
schema: {parties: array, law: string}
)",
                         "terms.yaml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->format, PromptFormat::kChat);
  ASSERT_EQ(s->schema.size(), 2u);
  EXPECT_EQ(s->schema[0].first, "parties");
  EXPECT_EQ(s->schema[0].second, JsonType::kArray);
  EXPECT_FALSE(ParsePipeline("name: x\nversion: 1\nprompt: p\noutput: json\n", "p").ok())
      << "json output needs a schema";
  EXPECT_FALSE(
      ParsePipeline("name: x\nversion: 1\nprompt: p\nschema: {a: date}\noutput: json\n", "p").ok());
  auto secs = ParsePipeline(
      "name: x\nversion: 1\nprompt: p\nsections:\n  - {heading: A, lead: '-', max_tokens: 9}\n"
      "  - {lead: '+'}\n",
      "p");
  ASSERT_TRUE(secs.ok()) << secs.status().ToString();
  ASSERT_EQ(secs->sections.size(), 2u);
  EXPECT_EQ(secs->sections[0].max_tokens, 9);
  EXPECT_EQ(secs->sections[1].heading, "");
  auto bad =
      ParsePipeline("name: x\nversion: 1\nprompt: p\nsections:\n  - {colour: red}\n", "s.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("s.yaml:5"), std::string::npos) << bad.status().message();

  auto json_secs = ParsePipeline(R"(name: x
version: 1
prompt: p
output: json
schema: {a: string}
sections:
  - {lead: '{"a": "', stop: ['"'], max_tokens: 5}
  - {lead: '"}', max_tokens: 0}
)",
                                 "j.yaml");
  ASSERT_TRUE(json_secs.ok()) << json_secs.status().ToString();
  EXPECT_EQ(json_secs->sections[0].stop.size(), 1u);
  EXPECT_EQ(json_secs->sections[1].max_tokens, 0);
  EXPECT_FALSE(ParsePipeline(R"(name: x
version: 1
prompt: p
output: json
schema: {a: string}
sections:
  - {heading: H, lead: '{'}
)",
                             "j.yaml")
                   .ok())
      << "json sections take no heading";
}

TEST(PipelineTemplates, UnknownPlaceholdersAreRejectedAtLoad) {
  auto spec = ParsePipeline("name: x\nversion: 1\nprompt: '{{document}} {{param.lang}}'\n", "x");
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(CheckPipelineTemplates(*spec).ok());
  spec->prompt_template = "{{documnet}}";
  Status st = CheckPipelineTemplates(*spec);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("documnet"), std::string::npos);
  spec->prompt_template = "{{document_2}}";  // max_documents is 1
  EXPECT_FALSE(CheckPipelineTemplates(*spec).ok());
}

// prefix_cache: opt-in (a saved state encodes its document), a boolean.
// Issue 56: `extract` names the kind of the document's own sentences a
// section falls back to; a kind it does not know is refused at load.
TEST(PipelineSpec, ASectionsExtractIsAKnownKind) {
  const std::string head = "name: x\nversion: 1\nprompt: p\nsections:\n  - heading: Risks\n";
  auto ok = ParsePipeline(head + "    extract: risks\n    extract_sentences: 5\n", "p.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->sections[0].extract, "risks");
  EXPECT_EQ(ok->sections[0].extract_sentences, 5);
  auto bad = ParsePipeline(head + "    extract: gossip\n", "p.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("p.yaml:6"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("purpose, figures, risks, conclusions or obligations"),
            std::string::npos);
  EXPECT_FALSE(ParsePipeline(head + "    extract: risks\n    extract_sentences: 99\n", "p").ok());
}

// Issue 56 item 4: `kinds:` gives a manual and a contract their own
// sections; anything else is refused at load, with its line.
TEST(PipelineSpec, KindsGiveManualsAndContractsTheirOwnSections) {
  const std::string head =
      "name: x\nversion: 1\nprompt: p\nsections:\n  - heading: Purpose\n    extract: purpose\n";
  auto ok = ParsePipeline(head +
                              "kinds:\n  contract:\n    sections:\n      - heading: Obligations\n"
                              "        extract: obligations\n  manual:\n    sections:\n"
                              "      - heading: Cautions\n",
                          "p.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->kinds.size(), 2u);
  EXPECT_EQ(ok->kinds[0].first, "contract");
  EXPECT_EQ(ok->kinds[0].second[0].heading, "Obligations");
  EXPECT_EQ(ok->kinds[0].second[0].extract, "obligations");
  EXPECT_EQ(ok->kinds[1].second[0].heading, "Cautions");
  auto unknown = ParsePipeline(head + "kinds:\n  poem:\n    sections: []\n", "p.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("p.yaml:8: kind 'poem': expected manual or contract"),
            std::string::npos)
      << unknown.status().message();
  EXPECT_FALSE(ParsePipeline(head + "kinds:\n  manual: {outline: x}\n", "p").ok());
  EXPECT_FALSE(ParsePipeline(head + "kinds:\n  manual:\n    sections: []\n", "p").ok());
}

TEST(PipelineSpec, PrefixCacheIsAnOptInBoolean) {
  auto off = ParsePipeline(kValid, "p.yaml");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(off->prefix_cache);
  auto on = ParsePipeline(std::string(kValid) + "prefix_cache: true\n", "p.yaml");
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_TRUE(on->prefix_cache);
  auto bad = ParsePipeline(std::string(kValid) + "prefix_cache: sometimes\n", "p.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("prefix_cache"), std::string::npos)
      << bad.status().message();
}

TEST(PipelineTemplates, ShippedPipelinesLoad) {
  auto specs = LoadPipelineDirectory(std::string(ELLM_SOURCE_DIR) + "/pipelines/defs");
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  std::set<std::string> names;
  for (const auto& s : *specs) names.insert(s.name);
  EXPECT_TRUE(names.count("summarize-report"));
  EXPECT_TRUE(names.count("compare-contracts"));
  EXPECT_TRUE(names.count("extract-key-terms"));
}

// Counts words as tokens: enough to test where the splits fall.
int64_t Words(const std::string& s) {
  int64_t n = 0;
  bool in = false;
  for (char c : s) {
    bool sp = c == ' ' || c == '\n';
    if (!sp && !in) ++n;
    in = !sp;
  }
  return n;
}

TEST(SplitForBudget, SplitsAtParagraphsAndRepeatsPageMarkers) {
  std::string text =
      "[page 1]\none two three\n\nfour five six\n\n[page 2]\nseven eight nine ten\n\neleven";
  auto chunks = SplitForBudget(text, 8, Words);
  ASSERT_GE(chunks.size(), 2u);
  for (const auto& c : chunks) {
    EXPECT_LE(Words(c), 8) << c;
    EXPECT_EQ(c.rfind("[page ", 0), 0u) << "every chunk starts with its page: " << c;
  }
  std::string joined;
  for (const auto& c : chunks) joined += c + " ";
  for (const char* w : {"one", "six", "seven", "ten", "eleven"}) {
    EXPECT_NE(joined.find(w), std::string::npos) << w;
  }
  EXPECT_NE(chunks.back().find("[page 2]"), std::string::npos);
}

TEST(SplitForBudget, CutsAnOverlongParagraphAtWords) {
  std::string para;
  for (int i = 0; i < 50; ++i) para += "w" + std::to_string(i) + " ";
  auto chunks = SplitForBudget(para, 10, Words);
  EXPECT_GE(chunks.size(), 5u);
  for (const auto& c : chunks) EXPECT_LE(Words(c), 10);
  EXPECT_NE(chunks.back().find("w49"), std::string::npos);
}

}  // namespace
}  // namespace ellm::pipelines
