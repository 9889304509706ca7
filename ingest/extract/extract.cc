// ExtractDocument: open, sniff, hash, then a PDF through the ellm-extract
// child or a text file in place (see extract.h).
#include "ellm/ingest/extract.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "extract/child_process.h"
#include "extract/protocol.h"
#include "text/normalize.h"

namespace ellm::ingest {
namespace {

// The shared second half of ExtractDocument and ExtractDocumentBeneath,
// defined at the end of this file. Takes ownership of `fd`, `path` opened
// read-only.
StatusOr<Document> ExtractOpenDocument(const std::string& path, int fd,
                                       const ExtractOptions& options);

constexpr size_t kSniffBytes = 1024;  // PDF readers accept "%PDF-" within the first 1 KiB

struct FileData {
  int64_t size = 0;
  std::string sha256;
  std::string head;  // the first kSniffBytes bytes
  std::string all;   // the whole file, only when asked for
};

std::string Hex(const unsigned char* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

// Reads the open file once: SHA-256, the head, and optionally everything.
StatusOr<FileData> ReadFileData(int fd, const std::string& path, int64_t size, bool keep_all) {
  FileData data;
  data.size = size;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return InternalError("SHA-256 is unavailable in OpenSSL");
  }
  std::string buf(1 << 20, '\0');
  off_t offset = 0;
  for (;;) {
    ssize_t n = pread(fd, buf.data(), buf.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return MakeExtractError(ExtractError::kUnreadable,
                              path + ": read failed: " + std::strerror(errno));
    }
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(n));
    if (data.head.size() < kSniffBytes) {
      data.head.append(buf.data(),
                       std::min(static_cast<size_t>(n), kSniffBytes - data.head.size()));
    }
    if (keep_all) data.all.append(buf.data(), static_cast<size_t>(n));
    offset += n;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  data.sha256 = Hex(digest, len);
  data.size = offset;
  return data;
}

std::string Extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// What a non-PDF file looks like, for the error message.
std::string DescribeContent(const std::string& head) {
  auto starts = [&](std::string_view magic) { return head.rfind(magic, 0) == 0; };
  if (head.empty()) return "it is empty (0 bytes)";
  if (starts("\x89PNG")) return "it is a PNG image";
  if (starts("\xFF\xD8\xFF")) return "it is a JPEG image";
  if (starts("GIF8")) return "it is a GIF image";
  if (starts("II*") || starts("MM\0*")) return "it is a TIFF image";
  if (starts("PK\x03\x04")) return "it is a ZIP archive (e.g. .docx, .xlsx)";
  if (starts("\xD0\xCF\x11\xE0")) return "it is an old Microsoft Office file";
  if (starts("{\\rtf")) return "it is an RTF document";
  if (text::IsValidUtf8(head.substr(0, head.size() > 4 ? head.size() - 4 : head.size()))) {
    return "it looks like text";
  }
  std::string hex;
  for (size_t i = 0; i < std::min<size_t>(8, head.size()); ++i) {
    hex += Hex(reinterpret_cast<const unsigned char*>(&head[i]), 1) + " ";
  }
  return "it starts with bytes " + hex.substr(0, hex.size() - 1);
}

// Whether a file's first bytes open an HTML document: "<!DOCTYPE html" or
// "<html", after a byte order mark, whitespace and comments, any case.
bool LooksLikeHtml(std::string_view head) {
  size_t i = head.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;  // a UTF-8 byte order mark
  for (;;) {
    while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
    if (head.substr(i, 4) != "<!--") break;
    const size_t end = head.find("-->", i + 4);
    if (end == std::string_view::npos) return false;
    i = end + 3;
  }
  std::string start(head.substr(i, 14));
  for (char& c : start) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return start.rfind("<!doctype html", 0) == 0 || start.rfind("<html", 0) == 0;
}

// UTF-8 without NUL bytes in the first KiB (a code point cut at its end
// allowed): worth reading whole as plain text.
bool LooksLikeText(const std::string& head) {
  if (head.empty() || head.find('\0') != std::string::npos) return false;
  return text::IsValidUtf8(head.substr(0, head.size() > 4 ? head.size() - 4 : head.size()));
}

StatusOr<Document> TextDocument(const std::string& path, const std::string& ext, std::string s) {
  if (!text::IsValidUtf8(s) || s.find('\0') != std::string::npos) {
    return MakeExtractError(ExtractError::kUnsupportedType,
                            path + ": not UTF-8 text; " + ext + " files must be UTF-8");
  }
  if (s.rfind("\xEF\xBB\xBF", 0) == 0) s.erase(0, 3);
  std::string text;
  text.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') continue;
    text += s[i];
  }
  Document doc;
  doc.metadata.media_type =
      std::string(ext == ".md" || ext == ".markdown" ? kMediaTypeMarkdown : kMediaTypeText);
  doc.metadata.page_count = 1;
  doc.pages.push_back({1, std::move(text)});
  return doc;
}

std::string Seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

std::string SignalName(int sig) {
  const char* d = strsignal(sig);
  return "signal " + std::to_string(sig) + (d ? std::string(" (") + d + ")" : "");
}

std::string LastLine(const std::string& s) {
  size_t end = s.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  size_t start = s.find_last_of('\n', end);
  return s.substr(start == std::string::npos ? 0 : start + 1,
                  end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// Maps how the child ended to a Document or an error for `path`.
StatusOr<Document> InterpretChild(const std::string& path, const ExtractOptions& options,
                                  const ChildResult& r) {
  using End = ChildResult::End;
  const std::string stderr_hint =
      LastLine(r.err_tail).empty() ? "" : " (last message: " + LastLine(r.err_tail) + ")";
  switch (r.end) {
    case End::kWallTimeout:
      return MakeExtractError(ExtractError::kTimeout, path + ": extraction took longer than the " +
                                                          Seconds(options.wall_timeout) +
                                                          " s wall-clock limit and was stopped");
    case End::kOutputLimit:
      return MakeExtractError(ExtractError::kResourceLimit,
                              path + ": the extracted text exceeds the output limit of " +
                                  std::to_string(options.max_output_bytes) + " bytes");
    case End::kSignaled: {
      const bool cpu =
          r.signal == SIGXCPU || (r.signal == SIGKILL && r.cpu_seconds >= options.cpu_seconds);
      if (r.signal == SIGSYS) {
        // SECCOMP_RET_KILL_PROCESS: the parent learns only the signal, not
        // which call it was (that is in the kernel's audit log, if any).
        return MakeExtractError(ExtractError::kSandboxViolation,
                                path + ": the document extractor made a forbidden system call (a " +
                                    "socket, a new program or a file opened for writing?) and " +
                                    "its sandbox killed it; the file may be hostile");
      }
      if (cpu) {
        return MakeExtractError(ExtractError::kTimeout,
                                path + ": extraction used up its CPU-time limit of " +
                                    std::to_string(options.cpu_seconds) + " s and was stopped");
      }
      const bool memory = r.err_tail.find("bad_alloc") != std::string::npos ||
                          r.err_tail.find("Out of memory") != std::string::npos ||
                          r.err_tail.find("out of memory") != std::string::npos;
      if (memory) {
        return MakeExtractError(ExtractError::kResourceLimit,
                                path + ": extraction needed more memory than its limit of " +
                                    std::to_string(options.address_space_bytes >> 20) + " MiB");
      }
      return MakeExtractError(ExtractError::kCrashed,
                              path + ": the document parser crashed on this file (" +
                                  SignalName(r.signal) + ")" + stderr_hint);
    }
    case End::kExited:
      break;
  }
  if (r.exit_code == kExtractorExitOk) {
    StatusOr<Document> doc = DocumentFromJson(r.out);
    if (doc.ok()) return doc;
    return MakeExtractError(ExtractError::kCrashed, path + ": the extractor's output is garbled: " +
                                                        doc.status().message());
  }
  if (r.exit_code == kExtractorExitReportedError) {
    Status s = DecodeExtractorError(r.out);
    if (s.message().rfind(path, 0) == 0) return s;
    return s.WithContext(path);
  }
  return MakeExtractError(ExtractError::kCrashed, path + ": the extractor exited with status " +
                                                      std::to_string(r.exit_code) + stderr_hint);
}

// What the child should parse: "pdf", "office", "image" or "html".
StatusOr<Document> ChildDocument(const std::string& path, const ExtractOptions& options, int fd,
                                 const std::string& kind) {
  ELLM_ASSIGN_OR_RETURN(std::string extractor, FindExtractor(options));
  ChildLimits limits;
  limits.cpu_seconds = options.cpu_seconds;
  limits.address_space_bytes = options.address_space_bytes;
  limits.max_output_bytes = options.max_output_bytes;
  limits.wall_timeout = options.wall_timeout;
  std::vector<std::string> argv = {"ellm-extract",
                                   "--kind",
                                   kind,
                                   "--max-pages",
                                   std::to_string(options.max_pages),
                                   "--name",
                                   path,
                                   "--input-fd",
                                   std::to_string(kExtractorInputFd)};
  if (options.headings_from_layout) argv.insert(argv.end(), {"--headings", "layout"});
  if (kind == "pdf" || kind == "image" || kind == "office") {
    argv.insert(argv.end(), {"--ocr", std::string(OcrModeName(options.ocr)), "--ocr-languages",
                             options.ocr_languages, "--ocr-dpi", std::to_string(options.ocr_dpi),
                             "--ocr-page-seconds", std::to_string(options.ocr_page_seconds)});
  }
  ELLM_ASSIGN_OR_RETURN(ChildResult r, RunChild(extractor, argv, fd, limits));
  return InterpretChild(path, options, r);
}

}  // namespace

StatusOr<std::string> FindExtractor(const ExtractOptions& options) {
  std::vector<std::string> tried;
  auto usable = [&](const std::string& p) {
    tried.push_back(p);
    return access(p.c_str(), X_OK) == 0;
  };
  if (!options.extractor_path.empty()) {
    if (usable(options.extractor_path)) return options.extractor_path;
    return NotFoundError("the PDF extractor '" + options.extractor_path +
                         "' (ExtractOptions::extractor_path) is missing or not executable");
  }
  if (const char* env = std::getenv("ELLM_EXTRACTOR"); env && *env) {
    if (usable(env)) return std::string(env);
    return NotFoundError(std::string("the PDF extractor '") + env +
                         "' ($ELLM_EXTRACTOR) is missing or not executable");
  }
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path dir = self.parent_path();
    for (const auto& p : {dir / "ellm-extract", dir / ".." / "libexec" / "ellm" / "ellm-extract"}) {
      if (usable(p.lexically_normal().string())) return p.lexically_normal().string();
    }
  }
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
  return NotFoundError("the PDF extractor ellm-extract was not found (tried " + list +
                       "); set ELLM_EXTRACTOR or install it in libexec/ellm");
}

namespace {

// O_NONBLOCK: opening a FIFO must not block; regular files ignore it.
constexpr int kOpenFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;

Status OpenError(const std::string& path, int err) {
  const bool missing = err == ENOENT || err == ENOTDIR;
  return MakeExtractError(missing ? ExtractError::kNotFound : ExtractError::kUnreadable,
                          path + (missing ? ": no such file" : ": cannot open: ") +
                              (missing ? "" : std::strerror(err)));
}

StatusOr<int> OpenBeneath(const std::string& root, const std::string& path) {
  const std::string prefix = root == "/" ? root : root + "/";
  if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) {
    return MakeExtractError(ExtractError::kUnreadable, path + ": not beneath " + root);
  }
  const int dir = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return OpenError(root, errno);
  open_how how{};
  how.flags = static_cast<uint64_t>(kOpenFlags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const std::string relative = path.substr(prefix.size());
  long fd;
  do {
    fd = syscall(SYS_openat2, dir, relative.c_str(), &how, sizeof(how));
  } while (fd < 0 && errno == EINTR);
  const int err = errno;
  close(dir);
  if (fd >= 0) return static_cast<int>(fd);
  if (err == ENOSYS) {
    return FailedPreconditionError(path +
                                   ": this kernel lacks openat2 (Linux 5.6 or later is needed "
                                   "to open job documents safely beneath jobs.allowed_roots)");
  }
  if (err == ELOOP || err == EXDEV) {
    return MakeExtractError(ExtractError::kUnreadable,
                            path + ": not read: a symbolic link or a path leaving " + root +
                                " appeared in it after the job was checked");
  }
  return OpenError(path, err);
}

}  // namespace

StatusOr<Document> ExtractDocument(const std::string& path, const ExtractOptions& options) {
  ELLM_RETURN_IF_ERROR(options.Validate());
  const int fd = open(path.c_str(), kOpenFlags);
  if (fd < 0) return OpenError(path, errno);
  return ExtractOpenDocument(path, fd, options);
}

StatusOr<Document> ExtractDocumentBeneath(const std::string& root, const std::string& path,
                                          const ExtractOptions& options) {
  ELLM_RETURN_IF_ERROR(options.Validate());
  ELLM_ASSIGN_OR_RETURN(int fd, OpenBeneath(root, path));
  return ExtractOpenDocument(path, fd, options);
}

namespace {

StatusOr<Document> ExtractOpenDocument(const std::string& path, int fd,
                                       const ExtractOptions& options) {
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    return MakeExtractError(ExtractError::kUnreadable, path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    return MakeExtractError(ExtractError::kUnreadable, path + ": is a directory, not a file");
  }
  if (!S_ISREG(st.st_mode)) {
    return MakeExtractError(ExtractError::kUnreadable, path + ": not a regular file");
  }
  if (st.st_size > options.max_bytes) {
    return MakeExtractError(ExtractError::kTooLarge, path + ": " + std::to_string(st.st_size) +
                                                         " bytes, above the limit of " +
                                                         std::to_string(options.max_bytes));
  }
  const std::string ext = Extension(path);
  const bool text_ext = ext == ".txt" || ext == ".text" || ext == ".md" || ext == ".markdown";
  ELLM_ASSIGN_OR_RETURN(FileData data, ReadFileData(fd, path, st.st_size, text_ext));
  // Text files must start with the magic to count as PDFs; anything else
  // may have junk before it, as PDF readers allow.
  const bool is_pdf = data.head.rfind("%PDF-", 0) == 0 ||
                      (!text_ext && data.head.find("%PDF-") != std::string::npos);
  // Word and OpenDocument files are ZIP archives; encrypted ones (and old
  // .doc files) are OLE compound files. The child tells them apart.
  const bool is_office = data.head.rfind("PK\x03\x04", 0) == 0 ||
                         data.head.rfind("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1", 0) == 0;
  // Scans as image files: PNG, JPEG, TIFF (either byte order).
  const bool is_image = data.head.rfind("\x89PNG\r\n\x1a\n", 0) == 0 ||
                        data.head.rfind("\xFF\xD8\xFF", 0) == 0 ||
                        data.head.rfind(std::string("II*\0", 4), 0) == 0 ||
                        data.head.rfind(std::string("MM\0*", 4), 0) == 0;
  StatusOr<Document> doc = [&]() -> StatusOr<Document> {
    if (is_pdf) return ChildDocument(path, options, fd, "pdf");
    if (is_image) return ChildDocument(path, options, fd, "image");
    // A web page: its markup is parsed in the child like any document's.
    if (LooksLikeHtml(data.head) ||
        ((ext == ".html" || ext == ".htm") && LooksLikeText(data.head))) {
      return ChildDocument(path, options, fd, "html");
    }
    if (is_office) return ChildDocument(path, options, fd, "office");
    if (text_ext) return TextDocument(path, ext, std::move(data.all));
    if (ext != ".pdf" && LooksLikeText(data.head)) {
      // Any other name, even none: the content decides. Read it again whole.
      ELLM_ASSIGN_OR_RETURN(FileData whole, ReadFileData(fd, path, st.st_size, true));
      if (text::IsValidUtf8(whole.all) && whole.all.find('\0') == std::string::npos) {
        return TextDocument(path, ".txt", std::move(whole.all));
      }
    }
    if (ext == ".pdf") {
      return MakeExtractError(ExtractError::kNotPdf, path + ": not a PDF (no %PDF- header); " +
                                                         DescribeContent(data.head));
    }
    return MakeExtractError(
        ExtractError::kUnsupportedType,
        path + ": unsupported file type" + (ext.empty() ? "" : " '" + ext + "'") + " (" +
            DescribeContent(data.head) +
            "); ellm reads PDF, Word (.docx), OpenDocument text (.odt), plain text (.txt), "
            "Markdown (.md), HTML and scans as PNG, JPEG or TIFF images");
  }();
  if (!doc.ok()) return doc;
  doc->metadata.source = path;
  doc->metadata.byte_size = data.size;
  doc->metadata.sha256 = data.sha256;
  return doc;
}

}  // namespace
}  // namespace ellm::ingest
