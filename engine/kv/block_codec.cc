#include "kv/block_codec.h"

#include <zstd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>
#include <string>

namespace ellm::kv {
namespace {

constexpr char kMagic[4] = {'E', 'K', 'V', 'B'};
constexpr uint32_t kCodecZstd = 1;
constexpr uint32_t kCodecRaw = 2;

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

// n elements of e bytes -> e planes of n bytes. The 2- and 4-byte cases are
// written as whole-element loads and shifts so that the compiler vectorises
// them (the byte-strided generic loop does not); read-back runs the inverse
// once per spilled block per micro-batch.
void SplitPlanes(const uint8_t* raw, size_t n, int e, uint8_t* planes) {
  if (e == 2) {
    uint8_t* p0 = planes;
    uint8_t* p1 = planes + n;
    for (size_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, raw + 2 * i, 2);
      p0[i] = static_cast<uint8_t>(v);
      p1[i] = static_cast<uint8_t>(v >> 8);
    }
    return;
  }
  for (int b = 0; b < e; ++b) {
    uint8_t* plane = planes + static_cast<size_t>(b) * n;
    for (size_t i = 0; i < n; ++i) plane[i] = raw[i * static_cast<size_t>(e) + b];
  }
}

// The inverse of SplitPlanes.
void JoinPlanes(const uint8_t* planes, size_t n, uint32_t e, uint8_t* raw) {
  if (e == 2) {
    const uint8_t* p0 = planes;
    const uint8_t* p1 = planes + n;
    for (size_t i = 0; i < n; ++i) {
      const auto v = static_cast<uint16_t>(p0[i] | p1[i] << 8);
      std::memcpy(raw + 2 * i, &v, 2);
    }
    return;
  }
  if (e == 4) {
    const uint8_t* p0 = planes;
    const uint8_t* p1 = planes + n;
    const uint8_t* p2 = planes + 2 * n;
    const uint8_t* p3 = planes + 3 * n;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t v =
          uint32_t{p0[i]} | uint32_t{p1[i]} << 8 | uint32_t{p2[i]} << 16 | uint32_t{p3[i]} << 24;
      std::memcpy(raw + 4 * i, &v, 4);
    }
    return;
  }
  for (uint32_t b = 0; b < e; ++b) {
    const uint8_t* plane = planes + static_cast<size_t>(b) * n;
    for (size_t i = 0; i < n; ++i) raw[i * e + b] = plane[i];
  }
}

uint64_t Checksum(const uint8_t* raw, size_t n) { return XXH3_64bits(raw, n); }

// Writes a block's header (block_codec.h) at h.
void PutHeader(uint8_t* h, uint32_t codec, int elem_bytes, size_t raw_bytes,
               uint32_t payload_bytes) {
  std::memcpy(h, kMagic, 4);
  Put<uint32_t>(h + 4, codec);
  Put<uint32_t>(h + 8, static_cast<uint32_t>(elem_bytes));
  Put<uint64_t>(h + 12, raw_bytes);
  Put<uint32_t>(h + 20, payload_bytes);
}

// The header's element size and raw size against what the reader expects.
Status CheckSizes(const uint8_t* header, size_t raw_bytes) {
  const uint32_t elem = Get<uint32_t>(header + 8);
  if (Get<uint64_t>(header + 12) != raw_bytes || elem == 0 || raw_bytes % elem != 0) {
    return DataLossError("KV block holds " + std::to_string(Get<uint64_t>(header + 12)) +
                         " bytes, expected " + std::to_string(raw_bytes));
  }
  return OkStatus();
}

