// Issue 53, end to end, at both doors: a real `ellm serve` and a real
// ellmd (its http: section, its Kafka consumer on the test broker), each
// with the test model and two API keys, sent JSON nested 2,000,000 levels deep at each door that
// reads JSON — the job body, a multipart params field, a chat request's body, its response_format
// schema and its tools — answers 400 naming the limit and keeps serving: /health, a normal chat
// completion, a tool call whose arguments text is as deep (kept as text). Paths chosen to inject
// lines into /metrics, or to add series, do neither. 500 silent connections and 50 slow bodies (no
// API key needed to send them) keep neither /health nor a chat request out.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "http_get.h"
#include "metrics_text.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

using nlohmann::json;

constexpr const char* kKey = "sk-hostile-0123456789";
constexpr const char* kOtherKey = "sk-other-9876543210";
constexpr size_t kHostile = 2000000;

std::string Arrays(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

// The door under attack: `ellm serve`, or ellmd with its http: section
// (and, given the broker, its Kafka consumer) on the same settings.
enum class Door { kServe, kDaemon };

std::string DoorName(const ::testing::TestParamInfo<Door>& p) {
  return p.param == Door::kServe ? "EllmServe" : "Ellmd";
}

// ellmd's config for the attack: one session of 2048 tokens, the two keys,
// its jobs confined to `dir`, Kafka on the test broker when there is one.
std::string WriteDaemonConfig(const std::string& model, const std::string& dir,
                              const std::string& keys, const std::string& brokers) {
  const std::string topic = "attack-" + std::to_string(getpid()) + "-" +
                            std::to_string(std::chrono::system_clock::now().time_since_epoch() /
                                           std::chrono::milliseconds(1));
  json kafka = {{"enabled", false}};
  if (!brokers.empty()) {
    kafka = {{"enabled", true},
             {"brokers", brokers},
             {"group_id", topic},
             {"jobs_topic", topic},
             {"results_topic", topic + ".results"},
             {"dead_letter_topic", topic + ".dlq"},
             {"group_instance_id", topic},
             {"session_timeout_ms", 6000}};
  }
  const json config = {{"model", {{"path", model}, {"threads", 2}, {"context", 2048}}},
                       {"store", {{"path", dir + "/ellmd.db"}}},
                       {"kv", {{"prefix_cache_dir", ""}}},
                       {"kafka", kafka},
                       {"http",
                        {{"enabled", true},
                         {"listen", "127.0.0.1:0"},
                         {"api_keys_file", keys},
                         {"context", 2048},
                         {"sessions", 1}}},
                       {"jobs", {{"allowed_roots", {dir}}}},
                       {"log", {{"level", "info"}}},
                       {"metrics", {{"enabled", true}, {"listen", "127.0.0.1:0"}}}};
  const std::string path = dir + "/ellmd.yaml";
  std::ofstream(path) << config.dump(2);  // JSON is YAML
  return path;
}

// `ellm serve` or ellmd on a free port; stopped with SIGTERM.
class ServeProcess {
 public:
  bool Start(Door door, const std::string& model, const std::string& dir,
             const std::string& brokers) {
    const std::string keys = dir + "/keys";
    std::ofstream(keys) << kKey << "\n" << kOtherKey << "\n";
    std::filesystem::permissions(
        keys, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    const std::string config =
        door == Door::kDaemon ? WriteDaemonConfig(model, dir, keys, brokers) : "";
    int out[2];
    if (pipe(out) != 0) return false;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      const std::string db = dir + "/ellm.db";
      if (door == Door::kDaemon) {
        execl(ELLMD_PATH, ELLMD_PATH, "--config", config.c_str(), static_cast<char*>(nullptr));
      }
      execl(ELLM_CLI_PATH, ELLM_CLI_PATH, "serve", "--model", model.c_str(), "--listen",
            "127.0.0.1:0", "--api-keys-file", keys.c_str(), "--db", db.c_str(), "--ctx", "2048",
            "--threads", "2", "--sessions", "1", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    // Kept open and read until the process ends: ellmd logs to stdout, and
    // a full pipe would block it (a closed one would kill it with SIGPIPE).
    stdout_ = fdopen(out[0], "r");
    const std::regex address(door == Door::kDaemon ? "http API on http://127\\.0\\.0\\.1:(\\d+)"
                                                   : "listening on http://127\\.0\\.0\\.1:(\\d+)");
    char line[1024] = {0};
    while (fgets(line, sizeof(line), stdout_) != nullptr) {
      std::smatch m;
      const std::string text = line;
      if (std::regex_search(text, m, address)) {
        port_ = std::stoi(m[1]);
        break;
      }
    }
    drain_ = std::thread([f = stdout_] {
      char buf[4096];
      while (fread(buf, 1, sizeof(buf), f) > 0) {
      }
    });
    return port_ > 0;
  }
  // The exit status after SIGTERM (-1: killed by a signal, or hung).
  int Stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 300; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = 0;
    return -1;
  }
  // Whether the process is still there (not crashed).
  bool Alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  int port() const { return port_; }
  ~ServeProcess() {
    if (pid_ > 0) Stop();
    if (drain_.joinable()) drain_.join();
    if (stdout_ != nullptr) fclose(stdout_);
  }

 private:
  FILE* stdout_ = nullptr;
  std::thread drain_;
  pid_t pid_ = -1;
  int port_ = 0;
};

class HostileInputServe : public ::testing::TestWithParam<Door> {
 protected:
  void SetUp() override {
    ELLM_REQUIRE_MODEL(model);
    std::string brokers;
    if (GetParam() == Door::kDaemon) {
      ELLM_REQUIRE_KAFKA(kafka);
      brokers = kafka;
    }
    dir_ = MakeTempDir("ellm-hostile");
    ASSERT_TRUE(serve_.Start(GetParam(), model, dir_, brokers))
        << "the server did not print its address";
    client_ = std::make_unique<httplib::Client>("127.0.0.1", serve_.port());
    client_->set_bearer_token_auth(kKey);
    client_->set_read_timeout(120, 0);
    client_->set_write_timeout(120, 0);
    for (int i = 0; i < 600; ++i) {
      if (HttpRequest(serve_.port(), "GET", "/health").status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "the server never became ready";
  }
  void TearDown() override {
    if (serve_.port() > 0) {
      EXPECT_EQ(serve_.Stop(), 0) << "the server should exit 0 on SIGTERM";
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // POSTs `body` as JSON; the status and the parsed body (null if none).
  std::pair<int, json> Post(const std::string& path, const std::string& body) {
    auto r = client_->Post(path.c_str(), body, "application/json");
    if (!r) return {0, nullptr};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  void ExpectTooDeep(const std::pair<int, json>& r, const std::string& what) {
    SCOPED_TRACE(what);
    ASSERT_EQ(r.first, 400) << r.second.dump();
    const json& e = r.second["error"];
    EXPECT_EQ(e["type"], "invalid_request_error");
    EXPECT_EQ(e["code"], "json_too_deep");
    EXPECT_NE(e["message"].get<std::string>().find("JSON nested deeper than 64 levels at byte"),
              std::string::npos)
        << e.dump();
    EXPECT_TRUE(serve_.Alive());
  }
  std::string Metrics() {
    auto r = client_->Get("/metrics");
    return r && r->status == 200 ? r->body : "";
  }

  ServeProcess serve_;
  std::string dir_;
  std::unique_ptr<httplib::Client> client_;
};

const std::string kUser = R"({"role":"user","content":"Say hi."})";

TEST_P(HostileInputServe, DeepJsonIsA400AtEveryDoorAndTheServerKeepsServing) {
  // The body of issue 53 as it was reported: never closed.
  ExpectTooDeep(Post("/v1/jobs", "{\"x\":" + std::string(kHostile, '[')), "/v1/jobs body");
  ExpectTooDeep(Post("/v1/jobs", R"({"id":"deep","pipeline":"document-stats","params":{"x":)" +
                                     Arrays(kHostile) + "}}"),
                "/v1/jobs params");
  httplib::MultipartFormDataItems form = {{"pipeline", "document-stats", "", ""},
                                          {"params", "{\"x\":" + Arrays(kHostile) + "}", "", ""},
                                          {"doc", "hello", "doc.txt", "text/plain"}};
  auto multipart = client_->Post("/v1/jobs", form);
  ASSERT_TRUE(multipart);
  ExpectTooDeep({multipart->status, json::parse(multipart->body, nullptr, false)},
                "/v1/jobs multipart params");
  EXPECT_EQ(json::parse(multipart->body)["error"]["param"], "params");

  ExpectTooDeep(Post("/v1/chat/completions",
                     "{\"messages\":[" + kUser + "],\"x\":" + std::string(kHostile, '[')),
                "chat body");
  ExpectTooDeep(
      Post("/v1/chat/completions",
           "{\"messages\":[" + kUser +
               R"(],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":)"
               R"({"type":"object","properties":{"a":)" +
               Arrays(kHostile) + "}}}}}"),
      "response_format schema");
  ExpectTooDeep(Post("/v1/chat/completions",
                     "{\"messages\":[" + kUser +
                         R"(],"tools":[{"type":"function","function":{"name":"f","parameters":)"
                         R"({"type":"object","properties":{"a":)" +
                         Arrays(kHostile) + "}}}}]}"),
                "tool parameters");
  ExpectTooDeep(Post("/v1/completions", "{\"prompt\":\"a\",\"x\":" + Arrays(kHostile) + "}"),
                "completions body");

  EXPECT_EQ(HttpRequest(serve_.port(), "GET", "/health").status, 200);
  auto normal = Post("/v1/chat/completions",
                     "{\"messages\":[" + kUser + "],\"max_tokens\":4,\"temperature\":0}");
  ASSERT_EQ(normal.first, 200) << normal.second.dump();
  EXPECT_EQ(normal.second["object"], "chat.completion");

  // A tool call's arguments are text, which the body's bound cannot see
  // into: past the limit they reach the prompt as text (a few hundred
  // levels here, to keep the prompt within the context; the unit tests
  // send 2,000,000).
  const json follow_up = {{"messages",
                           {json::parse(kUser),
                            {{"role", "assistant"},
                             {"content", nullptr},
                             {"tool_calls",
                              {{{"id", "call_1"},
                                {"type", "function"},
                                {"function", {{"name", "f"}, {"arguments", Arrays(300)}}}}}}},
                            {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "ok"}}}},
                          {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}},
                          {"tool_choice", "none"},
                          {"max_tokens", 2}};
  auto deep_args = Post("/v1/chat/completions", follow_up.dump());
  EXPECT_EQ(deep_args.first, 200) << deep_args.second.dump();
  EXPECT_TRUE(serve_.Alive());
  EXPECT_EQ(HttpRequest(serve_.port(), "GET", "/health").status, 200);
}

TEST_P(HostileInputServe, MetricsTakeNoLinesOrSeriesFromPaths) {
  // Unauthenticated: the 401 counter once labelled its series with this.
  EXPECT_EQ(HttpRequest(serve_.port(), "GET", "/x%22%7D%201%0Aellm_injected%201%0A%23").status,
            401);
  std::string text = Metrics();
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find("ellm_injected"), std::string::npos) << text;
  const size_t before = RequestSeries(text).size();
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(HttpRequest(serve_.port(), "GET", "/unknown-" + std::to_string(i)).status, 401);
  }
  text = Metrics();
  EXPECT_EQ(RequestSeries(text).size(), before) << text;
  EXPECT_NE(text.find("ellm_http_requests_total{endpoint=\"unmatched\",status=\"401\"} 1001"),
            std::string::npos)
      << text;
}

// A connection to 127.0.0.1:port that has sent `bytes` and then nothing.
int SendAndHold(int port, const std::string& bytes) {
  const int fd = ConnectLoopback(port);
  if (fd >= 0) (void)!send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  return fd;
}

// Issue 53: forty connections that sent part of a request line and then
// nothing made /health time out for as long as they stayed.
TEST_P(HostileInputServe, FiveHundredSilentClientsKeepNobodyOut) {
  std::vector<int> held;
  for (int i = 0; i < 500; ++i) {
    const int fd = SendAndHold(serve_.port(), "POST /v1/chat/completions HTTP/1.1\r\nHo");
    ASSERT_GE(fd, 0) << i;
    held.push_back(fd);
  }
  // Bodies that never finish: a head announcing 1000 bytes, then 10.
  for (int i = 0; i < 50; ++i) {
    held.push_back(SendAndHold(
        serve_.port(),
        "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n{\"id\":\"sl"));
  }
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(HttpRequest(serve_.port(), "GET", "/health").status, 200);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  }
  auto normal = Post("/v1/chat/completions",
                     "{\"messages\":[" + kUser + "],\"max_tokens\":4,\"temperature\":0}");
  EXPECT_EQ(normal.first, 200) << normal.second.dump();
  EXPECT_TRUE(serve_.Alive());
  const std::string text = Metrics();
  std::smatch evicted;
  ASSERT_TRUE(std::regex_search(
      text, evicted, std::regex("ellm_http_connections_total\\{outcome=\"evicted\"\\} (\\d+)")))
      << text;
  EXPECT_GE(std::stoi(evicted[1]), 500 - 32) << "the oldest silent connections were dropped";
  for (int fd : held) {
    if (fd >= 0) close(fd);
  }
}

// Issue 53: `n` up to 16 let one client hold every session. With two keys
// and one session, a key may hold one choice: n=2 is refused, and while one
// of its requests runs its next is a 429, but the other key's is served.
TEST_P(HostileInputServe, OneKeyCannotHoldEverySession) {
  auto many =
      Post("/v1/chat/completions", "{\"messages\":[" + kUser + "],\"max_tokens\":2,\"n\":2}");
  EXPECT_EQ(many.first, 400) << many.second.dump();
  EXPECT_EQ(many.second["error"]["param"], "n");
  // A counting stream of up to 1500 tokens holds the key's one session
  // from its first event until this client goes away.
  const std::string count = json({{"prompt", "1, 2, 3, 4, 5, 6, 7, 8,"},
                                  {"max_tokens", 1500},
                                  {"temperature", 0},
                                  {"stream", true}})
                                .dump();
  const int stream = SendAndHold(serve_.port(),
                                 "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1"
                                 "\r\nAuthorization: Bearer " +
                                     std::string(kKey) +
                                     "\r\nContent-Type: application/json\r\n"
                                     "Content-Length: " +
                                     std::to_string(count.size()) + "\r\n\r\n" + count);
  ASSERT_GE(stream, 0);
  std::string got;
  char buf[4096];
  while (got.find("data: ") == std::string::npos) {
    const ssize_t n = recv(stream, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ASSERT_NE(got.find("data: "), std::string::npos) << got;
  const json small = {{"prompt", "Hi"}, {"max_tokens", 1}};
  auto second = Post("/v1/completions", small.dump());
  EXPECT_EQ(second.first, 429) << second.second.dump();
  EXPECT_NE(second.second["error"]["message"].get<std::string>().find("this API key has 1"),
            std::string::npos)
      << second.second.dump();
  httplib::Client other("127.0.0.1", serve_.port());
  other.set_bearer_token_auth(kOtherKey);
  other.set_read_timeout(120, 0);
  // Admitted (it waits for the session, no 429) while the stream holds it.
  auto served = std::async(std::launch::async, [&] {
    return other.Post("/v1/completions", small.dump(), "application/json");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  close(stream);  // its generation stops; the other key's request runs
  const auto result = served.get();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200) << result->body;
}

// A complete request to the API with the test key: `path`, JSON `body`.
std::string Authorized(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + kKey +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

std::string Chat(const json& extra) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Say hi."}}}}, {"max_tokens", 2}};
  body.update(extra);
  return Authorized("/v1/chat/completions", body.dump());
}

std::string Schema(const json& schema) {
  return Chat({{"response_format",
                {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", schema}}}}}});
}

std::string InlineJob(const json& extra) {
  json body = {{"pipeline", "document-stats"},
               {"documents", {{{"name", "a.txt"}, {"content_base64", "aGVsbG8="}}}}};
  body.update(extra);
  return Authorized("/v1/jobs", body.dump());
}

// Issue 53's "20 more of your own": requests an attacker would try at the
// protocol, the JSON and the job doors, each answered with its own status
// at once; after each the server is alive and /health answers within 1 s,
// and after all of them a normal chat request gets its answer.
TEST_P(HostileInputServe, EachHostileRequestGetsItsAnswerAndTheServiceStaysWhole) {
  json many_msgs = json::array();
  for (int i = 0; i < 100000; ++i) many_msgs.push_back({{"role", "user"}, {"content", ""}});
  json bias = json::object();
  for (int i = 0; i < 100000; ++i) bias[std::to_string(i)] = 1;
  json tools = json::array();
  for (int i = 0; i < 10000; ++i) {
    tools.push_back({{"type", "function"}, {"function", {{"name", "f" + std::to_string(i)}}}});
  }
  json big_enum = json::array();
  for (int i = 0; i < 200000; ++i) big_enum.push_back(std::to_string(i));
  std::string fields;
  for (int i = 0; i < 200; ++i) fields += "X-" + std::to_string(i) + ": y\r\n";
  const std::string tls_hello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  const struct {
    std::string what, request;
    int status;
  } cases[] = {
      {"a 20 KB request target", "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n", 431},
      {"200 header fields", "GET /health HTTP/1.1\r\nHost: a\r\n" + fields + "\r\n", 431},
      {"a 20 KB bearer token",
       "GET /v1/models HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " + std::string(20000, 'k') +
           "\r\n\r\n",
       431},
      {"Content-Length -1", "POST /v1/jobs HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400},
      {"Content-Length past 64 bits",
       "POST /v1/jobs HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400},
      {"Content-Length with Transfer-Encoding (smuggling)",
       "POST /v1/jobs HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: "
       "chunked\r\n\r\n0\r\n\r\n",
       411},
      {"HTTP/2.0 on an HTTP/1 port", "GET /health HTTP/2.0\r\nHost: a\r\n\r\n", 505},
      {"HTTP/1.1 without Host", "GET /health HTTP/1.1\r\n\r\n", 400},
      {"two Host headers", "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
      {"a 9000-byte method", std::string(9000, 'G') + " /health HTTP/1.1\r\nHost: a\r\n\r\n", 501},
      {"an unknown method", "BREW /health HTTP/1.1\r\nHost: a\r\n\r\n", 501},
      {"a space in the target", "GET /he alth HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"a TLS handshake on the plain port", tls_hello + std::string(500, '\0'), 400},
      {"binary noise", std::string(2048, '\x01'), 400},
      {"an encoded path traversal",
       "GET /v1/jobs/..%2F..%2Fetc%2Fpasswd HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " +
           std::string(kKey) + "\r\n\r\n",
       404},
      {"invalid UTF-8 in a message",
       Authorized("/v1/chat/completions",
                  "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}"),
       400},
      {"a lone surrogate escape",
       Authorized("/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"\ud800"}],"max_tokens":2})"),
       400},
      {"a number of 5000 digits",
       Authorized("/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1)" +
                      std::string(5000, '0') + "}"),
       400},
      {"temperature 1e309",
       Authorized("/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"hi"}],"temperature":1e309})"),
       400},
      {"max_tokens -1", Chat({{"max_tokens", -1}}), 400},
      {"max_tokens 1e30", Chat({{"max_tokens", 1e30}}), 400},
      {"n 0", Chat({{"n", 0}}), 400},
      {"top_k 2^62", Chat({{"top_k", int64_t{1} << 62}}), 400},
      {"10,000 stop strings", Chat({{"stop", std::vector<std::string>(10000, "x")}}), 400},
      {"100,000 messages", Chat({{"messages", many_msgs}}), 400},
      {"100,000 logit_bias entries", Chat({{"logit_bias", bias}}), 400},
      {"10,000 tools", Chat({{"tools", tools}}), 400},
      {"a role of 1000 characters",
       Chat({{"messages", {{{"role", std::string(1000, 'r')}, {"content", "hi"}}}}}), 400},
      {"a schema that refers to itself", Schema({{"$ref", "#"}}), 400},
      {"a schema pattern that backtracks", Schema({{"type", "string"}, {"pattern", "^(a+)+$"}}),
       400},
      {"a schema enum of 200,000 values", Schema({{"enum", big_enum}}), 400},
      {"a job id of 10,000 characters", InlineJob({{"id", std::string(10000, 'a')}}), 400},
      {"a job id with a path in it", InlineJob({{"id", "../../x"}}), 400},
      {"a document name with a path",
       InlineJob({{"documents", {{{"name", "../../x"}, {"content_base64", "aGk="}}}}}), 400},
      {"10,000 documents",
       InlineJob({{"documents",
                   std::vector<json>(10000, {{"name", "a.txt"}, {"content_base64", "aGk="}})}}),
       400},
      {"a document path outside the allowed roots",
       InlineJob({{"documents", {{{"path", "/etc/shadow"}}}}}), 400},
      {"reply_to naming Kafka's offsets topic", InlineJob({{"reply_to", "__consumer_offsets"}}),
       400},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const HttpResponse r = HttpSendRaw(serve_.port(), c.request);
    EXPECT_EQ(r.status, c.status) << r.body.substr(0, 300);
    if (r.status >= 400) {
      const json body = json::parse(r.body, nullptr, false);
      EXPECT_TRUE(body.contains("error")) << r.body.substr(0, 300);
    }
    ASSERT_TRUE(serve_.Alive());
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(HttpRequest(serve_.port(), "GET", "/health").status, 200);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  }
  // Two requests in one packet: the first is answered and the connection
  // ends; the second never reaches the server.
  const HttpResponse piped = HttpSendRaw(
      serve_.port(),
      "GET /health HTTP/1.1\r\nHost: a\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(piped.status, 200);
  EXPECT_EQ(piped.body.find("HTTP/1.1"), std::string::npos) << piped.body;
  // A thousand wrong keys lock nobody out.
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(HttpSendRaw(serve_.port(),
                          "GET /v1/models HTTP/1.1\r\nHost: a\r\nAuthorization: "
                          "Bearer sk-wrong-" +
                              std::to_string(i) + "\r\n\r\n")
                  .status,
              401);
  }
  auto normal = Post("/v1/chat/completions",
                     "{\"messages\":[" + kUser + "],\"max_tokens\":4,\"temperature\":0}");
  ASSERT_EQ(normal.first, 200) << normal.second.dump();
  EXPECT_FALSE(normal.second["choices"][0]["message"]["content"].get<std::string>().empty());
}

INSTANTIATE_TEST_SUITE_P(Doors, HostileInputServe, ::testing::Values(Door::kServe, Door::kDaemon),
                         DoorName);

}  // namespace
}  // namespace ellm::testing
