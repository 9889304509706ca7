#include "test_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

namespace ellm::testing {

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0);
}

std::string SourceDir() { return ELLM_SOURCE_DIR; }

std::string LlamaSourceDir() {
  const char* env = std::getenv("ELLM_LLAMA_SRC");
  std::string path;
  if (env && *env) {
    path = env;
  } else {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* cache = std::getenv("ELLM_CACHE");
    const char* home = std::getenv("HOME");
    std::string root = cache && *cache ? cache
                       : xdg && *xdg   ? std::string(xdg) + "/ellm"
                                       : std::string(home ? home : "") + "/.cache/ellm";
    path = root + "/llama.cpp-npm/node-llama-cpp-3.22.1/src";
  }
  return std::filesystem::is_directory(path + "/models") ? path : "";
}

std::string VocabDir() {
  const std::string src = LlamaSourceDir();
  if (src.empty()) return "";
  return std::filesystem::exists(src + "/models/ggml-vocab-llama-bpe.gguf") ? src + "/models" : "";
}

std::string ModelPath() {
  const char* env = std::getenv("ELLM_TEST_MODEL");
  std::string path = env && *env ? env : SourceDir() + "/models/gemma-3-270m-q4_k_m.gguf";
  return std::filesystem::exists(path) ? path : "";
}

std::string KafkaBrokers() {
  const char* env = std::getenv("ELLM_TEST_KAFKA");
  std::string brokers = env && *env ? env : "127.0.0.1:19092";
  // Probe the first host:port with a plain TCP connect.
  std::string first = brokers.substr(0, brokers.find(','));
  auto colon = first.rfind(':');
  if (colon == std::string::npos) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(first.substr(colon + 1))));
  std::string host = first.substr(0, colon);
  if (host == "localhost") host = "127.0.0.1";
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return "";
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok ? brokers : "";
}

std::string MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + ".XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return "";
  return buf.data();
}

}  // namespace ellm::testing
