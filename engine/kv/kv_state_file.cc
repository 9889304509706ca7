#include "kv/kv_state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "kv/block_codec.h"

namespace ellm::kv {
namespace {

constexpr char kMagic[8] = {'E', 'L', 'L', 'M', 'K', 'V', 'S', '\0'};
constexpr uint32_t kVersion = 1;

template <typename T>
void Put(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(v));
  std::memcpy(out.data() + at, &v, sizeof(v));
}

class Reader {
 public:
  Reader(std::span<const uint8_t> b, std::string path) : b_(b), path_(std::move(path)) {}
  template <typename T>
  StatusOr<T> Get() {
    if (b_.size() - at_ < sizeof(T)) return Truncated();
    T v;
    std::memcpy(&v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  StatusOr<std::span<const uint8_t>> Bytes(uint64_t n) {
    if (b_.size() - at_ < n) return Truncated();
    auto s = b_.subspan(at_, n);
    at_ += n;
    return s;
  }

 private:
  Status Truncated() const { return DataLossError("saved KV state '" + path_ + "' is truncated"); }
  std::span<const uint8_t> b_;
  size_t at_ = 0;
  std::string path_;
};

// Blocks a later query can still need after n positions.
std::pair<int64_t, int64_t> SavedBlocks(const KvCache& cache, int il, int64_t n) {
  const int window = cache.options().windows[il];
  const int64_t last = (n - 1) / kBlockPositions + 1;
  if (window == 0) return {0, last};
  return {std::max<int64_t>(0, n - window) / kBlockPositions, last};
}

// Writes `bytes` to `path` (created or truncated), leaving it mode 0600
// whatever the umask or the mode of a stale file of that name: a saved state
// encodes the document it was computed from.
Status WriteOwnerOnly(const std::string& path, const std::vector<uint8_t>& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError(errno, "creating saved KV state '" + path + "'");
  int err = ::fchmod(fd, 0600) == 0 ? 0 : errno;
  for (size_t at = 0; err == 0 && at < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    at += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) return ErrnoError(err, "writing saved KV state '" + path + "'");
  return OkStatus();
}

}  // namespace

Status SaveKvState(KvCache& cache, std::span<const TokenId> tokens,
                   const std::string& model_fingerprint, const std::string& path) {
  const KvCacheOptions& o = cache.options();
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return InvalidArgumentError("nothing to save: the session holds no positions");
  std::vector<uint8_t> out(8);
  std::memcpy(out.data(), kMagic, 8);
  Put<uint32_t>(out, kVersion);
  Put<uint32_t>(out, static_cast<uint32_t>(o.type));
  Put<uint32_t>(out, static_cast<uint32_t>(cache.n_layer()));
  Put<uint32_t>(out, static_cast<uint32_t>(o.n_head_kv));
  Put<uint32_t>(out, static_cast<uint32_t>(o.head_dim_k));
  Put<uint32_t>(out, static_cast<uint32_t>(o.head_dim_v));
  Put<uint32_t>(out, static_cast<uint32_t>(kBlockPositions));
  Put<uint32_t>(out, static_cast<uint32_t>(model_fingerprint.size()));
  out.insert(out.end(), model_fingerprint.begin(), model_fingerprint.end());
  Put<uint64_t>(out, static_cast<uint64_t>(n));
  for (TokenId t : tokens) Put<int32_t>(out, t);
  std::vector<uint8_t> raw(cache.slice_bytes() * static_cast<size_t>(o.n_head_kv)), scratch, enc;
  for (int il = 0; il < cache.n_layer(); ++il) {
    const auto [b0, b1] = SavedBlocks(cache, il, n);
    Put<uint32_t>(out, static_cast<uint32_t>(b1 - b0));
    for (int64_t b = b0; b < b1; ++b) {
      ELLM_ASSIGN_OR_RETURN(std::vector<const uint8_t*> slices, cache.SlicesForSave(il, b));
      for (int h = 0; h < o.n_head_kv; ++h) {
        std::memcpy(raw.data() + h * cache.slice_bytes(), slices[h], cache.slice_bytes());
      }
      enc.clear();
      EncodeBlock(raw.data(), raw.size(), KvElemBytes(o.type), 1, scratch, &enc);
      Put<int64_t>(out, b);
      Put<uint64_t>(out, enc.size());
      out.insert(out.end(), enc.begin(), enc.end());
    }
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  if (Status s = WriteOwnerOnly(tmp, out); !s.ok()) {
    std::remove(tmp.c_str());
    return s;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return ErrnoError(err, "renaming saved KV state into '" + path + "'");
  }
  return OkStatus();
}

namespace {

StatusOr<int64_t> Load(KvCache& cache, std::span<const TokenId> tokens,
                       const std::string& model_fingerprint, const std::string& path,
                       const std::vector<uint8_t>& bytes) {
  const KvCacheOptions& o = cache.options();
  Reader r(bytes, path);
  ELLM_ASSIGN_OR_RETURN(auto magic, r.Bytes(8));
  if (std::memcmp(magic.data(), kMagic, 8) != 0) {
    return FailedPreconditionError("'" + path + "' is not a saved KV state");
  }
  ELLM_ASSIGN_OR_RETURN(uint32_t version, r.Get<uint32_t>());
  if (version != kVersion) {
    return FailedPreconditionError("saved KV state '" + path + "' has format version " +
                                   std::to_string(version) + "; this build reads version " +
                                   std::to_string(kVersion));
  }
  uint32_t shape[7];
  for (uint32_t& v : shape) {
    ELLM_ASSIGN_OR_RETURN(v, r.Get<uint32_t>());
  }
  const uint32_t want[7] = {static_cast<uint32_t>(o.type),
                            static_cast<uint32_t>(cache.n_layer()),
                            static_cast<uint32_t>(o.n_head_kv),
                            static_cast<uint32_t>(o.head_dim_k),
                            static_cast<uint32_t>(o.head_dim_v),
                            static_cast<uint32_t>(kBlockPositions),
                            shape[6]};
  if (std::memcmp(shape, want, sizeof(want)) != 0) {
    return FailedPreconditionError("saved KV state '" + path + "' has another KV type or shape (" +
                                   std::string(KvTypeName(static_cast<KvType>(shape[0]))) + ", " +
                                   std::to_string(shape[1]) + " layers) than this session (" +
                                   std::string(KvTypeName(o.type)) + ", " +
                                   std::to_string(cache.n_layer()) + " layers)");
  }
  ELLM_ASSIGN_OR_RETURN(auto fp, r.Bytes(shape[6]));
  if (std::string(fp.begin(), fp.end()) != model_fingerprint) {
    return FailedPreconditionError("saved KV state '" + path + "' was made with another model (" +
                                   std::string(fp.begin(), fp.end()) + ", this is " +
                                   model_fingerprint + ")");
  }
  ELLM_ASSIGN_OR_RETURN(uint64_t n, r.Get<uint64_t>());
  if (n == 0 || n > tokens.size() || static_cast<int64_t>(n) > cache.n_ctx()) {
    return FailedPreconditionError("saved KV state '" + path + "' holds " + std::to_string(n) +
                                   " tokens, more than the " + std::to_string(tokens.size()) +
                                   " given (or the context)");
  }
  for (uint64_t i = 0; i < n; ++i) {
    ELLM_ASSIGN_OR_RETURN(int32_t t, r.Get<int32_t>());
    if (t != tokens[i]) {
      return FailedPreconditionError("saved KV state '" + path + "' is for another prefix (token " +
                                     std::to_string(i) + " differs)");
    }
  }
  std::vector<uint8_t> raw(cache.slice_bytes() * static_cast<size_t>(o.n_head_kv)), scratch;
  for (int il = 0; il < cache.n_layer(); ++il) {
    const auto [b0, b1] = SavedBlocks(cache, il, static_cast<int64_t>(n));
    ELLM_ASSIGN_OR_RETURN(uint32_t count, r.Get<uint32_t>());
    if (count != b1 - b0) return DataLossError("saved KV state '" + path + "': bad block count");
    for (int64_t b = b0; b < b1; ++b) {
      ELLM_ASSIGN_OR_RETURN(int64_t index, r.Get<int64_t>());
      ELLM_ASSIGN_OR_RETURN(uint64_t size, r.Get<uint64_t>());
      if (index != b) return DataLossError("saved KV state '" + path + "': blocks out of order");
      ELLM_ASSIGN_OR_RETURN(auto enc, r.Bytes(size));
      ELLM_RETURN_IF_ERROR(DecodeBlock(enc.data(), enc.size(), raw.data(), raw.size(), scratch,
                                       "saved KV state '" + path + "'"));
      ELLM_ASSIGN_OR_RETURN(std::vector<uint8_t*> slices, cache.SlicesForRestore(il, b));
      for (int h = 0; h < o.n_head_kv; ++h) {
        std::memcpy(slices[h], raw.data() + h * cache.slice_bytes(), cache.slice_bytes());
      }
    }
  }
  return static_cast<int64_t>(n);
}

}  // namespace

StatusOr<int64_t> LoadKvState(KvCache& cache, std::span<const TokenId> tokens,
                              const std::string& model_fingerprint, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return ErrnoError(errno, "saved KV state '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ELLM_RETURN_IF_ERROR(cache.Clear());
  auto n = Load(cache, tokens, model_fingerprint, path, bytes);
  if (!n.ok()) (void)cache.Clear();
  return n;
}

}  // namespace ellm::kv
