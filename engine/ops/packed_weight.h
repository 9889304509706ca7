// Weight matrices repacked at load for the packed GEMM kernels
// (kernels/gemm_packed.h): the buffers that own them, and packing many
// matrices at once on a few threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ellm/engine/tensor_type.h"
#include "kernels/gemm_packed.h"

namespace ellm::ops {

// Which weight replica the calling thread reads (-1 = the primary copy);
// set once per engine thread when NUMA replication is on.
void SetThreadReplica(int replica);
int ThreadReplica();

// A stored matrix to pack: `rows` rows of `cols` elements in `type`, row r
// at data + r * row_bytes.
struct PackSource {
  quant::TensorType type = quant::TensorType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;
  // After packing, tell the kernel the source pages are not needed
  // (madvise MADV_DONTNEED on the whole pages inside the matrix), so the
  // packed copy does not double the resident size. REQUIRES when set: data
  // lies in a read-only file mapping (MAP_PRIVATE or MAP_SHARED), whose
  // pages are read back from the file if anything touches them again.
  bool release_source = false;
};

// One packed matrix. Immutable once packed; share it freely across threads.
class PackedWeight {
 public:
  ~PackedWeight();
  PackedWeight(const PackedWeight&) = delete;
  PackedWeight& operator=(const PackedWeight&) = delete;

  const kernels::PackedMatrix& matrix() const { return matrix_; }
  size_t bytes() const { return bytes_; }
  const uint8_t* buffer() const { return buffer_; }

  // NUMA replicas (numa mode replicate): copies of the packed bytes in
  // memory the caller placed on each node. Replica i serves the threads
  // whose ThreadReplica() is i; other threads use matrix(). Not thread-safe
  // with concurrent MatMul: add replicas before the first product.
  void AddReplica(uint8_t* buffer);  // REQUIRES: buffer holds bytes() bytes, outlives this
  const kernels::PackedMatrix& MatrixForThisThread() const;

 private:
  friend std::vector<std::unique_ptr<PackedWeight>> PackWeights(std::span<const PackSource>, int);
  PackedWeight() = default;
  kernels::PackedMatrix matrix_;
  std::vector<kernels::PackedMatrix> replicas_;
  uint8_t* buffer_ = nullptr;
  size_t bytes_ = 0;
};

// Packs every source (REQUIRES: kernels::CanPack(type), cols a multiple of
// the type's block) on up to `threads` threads; result[i] packs sources[i].
// Work is split into runs of groups, so one large matrix (an output
// projection) is packed in parallel too. Aborts if memory runs out, as any
// allocation of model-sized buffers here does.
std::vector<std::unique_ptr<PackedWeight>> PackWeights(std::span<const PackSource> sources,
                                                       int threads);

}  // namespace ellm::ops
