#include "logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

namespace ellm::daemon {
namespace {

void AppendEscaped(std::string_view text, spdlog::memory_buf_t& dest) {
  std::string e = JsonEscape(text);
  dest.append(e.data(), e.data() + e.size());
}

// %* : the message, JSON-escaped.
class EscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    AppendEscaped(std::string_view(msg.payload.data(), msg.payload.size()), dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return spdlog::details::make_unique<EscapedMessage>();
  }
};

// %J : ,"job":"<id>" when the message starts with "job=<id> ".
class JobField : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string_view p(msg.payload.data(), msg.payload.size());
    if (p.rfind("job=", 0) != 0) return;
    size_t end = p.find(' ');
    std::string_view id = p.substr(4, end == std::string_view::npos ? p.npos : end - 4);
    static constexpr std::string_view kOpen = ",\"job\":\"";
    dest.append(kOpen.data(), kOpen.data() + kOpen.size());
    AppendEscaped(id, dest);
    dest.push_back('"');
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return spdlog::details::make_unique<JobField>();
  }
};

// %Q : the syslog priority prefix journald understands ("<6>" for info).
class Priority : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const char* p = "<6>";
    switch (msg.level) {
      case spdlog::level::critical:
        p = "<2>";
        break;
      case spdlog::level::err:
        p = "<3>";
        break;
      case spdlog::level::warn:
        p = "<4>";
        break;
      case spdlog::level::debug:
      case spdlog::level::trace:
        p = "<7>";
        break;
      default:
        break;
    }
    dest.append(p, p + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return spdlog::details::make_unique<Priority>();
  }
};

}  // namespace

std::string JsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out;
}

void ConfigureLogging(const app::LogConfig& config) {
  spdlog::set_level(spdlog::level::from_str(config.level));
  if (config.format == "json") {
    auto f = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    f->add_flag<EscapedMessage>('*').add_flag<JobField>('J').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","pid":%P%J,"msg":"%*"})");
    spdlog::set_formatter(std::move(f));
    return;
  }
  const char* journal = std::getenv("JOURNAL_STREAM");
  if (journal && *journal) {
    auto f = std::make_unique<spdlog::pattern_formatter>();
    f->add_flag<Priority>('Q').set_pattern("%Q%v");
    spdlog::set_formatter(std::move(f));
    return;
  }
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
}

}  // namespace ellm::daemon
