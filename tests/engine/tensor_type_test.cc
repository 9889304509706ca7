#include "ellm/engine/tensor_type.h"

#include <gtest/gtest.h>

namespace ellm::quant {
namespace {

TEST(TensorType, BlockGeometryMatchesGgml) {
  EXPECT_EQ(Traits(TensorType::kQ8_0).block_bytes, 34u);
  EXPECT_EQ(Traits(TensorType::kQ4_K).block_bytes, 144u);
  EXPECT_EQ(Traits(TensorType::kQ6_K).block_bytes, 210u);
  EXPECT_EQ(Traits(TensorType::kQ8_K).block_bytes, 292u);
  EXPECT_EQ(Traits(TensorType::kBF16).block_elems, 1u);
  EXPECT_EQ(RowBytes(Traits(TensorType::kQ5_0), 640), 20u * 22u);
}

TEST(TensorType, RejectsRetiredAndUnknownIds) {
  EXPECT_FALSE(TraitsOf(4).has_value());   // Q4_2, retired
  EXPECT_FALSE(TraitsOf(31).has_value());  // Q4_0_4_4, retired
  EXPECT_FALSE(TraitsOf(1000).has_value());
  ASSERT_TRUE(TraitsOf(12).has_value());
  EXPECT_EQ(TraitsOf(12)->name, "q4_K");
}

}  // namespace
}  // namespace ellm::quant
