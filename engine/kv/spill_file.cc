#include "kv/spill_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

namespace ellm::kv {

StatusOr<std::unique_ptr<SpillFile>> SpillFile::Open(const std::string& dir, int zstd_level) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    std::string path = dir + "/ellm-spill-XXXXXX";
    fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(path.c_str());
  }
  if (fd < 0) {
    return ErrnoError(errno, "KV spill directory '" + dir + "' (kv.spill_dir) is not writable");
  }
  return std::unique_ptr<SpillFile>(new SpillFile(fd, dir, zstd_level == 0));
}

SpillFile::~SpillFile() { ::close(fd_); }

StatusOr<uint64_t> SpillFile::Append(const uint8_t* data, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::pwrite(fd_, data + done, n - done, static_cast<off_t>(end_ + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : ENOSPC;
      // Leave no partial block behind; the next append overwrites from end_,
      // so a failed truncate costs only disk space (hence its result is unused).
      if (::ftruncate(fd_, static_cast<off_t>(end_)) != 0) {
      }
      Status s = ErrnoError(err, "spilling " + std::to_string(n) + " bytes of KV cache to '" +
                                     dir_ + "' (kv.spill_dir)");
      if (err == EFBIG || err == ENOSPC || err == EDQUOT) {
        return ResourceExhaustedError(s.message());
      }
      return s;
    }
    done += static_cast<size_t>(w);
  }
  const uint64_t at = end_;
  end_ += n;
  return at;
}

StatusOr<uint64_t> SpillFile::AppendPageAligned(const uint8_t* data, size_t n, size_t head) {
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t saved = end_;
  end_ = (end_ + head + page - 1) / page * page - head;  // >= saved
  StatusOr<uint64_t> at = Append(data, n);
  if (!at.ok()) end_ = saved;
  return at;
}

StatusOr<const uint8_t*> SpillFile::MapPages(uint64_t offset, size_t n) const {
  void* p = ::mmap(nullptr, n, PROT_READ, MAP_SHARED, fd_, static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    return ErrnoError(
        errno, "mapping " + std::to_string(n) + " bytes of the KV spill file in '" + dir_ + "'");
  }
  return static_cast<const uint8_t*>(p);
}

void SpillFile::UnmapPages(const uint8_t* p, size_t n) { ::munmap(const_cast<uint8_t*>(p), n); }

Status SpillFile::Read(uint64_t offset, size_t n, uint8_t* out) const {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoError(errno, "reading spilled KV cache from '" + dir_ + "'");
    if (r == 0) return DataLossError("spilled KV block in '" + dir_ + "' is truncated");
    done += static_cast<size_t>(r);
  }
  return OkStatus();
}

Status SpillFile::ReadBlock(uint64_t offset, size_t n, uint8_t* raw, size_t raw_bytes,
                            BlockDecoder& decoder, std::vector<uint8_t>& enc,
                            const std::function<std::string()>& what) const {
  if (!raw_blocks_) {
    enc.resize(n);
    ELLM_RETURN_IF_ERROR(Read(offset, n, enc.data()));
    return decoder.Decode(enc.data(), n, raw, raw_bytes, what);
  }
  if (n != RawBlockBytes(raw_bytes)) {
    return DataLossError(what() + ": " + std::to_string(n) + " bytes where a raw block has " +
                         std::to_string(RawBlockBytes(raw_bytes)));
  }
  uint8_t header[kBlockHeaderBytes];
  uint8_t trailer[kRawBlockTrailerBytes];
  iovec parts[3] = {{header, sizeof(header)}, {raw, raw_bytes}, {trailer, sizeof(trailer)}};
  size_t done = 0;
  while (done < n) {
    // Skip what earlier calls read (a short read is rare: page cache or disk).
    iovec rest[3];
    int count = 0;
    size_t skip = done;
    for (const iovec& part : parts) {
      if (skip >= part.iov_len) {
        skip -= part.iov_len;
        continue;
      }
      rest[count++] = {static_cast<uint8_t*>(part.iov_base) + skip, part.iov_len - skip};
      skip = 0;
    }
    const ssize_t r = ::preadv(fd_, rest, count, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoError(errno, "reading spilled KV cache from '" + dir_ + "'");
    if (r == 0) return DataLossError(what() + ": truncated");
    done += static_cast<size_t>(r);
  }
  Status s = CheckRawBlock(header, raw, raw_bytes, trailer);
  return s.ok() ? s : DataLossError(what() + ": " + s.message());
}

Status SpillFile::Clear() {
  if (::ftruncate(fd_, 0) != 0) return ErrnoError(errno, "truncating KV spill file in " + dir_);
  end_ = 0;
  return OkStatus();
}

}  // namespace ellm::kv
