// The completion endpoints (POST /v1/chat/completions, /v1/completions) on
// the server's shared state: internal to server/, called by api_server.cc's
// routes.
#pragma once

#include <httplib.h>

#include "ellm/server/api_server.h"
#include "server_state.h"

namespace ellm::server {

// Answers one completion request (`chat`: /v1/chat/completions) into `res`:
// a JSON response, a stream (a chunked content provider that outlives this
// call, holding what it needs), or an OpenAI-style error. Counts it in
// st's metrics. `st` and `o` must outlive the response.
void RunCompletion(ServerState& st, const ApiServerOptions& o, const httplib::Request& req,
                   httplib::Response& res, bool chat);

}  // namespace ellm::server
