// ZipReader: the entries of a ZIP archive held in memory (a .docx or .odt),
// read with libzip and bounded: an entry that expands beyond its limit is a
// kResourceLimit error, not an allocation. Errors carry ExtractError reasons
// (kDamaged for an unreadable archive, kEncrypted for encrypted entries).
// Runs inside the extractor's sandbox: libzip reads the buffer only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ellm/base/status.h"

struct zip;

namespace ellm::ingest::office {

class ZipReader {
 public:
  // `bytes` must outlive the reader. `name` is used in messages.
  static StatusOr<ZipReader> Open(std::string_view bytes, const std::string& name);

  bool Has(const std::string& entry) const;
  // The entry's bytes, at most `max_bytes` of them (more is kResourceLimit,
  // whatever the archive claims their size is). A missing entry is kDamaged.
  StatusOr<std::string> Read(const std::string& entry, int64_t max_bytes) const;

 private:
  struct Closer {
    void operator()(zip* z) const;
  };
  ZipReader(std::unique_ptr<zip, Closer> archive, std::string name)
      : archive_(std::move(archive)), name_(std::move(name)) {}

  std::unique_ptr<zip, Closer> archive_;
  std::string name_;
};

}  // namespace ellm::ingest::office
