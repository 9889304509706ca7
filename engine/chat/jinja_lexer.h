// Splits a chat template into text and the tokens inside its tags, applying
// Jinja2's whitespace rules as Hugging Face configures them: trim_blocks (a
// newline right after a block or comment tag is dropped), lstrip_blocks
// (spaces and tabs before a block or comment tag at the start of a line are
// dropped; `{%+` keeps them), `-` on either side of a tag strips all
// whitespace on that side, and one trailing newline of the template is
// dropped (keep_trailing_newline off). Newlines are normalised to "\n".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ellm::jinja {

enum class TokenType {
  kText,        // literal output; `text` holds it
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword
  kString,      // string literal; `text` holds the decoded value
  kInt,         // `text` holds the digits
  kFloat,
  kOperator,  // + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
  kEof,
};

struct Token {
  TokenType type;
  std::string text;
  int line;
};

// Throws TemplateError (with the line) on an unterminated tag or string, or a
// character that starts no token.
std::vector<Token> Lex(std::string_view source);

}  // namespace ellm::jinja
