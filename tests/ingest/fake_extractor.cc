// A stand-in for ellm-extract that misbehaves on purpose, so tests can check
// that ExtractDocument contains it. The behaviour comes from
// $ELLM_FAKE_EXTRACTOR_MODE: hang (sleeps), spin (burns CPU), crash
// (SIGSEGV), alloc (allocates until it fails), flood (endless output),
// garbage (non-JSON, exit 0), exit7 (exit status 7 with a message),
// silent_hang (closes stdout/stderr, then sleeps), fd_report (prints which
// fds are open, as a Document), ok (a one-page document).
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main() {
  const char* env = std::getenv("ELLM_FAKE_EXTRACTOR_MODE");
  const std::string mode = env ? env : "";
  if (mode == "hang") {
    for (;;) pause();
  }
  if (mode == "spin") {
    volatile unsigned long x = 0;
    for (;;) x = x + 1;
  }
  if (mode == "crash") {
    std::fputs("about to crash\n", stderr);
    std::fflush(stderr);
    std::signal(SIGSEGV, SIG_DFL);  // die by the signal even under ASan's handler
    std::raise(SIGSEGV);
  }
  if (mode == "alloc") {
    std::vector<char*> blocks;
    for (int i = 0; i < 1024; ++i) {  // up to 64 GiB: the limit must stop it
      char* p = new char[64 << 20];
      std::memset(p, 1, 64 << 20);
      blocks.push_back(p);
    }
    return 0;
  }
  if (mode == "flood") {
    std::string chunk(1 << 16, 'x');
    for (;;) {
      if (write(1, chunk.data(), chunk.size()) < 0) return 1;
    }
  }
  if (mode == "garbage") {
    std::fputs("this is not json", stdout);
    return 0;
  }
  if (mode == "exit7") {
    std::fputs("fake: something went wrong\n", stderr);
    return 7;
  }
  if (mode == "silent_hang") {
    close(1);
    close(2);
    for (;;) pause();
  }
  std::string text = "fake text";
  if (mode == "fd_report") {
    text.clear();
    for (int fd = 0; fd < 64; ++fd) {
      if (fcntl(fd, F_GETFD) != -1) text += std::to_string(fd) + " ";
    }
  }
  std::printf(
      "{\"format\":\"ellm.document\",\"version\":1,\"metadata\":{\"media_type\":"
      "\"application/pdf\",\"page_count\":1},\"pages\":[{\"number\":1,\"text\":\"%s\"}]}",
      text.c_str());
  return 0;
}
