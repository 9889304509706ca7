// ellm serve: the OpenAI-compatible HTTP API on a local model, without
// Kafka: the same runtime as summarize (model, store, pipelines) behind
// server::ApiServer. It binds first (so /health answers "loading" while the
// model loads), prints the address it listens on, and serves until SIGINT
// or SIGTERM.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <thread>

#include "chat_template_flag.h"
#include "commands.h"
#include "ellm/app/config.h"
#include "ellm/app/http_jobs.h"
#include "ellm/server/api_server.h"
#include "flags.h"
#include "local_runtime.h"

namespace ellm::cli {
namespace {

constexpr const char* kUsage =
    "usage: ellm serve --model M [--listen HOST:PORT] [--api-keys-file F] [--threads N]\n"
    "                  [--ctx N] [--db PATH] [--config FILE] [--sessions N] [--max-queue N]\n"
    "                  [--tls-cert F --tls-key F] [--cors-origin ORIGIN[,ORIGIN...]]\n"
    "                  [--max-body BYTES] [--max-sessions-per-key N]\n"
    "                  [--chat-template NAME|F.jinja]\n";

Status Run(const Flags& f) {
  // The config's http: section first (when --config names one), flags over it.
  server::ApiServerOptions o;
  std::string listen = "127.0.0.1:8080";
  std::string keys_file;
  if (f.Has("config")) {
    ELLM_ASSIGN_OR_RETURN(app::Config config, app::LoadConfig(f.Get("config")));
    o = config.http.server;
    listen = config.http.listen;
    keys_file = config.http.api_keys_file;
  }
  ELLM_RETURN_IF_ERROR(server::ParseListen(f.Get("listen", listen), &o.host, &o.port));
  keys_file = f.Get("api-keys-file", keys_file);
  if (!keys_file.empty()) {
    ELLM_ASSIGN_OR_RETURN(o.api_keys, server::ReadApiKeysFile(keys_file));
  }
  o.tls_cert_file = f.Get("tls-cert", o.tls_cert_file);
  o.tls_key_file = f.Get("tls-key", o.tls_key_file);
  ELLM_ASSIGN_OR_RETURN(int64_t sessions, f.GetInt("sessions", o.sessions));
  ELLM_ASSIGN_OR_RETURN(int64_t queue, f.GetInt("max-queue", o.max_queue));
  ELLM_ASSIGN_OR_RETURN(int64_t ctx, f.GetInt("ctx", o.n_ctx));
  ELLM_ASSIGN_OR_RETURN(int64_t per_key, f.GetInt("max-sessions-per-key", o.max_sessions_per_key));
  o.max_sessions_per_key = static_cast<int>(std::clamp<int64_t>(per_key, -1, 1 << 20));
  ELLM_ASSIGN_OR_RETURN(int64_t max_body,
                        f.GetInt("max-body", static_cast<int64_t>(o.max_body_bytes)));
  o.max_body_bytes = static_cast<size_t>(std::max<int64_t>(max_body, 0));
  o.sessions = static_cast<int>(std::clamp<int64_t>(sessions, 0, 1 << 20));
  o.max_queue = static_cast<int>(std::clamp<int64_t>(queue, -1, 1 << 20));
  o.n_ctx = ctx;
  if (f.Has("cors-origin")) {
    o.cors_origins.clear();
    std::stringstream list(f.Get("cors-origin"));
    for (std::string origin; std::getline(list, origin, ',');) {
      if (!origin.empty()) o.cors_origins.push_back(origin);
    }
  }

  ELLM_RETURN_IF_ERROR(o.Validate());

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
  // Document jobs (/v1/jobs) run on the same runtime, one at a time. They
  // are attached before the model is marked ready, so that a client that
  // saw /health ok never meets a /v1/jobs that is not there yet.
  auto jobs = app::HttpJobQueue::Start(rt->get(), "ellm-serve/" + std::to_string(getpid()),
                                       [](app::LogLevel level, const std::string& line) {
                                         if (level != app::LogLevel::kDebug)
                                           std::fprintf(stderr, "ellm serve: %s\n", line.c_str());
                                       });
  if (!jobs.ok()) {
    stop_all();
    return jobs.status();
  }
  server.SetJobs(jobs->get());
  if (Status s = server.SetModel(&engine, model_id, "ellm-" + engine.info().fingerprint); !s.ok()) {
    server.SetJobs(nullptr);
    jobs->reset();
    stop_all();
    return s;
  }
  std::fprintf(stderr, "ellm serve: model %s ready (%s, context %lld per session, %d session(s))\n",
               model_id.c_str(), (*rt)->model_path.c_str(), static_cast<long long>(ctx),
               o.sessions);
  http.join();
  if (!stopping.exchange(true)) pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  server.SetJobs(nullptr);
  jobs->reset();  // a running job stays in the inbox for the next start
  if (!served) return UnavailableError("the HTTP server stopped unexpectedly");
  return OkStatus();
}

}  // namespace

int Serve(const Args& args) {
  auto flags = Flags::Parse(args,
                            {"model", "listen", "api-keys-file", "threads", "ctx", "db", "config",
                             "sessions", "max-queue", "tls-cert", "tls-key", "cors-origin",
                             "max-body", "max-sessions-per-key", "pipelines", kChatTemplateFlag},
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
