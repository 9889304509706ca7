// HTML escaping, as Python's markupsafe (and so Jinja's `escape` filter)
// does it: & < > " ' become &amp; &lt; &gt; &#34; &#39;. Safe in element
// text and in quoted attribute values. Bytes >= 0x80 pass as they are.
#pragma once

#include <string>
#include <string_view>

namespace ellm {

inline std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace ellm
