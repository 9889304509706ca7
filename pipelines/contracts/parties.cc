// A contract's parties and the role words its own definitions give them
// (contracts.h FindParties).
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "contracts/words.h"
#include "ellm/pipelines/contracts.h"

namespace ellm::pipelines {
namespace {

using contract_words::CountWords;
using contract_words::TrimCopy;

// Parties are defined near the start of a page: the definitions are looked
// for in each page's first bytes only (a bound on the regex's work).
constexpr size_t kPartySearchBytes = 16 * 1024;

// Curly quotation marks as straight ones (the patterns match bytes).
std::string StraightQuotes(std::string s) {
  const std::pair<const char*, const char*> marks[] = {
      {"\xE2\x80\x9C", "\""}, {"\xE2\x80\x9D", "\""}, {"\xE2\x80\x98", "'"}, {"\xE2\x80\x99", "'"}};
  for (const auto& [from, to] : marks) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at)) {
      s.replace(at, 3, to);
    }
  }
  return s;
}

// Company forms after a party's name.
bool HasCompanySuffix(const std::string& name) {
  static const std::regex re(
      R"(\b(?:Ltd|Limited|Inc|Incorporated|LLC|LLP|plc|PLC|GmbH|AG|SA|S\.A|SAS|SARL|BV|B\.V|NV|N\.V|Corp|Corporation|Company|Co|Pty|SpA|S\.p\.A|Oy|AB|AS|KG)\b\.?)");
  return std::regex_search(name, re);
}

// Defined terms that are not parties.
bool IsThingTerm(const std::string& role) {
  static const std::set<std::string> things = {"Agreement",      "Contract",
                                               "Effective Date", "Commencement Date",
                                               "Services",       "Goods",
                                               "Products",       "Premises",
                                               "Property",       "Software",
                                               "Licence",        "License",
                                               "Term",           "Fee",
                                               "Fees",           "Price",
                                               "Deliverables",   "Confidential Information",
                                               "Territory",      "Loan",
                                               "Work",           "Works",
                                               "Schedule",       "Purpose",
                                               "Facility"};
  return things.count(role) > 0;
}

// Role words a contract gives its parties in any kind of contract; other
// defined words count as roles only for a named company or in the preamble.
bool IsKnownRole(const std::string& role) {
  static const std::set<std::string> roles = {"Buyer",
                                              "Seller",
                                              "Supplier",
                                              "Customer",
                                              "Client",
                                              "Provider",
                                              "Service Provider",
                                              "Licensor",
                                              "Licensee",
                                              "Landlord",
                                              "Tenant",
                                              "Lessor",
                                              "Lessee",
                                              "Employer",
                                              "Employee",
                                              "Executive",
                                              "Discloser",
                                              "Recipient",
                                              "Disclosing Party",
                                              "Receiving Party",
                                              "Lender",
                                              "Borrower",
                                              "Contractor",
                                              "Subcontractor",
                                              "Consultant",
                                              "Purchaser",
                                              "Vendor",
                                              "Distributor",
                                              "Agent",
                                              "Principal",
                                              "Guarantor",
                                              "Company",
                                              "Owner",
                                              "Manufacturer",
                                              "Reseller",
                                              "Partner",
                                              "Investor",
                                              "Assignor",
                                              "Assignee",
                                              "Franchisor",
                                              "Franchisee",
                                              "Publisher",
                                              "Author"};
  return roles.count(role) > 0;
}

