// ellm: the command-line front end. Subcommands live in <name>_command.cc
// and run the same libraries as the daemon, on local files.
#include <cstdio>
#include <string>

#include "commands.h"
#include "ellm/engine/cpu_features.h"

namespace {

constexpr const char* kUsage =
    "usage: ellm <command> [options]\n"
    "commands:\n"
    "  info MODEL.gguf [--json] [--tensors]   validate a GGUF file and print its metadata\n"
    "  cpu                                    CPU features and the kernel level in use\n"
    "  version                                print the version\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string cmd = argv[1];
  ellm::cli::Args args(argv + 2, argv + argc);
  if (cmd == "info") return ellm::cli::Info(args);
  if (cmd == "cpu") {
    std::printf("%s\n", ellm::HostCpu().ToString().c_str());
    return 0;
  }
  if (cmd == "version") {
    std::printf("ellm %s\n", ELLM_VERSION);
    return 0;
  }
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "ellm: unknown command '%s'\n%s", cmd.c_str(), kUsage);
  return 2;
}
