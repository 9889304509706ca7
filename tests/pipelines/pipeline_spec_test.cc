#include "ellm/pipelines/pipeline_spec.h"

#include <gtest/gtest.h>

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
