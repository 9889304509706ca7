// Logging for ellmd (spdlog): one of three line formats, chosen from the
// config and the environment.
//   text, on a terminal or a file: "[2026-11-30 13:40:02.113] [info] message"
//   text, under systemd's journal ($JOURNAL_STREAM set): "<6>message" — the
//       journal adds the timestamp and takes the syslog priority prefix
//   json: {"time":"...Z","level":"info","pid":123,"job":"q3","msg":"..."}
//       one object per line; "job" is present when the line is about a job
//       (the daemon starts those lines with "job=<id> ").
#pragma once

#include <string>

#include "ellm/app/config.h"

namespace ellm::daemon {

void ConfigureLogging(const app::LogConfig& config);

// The JSON string escape of `text` (quotes, backslashes, control characters).
std::string JsonEscape(std::string_view text);

}  // namespace ellm::daemon
