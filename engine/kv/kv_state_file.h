// Saved sequence states, for prefix reuse: the KV cache of a token prefix
// written to a file, so that a document shared by many jobs is prefilled
// once and restored afterwards.
//
// File format (little-endian; version 1; append-only: a reader refuses
// other versions):
//   magic "ELLMKVS\0" (8) | u32 version | u32 kv_type (KvType value)
//   u32 n_layer | u32 n_head_kv | u32 head_dim_k | u32 head_dim_v
//   u32 block_positions | u32 fingerprint length | fingerprint bytes
//   u64 n_tokens | n_tokens x i32 token ids
//   per layer: u32 n_blocks, then per block: i64 block index, u64 encoded
//   size, the encoded block (block_codec.h: raw slices of every KV head,
//   checksummed)
// Full-attention layers save blocks [0, ceil(n / B)); sliding-window layers
// save the blocks that hold positions [n - window, n), which is all a later
// query can see.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "ellm/base/status.h"
#include "ellm/engine/tokenizer.h"
#include "kv/kv_cache.h"

namespace ellm::kv {

// Writes the state of `cache` after `tokens` (the positions 0..n-1 it
// holds) to `path` atomically (a temporary file renamed into place), mode
// 0600 whatever the umask: the state encodes the tokens it was made from.
Status SaveKvState(KvCache& cache, std::span<const TokenId> tokens,
                   const std::string& model_fingerprint, const std::string& path);

// Restores a saved state into `cache` (cleared first) when the file was made
// by the same model (fingerprint), format and cache shape, and its tokens
// are exactly the first tokens of `tokens`. Returns the number of positions
// restored. Errors: NOT_FOUND (no file), FAILED_PRECONDITION naming what
// differs (model, format version, KV type or shape, token prefix),
// DATA_LOSS (truncated or corrupt file). On error the cache is cleared.
StatusOr<int64_t> LoadKvState(KvCache& cache, std::span<const TokenId> tokens,
                              const std::string& model_fingerprint, const std::string& path);

}  // namespace ellm::kv
