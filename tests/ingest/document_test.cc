// The Document model: page-marked rendering and the JSON form.
#include "ellm/ingest/document.h"

#include <gtest/gtest.h>

#include "ellm/ingest/extract.h"

namespace ellm::ingest {
namespace {

Document TwoPages() {
  Document doc;
  doc.metadata = {"r.pdf", "application/pdf",   "Report", "Ann", "reportlab", 2,
                  1234,    std::string(64, 'a')};
  doc.pages = {{1, "First page.\n"}, {2, "Second \"page\" \xE5\xB9\xB4.\n"}};
  return doc;
}

TEST(RenderForModel, MarksEveryPdfPage) {
  EXPECT_EQ(RenderForModel(TwoPages()),
            "[page 1]\nFirst page.\n\n[page 2]\nSecond \"page\" \xE5\xB9\xB4.\n");
}

TEST(RenderForModel, PassesTextFilesThrough) {
  Document doc;
  doc.metadata.media_type = "text/markdown";
  doc.pages = {{1, "# Title\n\nbody\n"}};
  EXPECT_EQ(RenderForModel(doc), "# Title\n\nbody\n");
}

TEST(DocumentJson, RoundTrips) {
  const Document doc = TwoPages();
  for (int indent : {-1, 2}) {
    auto back = DocumentFromJson(ToJson(doc, indent));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->metadata.title, "Report");
    EXPECT_EQ(back->metadata.page_count, 2);
    EXPECT_EQ(back->metadata.byte_size, 1234);
    EXPECT_EQ(back->metadata.sha256, doc.metadata.sha256);
    ASSERT_EQ(back->pages.size(), 2u);
    EXPECT_EQ(back->pages[1].text, doc.pages[1].text);
  }
}

TEST(DocumentJson, HeadingsRoundTripAndMustPointAtPages) {
  Document doc = TwoPages();
  doc.headings = {{1, "1", "Scope", 1}, {2, "1.1", "Definitions", 2}};
  auto back = DocumentFromJson(ToJson(doc));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->headings.size(), 2u);
  EXPECT_EQ(back->headings[1].level, 2);
  EXPECT_EQ(back->headings[1].number, "1.1");
  EXPECT_EQ(back->headings[1].title, "Definitions");
  EXPECT_EQ(back->headings[1].page, 2);
  EXPECT_EQ(ToJson(TwoPages()).find("headings"), std::string::npos);

  doc.headings = {{1, "", "Nowhere", 3}};
  auto missing_page = DocumentFromJson(ToJson(doc));
  ASSERT_FALSE(missing_page.ok());
  EXPECT_NE(missing_page.status().message().find("document.headings[0].page"), std::string::npos);
  doc.headings = {{10, "", "Too deep", 1}};
  EXPECT_FALSE(DocumentFromJson(ToJson(doc)).ok());
}

TEST(RenderForModel, MarksPagesOfAWordFileOnlyWhenItBreaksThem) {
  Document doc;
  doc.metadata.media_type = std::string(kMediaTypeDocx);
  doc.pages = {{1, "One.\n"}};
  EXPECT_EQ(RenderForModel(doc), "One.\n");
  doc.pages.push_back({2, "Two.\n"});
  EXPECT_EQ(RenderForModel(doc), "[page 1]\nOne.\n\n[page 2]\nTwo.\n");
}

TEST(DocumentJson, RejectsMalformedInputWithTheField) {
  EXPECT_FALSE(DocumentFromJson("not json").ok());
  EXPECT_FALSE(DocumentFromJson("{\"format\":\"other\",\"version\":1,\"pages\":[]}").ok());
  EXPECT_FALSE(DocumentFromJson("{\"format\":\"ellm.document\",\"version\":2,\"pages\":[]}").ok());
  auto bad = DocumentFromJson(
      "{\"format\":\"ellm.document\",\"version\":1,\"pages\":[{\"number\":\"one\"}]}");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("document.pages[0].number"), std::string::npos);
  auto order = DocumentFromJson(
      "{\"format\":\"ellm.document\",\"version\":1,\"pages\":[{\"number\":2},{\"number\":1}]}");
  EXPECT_FALSE(order.ok());
}

TEST(ExtractError, NamesAndReasonsAreStable) {
  Status s = MakeExtractError(ExtractError::kEncrypted, "x.pdf: encrypted");
  EXPECT_EQ(s.reason(), "extract.encrypted");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ExtractErrorOf(s.WithContext("job 3")), ExtractError::kEncrypted);
  EXPECT_EQ(ExtractErrorOf(NotFoundError("x")), std::nullopt);
  EXPECT_EQ(ExtractErrorName(ExtractError::kNoTextLayer), "no_text_layer");
  EXPECT_EQ(ExtractErrorName(ExtractError::kCrashed), "crashed");
  EXPECT_EQ(ExtractErrorName(ExtractError::kSandboxViolation), "sandbox_violation");
  EXPECT_EQ(MakeExtractError(ExtractError::kSandboxViolation, "x").code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace ellm::ingest
