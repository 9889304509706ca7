// Word's styles and list numbering, as far as text extraction needs them:
// which paragraphs are headings (and at what level) and the numbers Word
// shows before numbered paragraphs ("1.", "2.1", "(a)"), which are not in
// the text itself but computed from word/numbering.xml.
#pragma once

#include <pugixml.hpp>

#include <array>
#include <map>
#include <string>

namespace ellm::ingest::office {

struct NumberingRef {
  int num_id = 0;  // 0: not numbered
  int ilvl = 0;    // 0..8
};

class WordStyles {
 public:
  // `styles` is word/styles.xml (may be empty).
  explicit WordStyles(const pugi::xml_document& styles);
  // The heading level (1..9) of a paragraph with style `style_id` and,
  // if >= 0, its own outline level; 0 for body text.
  int HeadingLevel(const std::string& style_id, int own_outline_level) const;
  // The numbering a style gives its paragraphs (through basedOn).
  NumberingRef StyleNumbering(const std::string& style_id) const;

 private:
  struct Style {
    std::string name;  // lower case
    std::string based_on;
    int outline_level = -1;
    NumberingRef numbering;
    bool has_numbering = false;
  };
  const Style* Find(const std::string& id) const;
  std::map<std::string, Style> styles_;
};

class WordNumbering {
 public:
  // `numbering` is word/numbering.xml (may be empty).
  explicit WordNumbering(const pugi::xml_document& numbering);
  // Advances the counter of `ref` and returns the label Word shows
  // ("3.", "2.1", "(b)"); "" for bullets and unknown lists.
  std::string Next(const NumberingRef& ref);

 private:
  struct Level {
    int start = 1;
    std::string format = "decimal";
    std::string text;  // lvlText: "%1.%2."
  };
  struct Abstract {
    std::array<Level, 9> levels;
  };
  struct Counters {
    std::array<int, 9> value{};
    std::array<bool, 9> started{};
  };
  std::map<int, Abstract> abstracts_;
  std::map<int, int> num_to_abstract_;
  std::map<int, std::map<int, int>> start_overrides_;  // numId -> ilvl -> start
  std::map<std::string, Counters> counters_;
};

}  // namespace ellm::ingest::office
