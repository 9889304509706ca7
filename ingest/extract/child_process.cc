// The limited child runner (see child_process.h).
#include "extract/child_process.h"

#include "ellm/base/sanitizers.h"
#include "ellm/ingest/extract.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <thread>

namespace ellm::ingest {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kErrTailBytes = 4096;

std::atomic<int> forks_to_fail{0};  // FailExtractorForksForTesting

// ASan reserves terabytes of address space at start-up, so an address-space
// limit would stop a sanitized child before main().
#if ELLM_ASAN
constexpr bool kApplyAddressSpaceLimit = false;
#else
constexpr bool kApplyAddressSpaceLimit = true;
#endif

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  void Close() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void ExecChild(const char* binary, char* const* argv, char* const* envp, pid_t parent,
                            const int src[4], const rlimit& cpu, const rlimit& as, bool limit_as) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(126);
  // Move the sources above the targets first so that dup2 never overwrites
  // a source that is still needed.
  int high[4];
  for (int k = 0; k < 4; ++k) {
    high[k] = src[k] >= 0 ? fcntl(src[k], F_DUPFD, 10) : -1;
    if (src[k] >= 0 && high[k] < 0) _exit(126);
  }
  for (int k = 0; k < 4; ++k) {
    if (high[k] >= 0) {
      if (dup2(high[k], k) < 0) _exit(126);
    } else {
      close(k);
    }
  }
  if (syscall(SYS_close_range, 4u, ~0u, 0u) != 0) {
    rlimit nofile{};
    getrlimit(RLIMIT_NOFILE, &nofile);
    const int max_fd = nofile.rlim_cur == RLIM_INFINITY || nofile.rlim_cur > 65536
                           ? 65536
                           : static_cast<int>(nofile.rlim_cur);
    for (int fd = 4; fd < max_fd; ++fd) close(fd);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
  }
  const rlimit zero{0, 0};
  if (setrlimit(RLIMIT_CPU, &cpu) != 0 || setrlimit(RLIMIT_FSIZE, &zero) != 0 ||
      setrlimit(RLIMIT_CORE, &zero) != 0 || (limit_as && setrlimit(RLIMIT_AS, &as) != 0)) {
    _exit(126);
  }
  execve(binary, argv, envp);
  _exit(127);
}

// Reads what is available on `fd` into `sink`; false at EOF or on error.
bool Drain(int fd, std::string* sink, size_t keep_tail) {
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    if (n == 0) return false;
    sink->append(buf, static_cast<size_t>(n));
    if (keep_tail > 0 && sink->size() > keep_tail) sink->erase(0, sink->size() - keep_tail);
    if (keep_tail == 0) return true;  // let the caller check the output cap
  }
}

void Reap(pid_t pid, int* status, rusage* usage) {
  while (wait4(pid, status, 0, usage) < 0 && errno == EINTR) {
  }
}

}  // namespace

void FailExtractorForksForTesting(int n) { forks_to_fail = n; }

std::vector<std::string> ChildEnvironment() {
  // Tesseract's OpenMP (libgomp reads this when the child starts) must not
  // start threads: the sandbox allows no clone, and the filter holds for
  // one thread only.
  std::vector<std::string> env = {"OMP_THREAD_LIMIT=1"};
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
                           "ELLM_TEST_EXTRACTOR_MISBEHAVE", "ELLM_FAKE_EXTRACTOR_MODE"}) {
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  return env;
}

StatusOr<ChildResult> RunChild(const std::string& binary, const std::vector<std::string>& argv,
                               int input_fd, const ChildLimits& limits) {
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env = ChildEnvironment();
  std::vector<char*> cenv;
  for (std::string& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  Fd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (devnull.fd < 0) return ErrnoError(errno, "cannot open /dev/null");
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]);

  const rlim_t cpu = static_cast<rlim_t>(std::max(1, limits.cpu_seconds));
  const rlimit cpu_limit{cpu, cpu + 1};
  const rlimit as_limit{static_cast<rlim_t>(limits.address_space_bytes),
                        static_cast<rlim_t>(limits.address_space_bytes)};
  const int src[4] = {devnull.fd, out_w.fd, err_w.fd, input_fd};
  const pid_t parent = getpid();
  const Clock::time_point deadline = Clock::now() + limits.wall_timeout;

  int fail = forks_to_fail.load();
  while (fail > 0 && !forks_to_fail.compare_exchange_weak(fail, fail - 1)) {
  }
  const pid_t pid = fail > 0 ? (errno = EAGAIN, -1) : fork();
  if (pid < 0) return ErrnoError(errno, "fork of the extractor");
  if (pid == 0) {
    ExecChild(binary.c_str(), cargv.data(), cenv.data(), parent, src, cpu_limit, as_limit,
              kApplyAddressSpaceLimit);
  }
  out_w.Close();
  err_w.Close();
  devnull.Close();
  fcntl(out_r.fd, F_SETFL, O_NONBLOCK);
  fcntl(err_r.fd, F_SETFL, O_NONBLOCK);

  ChildResult result;
  bool killed = false;
  auto kill_child = [&](ChildResult::End why) {
    kill(pid, SIGKILL);
    result.end = why;
    killed = true;
  };
  bool out_open = true, err_open = true;
  const size_t max_out = static_cast<size_t>(limits.max_output_bytes);
  while ((out_open || err_open) && !killed) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      kill_child(ChildResult::End::kWallTimeout);
      break;
    }
    pollfd fds[2];
    nfds_t n = 0;
    if (out_open) fds[n++] = {out_r.fd, POLLIN, 0};
    if (err_open) fds[n++] = {err_r.fd, POLLIN, 0};
    const int ready = poll(fds, n, static_cast<int>(std::min<long long>(left, INT_MAX)));
    if (ready < 0 && errno != EINTR) {
      kill_child(ChildResult::End::kWallTimeout);
      return ErrnoError(errno, "poll on the extractor's output");
    }
    for (nfds_t k = 0; k < n && ready > 0; ++k) {
      if (fds[k].revents == 0) continue;
      if (fds[k].fd == out_r.fd) {
        out_open = Drain(out_r.fd, &result.out, 0);
        if (result.out.size() > max_out) {
          result.out.resize(max_out);
          kill_child(ChildResult::End::kOutputLimit);
        }
      } else {
        err_open = Drain(err_r.fd, &result.err_tail, kErrTailBytes);
      }
    }
  }
  // Both pipes are closed (or we killed it): wait for the exit, still
  // bounded by the deadline (a child may close its pipes and hang).
  int status = 0;
  rusage usage{};
  if (!killed) {
    for (int sleep_ms = 1;; sleep_ms = std::min(sleep_ms * 2, 50)) {
      const pid_t r = wait4(pid, &status, WNOHANG, &usage);
      if (r == pid) break;
      if (r < 0 && errno != EINTR) {
        // ECHILD: SIGCHLD is ignored and the kernel reaped it for us.
        result.end = ChildResult::End::kExited;
        result.exit_code = -1;
        return result;
      }
      if (Clock::now() >= deadline) {
        kill_child(ChildResult::End::kWallTimeout);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    }
  }
  if (killed) Reap(pid, &status, &usage);
  result.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  if (!killed) {
    if (WIFSIGNALED(status)) {
      result.end = ChildResult::End::kSignaled;
      result.signal = WTERMSIG(status);
    } else {
      result.end = ChildResult::End::kExited;
      result.exit_code = WEXITSTATUS(status);
    }
  }
  return result;
}

}  // namespace ellm::ingest
