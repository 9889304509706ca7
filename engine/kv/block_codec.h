// The on-disk form of one KV block (spill files, saved states):
//   header (24 bytes, little-endian): magic "EKVB", codec version (u32,
//   append-only: 1 = byte planes + zstd), element bytes (u32), raw bytes
//   (u64), compressed bytes (u32)
//   then one zstd frame of the byte planes, with zstd's content checksum
//   (XXH64) so that a corrupt block is detected on read.
// Byte planes: for elements of e bytes, plane i holds byte i of every
// element (the sign/exponent bytes of f16/bf16 values then sit together and
// compress; the mantissa bytes barely do). e = 1 stores the bytes as they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ellm/base/status.h"

struct ZSTD_DCtx_s;

namespace ellm::kv {

inline constexpr size_t kBlockHeaderBytes = 24;

// Appends the encoded block to *out. REQUIRES: raw_bytes % elem_bytes == 0.
// `scratch` is reused between calls (the byte planes).
void EncodeBlock(const uint8_t* raw, size_t raw_bytes, int elem_bytes, int zstd_level,
                 std::vector<uint8_t>& scratch, std::vector<uint8_t>* out);

// Total encoded size (header + frame) from a header, or an error when the
// header is not one of ours.
StatusOr<size_t> EncodedBlockSize(const uint8_t* header, size_t available);

// Decodes one encoded block into raw (exactly raw_bytes long). Any mismatch
// (magic, version, sizes, zstd error, checksum) is DATA_LOSS naming `what`.
Status DecodeBlock(const uint8_t* enc, size_t enc_bytes, uint8_t* raw, size_t raw_bytes,
                   std::vector<uint8_t>& scratch, const std::string& what);

// DecodeBlock for callers that decode many blocks (spill read-back): keeps
// one zstd context and the byte-plane scratch between calls, and builds the
// message's `what` only on failure. Not thread-safe: one per decoding thread.
class BlockDecoder {
 public:
  BlockDecoder();
  ~BlockDecoder();
  BlockDecoder(const BlockDecoder&) = delete;
  BlockDecoder& operator=(const BlockDecoder&) = delete;
  // As DecodeBlock; on failure the message starts with what().
  template <typename What>
  Status Decode(const uint8_t* enc, size_t enc_bytes, uint8_t* raw, size_t raw_bytes,
                const What& what) {
    Status s = DecodeQuiet(enc, enc_bytes, raw, raw_bytes);
    return s.ok() ? s : DataLossError(what() + ": " + s.message());
  }

 private:
  // Errors carry no `what` yet.
  Status DecodeQuiet(const uint8_t* enc, size_t enc_bytes, uint8_t* raw, size_t raw_bytes);
  ZSTD_DCtx_s* dctx_;
  std::vector<uint8_t> planes_;
};

}  // namespace ellm::kv
