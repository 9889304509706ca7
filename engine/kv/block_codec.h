// The on-disk form of one KV block (spill files, saved states):
//   header (24 bytes, little-endian): magic "EKVB", codec version (u32,
//   append-only: 1 = byte planes + zstd, 2 = raw), element bytes (u32), raw
//   bytes (u64), payload bytes (u32)
//   version 1: one zstd frame of the byte planes, with zstd's content
//   checksum (XXH64) so that a corrupt block is detected on read;
//   version 2 (zstd level 0: the spill files' default, read back at memory
//   speed): the raw bytes, then their XXH3-64 (u64).
//   Either way a corrupt block is detected on read.
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

// Bytes of a raw (version 2) block of raw_bytes.
inline constexpr size_t kRawBlockTrailerBytes = 8;
inline constexpr size_t RawBlockBytes(size_t raw_bytes) {
  return kBlockHeaderBytes + raw_bytes + kRawBlockTrailerBytes;
}

// Appends the encoded block to *out: version 1 at zstd_level 1..19, version
// 2 (raw) at level 0. REQUIRES: raw_bytes % elem_bytes == 0.
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
// Checks a raw (version 2) block read in three parts: its header, its raw
// bytes (raw_bytes of them) and the trailer (the checksum). DATA_LOSS on
// any mismatch; the message carries no context.
Status CheckRawBlock(const uint8_t* header, const uint8_t* raw, size_t raw_bytes,
                     const uint8_t* trailer);

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
