// The front gate's event loop (front_gate.h): one epoll thread, every
// socket non-blocking, level-triggered.
#include "ellm/server/front_gate.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "gate_tls.h"

namespace ellm::server {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReplyBuffer = 256 << 10;            // reply bytes held for a slow reader
constexpr auto kLingerFor = std::chrono::seconds(2);  // reading the client's last bytes
constexpr uint64_t kWakeId = ~uint64_t{0};
constexpr uint64_t kListenId = ~uint64_t{0} - 1;

// kHead, kBody: reading the request (the "unread" connections the caps
// count). kRelay: the inner server has it; its reply is relayed. kLinger:
// our last bytes are sent, the client's are read and dropped until it
// closes or kLingerFor passes (closing with unread input would reset the
// connection and could destroy the reply before the client reads it).
enum class Phase { kHead, kBody, kRelay, kLinger };

struct Conn {
  int outer = -1;
  ssl_st* ssl = nullptr;  // with TLS: the client's session
  bool handshaken = false;
  bool tls_wants_write = false;  // the last TLS read or write waits for EPOLLOUT
  int inner = -1;
  int inner_port = 0;
  Phase phase = Phase::kHead;
  std::string addr;
  std::string in;  // the request: forwarded head, then body
  size_t head_size = 0;
  uint64_t body_size = 0;
  uint64_t reserved = 0;  // body bytes counted against max_buffered_bytes
  size_t in_sent = 0;
  std::string out;  // bytes for the client
  size_t out_sent = 0;
  bool inner_done = false;
  Clock::time_point since;
  Clock::time_point deadline;  // of the request (kHead, kBody) or of kLinger
  Clock::time_point progress;  // last byte the client took
};

Clock::duration Span(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::string PeerAddress(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof(buf));
  } else if (a.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

// The process's open-file limit raised to its hard maximum; the soft one.
rlim_t RaiseFileLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {
    rlimit raised = r;
    raised.rlim_cur = std::min<rlim_t>(r.rlim_max, 1 << 20);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  return r.rlim_cur;
}

StatusOr<int> Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string where =
      host + ":" + (port == 0 ? std::string("any port") : std::to_string(port));
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    return UnavailableError("cannot listen on " + where + " (not an address of this host)");
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return UnavailableError("cannot listen on " + where +
                            " (in use, or not an address of this host)");
  }
  return fd;
}

int LocalPort(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6&>(a).sin6_port);
  return 0;
}

}  // namespace

struct FrontGate::Loop {
  FrontGate& gate;
  const FrontGateOptions& o;
  int ep = -1;
  std::unordered_map<uint64_t, Conn> conns;
  uint64_t next_id = 1;
  uint64_t buffered = 0;
  mutable std::mutex stats_mu;
  Stats stats;

  Loop(FrontGate& g) : gate(g), o(g.options_) {}

  void Count(uint64_t Stats::*field) {
    std::lock_guard<std::mutex> lock(stats_mu);
    ++(stats.*field);
    stats.open = static_cast<int64_t>(conns.size());
  }

  void Watch(uint64_t id, const Conn& c, bool inner, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id * 2 + (inner ? 1 : 0);
    epoll_ctl(ep, op, inner ? c.inner : c.outer, &ev);
  }

  static bool Unread(const Conn& c) { return c.phase == Phase::kHead || c.phase == Phase::kBody; }

  // recv() and send() on the client's socket, through TLS when it has it.
  static ssize_t RecvOuter(Conn& c, char* buf, size_t len) {
    if (c.ssl == nullptr) return recv(c.outer, buf, len, 0);
    return TlsRecv(c.ssl, buf, len, &c.tls_wants_write);
  }
  static ssize_t SendOuter(Conn& c, const char* buf, size_t len) {
    if (c.ssl == nullptr) return send(c.outer, buf, len, MSG_NOSIGNAL);
    return TlsSend(c.ssl, buf, len, &c.tls_wants_write);
  }