// Where a party's name begins, reading back from `end` in `text` but not
// before `floor` (the end of the previous definition): after "between", a
// line start, "(1)", ":" or ";"; then "and" and commas before the name are
// dropped, and so is what follows its first comma ("ACME LIMITED, a company
// incorporated in England and Wales" -> "ACME LIMITED").
std::string NameBefore(const std::string& text, size_t floor, size_t end) {
  const size_t from = std::max(floor, end > 300 ? end - 300 : size_t{0});
  std::string before = text.substr(from, end - from);
  static const std::regex cut(R"((?:^|\n|\bbetween\b|\bBETWEEN\b|:|;|\(\d\)|\([a-z]\)\s)\s*)");
  size_t start = 0;
  for (auto it = std::sregex_iterator(before.begin(), before.end(), cut);
       it != std::sregex_iterator(); ++it) {
    const size_t after = static_cast<size_t>(it->position(0) + it->length(0));
    if (after < before.size()) start = after;
  }
  std::string name = TrimCopy(before.substr(start));
  static const std::regex lead(R"(^(?:[,.]\s*)*(?:and|AND)\s+)");
  name = std::regex_replace(name, lead, "");
  while (!name.empty() && (name.front() == ',' || name.front() == ' ')) name.erase(0, 1);
  // "Background (Master Services Agreement) Brightwave Consulting Ltd": a
  // heading run into the text ends at its bracket; "ACME LIMITED, ...
  // (company number 123)" has nothing after it and stays.
  if (const size_t close = name.rfind(')'); close != std::string::npos) {
    const std::string after = TrimCopy(name.substr(close + 1));
    if (!after.empty() && std::isupper(static_cast<unsigned char>(after[0]))) name = after;
  }
  if (const size_t comma = name.find(','); comma != std::string::npos) {
    // Keep "Acme, Inc." whole.
    if (!HasCompanySuffix(TrimCopy(name.substr(comma + 1)).substr(0, 6))) {
      name = name.substr(0, comma);
    }
  }
  // "A Ltd and B Ltd (the "Buyer")": the name after the last "and".
  if (const size_t and_at = name.rfind(" and ");
      and_at != std::string::npos && and_at + 5 < name.size() &&
      std::isupper(static_cast<unsigned char>(name[and_at + 5])) &&
      HasCompanySuffix(name.substr(0, and_at))) {
    name = name.substr(and_at + 5);
  }
  name = TrimCopy(name);
  while (!name.empty() && (name.back() == ',' || name.back() == '.')) name.pop_back();
  // "agrees to lend Vega Analytics LLC": the name is the capitalised run
  // at the end.
  if (!name.empty() && !std::isupper(static_cast<unsigned char>(name[0]))) {
    static const std::set<std::string> joins = {"&",  "and", "of",  "de", "du",
                                                "la", "von", "van", "der"};
    std::vector<std::string> words;
    for (size_t i = 0; i < name.size();) {
      while (i < name.size() && name[i] == ' ') ++i;
      size_t j = name.find(' ', i);
      if (j == std::string::npos) j = name.size();
      if (j > i) words.push_back(name.substr(i, j - i));
      i = j;
    }
    size_t k = words.size();
    while (k > 0 && (std::isupper(static_cast<unsigned char>(words[k - 1][0])) ||
                     std::isdigit(static_cast<unsigned char>(words[k - 1][0])) ||
                     joins.count(words[k - 1]) || HasCompanySuffix(words[k - 1]))) {
      --k;
    }
    while (k < words.size() && joins.count(words[k])) ++k;
    name.clear();
    for (size_t i = k; i < words.size(); ++i) name += (name.empty() ? "" : " ") + words[i];
  }
  // "Harbor Logistics Inc." keeps the dot of its abbreviation.
  const size_t found = name.empty() ? std::string::npos : before.rfind(name);
  if (found != std::string::npos && found + name.size() < before.size() &&
      before[found + name.size()] == '.') {
    const size_t space = name.rfind(' ');
    const std::string last = space == std::string::npos ? name : name.substr(space + 1);
    if (last == "Inc" || last == "Co" || last == "Corp" || last == "Ltd" || last == "S.A" ||
        last == "N.V" || last == "B.V")
      name += '.';
  }
  if (name.rfind("the ", 0) == 0 || name.rfind("The ", 0) == 0 || name.rfind("this ", 0) == 0 ||
      name.rfind("This ", 0) == 0)
    return "";
  return name;
}

}  // namespace

std::vector<Party> FindParties(const std::vector<Page>& pages) {
  std::vector<Party> out;
  std::set<std::string> seen;
  // The preamble: the text before the first numbered clause.
  const std::vector<Clause> clauses = SplitClauses(pages);
  std::string preamble;
  for (const Clause& c : clauses) {
    if (c.kind != ClauseKind::kPreamble && c.kind != ClauseKind::kRecital) break;
    preamble += c.text + "\n";
  }
  static const std::regex defined(
      R"re(\(\s*(?:hereinafter\s+)?(?:(?:referred\s+to\s+as|called|as)\s+)?(?:the\s+)?["']?(?:the\s+)?([A-Z][A-Za-z]+(?: [A-Z][A-Za-z]+)?)["']?\s*\)|,\s*(?:hereinafter|hereafter)\s+(?:referred\s+to\s+as|called)\s+["']?(?:the\s+)?["']?([A-Z][A-Za-z]+(?: [A-Z][A-Za-z]+)?)["']?)re");
  for (const Page& p : pages) {
    const std::string text = StraightQuotes(p.text.substr(0, kPartySearchBytes));
    size_t floor = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), defined);
         it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      const size_t at = static_cast<size_t>(m.position(0));
      const size_t prev_floor = floor;
      floor = at + static_cast<size_t>(m.length(0));
      const std::string role = m[1].matched ? m[1].str() : m[2].str();
      if (role.empty() || IsThingTerm(role) || seen.count(role)) continue;
      const std::string name = NameBefore(text, prev_floor, at);
      if (name.empty() || CountWords(name) > 12 ||
          !std::isupper(static_cast<unsigned char>(name[0])))
        continue;
      const bool in_preamble = preamble.find(name) != std::string::npos;
      if (!IsKnownRole(role) && !HasCompanySuffix(name) && !in_preamble) continue;
      seen.insert(role);
      out.push_back({name, role, p.number});
    }
  }
  return out;
}

}  // namespace ellm::pipelines
