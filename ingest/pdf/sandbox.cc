// The extractor's seccomp allow-list (see sandbox.h). The list comes from
// `strace -f -c` of ellm-extract on tests/data/pdf: every call poppler and
// glibc make after the input is read, plus what an abort() or a
// std::bad_alloc report needs. Add to it only with a reason.
#include "pdf/sandbox.h"

#include <fcntl.h>
#include <fontconfig/fontconfig.h>
#include <iconv.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "ellm/base/sanitizers.h"

namespace ellm::ingest::pdf {
namespace {

// AddressSanitizer's runtime reads its own state through these when it
// reports an error; only sanitizer builds (tests) allow them.
#if ELLM_ASAN
// (It probes memory by writing it to a pipe of its own, hence pipe2 and
// write to any fd.)
constexpr std::array<const char*, 9> kSanitizerCalls = {
    "sigaltstack", "readlink", "readlinkat", "sched_getaffinity", "prlimit64", "getrlimit",
    "pipe",        "pipe2",    "write"};
#else
constexpr std::array<const char*, 0> kSanitizerCalls = {};
#endif

// open()/openat() flags that would let the call create, truncate or write.
// O_TMPFILE is (this bit | O_DIRECTORY) in glibc, and poppler opens its
// data directories with O_DIRECTORY, so only this bit is masked.
constexpr scmp_datum_t kTmpFileBit = 020000000;
constexpr scmp_datum_t kWriteFlags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | kTmpFileBit;

using Filter = std::unique_ptr<void, decltype(&seccomp_release)>;

// A condition on argument `arg` (seccomp.h's SCMP_A0..SCMP_A5 are compound
// literals, which C++ does not have): for SCMP_CMP_MASKED_EQ, a is the mask
// and b the value.
scmp_arg_cmp Arg(unsigned arg, scmp_compare op, scmp_datum_t a, scmp_datum_t b = 0) {
  return scmp_arg_cmp{arg, op, a, b};
}

Status Rule(scmp_filter_ctx ctx, const char* name, unsigned count = 0,
            const scmp_arg_cmp* args = nullptr) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return InternalError(std::string("seccomp: unknown syscall ") + name);
  const int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, count, args);
  if (rc != 0) {
    return InternalError(std::string("seccomp: cannot allow ") + name + ": " + std::strerror(-rc));
  }
  return OkStatus();
}

// poppler-cpp converts text with iconv between UTF-16LE and UTF-8; glibc
// loads the converter (gconv/UTF-16.so) on first use with an executable
// mapping the sandbox forbids. Loading it now and never closing these
// descriptors keeps it loaded, so poppler's own iconv_open finds it.
void PreloadConverters() {
  static iconv_t to_utf8 = iconv_open("UTF-8", "UTF-16LE");
  static iconv_t from_utf8 = iconv_open("UTF-16LE", "UTF-8");
  (void)to_utf8;
  (void)from_utf8;
}

// What the extractor may still read once confined: poppler's data (CMaps
// and Unicode maps for CJK text), the time zone glibc reads for dates, the
// fonts fontconfig may look up, and Tesseract's language data for OCR.
// Everything else on the file system, the documents beside the input
// included, is out of reach.
constexpr const char* kReadable[] = {"/usr/share/poppler", "/usr/share/zoneinfo",
                                     "/etc/localtime",     "/usr/share/fonts",
                                     "/etc/fonts",         "/usr/share/tesseract-ocr"};

// Landlock's file-system rights known to the kernel's ABI `abi`: every one
// is handled, so each is denied but where a rule grants it.
uint64_t HandledRights(int abi) {
  uint64_t rights = (uint64_t{1} << 13) - 1;  // ABI 1: execute ... make_sym
  if (abi >= 2) rights |= uint64_t{1} << 13;  // refer (link or rename across dirs)
  if (abi >= 3) rights |= uint64_t{1} << 14;  // truncate
  if (abi >= 5) rights |= uint64_t{1} << 15;  // ioctl on devices
  return rights;
}

}  // namespace

void PreloadFonts() {
  // FcInit reads fontconfig's configuration and caches now, while access()
  // and readlink() are allowed; one match makes sure the font set is built.
  if (FcInit() != FcTrue) return;
  FcPattern* pattern = FcNameParse(reinterpret_cast<const FcChar8*>("Helvetica"));
  if (pattern == nullptr) return;
  FcConfigSubstitute(nullptr, pattern, FcMatchPattern);
  FcDefaultSubstitute(pattern);
  FcResult result = FcResultNoMatch;
  FcPattern* match = FcFontMatch(nullptr, pattern, &result);
  if (match != nullptr) FcPatternDestroy(match);
  FcPatternDestroy(pattern);
}

StatusOr<bool> ConfineFileSystem() {
  const long abi =
      syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return false;  // no Landlock in this kernel, or disabled
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = HandledRights(static_cast<int>(abi));
  const int ruleset =
      static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0));
  if (ruleset < 0) return InternalError(std::string("landlock: ") + std::strerror(errno));
  for (const char* path : kReadable) {
    const int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) continue;  // not installed here
    struct stat st {};
    landlock_path_beneath_attr rule{};
    rule.parent_fd = fd;
    rule.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      rule.allowed_access |= LANDLOCK_ACCESS_FS_READ_DIR;
    }
    const long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    close(fd);
    if (rc != 0) {
      close(ruleset);
      return InternalError(std::string("landlock: rule for ") + path + ": " + std::strerror(errno));
    }
  }
  const bool ok = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
                  syscall(SYS_landlock_restrict_self, ruleset, 0) == 0;
  const int err = errno;
  close(ruleset);
  if (!ok) return InternalError(std::string("landlock: cannot confine: ") + std::strerror(err));
  return true;
}

