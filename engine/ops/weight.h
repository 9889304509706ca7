// Weight: a view of one stored weight matrix, as ops/matmul.h multiplies
// with it. Filled by model/ (Model::Load binds one per tensor); ops/ reads it
// and knows nothing of the model it came from.
#pragma once

#include <cstdint>

#include "ellm/engine/gguf.h"
#include "ellm/engine/tensor_type.h"
#include "ops/packed_weight.h"

namespace ellm::ops {

// A weight matrix view: `rows` rows of `cols` elements each, row-major in
// the file's format. For a GGML tensor of shape [ne0, ne1], cols = ne0.
struct Weight {
  const gguf::TensorInfo* info = nullptr;  // the file's tensor; names it in reports
  quant::TensorType type = quant::TensorType::kF32;
  int64_t cols = 0;
  int64_t rows = 0;
  uint64_t row_bytes = 0;
  const uint8_t* data = nullptr;
  // The same matrix repacked for the packed GEMM (owned by the Model), or
  // nullptr. When set, ops::MatMul and ops::DequantizeWeightRow read only
  // this, and the file pages of `data` may have been released (they read
  // back from the file on touch).
  const PackedWeight* packed = nullptr;
  const uint8_t* Row(int64_t r) const { return data + r * row_bytes; }
};

}  // namespace ellm::ops
