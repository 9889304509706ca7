// A clause comparison as the result's JSON, a Markdown section, lines for
// the model's prose and a self-contained HTML redline.
#include <cctype>
#include <cmath>
#include <string>

#include "ellm/base/html.h"
#include "ellm/pipelines/contracts.h"

namespace ellm::pipelines {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string Pages(const Clause& c) {
  if (c.first_page <= 0) return "";
  if (c.last_page > c.first_page) {
    return "pp. " + std::to_string(c.first_page) + "-" + std::to_string(c.last_page);
  }
  return "p. " + std::to_string(c.first_page);
}

// "4.2 Payment terms (p. 2)", "Preamble (p. 1)".
std::string Label(const Clause& c) {
  std::string out;
  if (c.kind == ClauseKind::kSchedule) out = "Schedule ";
  out += c.number;
  if (!c.heading.empty()) out += (out.empty() ? "" : " ") + c.heading;
  if (out.empty()) {
    out = ClauseKindName(c.kind);
    out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  }
  const std::string pages = Pages(c);
  return pages.empty() ? out : out + " (" + pages + ")";
}

ordered_json ClauseJson(const Clause& c) {
  return {{"kind", ClauseKindName(c.kind)},
          {"number", c.number},
          {"heading", c.heading},
          {"first_page", c.first_page},
          {"last_page", c.last_page},
          {"level", c.level},
          {"text", c.text}};
}

ordered_json PartiesJson(const std::vector<Party>& parties) {
  ordered_json out = ordered_json::array();
  for (const Party& p : parties)
    out.push_back({{"name", p.name}, {"role", p.role}, {"page", p.page}});
  return out;
}

std::string Status(const AlignedClause& x) {
  std::string s = ClauseChangeName(x.change);
  if (x.moved) s += ", moved";
  return s;
}

std::string MarkdownCell(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') {
      out += "\\|";
    } else if (ch == '\n') {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return out;
}

std::string Escape(std::string_view s) { return HtmlEscape(s); }

// What a non-unchanged pair differs in, in words.
std::string Details(const ContractComparison& c, const AlignedClause& x) {
  switch (x.change) {
    case ClauseChange::kAdded:
      return "only in B";
    case ClauseChange::kRemoved:
      return "only in A";
    case ClauseChange::kReworded:
      return "same values and obligations, other words";
    case ClauseChange::kUnchanged:
      return x.moved ? "same text, other place" : "";
    case ClauseChange::kChanged:
      break;
  }
  (void)c;
  return x.why;
}

}  // namespace

ordered_json ComparisonJson(const ContractComparison& c) {
  ordered_json a = ordered_json::array(), b = ordered_json::array();
  for (const Clause& x : c.a) a.push_back(ClauseJson(x));
  for (const Clause& x : c.b) b.push_back(ClauseJson(x));
  ordered_json aligned = ordered_json::array();
  for (const AlignedClause& x : c.aligned) {
    ordered_json row = {{"a", x.a >= 0 ? ordered_json(x.a) : ordered_json()},
                        {"b", x.b >= 0 ? ordered_json(x.b) : ordered_json()},
                        {"status", ClauseChangeName(x.change)},
                        {"moved", x.moved}};
    if (x.a >= 0 && x.b >= 0) row["similarity"] = std::round(x.similarity * 1000) / 1000;
    if (!x.why.empty()) row["why"] = x.why;
    if (!x.values.empty()) {
      ordered_json values = ordered_json::array();
      for (const ValueChange& v : x.values) {
        values.push_back({{"kind", FactKindName(v.kind)}, {"a", v.a}, {"b", v.b}});
      }
      row["values"] = std::move(values);
    }
    if (!x.redline.empty()) {
      ordered_json edits = ordered_json::array();
      for (const WordEdit& e : x.redline) edits.push_back({std::string(1, e.op), e.text});
      row["redline"] = std::move(edits);
    }
    aligned.push_back(std::move(row));
  }
  ordered_json changed = ordered_json::array();
  for (const PartyChange& p : c.party_changes) {
    changed.push_back({{"role", p.role}, {"a", p.a}, {"b", p.b}});
  }
  return {{"parties",
           {{"A", PartiesJson(c.parties_a)},
            {"B", PartiesJson(c.parties_b)},
            {"changed", std::move(changed)}}},
          {"counts",
           {{"unchanged", c.Count(ClauseChange::kUnchanged)},
            {"reworded", c.Count(ClauseChange::kReworded)},
            {"changed", c.Count(ClauseChange::kChanged)},
            {"added", c.Count(ClauseChange::kAdded)},
            {"removed", c.Count(ClauseChange::kRemoved)},
            {"moved", c.Moved()}}},
          {"aligned", std::move(aligned)},
          {"A", std::move(a)},
          {"B", std::move(b)}};
}

