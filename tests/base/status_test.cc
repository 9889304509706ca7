#include "ellm/base/status.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>

namespace ellm {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  ELLM_ASSIGN_OR_RETURN(int h, Half(x));
  ELLM_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Status, CarriesCodeMessageAndContext) {
  Status s = NotFoundError("tensor 'x' missing");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "NOT_FOUND: tensor 'x' missing");
  EXPECT_EQ(s.WithContext("model.gguf").message(), "model.gguf: tensor 'x' missing");
  EXPECT_EQ(OkStatus().ToString(), "OK");
}

TEST(Status, ReasonSurvivesContextAndPropagation) {
  Status s = DataLossError("x.pdf: damaged").WithReason("extract.damaged");
  EXPECT_EQ(s.reason(), "extract.damaged");
  EXPECT_EQ(s.WithContext("job 7").reason(), "extract.damaged");
  EXPECT_EQ(s.ToString(), "DATA_LOSS: x.pdf: damaged");
  EXPECT_TRUE(NotFoundError("y").reason().empty());
  StatusOr<int> failed = s;
  EXPECT_EQ(failed.status().reason(), "extract.damaged");
}

TEST(StatusOr, PropagatesThroughMacros) {
  EXPECT_EQ(*Quarter(12), 3);
  auto bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "odd: 3");
}

TEST(StatusOr, HoldsMoveOnlyValues) {
  StatusOr<std::unique_ptr<int>> p = std::make_unique<int>(5);
  ASSERT_TRUE(p.ok());
  std::unique_ptr<int> taken = std::move(p).value();
  EXPECT_EQ(*taken, 5);
}

TEST(ErrnoError, MapsCommonErrnos) {
  EXPECT_EQ(ErrnoError(ENOENT, "open x").code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoError(ENOSPC, "write").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoError(EACCES, "open").code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(ErrnoError(ENOSPC, "write spill").message().find("No space"), std::string::npos);
}

}  // namespace
}  // namespace ellm
