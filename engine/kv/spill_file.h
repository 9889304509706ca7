// An anonymous, append-only file of encoded KV blocks in a spill directory.
// The file is created with O_TMPFILE (or created and unlinked at once where
// the file system lacks it), so it has no name: it disappears when the
// session closes it or the process dies, and a restart finds nothing to
// clean up. One owner (the session's KV cache) calls Append and Clear;
// Read may also run on another thread (the KV cache's prefetcher) at the
// same time as Append, at offsets already written (pread(2) and pwrite(2)
// of disjoint ranges), but never during Clear or the destructor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "kv/block_codec.h"

namespace ellm::kv {

class SpillFile {
 public:
  // Fails with a message naming `dir` when it is missing or not writable.
  // `zstd_level`: what EncodeBlock is given for every block this file holds
  // (0: raw blocks, block_codec.h version 2).
  static StatusOr<std::unique_ptr<SpillFile>> Open(const std::string& dir, int zstd_level);
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  // Appends bytes; returns their offset. ENOSPC/EFBIG/EIO become
  // RESOURCE_EXHAUSTED / errno errors naming the directory; nothing is
  // half-appended (a failed append leaves the end where it was).
  StatusOr<uint64_t> Append(const uint8_t* data, size_t n);
  // Append, first leaving a hole so that byte `head` of the data lands on a
  // multiple of the page size (mapped read-back: MapPages at offset + head).
  StatusOr<uint64_t> AppendPageAligned(const uint8_t* data, size_t n, size_t head);
  // Maps n bytes at a page-aligned offset read-only (MAP_SHARED: the
  // file's page-cache pages themselves, no copy). Unmap with UnmapPages.
  StatusOr<const uint8_t*> MapPages(uint64_t offset, size_t n) const;
  static void UnmapPages(const uint8_t* p, size_t n);
  // Reads n bytes at offset into out.
  Status Read(uint64_t offset, size_t n, uint8_t* out) const;
  // Reads the encoded block [offset, offset + n) into raw (raw_bytes long):
  // in a file of raw blocks straight into `raw` with one preadv(2) (its
  // header and checksum beside it) and checked; else into `enc` and decoded
  // by `decoder`. Errors start with what().
  Status ReadBlock(uint64_t offset, size_t n, uint8_t* raw, size_t raw_bytes, BlockDecoder& decoder,
                   std::vector<uint8_t>& enc, const std::function<std::string()>& what) const;
  // Forgets everything written (truncates to 0).
  Status Clear();
  uint64_t size() const { return end_; }
  const std::string& dir() const { return dir_; }
  // For fault-injection tests only: the open descriptor.
  int fd_for_test() const { return fd_; }

 private:
  SpillFile(int fd, std::string dir, bool raw_blocks)
      : fd_(fd), dir_(std::move(dir)), raw_blocks_(raw_blocks) {}
  int fd_;
  std::string dir_;
  bool raw_blocks_;
  uint64_t end_ = 0;
};

}  // namespace ellm::kv
