#include "ops/packed_weight.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

namespace ellm::ops {
namespace {

// Groups packed per work item: ~0.3 MB of packed Q5_0 at 640 columns, large
// enough that claiming an item costs nothing, small enough to balance.
constexpr int64_t kGroupsPerItem = 128;

struct WorkItem {
  size_t source;
  int64_t group_begin, group_end;
};

// Drops the resident pages wholly inside [p, p + bytes).
void ReleasePages(const uint8_t* p, size_t bytes) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) / page * page;
  if (end > begin) {
    // Advice only: on failure the pages simply stay resident.
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }
}

void PackItem(const PackSource& src, const kernels::PackedMatrix& m, const WorkItem& item) {
  uint8_t* base = const_cast<uint8_t*>(m.data);  // our own buffer; const only in the view
  for (int64_t g = item.group_begin; g < item.group_end; ++g) {
    const int64_t r0 = g * kernels::kPackRows;
    const int n_rows = static_cast<int>(std::min<int64_t>(kernels::kPackRows, src.rows - r0));
    kernels::PackGroup(src.type, src.data + r0 * src.row_bytes, src.row_bytes, n_rows, src.cols,
                       base + g * m.group_bytes);
  }
  if (src.release_source) {
    const int64_t r0 = item.group_begin * kernels::kPackRows;
    const int64_t r1 = std::min(src.rows, item.group_end * kernels::kPackRows);
    ReleasePages(src.data + r0 * src.row_bytes, static_cast<size_t>(r1 - r0) * src.row_bytes);
  }
}

}  // namespace

namespace {
thread_local int tls_replica = -1;
}  // namespace

void SetThreadReplica(int replica) { tls_replica = replica; }
int ThreadReplica() { return tls_replica; }

void PackedWeight::AddReplica(uint8_t* buffer) {
  std::memcpy(buffer, buffer_, bytes_);
  kernels::PackedMatrix m = matrix_;
  m.data = buffer;
  replicas_.push_back(m);
}

const kernels::PackedMatrix& PackedWeight::MatrixForThisThread() const {
  const int r = tls_replica;
  return r >= 0 && r < static_cast<int>(replicas_.size()) ? replicas_[static_cast<size_t>(r)]
                                                          : matrix_;
}

PackedWeight::~PackedWeight() { ::operator delete(buffer_, std::align_val_t(kernels::kPackAlign)); }

std::vector<std::unique_ptr<PackedWeight>> PackWeights(std::span<const PackSource> sources,
                                                       int threads) {
  std::vector<std::unique_ptr<PackedWeight>> out;
  std::vector<WorkItem> items;
  for (size_t i = 0; i < sources.size(); ++i) {
    const PackSource& s = sources[i];
    std::unique_ptr<PackedWeight> w(new PackedWeight());
    kernels::PackedMatrix& m = w->matrix_;
    m.type = s.type;
    m.rows = s.rows;
    m.cols = s.cols;
    m.group_bytes = kernels::PackedGroupBytes(s.type, s.cols);
    w->bytes_ = static_cast<size_t>(m.groups()) * m.group_bytes;
    w->buffer_ =
        static_cast<uint8_t*>(::operator new(w->bytes_, std::align_val_t(kernels::kPackAlign)));
    m.data = w->buffer_;
    for (int64_t g = 0; g < m.groups(); g += kGroupsPerItem) {
      items.push_back({i, g, std::min(m.groups(), g + kGroupsPerItem)});
    }
    out.push_back(std::move(w));
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k = next++; k < items.size(); k = next++) {
      const WorkItem& item = items[k];
      PackItem(sources[item.source], out[item.source]->matrix(), item);
    }
  };
  const int n = std::max(1, std::min<int>(threads, static_cast<int>(items.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return out;
}

}  // namespace ellm::ops