// Decodes with `dctx` (null: a one-off context); errors carry no context.
Status DecodeWith(ZSTD_DCtx* dctx, const uint8_t* enc, size_t enc_bytes, uint8_t* raw,
                  size_t raw_bytes, std::vector<uint8_t>& scratch) {
  ELLM_ASSIGN_OR_RETURN(size_t size, EncodedBlockSize(enc, enc_bytes));
  if (size != enc_bytes) return DataLossError("KV block length does not match its header");
  ELLM_RETURN_IF_ERROR(CheckSizes(enc, raw_bytes));
  if (Get<uint32_t>(enc + 4) == kCodecRaw) {
    if (enc_bytes != RawBlockBytes(raw_bytes)) {
      return DataLossError("raw KV block length does not match its header");
    }
    std::memcpy(raw, enc + kBlockHeaderBytes, raw_bytes);
    return CheckRawBlock(enc, raw, raw_bytes, enc + kBlockHeaderBytes + raw_bytes);
  }
  const uint32_t elem = Get<uint32_t>(enc + 8);
  uint8_t* dst = raw;
  if (elem > 1) {
    scratch.resize(raw_bytes);
    dst = scratch.data();
  }
  const uint8_t* src = enc + kBlockHeaderBytes;
  const size_t src_bytes = enc_bytes - kBlockHeaderBytes;
  const size_t got = dctx != nullptr ? ZSTD_decompressDCtx(dctx, dst, raw_bytes, src, src_bytes)
                                     : ZSTD_decompress(dst, raw_bytes, src, src_bytes);
  if (ZSTD_isError(got)) {
    return DataLossError(std::string("corrupt KV block (") + ZSTD_getErrorName(got) + ")");
  }
  if (got != raw_bytes) return DataLossError("KV block decompressed to the wrong size");
  if (elem > 1) JoinPlanes(scratch.data(), raw_bytes / elem, elem, raw);
  return OkStatus();
}

}  // namespace

void EncodeBlock(const uint8_t* raw, size_t raw_bytes, int elem_bytes, int zstd_level,
                 std::vector<uint8_t>& scratch, std::vector<uint8_t>* out) {
  if (zstd_level == 0) {
    const size_t at = out->size();
    out->resize(at + RawBlockBytes(raw_bytes));
    uint8_t* h = out->data() + at;
    PutHeader(h, kCodecRaw, elem_bytes, raw_bytes,
              static_cast<uint32_t>(raw_bytes + kRawBlockTrailerBytes));
    std::memcpy(h + kBlockHeaderBytes, raw, raw_bytes);
    Put<uint64_t>(h + kBlockHeaderBytes + raw_bytes, Checksum(raw, raw_bytes));
    return;
  }
  const uint8_t* src = raw;
  if (elem_bytes > 1) {
    scratch.resize(raw_bytes);
    SplitPlanes(raw, raw_bytes / static_cast<size_t>(elem_bytes), elem_bytes, scratch.data());
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
  PutHeader(out->data() + at, kCodecZstd, elem_bytes, raw_bytes, static_cast<uint32_t>(z));
  out->resize(at + kBlockHeaderBytes + z);
}

StatusOr<size_t> EncodedBlockSize(const uint8_t* header, size_t available) {
  if (available < kBlockHeaderBytes || std::memcmp(header, kMagic, 4) != 0) {
    return DataLossError("not a KV block (bad magic)");
  }
  const uint32_t version = Get<uint32_t>(header + 4);
  if (version != kCodecZstd && version != kCodecRaw) {
    return DataLossError("KV block codec version " + std::to_string(version) +
                         ", this build reads " + std::to_string(kCodecZstd) + " and " +
                         std::to_string(kCodecRaw));
  }
  return kBlockHeaderBytes + Get<uint32_t>(header + 20);
}

Status CheckRawBlock(const uint8_t* header, const uint8_t* raw, size_t raw_bytes,
                     const uint8_t* trailer) {
  if (std::memcmp(header, kMagic, 4) != 0) return DataLossError("not a KV block (bad magic)");
  if (Get<uint32_t>(header + 4) != kCodecRaw ||
      Get<uint32_t>(header + 20) != raw_bytes + kRawBlockTrailerBytes) {
    return DataLossError("KV block is not the raw block its size says");
  }
  ELLM_RETURN_IF_ERROR(CheckSizes(header, raw_bytes));
  if (Get<uint64_t>(trailer) != Checksum(raw, raw_bytes)) {
    return DataLossError("corrupt KV block (checksum mismatch)");
  }
  return OkStatus();
}

Status DecodeBlock(const uint8_t* enc, size_t enc_bytes, uint8_t* raw, size_t raw_bytes,
                   std::vector<uint8_t>& scratch, const std::string& what) {
  Status s = DecodeWith(nullptr, enc, enc_bytes, raw, raw_bytes, scratch);
  return s.ok() ? s : DataLossError(what + ": " + s.message());
}

BlockDecoder::BlockDecoder() : dctx_(ZSTD_createDCtx()) {}
BlockDecoder::~BlockDecoder() { ZSTD_freeDCtx(dctx_); }

Status BlockDecoder::DecodeQuiet(const uint8_t* enc, size_t enc_bytes, uint8_t* raw,
                                 size_t raw_bytes) {
  return DecodeWith(dctx_, enc, enc_bytes, raw, raw_bytes, planes_);
}

}  // namespace ellm::kv
