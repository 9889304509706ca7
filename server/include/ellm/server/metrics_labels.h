// Label values of the HTTP API's metrics. A label never carries text a
// client chose: the route comes from the fixed set of routes the server
// has (so an unknown path cannot add a series), and every value written is
// escaped as the Prometheus text format requires (so none can end a line).
#pragma once

#include <string>
#include <string_view>

namespace ellm::server {

// The route pattern `path` (as httplib decoded it) is served by, for the
// "endpoint" label: "/v1/chat/completions", "/v1/jobs/{id}", ...; any path
// no route serves is "unmatched".
std::string_view RouteLabel(std::string_view path);

// `value` escaped for the inside of a label's double quotes in the text
// exposition format (version 0.0.4): backslash, double quote and line feed
// become \\, \" and \n.
std::string EscapeLabelValue(std::string_view value);

}  // namespace ellm::server
