// ellm model: where the configured model lives, and placing a model file
// there. The Debian package ships no model; an administrator runs
//
//   ellm model install FILE.gguf            (copies to model.path of /etc/ellm/ellm.yaml)
//   ellm model path                         (prints that path)
//
// install loads FILE with the engine first (so a truncated download, a
// non-GGUF file or an unsupported architecture is refused before anything
// is replaced), then copies it to a temporary file beside the destination,
// fsyncs it and renames it over the destination: a running ellmd that has
// the old file mapped keeps reading the old inode, and a crash mid-copy
// leaves the old model in place. The file is made world-readable (0644) so
// the service user can map it; when run as root it is chowned to the owner
// of the nearest enclosing directory not owned by root (/var/lib/ellm is
// ellm:ellm), so the service owns its model.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "commands.h"
#include "ellm/app/config.h"
#include "ellm/engine/engine.h"
#include "flags.h"

namespace ellm::cli {
namespace {

constexpr const char* kUsage =
    "usage: ellm model path [--config FILE]\n"
    "       ellm model install FILE.gguf [--config FILE] [--to PATH]\n"
    "  path     print model.path of the configuration (default /etc/ellm/ellm.yaml)\n"
    "  install  check FILE loads, then copy it atomically to model.path (or --to PATH)\n";

StatusOr<std::string> ConfiguredModelPath(const Flags& flags) {
  std::string config_path = flags.Get("config");
  if (config_path.empty() && access("/etc/ellm/ellm.yaml", R_OK) == 0) {
    config_path = "/etc/ellm/ellm.yaml";
  }
  app::Config config;
  if (!config_path.empty()) {
    ELLM_ASSIGN_OR_RETURN(config, app::LoadConfig(config_path));
  }
  return config.model.path;
}

Status ErrnoError(const std::string& what, const std::string& path) {
  return InternalError(what + " '" + path + "': " + std::strerror(errno));
}

// Copies `src` to `dst` through `dst`.tmp-<pid>: write, fsync, rename, fsync dir.
Status CopyAtomically(const std::string& src, const std::string& dst) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(dst).parent_path();
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec) return InternalError("cannot create '" + dir.string() + "': " + ec.message());
  std::string tmp = dst + ".tmp-" + std::to_string(getpid());
  int in = open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return ErrnoError("cannot open", src);
  int out = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    Status s = ErrnoError("cannot create", tmp);
    close(in);
    return s;
  }
  Status status = OkStatus();
  std::string buf(1 << 20, '\0');
  for (;;) {
    ssize_t n = read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = ErrnoError("cannot read", src);
      break;
    }
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(out, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        status = errno == ENOSPC ? ResourceExhaustedError("no space left on the device of '" + tmp +
                                                          "' while copying the model")
                                 : ErrnoError("cannot write", tmp);
        break;
      }
      done += w;
    }
    if (!status.ok()) break;
  }
  if (status.ok() && fchmod(out, 0644) != 0) status = ErrnoError("cannot chmod", tmp);
  if (status.ok() && fsync(out) != 0) status = ErrnoError("cannot fsync", tmp);
  close(in);
  if (close(out) != 0 && status.ok()) status = ErrnoError("cannot close", tmp);
  if (status.ok() && rename(tmp.c_str(), dst.c_str()) != 0) {
    status = ErrnoError("cannot rename '" + tmp + "' to", dst);
  }
  if (!status.ok()) {
    unlink(tmp.c_str());
    return status;
  }
  int d = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d >= 0) {
    fsync(d);
    close(d);
  }
  return OkStatus();
}

// As root, hands the file to the owner of the nearest enclosing directory
// that root does not own.
void ChownToDirectoryOwner(const std::string& dst) {
  if (geteuid() != 0) return;
  std::filesystem::path p = std::filesystem::absolute(dst);
  for (std::filesystem::path dir = p.parent_path(); !dir.empty() && dir != dir.root_path();
       dir = dir.parent_path()) {
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) return;
    if (st.st_uid != 0) {
      if (chown(p.c_str(), st.st_uid, st.st_gid) != 0) {
        std::fprintf(stderr, "ellm model: warning: cannot chown '%s': %s\n", p.c_str(),
                     std::strerror(errno));
      }
      return;
    }
  }
}

int Install(const Flags& flags) {
  if (flags.positional().size() != 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string& src = flags.positional()[1];
  std::string dst = flags.Get("to");
  if (dst.empty()) {
    auto configured = ConfiguredModelPath(flags);
    if (!configured.ok()) {
      std::fprintf(stderr, "ellm model install: %s\n", configured.status().ToString().c_str());
      return 1;
    }
    dst = *configured;
  }
  EngineOptions options;
  options.threads = 1;
  auto engine = Engine::Load(src, options);
  if (!engine.ok()) {
    std::fprintf(stderr, "ellm model install: refusing '%s': %s\n", src.c_str(),
                 engine.status().ToString().c_str());
    return 1;
  }
  std::string arch = (*engine)->info().architecture;
  engine->reset();
  if (Status s = CopyAtomically(src, dst); !s.ok()) {
    std::fprintf(stderr, "ellm model install: %s\n", s.ToString().c_str());
    return 1;
  }
  ChownToDirectoryOwner(dst);
  std::printf("installed %s (%s) as %s\n", src.c_str(), arch.c_str(), dst.c_str());
  return 0;
}

}  // namespace

int Model(const Args& args) {
  auto flags = Flags::Parse(args, {"config", "to"}, {});
  if (!flags.ok()) {
    std::fprintf(stderr, "ellm model: %s\n%s", flags.status().ToString().c_str(), kUsage);
    return 2;
  }
  const auto& pos = flags->positional();
  if (pos.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (pos[0] == "path") {
    auto path = ConfiguredModelPath(*flags);
    if (!path.ok()) {
      std::fprintf(stderr, "ellm model path: %s\n", path.status().ToString().c_str());
      return 1;
    }
    std::printf("%s\n", path->c_str());
    return 0;
  }
  if (pos[0] == "install") return Install(*flags);
  std::fprintf(stderr, "ellm model: unknown subcommand '%s'\n%s", pos[0].c_str(), kUsage);
  return 2;
}

}  // namespace ellm::cli
