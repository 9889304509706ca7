// Issue 53: the HTTP front gate (server/front_gate.h) in front of a real
// cpp-httplib server, over real sockets: whole requests pass, silent and
// slow clients cannot keep a quick one out, oversize heads and bodies are
// refused before they are read, a reply nobody reads ends, and the inner
// server of a real ApiServer refuses connections that went around the gate.
#include "ellm/server/front_gate.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ellm/server/api_server.h"
#include "http_get.h"

namespace ellm::server {
namespace {

using Clock = std::chrono::steady_clock;

int Connect(int port, int rcvbuf = 0) { return testing::ConnectLoopback(port, rcvbuf); }

void SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

// Everything until the peer closes (or 10 s pass).
std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

int StatusOf(const std::string& reply) {
  return reply.rfind("HTTP/1.", 0) == 0 && reply.size() > 12 ? std::stoi(reply.substr(9, 3)) : 0;
}

class FrontGateTest : public ::testing::Test {
 protected:
  void Start(FrontGateOptions o) {
    inner_.new_task_queue = [] { return new httplib::ThreadPool(16); };
    inner_.Get("/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", "text/plain");
    });
    inner_.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(8 << 20, 'x'), "text/plain");
    });
    inner_.Get("/sleep", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      res.set_content("slept", "text/plain");
    });
    inner_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(std::to_string(req.body.size()), "text/plain");
    });
    inner_.Get("/peer", [this](const httplib::Request& req, httplib::Response& res) {
      res.set_content(gate_->IsGatePort(req.remote_port) ? "gate" : "direct", "text/plain");
    });
    inner_port_ = inner_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(inner_port_, 0);
    inner_thread_ = std::thread([this] { inner_.listen_after_bind(); });
    // httplib's stop() is lost on a server not yet running: TearDown would
    // then wait for ever on a test that ended quickly.
    for (int i = 0; i < 5000 && !inner_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(inner_.is_running());
    o.inner_port = inner_port_;
    StatusOr<std::unique_ptr<FrontGate>> gate = FrontGate::Bind(o);
    ASSERT_TRUE(gate.ok()) << gate.status().message();
    gate_ = std::move(*gate);
    gate_thread_ = std::thread([this] { gate_->Run(); });
  }
  void TearDown() override {
    if (gate_) gate_->Stop();
    if (gate_thread_.joinable()) gate_thread_.join();
    inner_.stop();
    if (inner_thread_.joinable()) inner_thread_.join();
  }
  // One request through the gate; the whole reply.
  std::string Request(const std::string& raw) {
    const int fd = Connect(gate_->port());
    SendAll(fd, raw);
    std::string reply = ReadAll(fd);
    close(fd);
    return reply;
  }

  httplib::Server inner_;
  int inner_port_ = 0;
  std::thread inner_thread_;
  std::unique_ptr<FrontGate> gate_;
  std::thread gate_thread_;
};

