// ellm serve: the OpenAI-compatible HTTP API on a local model, without
// Kafka: the same runtime as summarize (model, store, pipelines) behind
// server::ApiServer. It binds first (so /health answers "loading" while the
// model loads), prints the address it listens on, and serves until SIGINT
// or SIGTERM.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <thread>

#include "chat_template_flag.h"
#include "commands.h"
#include "ellm/server/api_server.h"
#include "flags.h"
#include "local_runtime.h"

namespace ellm::cli {
namespace {

constexpr const char* kUsage =
    "usage: ellm serve --model M [--listen HOST:PORT] [--api-keys-file F] [--threads N]\n"
    "                  [--ctx N] [--db PATH] [--config FILE] [--sessions N] [--max-queue N]\n"
    "                  [--tls-cert F --tls-key F] [--cors-origin ORIGIN[,ORIGIN...]]\n"
    "                  [--max-body BYTES] [--chat-template NAME|F.jinja]\n";

StatusOr<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgumentError("--listen '" + listen + "': expected HOST:PORT");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1) port = -1;
  } catch (...) {
  }
  if (port < 0 || port > 65535) {
    return InvalidArgumentError("--listen '" + listen + "': the port must be 0..65535");
  }
  return std::make_pair(host, port);
}

Status Run(const Flags& f) {
  server::ApiServerOptions o;
  ELLM_ASSIGN_OR_RETURN(auto listen, ParseListen(f.Get("listen", "127.0.0.1:8080")));
  o.host = listen.first;
  o.port = listen.second;
  if (f.Has("api-keys-file")) {
    ELLM_ASSIGN_OR_RETURN(o.api_keys, server::ReadApiKeysFile(f.Get("api-keys-file")));
  }
  o.tls_cert_file = f.Get("tls-cert");
  o.tls_key_file = f.Get("tls-key");
  ELLM_ASSIGN_OR_RETURN(int64_t sessions, f.GetInt("sessions", 1));
  ELLM_ASSIGN_OR_RETURN(int64_t queue, f.GetInt("max-queue", o.max_queue));
  ELLM_ASSIGN_OR_RETURN(int64_t ctx, f.GetInt("ctx", 8192));
  ELLM_ASSIGN_OR_RETURN(int64_t max_body, f.GetInt("max-body", 64 << 20));
  if (max_body < 1024) return InvalidArgumentError("--max-body must be at least 1024 bytes");
  o.max_body_bytes = static_cast<size_t>(max_body);
  if (sessions < 1 || sessions > 64) return InvalidArgumentError("--sessions must be 1..64");
  if (queue < 0 || queue > 4096) return InvalidArgumentError("--max-queue must be 0..4096");
  if (ctx < 16) return InvalidArgumentError("--ctx must be at least 16");
  o.sessions = static_cast<int>(sessions);
  o.max_queue = static_cast<int>(queue);
  o.n_ctx = ctx;
  if (f.Has("cors-origin")) {
    std::stringstream list(f.Get("cors-origin"));
    for (std::string origin; std::getline(list, origin, ',');) {
      if (!origin.empty()) o.cors_origins.push_back(origin);
    }
  }

  // SIGINT/SIGTERM go to one thread that stops the server.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  server::ApiServer server(o);
  ELLM_RETURN_IF_ERROR(server.Bind());
  std::printf("ellm serve: listening on %s\n", server.address().c_str());
  std::fflush(stdout);
  std::atomic<bool> stopping{false};
  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (!stopping.exchange(true)) {
      std::fprintf(stderr, "ellm serve: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    }
    server.Stop();
  });
  std::atomic<bool> served{true};
  std::thread http([&] { served = server.Run(); });
  auto stop_all = [&] {
    stopping = true;
    server.Stop();
    pthread_kill(signals.native_handle(), SIGTERM);  // ends its sigwait
    http.join();
    signals.join();
  };

  auto rt = OpenLocalRuntime(f);
  if (!rt.ok()) {
    stop_all();
    return rt.status();
  }
  const std::string model_id = std::filesystem::path((*rt)->model_path).stem().string();
  Engine& engine = (*rt)->generator->engine();
  if (Status s = server.SetModel(&engine, model_id, "ellm-" + engine.info().fingerprint); !s.ok()) {
    stop_all();
    return s;
  }
  std::fprintf(stderr, "ellm serve: model %s ready (%s, context %lld per session, %d session(s))\n",
               model_id.c_str(), (*rt)->model_path.c_str(), static_cast<long long>(ctx),
               o.sessions);
  http.join();
  if (!stopping.exchange(true)) pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  if (!served) return UnavailableError("the HTTP server stopped unexpectedly");
  return OkStatus();
}

}  // namespace

int Serve(const Args& args) {
  auto flags = Flags::Parse(args,
                            {"model", "listen", "api-keys-file", "threads", "ctx", "db", "config",
                             "sessions", "max-queue", "tls-cert", "tls-key", "cors-origin",
                             "max-body", "pipelines", kChatTemplateFlag},
                            {});
  if (!flags.ok()) {
    std::fprintf(stderr, "ellm serve: %s\n%s", flags.status().message().c_str(), kUsage);
    return 2;
  }
  Status s = Run(*flags);
  if (!s.ok()) {
    std::fprintf(stderr, "ellm serve: %s\n", s.ToString().c_str());
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace ellm::cli