  // With TLS, the handshake first (while the request is unread); true when
  // done, else the connection waits for its socket (or is gone).
  bool Handshake(uint64_t id, Conn& c) {
    if (c.ssl == nullptr || c.handshaken) return true;
    switch (TlsHandshake(c.ssl)) {
      case TlsStep::kDone:
        c.handshaken = true;
        Watch(id, c, false, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
        return true;
      case TlsStep::kWantRead:
        Watch(id, c, false, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
        return false;
      case TlsStep::kWantWrite:
        Watch(id, c, false, EPOLLIN | EPOLLOUT | EPOLLRDHUP, EPOLL_CTL_MOD);
        return false;
      case TlsStep::kFailed:
        break;
    }
    Count(&Stats::refused_head);  // not TLS, or a handshake we cannot agree on
    Close(id);
    return false;
  }

  void Close(uint64_t id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    Conn& c = it->second;
    DropInner(c);
    TlsClose(c.ssl);
    const int outer = c.outer;
    buffered -= c.reserved;
    conns.erase(it);
    {
      std::lock_guard<std::mutex> lock(stats_mu);
      stats.open = static_cast<int64_t>(conns.size());
    }
    // Closed last, so a client that sees its connection end sees it counted.
    if (outer >= 0) close(outer);
  }

  // Sends what is left of c.out; false if the client is gone.
  bool Flush(Conn& c) {
    while (c.out_sent < c.out.size()) {
      const ssize_t n = SendOuter(c, c.out.data() + c.out_sent, c.out.size() - c.out_sent);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) return false;
      c.out_sent += static_cast<size_t>(n);
      c.progress = Clock::now();
    }
    if (c.out_sent == c.out.size()) {
      c.out.clear();
      c.out_sent = 0;
    } else if (c.out_sent > kReplyBuffer / 2) {
      c.out.erase(0, c.out_sent);
      c.out_sent = 0;
    }
    return true;
  }

  // Our last bytes are queued: send them, then linger (Phase::kLinger).
  void Finish(uint64_t id, Conn& c) {
    if (c.phase != Phase::kLinger) {
      c.phase = Phase::kLinger;
      c.deadline = Clock::now() + kLingerFor;
      buffered -= c.reserved;
      c.reserved = 0;
      std::string().swap(c.in);
    }
    if (!Flush(c)) return Close(id);
    if (c.out.empty()) {
      TlsShutdown(c.ssl);
      shutdown(c.outer, SHUT_WR);
      Watch(id, c, false, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
    } else {
      Watch(id, c, false, EPOLLIN | EPOLLOUT | EPOLLRDHUP, EPOLL_CTL_MOD);
    }
  }

  void DropInner(Conn& c) {
    if (c.inner < 0) return;
    gate.MarkPort(c.inner_port, false);
    close(c.inner);  // also leaves the epoll set
    c.inner = -1;
  }

  void Refuse(uint64_t id, Conn& c, const HeadRefusal& r) {
    // A client still in its TLS handshake cannot read an HTTP reply (and
    // writing one would only wait on that handshake): it is just closed.
    if (c.ssl != nullptr && !c.handshaken) return Close(id);
    DropInner(c);
    c.out = RefusalResponse(r);
    c.out_sent = 0;
    Finish(id, c);
  }

  void Evict(uint64_t id, uint64_t Stats::*reason) {
    Close(id);
    Count(reason);
  }

  // The oldest unread connection (of `addr`, or of any when empty); 0: none.
  uint64_t OldestUnread(const std::string& addr, int* count) const {
    uint64_t oldest = 0;
    Clock::time_point when = Clock::time_point::max();
    *count = 0;
    for (const auto& [id, c] : conns) {
      if (!Unread(c) || (!addr.empty() && c.addr != addr)) continue;
      ++*count;
      if (c.since < when) {
        when = c.since;
        oldest = id;
      }
    }
    return oldest;
  }

  // Room for one more connection from `addr`; false: every connection is
  // relaying a reply (the new one gets 503).
  bool MakeRoom(const std::string& addr) {
    int mine = 0;
    const uint64_t my_oldest = OldestUnread(addr, &mine);
    if (mine >= o.max_unread_per_client && my_oldest != 0) Evict(my_oldest, &Stats::evicted);
    if (static_cast<int>(conns.size()) < o.max_connections) return true;
    int any = 0;
    const uint64_t oldest = OldestUnread("", &any);
    if (oldest == 0) return false;
    Evict(oldest, &Stats::evicted);
    return true;
  }

  void Accept() {
    for (;;) {
      sockaddr_storage peer{};
      socklen_t len = sizeof(peer);
      const int fd = accept4(gate.listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // EAGAIN, or out of descriptors until some close
      }
      Count(&Stats::accepted);
      const std::string addr = PeerAddress(peer);
      ssl_st* ssl = nullptr;
      if (!MakeRoom(addr) || (gate.tls_ && (ssl = gate.tls_->NewSession(fd)) == nullptr)) {
        if (!gate.tls_) {  // a TLS client could not read a plain reply
          const std::string busy = RefusalResponse(
              {503, "server_busy", "every connection is busy with a reply; try again shortly"});
          (void)!send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        close(fd);
        Count(&Stats::over_capacity);
        continue;
      }
      const uint64_t id = next_id++;
      Conn& c = conns[id];
      c.outer = fd;
      c.ssl = ssl;
      c.addr = addr;
      c.since = c.progress = Clock::now();
      c.deadline = c.since + Span(o.header_timeout_s);
      Watch(id, c, false, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
    }
  }

  // The head is whole: checked, rewritten, its body's deadline set. False:
  // refused (the connection may be gone).
  bool StartBody(uint64_t id, Conn& c, size_t head_size) {
    const HeadResult r = ParseRequestHead(std::string_view(c.in).substr(0, head_size), o.head);
    if (!r.ok) {
      Count(&Stats::refused_head);
      Refuse(id, c, r.refusal);
      return false;
    }
    if (buffered + r.head.content_length > o.max_buffered_bytes) {
      Count(&Stats::over_capacity);
      Refuse(id, c, {503, "server_busy", "too many request bodies in transit; try again"});
      return false;
    }
    c.reserved = r.head.content_length;
    buffered += c.reserved;
    c.body_size = r.head.content_length;
    c.in = r.head.forwarded + c.in.substr(head_size);
    c.head_size = r.head.forwarded.size();
    c.phase = Phase::kBody;
    c.deadline =
        Clock::now() + Span(o.header_timeout_s) +
        Span(static_cast<double>(c.body_size) / static_cast<double>(o.body_min_bytes_per_s));
    if (r.head.expect_continue && c.in.size() - c.head_size < c.body_size) {
      static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)!SendOuter(c, kContinue, sizeof(kContinue) - 1);  // best effort
    }
    return true;
  }

  void ReadRequest(uint64_t id, Conn& c) {
    if (!Handshake(id, c)) return;
    char buf[16384];
    for (;;) {
      size_t want = sizeof(buf);
      if (c.phase == Phase::kHead) {
        want = std::min(want, o.head.max_bytes + 4 - std::min(c.in.size(), o.head.max_bytes + 4));
      } else {
        want = std::min<uint64_t>(want, c.head_size + c.body_size - c.in.size());
      }
      if (want == 0) break;
      const ssize_t n = RecvOuter(c, buf, want);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (c.ssl != nullptr) {
          Watch(id, c, false, EPOLLIN | EPOLLRDHUP | (c.tls_wants_write ? EPOLLOUT : 0u),
                EPOLL_CTL_MOD);
        }
        break;
      }
      if (n <= 0) return Close(id);  // gone before its request was whole
      c.in.append(buf, static_cast<size_t>(n));
      if (c.phase == Phase::kHead) {
        const size_t head = HeadSize(c.in, o.head.max_bytes);
        if (head > 0) {
          if (!StartBody(id, c, head)) return;
        } else if (!CouldBeRequest(c.in)) {
          Count(&Stats::refused_head);
          return Refuse(id, c, {400, "bad_request", "not an HTTP request"});
        } else if (c.in.size() > o.head.max_bytes + 3) {
          Count(&Stats::refused_head);
          return Refuse(id, c,
                        {431, "headers_too_large",
                         "the request line and headers are over " +
                             std::to_string(o.head.max_bytes) + " bytes"});
        }
      }
    }
    if (c.phase == Phase::kBody && c.in.size() >= c.head_size + c.body_size) Forward(id, c);
  }

  // The request is whole: on to the inner server.
  void Forward(uint64_t id, Conn& c) {
    c.inner = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(o.inner_port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (c.inner < 0 || (connect(c.inner, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0 &&
                        errno != EINPROGRESS)) {
      return Refuse(id, c, {503, "server_busy", "the API server is not accepting requests"});
    }
    c.inner_port = LocalPort(c.inner);
    gate.MarkPort(c.inner_port, true);
    c.phase = Phase::kRelay;
    c.progress = Clock::now();
    Count(&Stats::forwarded);
    Watch(id, c, true, EPOLLOUT | EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
    // From here only the client's going away matters (EPOLLRDHUP).
    Watch(id, c, false, EPOLLRDHUP, EPOLL_CTL_MOD);
  }

  void SendToInner(uint64_t id, Conn& c) {
    while (c.in_sent < c.in.size()) {
      const ssize_t n =
          send(c.inner, c.in.data() + c.in_sent, c.in.size() - c.in_sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        return Refuse(id, c, {503, "server_busy", "the API server closed the connection"});
      }
      c.in_sent += static_cast<size_t>(n);
    }
    std::string().swap(c.in);
    buffered -= c.reserved;
    c.reserved = 0;
    Watch(id, c, true, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
  }

  // Moves the reply into c.out (up to kReplyBuffer) and on to the client.
  void Relay(uint64_t id, Conn& c) {
    char buf[65536];
    // The stall clock starts when there is something to send.
    if (c.out.size() == c.out_sent) c.progress = Clock::now();
    while (c.out.size() - c.out_sent < kReplyBuffer) {
      const ssize_t n = recv(c.inner, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        c.inner_done = true;
        break;
      }
      c.out.append(buf, static_cast<size_t>(n));
    }
    SendReply(id, c);
  }

  void SendReply(uint64_t id, Conn& c) {
    if (!Flush(c)) return Close(id);
    if (c.inner_done) {
      DropInner(c);
      if (c.out.empty()) return Finish(id, c);
    } else {
      const bool room = c.out.size() - c.out_sent < kReplyBuffer;
      Watch(id, c, true, (room ? EPOLLIN : 0u) | EPOLLRDHUP, EPOLL_CTL_MOD);
    }
    Watch(id, c, false, EPOLLRDHUP | (c.out.empty() ? 0u : EPOLLOUT), EPOLL_CTL_MOD);
  }

  void OnOuter(uint64_t id, Conn& c, uint32_t events) {
    switch (c.phase) {
      case Phase::kHead:
      case Phase::kBody:
        // EPOLLOUT: a TLS handshake or read that waited to write.
        if ((events & (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
          ReadRequest(id, c);
        }
        return;
      case Phase::kRelay:
        if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) return Close(id);  // client gone
        if ((events & EPOLLOUT) != 0) SendReply(id, c);
        return;
      case Phase::kLinger:
        if ((events & EPOLLOUT) != 0) return Finish(id, c);
        if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
          char buf[4096];
          const ssize_t n = RecvOuter(c, buf, sizeof(buf));
          if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) Close(id);
        }
        return;
    }
  }

  void OnInner(uint64_t id, Conn& c, uint32_t events) {
    if ((events & EPOLLOUT) != 0 && c.in_sent < c.in.size()) {
      SendToInner(id, c);
      if (conns.find(id) == conns.end() || c.phase != Phase::kRelay) return;
    }
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) Relay(id, c);
  }

  // Deadlines: requests not whole in time, replies not read, lingering.
  void Sweep() {
    const Clock::time_point now = Clock::now();
    std::vector<uint64_t> late;
    for (const auto& [id, c] : conns) {
      const bool stalled = c.phase == Phase::kRelay && c.out.size() > c.out_sent &&
                           now - c.progress > Span(o.stall_timeout_s);
      if ((c.phase != Phase::kRelay && now > c.deadline) || stalled) late.push_back(id);
    }
    for (uint64_t id : late) {
      Conn& c = conns.at(id);
      if (c.phase == Phase::kLinger) {
        Close(id);
      } else if (c.phase == Phase::kRelay) {
        Evict(id, &Stats::stalled);
      } else {
        Count(&Stats::header_timeout);
        Refuse(id, c,
               {408, "request_timeout",
                "the request did not arrive in time (head within " +
                    std::to_string(static_cast<int>(o.header_timeout_s)) + " s, body at " +
                    std::to_string(o.body_min_bytes_per_s >> 10) + " KiB/s or faster)"});
      }
    }
  }

  void Run() {
    std::vector<epoll_event> events(256);
    Clock::time_point last_sweep = Clock::now();
    for (;;) {
      const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
      for (int i = 0; i < n; ++i) {
        const uint64_t key = events[i].data.u64;
        if (key == kWakeId) return;
        if (key == kListenId) {
          Accept();
          continue;
        }
        auto it = conns.find(key / 2);
        if (it == conns.end()) continue;  // closed earlier in this batch
        if ((key & 1) != 0) {
          if (it->second.inner >= 0) OnInner(key / 2, it->second, events[i].events);
        } else {
          OnOuter(key / 2, it->second, events[i].events);
        }
      }
      if (Clock::now() - last_sweep > std::chrono::milliseconds(100)) {
        Sweep();
        last_sweep = Clock::now();
      }
    }
  }
};

FrontGate::FrontGate(FrontGateOptions options) : options_(std::move(options)) {}

StatusOr<std::unique_ptr<FrontGate>> FrontGate::Bind(FrontGateOptions options) {
  const rlim_t files = RaiseFileLimit();
  // Two descriptors a connection (client and inner), and room for the rest.
  const auto fit =
      static_cast<int>(std::max<rlim_t>(32, (files - std::min<rlim_t>(files, 256)) / 2));
  options.max_connections = std::max(8, std::min(options.max_connections, fit));
  std::unique_ptr<FrontGate> gate(new FrontGate(std::move(options)));
  const FrontGateOptions& o = gate->options_;
  if (!o.tls_cert_file.empty() || !o.tls_key_file.empty()) {
    if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
      return InvalidArgumentError("TLS needs both a certificate and a key file");
    }
    StatusOr<std::unique_ptr<GateTls>> tls = GateTls::Load(o.tls_cert_file, o.tls_key_file);
    if (!tls.ok()) return tls.status();
    gate->tls_ = std::move(*tls);
    std::signal(SIGPIPE, SIG_IGN);  // OpenSSL's writes to a closed client
  }
  StatusOr<int> fd = Listen(gate->options_.host, gate->options_.port);
  if (!fd.ok()) return fd.status();
  gate->listen_fd_ = *fd;
  gate->port_ = LocalPort(*fd);
  gate->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  gate->loop_ = std::make_unique<Loop>(*gate);
  gate->loop_->ep = epoll_create1(EPOLL_CLOEXEC);
  if (gate->wake_fd_ < 0 || gate->loop_->ep < 0) {
    return UnavailableError("front gate: cannot create its event loop");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  epoll_ctl(gate->loop_->ep, EPOLL_CTL_ADD, gate->listen_fd_, &ev);
  ev.data.u64 = kWakeId;
  epoll_ctl(gate->loop_->ep, EPOLL_CTL_ADD, gate->wake_fd_, &ev);
  return gate;
}

FrontGate::~FrontGate() {
  if (loop_) {
    std::vector<uint64_t> ids;
    for (const auto& [id, c] : loop_->conns) ids.push_back(id);
    for (uint64_t id : ids) loop_->Close(id);
    if (loop_->ep >= 0) close(loop_->ep);
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void FrontGate::Run() { loop_->Run(); }

void FrontGate::Stop() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

FrontGate::Stats FrontGate::stats() const {
  std::lock_guard<std::mutex> lock(loop_->stats_mu);
  return loop_->stats;
}

void FrontGate::MarkPort(int port, bool on) {
  if (port <= 0 || port > 65535) return;
  const uint64_t bit = uint64_t{1} << (port % 64);
  if (on) {
    gate_ports_[static_cast<size_t>(port / 64)].fetch_or(bit);
  } else {
    gate_ports_[static_cast<size_t>(port / 64)].fetch_and(~bit);
  }
}

bool FrontGate::IsGatePort(int port) const {
  if (port <= 0 || port > 65535) return false;
  return (gate_ports_[static_cast<size_t>(port / 64)].load() >> (port % 64) & 1) != 0;
}

}  // namespace ellm::server