Status EnterExtractorSandbox() {
  PreloadConverters();
  // Reads first (Landlock's calls are not on the seccomp list). Where the
  // kernel has no Landlock the seccomp filter alone still holds.
  StatusOr<bool> confined = ConfineFileSystem();
  if (!confined.ok()) return confined.status();
  if (!*confined) {
    static const char kNote[] =
        "ellm-extract: no Landlock in this kernel: reads are not confined\n";
    (void)!write(STDERR_FILENO, kNote, sizeof(kNote) - 1);
  }
  // KILL_PROCESS needs the seccomp() system call (Linux 4.14); where a
  // parent's filter hides it (a systemd SystemCallFilter= without
  // `seccomp`), libseccomp refuses it and KILL_THREAD does the same here:
  // this process has one thread.
  Filter filter(seccomp_init(SCMP_ACT_KILL_PROCESS), seccomp_release);
  if (!filter) filter.reset(seccomp_init(SCMP_ACT_KILL_THREAD));
  if (!filter) return InternalError("seccomp: cannot create a filter");
  scmp_filter_ctx ctx = filter.get();
  // Calls on fds already open (the input was read; poppler's data files)
  // and on memory; none can reach the network, a new program or a file for
  // writing.
  for (const char* name :
       {"read", "pread64", "readv", "lseek", "close", "fstat", "newfstatat", "statx", "getdents64",
        "fcntl", "brk", "munmap", "mremap", "madvise", "futex", "getrandom", "clock_gettime",
        "clock_getres", "gettimeofday", "nanosleep", "clock_nanosleep", "sched_yield",
        "rt_sigreturn", "rt_sigprocmask", "rt_sigaction", "getpid", "gettid", "exit", "exit_group",
        // glibc's qsort asks for the physical memory size before sorting a
        // large array (the valgrind manual in the robustness test).
        "sysinfo"}) {
    if (Status s = Rule(ctx, name); !s.ok()) return s;
  }
  for (const char* name : kSanitizerCalls) {
    if (Status s = Rule(ctx, name); !s.ok()) return s;
  }
  // Output only on stdout (the JSON) and stderr (messages).
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    const scmp_arg_cmp to_fd[] = {Arg(0, SCMP_CMP_EQ, static_cast<scmp_datum_t>(fd))};
    if (Status s = Rule(ctx, "write", 1, to_fd); !s.ok()) return s;
    if (Status s = Rule(ctx, "writev", 1, to_fd); !s.ok()) return s;
  }
  // Read-only opens: /etc/localtime, glibc's gconv cache, poppler's
  // /usr/share/poppler data (CMaps for CJK text).
  const scmp_arg_cmp openat_ro[] = {Arg(2, SCMP_CMP_MASKED_EQ, kWriteFlags, 0)};
  if (Status s = Rule(ctx, "openat", 1, openat_ro); !s.ok()) return s;
  const scmp_arg_cmp open_ro[] = {Arg(1, SCMP_CMP_MASKED_EQ, kWriteFlags, 0)};
  if (Status s = Rule(ctx, "open", 1, open_ro); !s.ok()) return s;
  // Memory, but no new executable pages: injected code cannot be mapped.
  const scmp_arg_cmp no_exec[] = {Arg(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)};
  if (Status s = Rule(ctx, "mmap", 1, no_exec); !s.ok()) return s;
  if (Status s = Rule(ctx, "mprotect", 1, no_exec); !s.ok()) return s;
  // abort() (a failed assertion in poppler) signals this process only, so
  // the parent sees SIGABRT, a crash, not a sandbox violation.
  const scmp_arg_cmp self[] = {Arg(0, SCMP_CMP_EQ, static_cast<scmp_datum_t>(getpid()))};
  if (Status s = Rule(ctx, "tgkill", 1, self); !s.ok()) return s;
  const int rc = seccomp_load(ctx);
  if (rc != 0)
    return InternalError(std::string("seccomp: cannot load the filter: ") + std::strerror(-rc));
  return OkStatus();
}

void MisbehaveForTesting(const char* what) {
  if (what == nullptr) return;
  const std::string w = what;
  if (w == "socket") {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0) close(fd);
  } else if (w == "write") {
    const int fd = open("/tmp/ellm-extract-sandbox-escape", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) close(fd);
  } else if (w == "exec") {
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    execv("/bin/true", argv);
  } else if (w == "read") {
    // Read-only opens pass seccomp; Landlock refuses this one.
    const int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      static const char kMsg[] = "ellm-extract: read /etc/passwd from inside the sandbox\n";
      (void)!write(STDERR_FILENO, kMsg, sizeof(kMsg) - 1);
      abort();
    }
  } else if (w == "env") {
    // The parent passes only these (ChildEnvironment).
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view v = *e;
      if (v != "OMP_THREAD_LIMIT=1" && !v.starts_with("ASAN_OPTIONS=") &&
          !v.starts_with("UBSAN_OPTIONS=") && !v.starts_with("LSAN_OPTIONS=") &&
          !v.starts_with("ELLM_TEST_EXTRACTOR_MISBEHAVE=") &&
          !v.starts_with("ELLM_FAKE_EXTRACTOR_MODE=")) {
        abort();
      }
    }
  }
}

}  // namespace ellm::ingest::pdf
