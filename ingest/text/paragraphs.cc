// Paragraph assembly and hyphen repair (see paragraphs.h).
#include "text/paragraphs.h"

#include "ellm/ingest/markdown_table.h"

#include <array>

#include "text/normalize.h"

namespace ellm::ingest::text {
namespace {

constexpr std::string_view kSoftHyphen = "\xC2\xAD";

bool IsLower(char32_t c) {
  // ASCII, Latin-1/Extended-A lower case, Greek and Cyrillic lower case.
  return (c >= 'a' && c <= 'z') || (c >= 0xDF && c <= 0xFF && c != 0xF7) ||
         (c >= 0x100 && c <= 0x17F && (c % 2) == 1) || (c >= 0x3B1 && c <= 0x3C9) ||
         (c >= 0x430 && c <= 0x45F);
}

bool IsAsciiPunct(char c) {
  return c != '-' && c != '\'' &&
         ((c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
          (c >= '{' && c <= '~'));
}

std::string Lower(std::string_view w) {
  std::string out(w);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// `w` without leading/trailing ASCII punctuation (keeps inner '-' and ''').
std::string_view StripPunct(std::string_view w) {
  while (!w.empty() && IsAsciiPunct(w.front())) w.remove_prefix(1);
  while (!w.empty() && (IsAsciiPunct(w.back()) || w.back() == '-')) w.remove_suffix(1);
  return w;
}

std::string_view LastWord(std::string_view s) {
  size_t sp = s.find_last_of(' ');
  return sp == std::string_view::npos ? s : s.substr(sp + 1);
}

std::string_view FirstWord(std::string_view s) {
  size_t sp = s.find(' ');
  return sp == std::string_view::npos ? s : s.substr(0, sp);
}

bool IsCompoundingPrefix(std::string_view lower) {
  static constexpr std::array<std::string_view, 8> kPrefixes = {"self", "well", "ill",   "non",
                                                                "half", "all",  "cross", "so"};
  for (std::string_view p : kPrefixes) {
    if (lower == p) return true;
  }
  return false;
}

bool EndsSentence(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '"' || s.back() == ')' || s.back() == '\'')) {
    s.remove_suffix(1);
  }
  if (s.empty()) return true;
  char32_t c = LastCodePoint(s);
  return c == '.' || c == '!' || c == '?' || c == ':' || c == ';' || c == 0x3002 || c == 0xFF01 ||
         c == 0xFF1F || c == 0x201D || c == 0x300D;
}

bool EndsWithHyphen(std::string_view s) {
  if (s.size() >= 2 && s.substr(s.size() - 2) == kSoftHyphen) return true;
  if (s.size() < 2 || s.back() != '-') return false;
  // A hyphen attached to a word ("reve-"), not a dash standing alone (" -").
  char prev = s[s.size() - 2];
  return prev != ' ' && prev != '-';
}

void RemoveSoftHyphens(std::string* s) {
  size_t pos;
  while ((pos = s->find(kSoftHyphen)) != std::string::npos) s->erase(pos, kSoftHyphen.size());
}

}  // namespace

void HyphenEvidence::AddLine(std::string_view line) {
  size_t start = 0;
  while (start < line.size()) {
    size_t end = line.find(' ', start);
    if (end == std::string_view::npos) end = line.size();
    std::string_view word = line.substr(start, end - start);
    const bool last = end == line.size();
    if (!(last && EndsWithHyphen(word))) {
      std::string_view core = StripPunct(word);
      if (!core.empty()) words_.insert(Lower(core));
    }
    start = end + 1;
  }
}

std::string JoinHyphenated(std::string_view left, std::string_view right,
                           const HyphenEvidence& evidence) {
  std::string out(left);
  if (out.size() >= 2 && std::string_view(out).substr(out.size() - 2) == kSoftHyphen) {
    out.resize(out.size() - 2);
    out += right;
    return out;
  }
  const std::string_view stem_word = StripPunct(LastWord(left));  // "reve" / "state-of-the"
  const std::string_view next_word = StripPunct(FirstWord(right));
  const char32_t first = FirstCodePoint(right);
  bool keep = !IsLower(first) || stem_word.find('-') != std::string_view::npos ||
              (!stem_word.empty() && stem_word.back() >= '0' && stem_word.back() <= '9');
  if (!keep) {
    const std::string joined = Lower(std::string(stem_word) + std::string(next_word));
    const std::string hyphenated = Lower(std::string(stem_word) + "-" + std::string(next_word));
    if (evidence.Has(hyphenated) && !evidence.Has(joined)) {
      keep = true;
    } else if (!evidence.Has(joined)) {
      keep = IsCompoundingPrefix(Lower(stem_word));
    }
  }
  if (!keep) out.pop_back();
  out += right;
  return out;
}

void AppendLine(std::string_view line, const HyphenEvidence& evidence, std::string* paragraph) {
  if (paragraph->empty()) {
    *paragraph = std::string(line);
  } else if (line.empty()) {
    return;
  } else if (EndsWithHyphen(*paragraph)) {
    *paragraph = JoinHyphenated(*paragraph, line, evidence);
  } else if (IsCjk(LastCodePoint(*paragraph)) && IsCjk(FirstCodePoint(line))) {
    *paragraph += line;
  } else {
    *paragraph += ' ';
    *paragraph += line;
  }
}

std::string AssemblePage(const PageLines& lines, const HyphenEvidence& evidence) {
  std::string out, paragraph;
  auto flush = [&] {
    if (paragraph.empty()) return;
    if (!out.empty()) out += "\n\n";
    out += paragraph;
    paragraph.clear();
  };
  std::vector<std::vector<std::string>> table;  // the rows of the table being read
  auto flush_table = [&] {
    if (table.empty()) return;
    if (!out.empty()) out += "\n\n";
    out += ingest::MarkdownTable(table);
    table.clear();
  };
  for (const TextLine& line : lines) {
    if (line.table_row) {
      flush();
      table.push_back(ingest::SplitCells(line.text));
      continue;
    }
    if (!table.empty()) {
      flush_table();
    } else if (!paragraph.empty()) {
      bool continues = line.break_before == LineBreak::kNone ||
                       (line.break_before == LineBreak::kBlock && !EndsSentence(paragraph) &&
                        (IsLower(FirstCodePoint(line.text)) || EndsWithHyphen(paragraph)));
      if (!continues) flush();
    }
    AppendLine(line.text, evidence, &paragraph);
  }
  flush();
  flush_table();
  RemoveSoftHyphens(&out);
  return out;
}

}  // namespace ellm::ingest::text