std::string ComparisonMarkdown(const ContractComparison& c) {
  std::string out = std::to_string(c.a.size()) + " clauses in A, " + std::to_string(c.b.size()) +
                    " in B: " + std::to_string(c.Count(ClauseChange::kUnchanged)) + " unchanged, " +
                    std::to_string(c.Count(ClauseChange::kReworded)) + " reworded, " +
                    std::to_string(c.Count(ClauseChange::kChanged)) + " changed, " +
                    std::to_string(c.Count(ClauseChange::kAdded)) + " added, " +
                    std::to_string(c.Count(ClauseChange::kRemoved)) + " removed, " +
                    std::to_string(c.Moved()) + " moved.\n";
  for (const PartyChange& p : c.party_changes) {
    out += "\nThe " + p.role + ": " + (p.a.empty() ? "not defined" : p.a) + " in A, " +
           (p.b.empty() ? "not defined" : p.b) + " in B.\n";
  }
  bool any = false;
  for (const AlignedClause& x : c.aligned) {
    if (x.change == ClauseChange::kUnchanged && !x.moved) continue;
    if (!any) out += "\n| A | B | Change | Details |\n|---|---|---|---|\n";
    any = true;
    const std::string a = x.a >= 0 ? Label(c.a[static_cast<size_t>(x.a)]) : "-";
    const std::string b = x.b >= 0 ? Label(c.b[static_cast<size_t>(x.b)]) : "-";
    out += "| " + MarkdownCell(a) + " | " + MarkdownCell(b) + " | " + Status(x) + " | " +
           MarkdownCell(Details(c, x)) + " |\n";
  }
  return out;
}

std::string ComparisonDifferences(const ContractComparison& c) {
  std::string out;
  for (const PartyChange& p : c.party_changes) {
    out += "- The " + p.role + " is " + (p.a.empty() ? "not defined" : p.a) + " in A and " +
           (p.b.empty() ? "not defined" : p.b) + " in B.\n";
  }
  for (const AlignedClause& x : c.aligned) {
    std::string line;
    if (x.change == ClauseChange::kAdded) {
      line = "B adds clause " + Label(c.b[static_cast<size_t>(x.b)]) + ".";
    } else if (x.change == ClauseChange::kRemoved) {
      line = "B removes clause " + Label(c.a[static_cast<size_t>(x.a)]) + " of A.";
    } else if (x.change == ClauseChange::kChanged) {
      line = "Clause " + Label(c.a[static_cast<size_t>(x.a)]) + " changes in B: ";
      std::string values;
      for (const ValueChange& v : x.values) {
        if (!values.empty()) values += ", ";
        values +=
            (v.a.empty() ? "nothing" : v.a) + " in A, " + (v.b.empty() ? "nothing" : v.b) + " in B";
      }
      line += values.empty() ? x.why : values;
      line += ".";
    } else if (x.moved) {
      line = "Clause " + Label(c.a[static_cast<size_t>(x.a)]) + " moves to " +
             Label(c.b[static_cast<size_t>(x.b)]) + " in B.";
    }
    if (!line.empty()) out += "- " + line + "\n";
  }
  return out;
}

namespace {

// "4.2 Payment terms (p. 2)" from a clause's JSON (ComparisonJson's A/B).
std::string LabelOf(const ordered_json& c) {
  Clause x;
  x.number = c.value("number", "");
  x.heading = c.value("heading", "");
  x.first_page = c.value("first_page", 0);
  x.last_page = c.value("last_page", 0);
  const std::string kind = c.value("kind", "clause");
  for (ClauseKind k : {ClauseKind::kPreamble, ClauseKind::kRecital, ClauseKind::kDefinitions,
                       ClauseKind::kClause, ClauseKind::kSchedule, ClauseKind::kSignature}) {
    if (kind == ClauseKindName(k)) x.kind = k;
  }
  return Label(x);
}

std::string PartiesHtml(const ordered_json& parties) {
  std::string out;
  if (!parties.is_array()) return out;
  for (const auto& p : parties) {
    out += Escape(p.value("name", "")) + " (the " + Escape(p.value("role", "")) + ", p. " +
           std::to_string(p.value("page", 0)) + ")<br>";
  }
  return out;
}

}  // namespace

