// Readers for llama.cpp's tokenizer golden pairs (models/ggml-vocab-*.gguf.inp
// / .out; llama.cpp's format, models/ggml-vocab-*.gguf.inp/.out) and helpers to
// print their strings and ids in failure messages.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ellm/engine/tokenizer.h"

namespace ellm::testing {

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// *.inp, read as llama.cpp's test-tokenizer-0 reads it: strings separated by
// "\n__ggml_vocab_test__\n" (so the newline before each separator line is not
// part of the string); text after the last separator, if any, is one more
// string (the gemma-4 file ends so).
inline std::vector<std::string> ReadInputs(const std::string& path) {
  const std::string content = ReadAll(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  for (size_t pos = 0; pos < content.size();) {
    const size_t next = content.find(sep, pos);
    if (next == std::string::npos) {
      out.push_back(content.substr(pos));
      break;
    }
    out.push_back(content.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return out;
}

// *.out: one line of space-separated ids per string.
inline std::vector<std::vector<TokenId>> ReadOutputs(const std::string& path) {
  std::istringstream in(ReadAll(path));
  std::vector<std::vector<TokenId>> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<TokenId> ids;
    for (TokenId id; words >> id;) ids.push_back(id);
    out.push_back(std::move(ids));
  }
  return out;
}

inline std::string Ids(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) s += " " + std::to_string(id);
  return s;
}

// The input with control characters escaped, for failure messages.
inline std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace ellm::testing