TEST_F(FrontGateTest, WholeRequestsPassAndRepliesEndTheirConnection) {
  Start({});
  const std::string health = Request("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(StatusOf(health), 200) << health;
  EXPECT_NE(health.find("Connection: close"), std::string::npos) << health;
  EXPECT_TRUE(health.ends_with("ok"));

  const std::string body(100000, 'b');
  const std::string echo =
      Request("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + body);
  EXPECT_TRUE(echo.ends_with("\r\n\r\n100000")) << echo.substr(0, 200);

  const std::string big = Request("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(StatusOf(big), 200);
  EXPECT_GT(big.size(), size_t{8} << 20);

  // Expect: 100-continue is answered by the gate, which then reads the body.
  const int fd = Connect(gate_->port());
  SendAll(fd,
          "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  char buf[64] = {0};
  const ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(std::max<ssize_t>(n, 0))),
            "HTTP/1.1 100 Continue\r\n\r\n");
  SendAll(fd, "hello");
  EXPECT_TRUE(ReadAll(fd).ends_with("\r\n\r\n5"));
  close(fd);

  // The inner server can tell the gate's connections from others.
  EXPECT_TRUE(Request("GET /peer HTTP/1.1\r\nHost: x\r\n\r\n").ends_with("gate"));
  const int direct = Connect(inner_port_);
  SendAll(direct, "GET /peer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(ReadAll(direct).ends_with("direct"));
  close(direct);
  EXPECT_EQ(gate_->stats().forwarded, 5u);
}

// The case: silent connections (a partial request line, then
// nothing) took every server thread, and /health timed out while they
// stayed. 500 of them from the same address as the quick client.
TEST_F(FrontGateTest, FiveHundredSilentConnectionsDoNotKeepAQuickRequestOut) {
  Start({});
  std::vector<int> silent;
  for (int i = 0; i < 500; ++i) {
    const int fd = Connect(gate_->port());
    ASSERT_GE(fd, 0) << i;
    SendAll(fd, "GET /health HTTP/1.1\r\nHost: x\r\nHo");
    silent.push_back(fd);
  }
  for (int i = 0; i < 20; ++i) {
    const Clock::time_point t0 = Clock::now();
    const std::string health = Request("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    EXPECT_EQ(StatusOf(health), 200) << health;
    EXPECT_LT(s, 1.0) << "request " << i;
  }
  const FrontGate::Stats st = gate_->stats();
  EXPECT_GE(st.evicted, 500u - 32u);
  EXPECT_EQ(st.forwarded, 20u);
  for (int fd : silent) close(fd);
}

TEST_F(FrontGateTest, RequestsThatDoNotArriveInTimeGet408) {
  FrontGateOptions o;
  o.header_timeout_s = 1;
  Start(o);
  const Clock::time_point t0 = Clock::now();
  const std::string head = Request("GET /health HTTP/1.1\r\nHost: x\r\n");
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(StatusOf(head), 408) << head;
  EXPECT_NE(head.find("request_timeout"), std::string::npos);
  EXPECT_GT(s, 0.9);
  EXPECT_LT(s, 3.0);
  // A body of 100,000 bytes may take 1 s + 100000 / 64 KiB/s = 2.5 s.
  const std::string body =
      Request("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc");
  EXPECT_EQ(StatusOf(body), 408) << body;
  EXPECT_EQ(gate_->stats().header_timeout, 2u);
  EXPECT_EQ(gate_->stats().forwarded, 0u);
}

TEST_F(FrontGateTest, OversizeOrChunkedRequestsAreRefusedBeforeTheirBody) {
  FrontGateOptions o;
  o.head.max_body_bytes = 1 << 20;
  Start(o);
  const std::string big_head =
      Request("GET / HTTP/1.1\r\nHost: x\r\nX: " + std::string(20000, 'a') + "\r\n");
  EXPECT_EQ(StatusOf(big_head), 431) << big_head.substr(0, 200);
  // Neither body is sent: the answer comes from the head alone.
  const std::string chunked =
      Request("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(StatusOf(chunked), 411) << chunked;
  const std::string too_long =
      Request("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n");
  EXPECT_EQ(StatusOf(too_long), 413) << too_long;
  EXPECT_NE(too_long.find("request_too_large"), std::string::npos);
  EXPECT_EQ(gate_->stats().refused_head, 3u);
}

// A client that asks for 8 MB and reads none of it: its reply ends after
// the stall timeout (the inner server's write then fails and frees it).
TEST_F(FrontGateTest, AReplyNobodyReadsEnds) {
  FrontGateOptions o;
  o.stall_timeout_s = 1;
  Start(o);
  const int fd = Connect(gate_->port(), 4096);
  SendAll(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  const Clock::time_point t0 = Clock::now();
  while (gate_->stats().stalled == 0 && Clock::now() - t0 < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(gate_->stats().stalled, 1u);
  EXPECT_LT(ReadAll(fd).size(), size_t{8} << 20);  // cut short
  close(fd);
  EXPECT_EQ(StatusOf(Request("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")), 200);
}

// When every connection is busy with a reply, a new one gets 503 at once.
TEST_F(FrontGateTest, BusyEverywhereIs503WithRetryAfter) {
  FrontGateOptions o;
  o.max_connections = 8;
  Start(o);
  std::vector<int> busy;
  for (int i = 0; i < 8; ++i) {
    busy.push_back(Connect(gate_->port()));
    SendAll(busy.back(), "GET /sleep HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string refused = Request("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(StatusOf(refused), 503) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos);
  for (int fd : busy) {
    EXPECT_TRUE(ReadAll(fd).ends_with("slept"));
    close(fd);
  }
  EXPECT_EQ(StatusOf(Request("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")), 200);
}

// The TCP ports this process listens on at 127.0.0.1 (/proc/net/tcp rows
// in state LISTEN whose socket is one of our descriptors).
std::set<int> OwnLoopbackListeners() {
  std::set<std::string> inodes;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::set<int> ports;
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
    row >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
    if (state == "0A" && local.rfind("0100007F:", 0) == 0 && inodes.count(inode) != 0) {
      ports.insert(std::stoi(local.substr(9), nullptr, 16));
    }
  }
  return ports;
}

// A self-signed certificate for 127.0.0.1 in `dir` (openssl from Debian).
bool MakeCertificate(const std::string& dir) {
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
      "-keyout '" +
      dir + "/key.pem' -out '" + dir + "/cert.pem' 2>/dev/null";
  return std::system(cmd.c_str()) == 0;
}

// curl over TLS (certificate checked against `ca`); "<status> <body>".
std::string CurlTls(int port, const std::string& ca, const std::string& path) {
  const std::string cmd = "curl -s --max-time 5 --cacert '" + ca +
                          "' -w ' %{http_code}' https://127.0.0.1:" + std::to_string(port) + path;
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// Issue 53: TLS ends at the gate, so silent clients and clients stuck in
// their handshake are half-read connections under the same caps and
// deadline as plain ones; plain HTTP on the TLS port is dropped.
TEST_F(FrontGateTest, TlsClientsStuckInTheirHandshakeDoNotKeepAQuickOneOut) {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/ellm-gate-tls-" +
                          std::to_string(getpid());
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(MakeCertificate(dir));
  FrontGateOptions o;
  o.header_timeout_s = 2;
  o.tls_cert_file = dir + "/cert.pem";
  o.tls_key_file = dir + "/key.pem";
  Start(o);
  EXPECT_EQ(CurlTls(gate_->port(), o.tls_cert_file, "/health"), "ok 200");
  // 100 that connect and say nothing, 100 with half a ClientHello.
  std::vector<int> stuck;
  const std::string half_hello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  for (int i = 0; i < 200; ++i) {
    const int fd = Connect(gate_->port());
    ASSERT_GE(fd, 0) << i;
    if (i % 2 == 1) SendAll(fd, half_hello);
    stuck.push_back(fd);
  }
  for (int i = 0; i < 5; ++i) {
    const Clock::time_point t0 = Clock::now();
    EXPECT_EQ(CurlTls(gate_->port(), o.tls_cert_file, "/health"), "ok 200") << i;
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 2.0) << i;
  }
  // Plain HTTP to the TLS port: no handshake, no reply, the connection ends.
  const std::string plain = Request("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(plain.find("200 OK"), std::string::npos) << plain;
  const FrontGate::Stats st = gate_->stats();
  EXPECT_GE(st.evicted, 200u - 32u);
  EXPECT_EQ(st.forwarded, 6u);
  for (int fd : stuck) close(fd);
  // One that never finishes its handshake is closed at the header deadline
  // (no HTTP reply it could not read), and the gate is idle again.
  const int late = Connect(gate_->port());
  SendAll(late, half_hello);
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(ReadAll(late), "");
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 4.0);
  close(late);
  // The gate sees the other 200 hang up on its own loop; give it a moment.
  for (int i = 0; i < 200 && gate_->stats().open != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(gate_->stats().open, 0);
  // A certificate that is not one is refused at Bind, naming the file.
  FrontGateOptions bad;
  bad.tls_cert_file = dir + "/key.pem";
  bad.tls_key_file = dir + "/key.pem";
  auto refused = FrontGate::Bind(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("key.pem"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ApiServerGate, TheInnerServerRefusesConnectionsThatWentAroundTheGate) {
  ApiServerOptions o;
  o.port = 0;
  o.sessions = 1;
  o.max_queue = 0;
  ApiServer server(o);
  const std::set<int> before = OwnLoopbackListeners();
  ASSERT_TRUE(server.Bind().ok());
  std::set<int> ports;
  for (int port : OwnLoopbackListeners()) {
    if (before.count(port) == 0 && port != server.port()) ports.insert(port);
  }
  ASSERT_EQ(ports.size(), 1u) << "one inner port besides the public one";
  std::thread run([&] { server.Run(); });
  for (int i = 0; i < 100 && testing::HttpRequest(server.port(), "GET", "/health").status == 0;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const testing::HttpResponse through = testing::HttpRequest(server.port(), "GET", "/health");
  EXPECT_EQ(through.status, 503) << through.body;  // no model: "loading"
  const testing::HttpResponse around = testing::HttpRequest(*ports.begin(), "GET", "/health");
  EXPECT_EQ(around.status, 403) << around.body;
  EXPECT_NE(around.body.find("not_through_gate"), std::string::npos) << around.body;
  const testing::HttpResponse metrics = testing::HttpRequest(server.port(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find("ellm_http_connections_total{outcome=\"forwarded\"}"),
            std::string::npos)
      << metrics.body;
  server.Stop();
  run.join();
}

}  // namespace
}  // namespace ellm::server