std::string ComparisonHtml(const ordered_json& clauses, const std::string& name_a,
                           const std::string& name_b) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>Comparison: " +
      Escape(name_a) + " and " + Escape(name_b) +
      "</title><style>"
      "body{font-family:Georgia,serif;margin:2em;color:#222}"
      "table{border-collapse:collapse;width:100%;table-layout:fixed}"
      "td,th{border:1px solid #bbb;padding:.5em;vertical-align:top;text-align:left}"
      "th{background:#eee}del{background:#fdd;color:#900}ins{background:#dfd;color:#060;"
      "text-decoration:none}.tag{font:bold 80% sans-serif;padding:0 .4em;border-radius:3px}"
      ".changed{background:#fc8}.added{background:#9e9}.removed{background:#f99}"
      ".reworded{background:#cdf}.unchanged{background:#eee}.moved{background:#fe8}"
      ".label{font:bold 90% sans-serif}.note{font:90% sans-serif;color:#555}"
      "</style></head><body>\n<h1>Comparison of " +
      Escape(name_a) + " (A) and " + Escape(name_b) + " (B)</h1>\n";
  const ordered_json& counts = clauses.at("counts");
  std::string line;
  for (const auto& [name, n] : counts.items()) {
    if (!line.empty()) line += ", ";
    line += std::to_string(n.get<int>()) + " " + name;
  }
  out += "<p class=\"note\" id=\"counts\">" + std::to_string(clauses.at("A").size()) +
         " clauses in A, " + std::to_string(clauses.at("B").size()) + " in B: " + Escape(line) +
         ".</p>\n";
  out += "<h2>Parties</h2>\n<table id=\"parties\"><tr><th>A</th><th>B</th></tr><tr><td>" +
         PartiesHtml(clauses.at("parties").value("A", ordered_json())) + "</td><td>" +
         PartiesHtml(clauses.at("parties").value("B", ordered_json())) + "</td></tr></table>\n";
  out += "<h2>Clauses</h2>\n<table id=\"clauses\"><tr><th>A: " + Escape(name_a) +
         "</th><th>B: " + Escape(name_b) + "</th></tr>\n";
  const ordered_json& a = clauses.at("A");
  const ordered_json& b = clauses.at("B");
  for (const auto& x : clauses.at("aligned")) {
    const std::string status = x.value("status", "changed");
    std::string tags = "<span class=\"tag " + Escape(status) + "\">" + Escape(status) + "</span>";
    if (x.value("moved", false)) tags += " <span class=\"tag moved\">moved</span>";
    const bool has_a = x.contains("a") && x["a"].is_number_integer() && x["a"].get<int64_t>() >= 0;
    const bool has_b = x.contains("b") && x["b"].is_number_integer() && x["b"].get<int64_t>() >= 0;
    std::string left, right;
    if (has_a && x["a"].get<size_t>() < a.size()) {
      left = "<div class=\"label\">" + Escape(LabelOf(a[x["a"].get<size_t>()])) + "</div>";
    }
    if (has_b && x["b"].get<size_t>() < b.size()) {
      right = "<div class=\"label\">" + Escape(LabelOf(b[x["b"].get<size_t>()])) + "</div>";
    }
    if (x.contains("redline")) {
      for (const auto& e : x["redline"]) {
        const std::string op = e.at(0).get<std::string>();
        const std::string words = Escape(e.at(1).get<std::string>());
        if (op != "+") left += op == "-" ? "<del>" + words + "</del> " : words + " ";
        if (op != "-") right += op == "+" ? "<ins>" + words + "</ins> " : words + " ";
      }
    } else {
      if (has_a && x["a"].get<size_t>() < a.size()) {
        left += Escape(a[x["a"].get<size_t>()].value("text", ""));
      }
      if (has_b && x["b"].get<size_t>() < b.size()) {
        right += Escape(b[x["b"].get<size_t>()].value("text", ""));
      }
    }
    if (x.contains("why")) right += "<div class=\"note\">" + Escape(x.value("why", "")) + "</div>";
    out += "<tr class=\"row " + Escape(status) + "\"><td>" + (has_a ? tags + " " + left : "") +
           "</td><td>" + (has_b ? tags + " " + right : "") + "</td></tr>\n";
  }
  out += "</table>\n</body></html>\n";
  return out;
}

// The clause as the last version holding it labels it.
std::string HistoryLabel(const std::vector<ContractComparison>& steps, const ClauseHistory& h) {
  for (size_t v = h.index.size(); v-- > 0;) {
    if (h.index[v] < 0) continue;
    const auto& clauses = v == 0 ? steps[0].a : steps[v - 1].b;
    return Label(clauses[static_cast<size_t>(h.index[v])]);
  }
  return "-";
}

std::string HistoryMarkdown(const std::vector<ContractComparison>& steps,
                            const std::vector<ClauseHistory>& histories,
                            const std::vector<std::string>& names) {
  std::string out = "| Clause |";
  std::string rule = "|---|";
  for (size_t s = 0; s < steps.size(); ++s) {
    out += " " + MarkdownCell(names[s] + " \u2192 " + names[s + 1]) + " |";
    rule += "---|";
  }
  out += "\n" + rule + "\n";
  int rows = 0;
  for (const ClauseHistory& h : histories) {
    if (!h.Changed()) continue;
    ++rows;
    out += "| " + MarkdownCell(HistoryLabel(steps, h)) + " |";
    for (size_t s = 0; s < steps.size(); ++s) {
      std::string cell = h.changes[s] ? ClauseChangeName(*h.changes[s]) : "";
      if (h.moved[s]) cell += ", moved";
      out += " " + cell + " |";
    }
    out += "\n";
  }
  return rows == 0 ? "No clause changed in any version.\n" : out;
}

ordered_json HistoryJson(const std::vector<ContractComparison>& steps,
                         const std::vector<ClauseHistory>& histories) {
  ordered_json out = ordered_json::array();
  for (const ClauseHistory& h : histories) {
    ordered_json changes = ordered_json::array();
    for (const auto& c : h.changes)
      changes.push_back(c ? ordered_json(ClauseChangeName(*c)) : nullptr);
    out.push_back({{"label", HistoryLabel(steps, h)},
                   {"index", h.index},
                   {"changes", std::move(changes)},
                   {"moved", h.moved}});
  }
  return out;
}

}  // namespace ellm::pipelines
