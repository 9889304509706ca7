#include "chat/jinja_lexer.h"

#include <cctype>

#include "chat/jinja_value.h"
#include "tokenizer/unicode.h"

namespace ellm::jinja {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f'; }

// As Jinja2's lexer: every \r\n and \r becomes \n, and one trailing newline
// goes (keep_trailing_newline is off).
std::string Normalize(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}

  std::vector<Token> Run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t tag = FindTag(pos_);
      std::string text = src_.substr(pos_, tag - pos_);
      if (tag == src_.size()) {
        Emit(TokenType::kText, text);
        CountLines(text);
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char control = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (control == '-') {
        text.erase(text.find_last_not_of(" \t\n\v\f") + 1);
      } else if (control != '+' && kind != '{') {
        // lstrip_blocks: only spaces and tabs between the line's start and the tag.
        const size_t l_pos = text.rfind('\n') + 1;  // npos + 1 == 0
        if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
            text.find_first_not_of(" \t\v\f", l_pos) == std::string::npos) {
          text.erase(l_pos);
        }
      }
      Emit(TokenType::kText, text);
      CountLines(src_.substr(pos_, tag - pos_));
      pos_ = tag + 2 + ((control == '-' || control == '+') ? 1 : 0);
      const size_t end_start = kind == '#' ? Comment() : Tag(kind);
      line_starting = pos_ > end_start && src_[pos_ - 1] == '\n';
    }
    tokens_.push_back({TokenType::kEof, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t FindTag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return src_.size();
  }

  void Emit(TokenType type, std::string text) {
    if (type == TokenType::kText && text.empty()) return;
    tokens_.push_back({type, std::move(text), line_});
  }

  void CountLines(std::string_view s) {
    for (char c : s) line_ += c == '\n';
  }

  [[noreturn]] void Fail(const std::string& what) const {
    throw TemplateError("line " + std::to_string(line_) + ": " + what);
  }

  // After a tag's closing delimiter: `-` strips all following whitespace,
  // trim_blocks drops one newline after a block or comment tag.
  void AfterTag(bool minus, bool plus, bool block_like) {
    if (minus) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) line_ += src_[pos_++] == '\n';
    } else if (block_like && !plus && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
    }
  }

  // Returns where the closing delimiter began.
  size_t Comment() {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) Fail("unterminated comment '{#'");
    CountLines(src_.substr(pos_, end - pos_));
    const bool minus = end > pos_ && src_[end - 1] == '-';
    pos_ = end + 2;
    AfterTag(minus, false, true);
    return end;
  }

  size_t Tag(char kind) {
    const bool is_var = kind == '{';
    Emit(is_var ? TokenType::kVarBegin : TokenType::kBlockBegin, "");
    const char close = is_var ? '}' : '%';
    const int open_line = line_;
    int depth = 0;  // open ( [ {: a '}}' inside a dict literal does not end the tag
    while (true) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) line_ += src_[pos_++] == '\n';
      if (pos_ >= src_.size()) {
        line_ = open_line;  // where the tag was opened, not where the file ends
        Fail(is_var ? "unterminated '{{'" : "unterminated '{%'");
      }
      const char c = src_[pos_];
      const bool minus = c == '-' || c == '+';
      const size_t d = pos_ + (minus ? 1 : 0);
      if (depth == 0 && d + 1 < src_.size() && src_[d] == close && src_[d + 1] == '}') {
        if (minus && (c == '+' && is_var)) Fail("'+}}' is not a tag end");
        Emit(is_var ? TokenType::kVarEnd : TokenType::kBlockEnd, "");
        const size_t end_start = pos_;
        pos_ = d + 2;
        AfterTag(c == '-', c == '+', !is_var);
        return end_start;
      }
      if (c == '\'' || c == '"') {
        String(c);
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        Number();
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = pos_;
        while (e < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) {
          ++e;
        }
        Emit(TokenType::kName, src_.substr(pos_, e - pos_));
        pos_ = e;
      } else {
        Operator(depth);
      }
    }
  }

  void Operator(int& depth) {
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
    for (std::string_view op : kTwo) {
      if (src_.compare(pos_, 2, op) == 0) {
        Emit(TokenType::kOperator, std::string(op));
        pos_ += 2;
        return;
      }
    }
    const char c = src_[pos_];
    if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos) {
      Fail(std::string("unexpected character '") + c + "' in a tag");
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    Emit(TokenType::kOperator, std::string(1, c));
    ++pos_;
  }

  void Number() {
    size_t e = pos_;
    const auto digits = [&] {
      while (e < src_.size() &&
             (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) {
        ++e;
      }
    };
    digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      ++e;
      digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
      if (x < src_.size() && std::isdigit(static_cast<unsigned char>(src_[x]))) {
        is_float = true;
        e = x;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos_; i < e; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    Emit(is_float ? TokenType::kFloat : TokenType::kInt, text);
    pos_ = e;
  }

  // A string literal, decoded as Python decodes its escapes.
  void String(char quote) {
    std::string out;
    size_t i = pos_ + 1;
    const int start_line = line_;
    while (true) {
      if (i >= src_.size()) {
        line_ = start_line;
        Fail("unterminated string");
      }
      const char c = src_[i];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\' || i + 1 >= src_.size()) {
        out += c;
        ++i;
        continue;
      }
      const char n = src_[i + 1];
      i += 2;
      switch (n) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case '\\':
        case '\'':
        case '"':
          out += n;
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case '0':
          out += '\0';
          break;
        case '\n':
          ++line_;
          break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t len = n == 'x' ? 2 : n == 'u' ? 4 : 8;
          if (i + len > src_.size()) Fail("truncated \\" + std::string(1, n) + " escape");
          tokenizer::AppendUtf8(static_cast<uint32_t>(std::stoul(src_.substr(i, len), nullptr, 16)),
                                out);
          i += len;
          break;
        }
        default:  // Python keeps unknown escapes as written
          out += '\\';
          out += n;
      }
    }
    Emit(TokenType::kString, out);
    line_ = start_line + (line_ - start_line);
    pos_ = i + 1;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> Lex(std::string_view source) { return Lexer(Normalize(source)).Run(); }

}  // namespace ellm::jinja
