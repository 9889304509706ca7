// The multipart door of POST /v1/jobs, for the fuzz target `multipart` and
// the unit test that replays its corpus: a real cpp-httplib server on
// 127.0.0.1 (the same library and version as the API, whose multipart
// parser reads the body), its handler turning the form into a job message
// exactly as the API does (server/job_request.h) and checking it with the
// job message parser, as the job service would.
//
// An input is the boundary on its first line (cut to 70 bytes, RFC 2046's
// limit) and the body after it. The promises, broken ones reported as
// `violation`: the server answers every input with a status; a form the
// API accepts becomes an object with an id, version 1 and a documents
// array, and the job parser then accepts it or names its error code; a
// refusal is a 4xx with a message.
#pragma once

#include <httplib.h>

#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace ellm::testing {

struct MultipartResult {
  int status = 0;         // 0: no answer
  std::string violation;  // empty when every promise held
  std::string reply;      // the whole response, for messages
};

class MultipartHarness {
 public:
  MultipartHarness();
  ~MultipartHarness();
  MultipartHarness(const MultipartHarness&) = delete;
  MultipartHarness& operator=(const MultipartHarness&) = delete;

  MultipartResult Send(std::string_view input);

 private:
  void Handle(const httplib::Request& req, httplib::Response& res);
  void Broken(std::string what);

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::string violation_;
};

}  // namespace ellm::testing
