#include "multipart_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <variant>
#include <vector>

#include "ellm/ingest/job_message.h"
#include "ellm/server/job_request.h"

namespace ellm::testing {
namespace {

using nlohmann::json;

// Everything the peer sends until it closes (or 5 s pass); `why` says what
// failed when nothing came. A connection the host cannot make at once (its
// ephemeral ports all waiting, tens of thousands of inputs in) is retried.
std::string Exchange(int port, const std::string& request, std::string* why) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      *why = std::string("connect: ") + strerror(errno);
      close(fd);
      fd = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (fd < 0) return "";
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string reply;
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = std::string("send: ") + strerror(errno);
      break;
    }
    sent += static_cast<size_t>(n);
  }
  char buf[4096];
  ssize_t n;
  // libFuzzer's timeout timer (SIGALRM) interrupts calls that wait.
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) reply.append(buf, static_cast<size_t>(n));
  }
  if (reply.empty() && why->empty()) {
    *why = n < 0 ? std::string("recv: ") + strerror(errno) : "closed without a reply";
  }
  close(fd);
  return reply;
}

int StatusOf(const std::string& reply) {
  if (reply.compare(0, 9, "HTTP/1.1 ") != 0 || reply.size() < 12) return 0;
  const std::string code = reply.substr(9, 3);
  return code.find_first_not_of("0123456789") == std::string::npos ? std::stoi(code) : 0;
}

}  // namespace

MultipartHarness::MultipartHarness() {
  server_.Post("/v1/jobs",
               [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
  port_ = server_.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  // Bound and listening already: requests wait in the backlog until it accepts.
}

MultipartHarness::~MultipartHarness() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

void MultipartHarness::Broken(std::string what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (violation_.empty()) violation_ = std::move(what);
}

void MultipartHarness::Handle(const httplib::Request& req, httplib::Response& res) {
  using namespace ellm::server;
  std::vector<FormPart> parts;
  for (const auto& [field, part] : req.files) parts.push_back({field, part.filename, part.content});
  JobRequestOrError request = JobRequestFromForm(parts);
  if (auto* parsed = std::get_if<JobRequest>(&request)) {
    request =
        FinishJobRequest(std::move(*parsed), req.get_header_value("Idempotency-Key"), "http-fuzz");
  }
  if (const auto* error = std::get_if<ApiError>(&request)) {
    if (error->status < 400 || error->status > 499 || error->message.empty()) {
      Broken("a refusal without a 4xx status and a message: " + error->message);
    }
    res.status = error->status;
    return;
  }
  JobRequest& job = std::get<JobRequest>(request);
  const json& m = job.message;
  if (!m.is_object() || !m.contains("id") || m["version"] != 1 || !m["documents"].is_array()) {
    Broken("an accepted form is not a job message: " +
           m.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  // What the job service then does (app/http_jobs.cc): uploads become
  // inline documents, and the message text goes through the job parser.
  json message = job.message;
  for (const JobService::Upload& u : job.uploads) {
    message["documents"].push_back(
        {{"name", u.name}, {"content_base64", ingest::EncodeBase64(u.bytes)}});
  }
  ingest::JobMessageLimits limits;
  limits.pipelines = {"document-stats", "summarize-report", "compare-contracts"};
  limits.max_inline_bytes = 1 << 20;
  const ingest::ParsedJob parsed = ingest::ParseJobMessage(
      message.dump(-1, ' ', false, json::error_handler_t::replace), "", limits);
  if (!parsed.ok() && parsed.error.empty()) Broken("a job refused without a reason");
  res.status = parsed.ok() ? 202 : 400;
  res.set_content(parsed.error_code + ": " + parsed.error, "text/plain");
}

MultipartResult MultipartHarness::Send(std::string_view input) {
  const size_t eol = input.find('\n');
  std::string boundary(input.substr(0, std::min<size_t>(eol, 70)));
  const std::string_view body = eol == std::string_view::npos ? "" : input.substr(eol + 1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    violation_.clear();
  }
  // The boundary goes into a header: bytes a header cannot carry would be
  // refused before the multipart parser sees them.
  for (char& c : boundary) {
    if (c == '\r' || c == '\0') c = '-';
  }
  const std::string request =
      "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
      "Content-Type: multipart/form-data; boundary=" +
      boundary + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
      std::string(body);
  MultipartResult result;
  std::string why;
  result.reply = Exchange(port_, request, &why);
  result.status = StatusOf(result.reply);
  std::lock_guard<std::mutex> lock(mu_);
  result.violation = violation_;
  if (result.status == 0 && result.violation.empty()) {
    result.violation = "no answer (" + (why.empty() ? "not HTTP" : why) + ")";
  }
  return result;
}

}  // namespace ellm::testing
