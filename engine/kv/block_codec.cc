#include "kv/block_codec.h"

#include <zstd.h>

#include <cstring>
#include <string>

namespace ellm::kv {
namespace {

constexpr char kMagic[4] = {'E', 'K', 'V', 'B'};
constexpr uint32_t kCodecVersion = 1;

template <typename T>
void Put(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(v));
}
template <typename T>
T Get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

void EncodeBlock(const uint8_t* raw, size_t raw_bytes, int elem_bytes, int zstd_level,
                 std::vector<uint8_t>& scratch, std::vector<uint8_t>* out) {
  const uint8_t* src = raw;
  if (elem_bytes > 1) {
    scratch.resize(raw_bytes);
    const size_t n = raw_bytes / static_cast<size_t>(elem_bytes);
    for (int b = 0; b < elem_bytes; ++b) {
      uint8_t* plane = scratch.data() + static_cast<size_t>(b) * n;
      for (size_t i = 0; i < n; ++i) plane[i] = raw[i * static_cast<size_t>(elem_bytes) + b];
    }
    src = scratch.data();
  }
  const size_t at = out->size();
  const size_t bound = ZSTD_compressBound(raw_bytes);
  out->resize(at + kBlockHeaderBytes + bound);
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, zstd_level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  const size_t z =
      ZSTD_compress2(cctx, out->data() + at + kBlockHeaderBytes, bound, src, raw_bytes);
  ZSTD_freeCCtx(cctx);
  // Compressing into a ZSTD_compressBound buffer cannot fail.
  uint8_t* h = out->data() + at;
  std::memcpy(h, kMagic, 4);
  Put<uint32_t>(h + 4, kCodecVersion);
  Put<uint32_t>(h + 8, static_cast<uint32_t>(elem_bytes));
  Put<uint64_t>(h + 12, raw_bytes);
  Put<uint32_t>(h + 20, static_cast<uint32_t>(z));
  out->resize(at + kBlockHeaderBytes + z);
}

StatusOr<size_t> EncodedBlockSize(const uint8_t* header, size_t available) {
  if (available < kBlockHeaderBytes || std::memcmp(header, kMagic, 4) != 0) {
    return DataLossError("not a KV block (bad magic)");
  }
  if (Get<uint32_t>(header + 4) != kCodecVersion) {
    return DataLossError("KV block codec version " + std::to_string(Get<uint32_t>(header + 4)) +
                         ", this build reads " + std::to_string(kCodecVersion));
  }
  return kBlockHeaderBytes + Get<uint32_t>(header + 20);
}

Status DecodeBlock(const uint8_t* enc, size_t enc_bytes, uint8_t* raw, size_t raw_bytes,
                   std::vector<uint8_t>& scratch, const std::string& what) {
  auto size = EncodedBlockSize(enc, enc_bytes);
  if (!size.ok()) return size.status().WithContext(what);
  if (*size != enc_bytes)
    return DataLossError(what + ": KV block length does not match its header");
  const uint32_t elem = Get<uint32_t>(enc + 8);
  if (Get<uint64_t>(enc + 12) != raw_bytes || elem == 0 || raw_bytes % elem != 0) {
    return DataLossError(what + ": KV block holds " + std::to_string(Get<uint64_t>(enc + 12)) +
                         " bytes, expected " + std::to_string(raw_bytes));
  }
  uint8_t* dst = raw;
  if (elem > 1) {
    scratch.resize(raw_bytes);
    dst = scratch.data();
  }
  const size_t got =
      ZSTD_decompress(dst, raw_bytes, enc + kBlockHeaderBytes, enc_bytes - kBlockHeaderBytes);
  if (ZSTD_isError(got)) {
    return DataLossError(what + ": corrupt KV block (" + ZSTD_getErrorName(got) + ")");
  }
  if (got != raw_bytes) return DataLossError(what + ": KV block decompressed to the wrong size");
  if (elem > 1) {
    const size_t n = raw_bytes / elem;
    for (uint32_t b = 0; b < elem; ++b) {
      const uint8_t* plane = scratch.data() + static_cast<size_t>(b) * n;
      for (size_t i = 0; i < n; ++i) raw[i * elem + b] = plane[i];
    }
  }
  return OkStatus();
}

}  // namespace ellm::kv
