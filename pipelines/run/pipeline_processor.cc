#include "ellm/pipelines/pipeline_processor.h"

#include "ellm/pipelines/backbone.h"
#include "ellm/pipelines/statements.h"

#include "run/pipeline_internal.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "ellm/base/json.h"

namespace ellm::pipelines {
namespace internal {

void AddGeneration(PipelineOutput& r, const Generation& g) {
  r.prompt_tokens += g.prompt_tokens;
  r.generated_tokens += g.generated_tokens;
  r.prefill_ms += g.prefill_ms;
  r.decode_ms += g.decode_ms;
  r.constraint_ms += g.constraint_ms;
}

std::map<std::string, std::string> Vars(const std::vector<PipelineDoc>& docs,
                                        const std::string& params_json) {
  std::map<std::string, std::string> v;
  std::string all, titles;
  for (size_t i = 0; i < docs.size(); ++i) {
    std::string n = std::to_string(i + 1);
    v["document_" + n] = docs[i].text;
    all += (i ? "\n\n" : "") + std::string("=== Document ") + n + ": " + docs[i].title + " ===\n" +
           docs[i].text;
    titles += (i ? "; " : "") + docs[i].title;
  }
  v["document"] = docs.empty() ? "" : docs[0].text;
  v["title"] = docs.empty() ? "" : docs[0].title;
  v["documents"] = all;
  v["titles"] = titles;
  v["document_count"] = std::to_string(docs.size());
  v["params"] = params_json;
  StatusOr<nlohmann::json> params = ParseJson(params_json);
  if (params.ok() && params->is_object()) {
    for (const auto& [k, val] : params->items()) {
      if (val.is_string()) v["param." + k] = val.get<std::string>();
      if (val.is_number()) v["param." + k] = val.dump();
    }
  }
  return v;
}

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string FileName(const std::string& path) {
  std::string p = path.rfind("inline:", 0) == 0 ? path.substr(7) : path;
  return std::filesystem::path(p).filename().string();
}

}  // namespace internal

namespace {

using json = nlohmann::json;
using internal::AddGeneration;
using internal::kMargin;
using internal::Trim;
using internal::Vars;

int64_t TotalTokens(const std::vector<PipelineDoc>& docs) {
  int64_t t = 0;
  for (const PipelineDoc& d : docs) t += d.tokens;
  return t;
}

std::vector<std::string> Placeholders(const std::string& text) {
  std::vector<std::string> names;
  static const std::regex kRe(R"(\{\{\s*([^{}]*?)\s*\}\})");
  std::string clean = std::regex_replace(text, std::regex(R"(\{\{\{\{)"), "");
  for (auto it = std::sregex_iterator(clean.begin(), clean.end(), kRe);
       it != std::sregex_iterator(); ++it) {
    names.push_back((*it)[1].str());
  }
  return names;
}

// "pages 3-5" from the [page N] markers in `chunk`, or "" if it has none.
// A line the answer already said, in this section or another, goes (a
// small model repeats its best line under every heading).
std::string DropRepeatedLines(const std::string& text) {
  std::set<std::string> seen;
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(at, nl - at);
    at = nl + 1;
    std::string key = Trim(StripPageMarkers(line));
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool heading = key.starts_with("#");
    if (!heading && key.size() > 1 && !seen.insert(key).second) continue;
    out += line + (nl < text.size() ? "\n" : "");
  }
  return out;
}

std::string PageRange(const std::string& chunk) {
  static const std::regex kMarker(R"(\[page (\d+)\])");
  std::string first, last;
  for (auto it = std::sregex_iterator(chunk.begin(), chunk.end(), kMarker);
       it != std::sregex_iterator(); ++it) {
    if (first.empty()) first = (*it)[1].str();
    last = (*it)[1].str();
  }
  if (first.empty()) return "";
  return first == last ? "page " + first : "pages " + first + "-" + last;
}

const char* TypeName(JsonType t) {
  switch (t) {
    case JsonType::kString:
      return "string";
    case JsonType::kNumber:
      return "number";
    case JsonType::kBoolean:
      return "boolean";
    case JsonType::kArray:
      return "array";
    case JsonType::kObject:
      return "object";
  }
  return "?";
}

bool HasType(const json& v, JsonType t) {
  switch (t) {
    case JsonType::kString:
      return v.is_string();
    case JsonType::kNumber:
      return v.is_number();
    case JsonType::kBoolean:
      return v.is_boolean();
    case JsonType::kArray:
      return v.is_array();
    case JsonType::kObject:
      return v.is_object();
  }
  return false;
}

// The first JSON object in `text` (the longest prefix from the first '{'
// that parses), checked against `schema`.
StatusOr<json> ParseOutputObject(const std::string& text,
                                 const std::vector<std::pair<std::string, JsonType>>& schema) {
  size_t open = text.find('{');
  if (open == std::string::npos) return InvalidArgumentError("the answer holds no JSON object");
  json obj;
  bool parsed = false;
  for (size_t close = text.rfind('}'); close != std::string::npos && close > open;
       close = text.rfind('}', close - 1)) {
    // The model's text: bounded like any other.
    StatusOr<json> candidate = ParseJson(std::string_view(text).substr(open, close - open + 1));
    if (candidate.ok() && candidate->is_object()) {
      obj = std::move(*candidate);
      parsed = true;
      break;
    }
    if (close == 0) break;
  }
  if (!parsed) return InvalidArgumentError("the answer's JSON object does not parse");
  // Small models repeat list entries; a list of terms holds each once.
  for (auto& [key, value] : obj.items()) {
    if (!value.is_array()) continue;
    json unique = json::array();
    for (const json& v : value) {
      if (std::find(unique.begin(), unique.end(), v) == unique.end()) unique.push_back(v);
    }
    value = unique;
  }
  for (const auto& [key, type] : schema) {
    if (!obj.contains(key)) return InvalidArgumentError("the answer lacks key '" + key + "'");
    if (!HasType(obj[key], type)) {
      // The value's type, not the value: the message goes into logs, and
      // the value is generated from the document (PipelineResult::error_answer).
      return InvalidArgumentError("key '" + key + "' should be a " + TypeName(type) + ", not " +
                                  obj[key].type_name());
    }
  }
  return obj;
}

// [begin, end) of the body of "## heading" in Markdown `text`; nullopt when
// the heading is not there.
std::optional<std::pair<size_t, size_t>> SectionBody(const std::string& text,
                                                     const std::string& heading) {
  const std::string head = "## " + heading;
  size_t at = 0, after = 0;
  for (;; at = after) {
    at = text.find(head, at);
    if (at == std::string::npos) return std::nullopt;
    after = at + head.size();
    if ((at == 0 || text[at - 1] == '\n') && (after == text.size() || text[after] == '\n')) break;
  }
  // The body runs to the next heading line (blank lines before it excluded).
  const size_t body = std::min(after + 1, text.size());
  size_t end = text.find("\n## ", body - 1);
  if (end == std::string::npos) end = text.size();
  end = std::max(end, body);
  while (end > body && text[end - 1] == '\n') --end;
  return std::make_pair(body, end);
}

// The document's own sentences a section shows when the model's did not
// survive (backbone.h): two for what it is for and its conclusions, three
// risks, four figures.
int DefaultSentences(BackbonePart part) {
  switch (part) {
    case BackbonePart::kFigures:
      return 4;
    case BackbonePart::kRisks:
    case BackbonePart::kObligations:
      return 3;
    default:
      return 2;
  }
}

// Where a section left empty waits for its backbone sentences (no text of
// a section can hold the control character).
std::string BackboneSlot(size_t i) {
  return std::string("\x01") + "backbone " + std::to_string(i) + "\x01";
}

std::string NothingKept(const PipelineSpec::Section& sec) {
  return sec.verify_figures ? "(no figure could be verified in the source)"
                            : "(no statement could be traced to the source)";
}

// Most figure lines a section keeps after merging the map steps' ones.
constexpr size_t kMaxMergedFigureLines = 12;

}  // namespace

// Checks the figures of every `verify: figures` section of the Markdown
// `text` against all documents' pages. nullopt when no section asks for it;
// else the new text and the result JSON (faithfulness, unverified).
std::optional<std::pair<std::string, nlohmann::ordered_json>> PipelineProcessor::VerifySections(
    const std::string& text, const std::vector<std::vector<Page>>& source) const {
  std::vector<Page> pages;
  for (const auto& doc : source) pages.insert(pages.end(), doc.begin(), doc.end());
  bool any = false;
  std::string out = text + "\n";  // a last heading without a body still ends its line
  nlohmann::ordered_json unverified = nlohmann::ordered_json::array();
  nlohmann::ordered_json unsupported = nlohmann::ordered_json::array();
  nlohmann::ordered_json citations = nlohmann::ordered_json::array();
  nlohmann::ordered_json extracted = nlohmann::ordered_json::array();
  std::vector<BackboneWant> wants;  // sections left empty, for the document's own sentences
  std::vector<const PipelineSpec::Section*> backbone;
  std::vector<bool> joins;  // the backbone joins kept model prose (else stands alone)
  int total = 0, found = 0, statements = 0, supported = 0;
  std::vector<std::vector<std::string>> said;  // stems of the statements kept so far
  bool any_figures = false, any_statements = false;
  for (const auto& sec : spec_.sections) {
    if ((!sec.verify_figures && !sec.verify_statements) || sec.heading.empty()) continue;
    any = true;
    any_figures |= sec.verify_figures;
    any_statements |= sec.verify_statements;
    const auto where = SectionBody(out, sec.heading);
    if (!where) continue;
    const auto [body, end] = *where;
    std::string kept = out.substr(body, end - body);
    if (sec.verify_figures) {
      FigureCheck check = VerifyFigureLines(kept, pages);
      total += check.figures_total;
      found += check.figures_found;
      for (auto& line : check.unverified) {
        unverified.push_back(
            {{"section", sec.heading}, {"line", line}, {"reason", "a figure found nowhere"}});
      }
      for (auto& c : check.citations) citations.push_back(c);
      // A line of a figure section that states no figure is off its topic
      // (a small model fills "Key figures" with sentences).
      kept.clear();
      for (size_t a = 0; a < check.text.size();) {
        size_t nl = check.text.find('\n', a);
        if (nl == std::string::npos) nl = check.text.size();
        const std::string line = check.text.substr(a, nl - a);
        a = nl + 1;
        if (Trim(line).empty()) continue;
        if (FiguresIn(line).empty()) {
          unverified.push_back(
              {{"section", sec.heading}, {"line", Trim(line)}, {"reason", "no figure"}});
          continue;
        }
        kept += line + "\n";
      }
      while (!kept.empty() && kept.back() == '\n') kept.pop_back();
    }
    if (sec.verify_statements && !kept.empty()) {
      StatementCheck check = VerifyStatements(kept, pages, sec.verify_figures, &said);
      statements += check.statements;
      supported += check.supported;
      for (auto& sentence : check.unsupported)
        unsupported.push_back({{"section", sec.heading}, {"sentence", sentence}});
      kept = check.text;
    }
    if (!sec.extract.empty() && (kept.empty() || !sec.verify_figures)) {
      // Filled below, with every other such section at once: the section's
      // sentences when the model's are all gone, else one joins the model's
      // prose (a sentence the checks keep can still say little: "The report
      // is intended to provide a summary of the results.").
      const BackbonePart part = *ParseBackbonePart(sec.extract);
      const size_t k = sec.extract_sentences > 0 ? sec.extract_sentences : DefaultSentences(part);
      wants.push_back({part, kept.empty() ? k : 1});
      backbone.push_back(&sec);
      joins.push_back(!kept.empty());
      kept += (kept.empty() ? "" : "\n") + BackboneSlot(backbone.size() - 1);
    }
    if (kept.empty()) kept = NothingKept(sec);
    out.replace(body, end - body, kept);
  }
  if (!any) return std::nullopt;
  const auto own = ChooseForParts(pages, wants, &said);
  for (size_t i = 0; i < backbone.size(); ++i) {
    for (const ChosenSentence& c : own[i]) {
      extracted.push_back({{"section", backbone[i]->heading},
                           {"sentence", c.text},
                           {"page", c.page},
                           {"from", c.table ? "table" : "text"}});
    }
    const std::string slot = (joins[i] ? "\n" : "") + BackboneSlot(i);
    const std::string fill = own[i].empty() ? (joins[i] ? "" : NothingKept(*backbone[i]))
                                            : (joins[i] ? "\n" : "") + QuotedLines(own[i]);
    out.replace(out.find(slot), slot.size(), fill);
  }
  // One blank line before every heading, also after a body that was empty.
  static const std::regex kCramped(R"(([^\n])\n(## ))");
  out = std::regex_replace(out, kCramped, "$1\n\n$2");
  while (out.ends_with("\n")) out.pop_back();
  nlohmann::ordered_json faith = nlohmann::ordered_json::object();
  if (any_figures) {
    faith["figures"] = total;
    faith["figures_found"] = found;
    faith["removed_lines"] = unverified.size();
    faith["citations"] = citations.size();
  }
  if (any_statements) {
    faith["statements"] = statements;
    faith["statements_supported"] = supported;
    faith["removed_statements"] = unsupported.size();
  }
  nlohmann::ordered_json result = {{"faithfulness", std::move(faith)}};
  if (any_figures) {
    result["citations"] = std::move(citations);
    result["unverified"] = std::move(unverified);
  }
  if (any_statements) result["unsupported"] = std::move(unsupported);
  if (!extracted.empty()) {
    result["faithfulness"]["extracted_sentences"] = extracted.size();
    result["extracted"] = std::move(extracted);
  }
  return std::make_pair(out, result);
}

Status CheckPipelineTemplates(const PipelineSpec& spec) {
  std::set<std::string> known = {"document", "documents",      "title",
                                 "titles",   "document_count", "params"};
  for (int i = 1; i <= std::max(spec.max_documents, 1); ++i) {
    known.insert("document_" + std::to_string(i));
  }
  auto check = [&](const std::string& text, const std::set<std::string>& names,
                   const char* what) -> Status {
    for (const std::string& p : Placeholders(text)) {
      if (!names.count(p) && p.rfind("param.", 0) != 0) {
        return InvalidArgumentError("pipeline " + spec.source + ": " + what +
                                    " uses unknown placeholder '{{" + p + "}}'");
      }
    }
    return OkStatus();
  };
  ELLM_RETURN_IF_ERROR(check(spec.prompt_template, known, "prompt"));
  ELLM_RETURN_IF_ERROR(check(spec.system_prompt, known, "system"));
  return check(spec.map_prompt, {"chunk", "part", "parts", "title"}, "map_prompt");
}

StatusOr<std::vector<PipelineSpec>> LoadPipelineDirectory(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) {
      files.push_back(e.path().string());
    }
  }
  if (ec) return NotFoundError("pipelines directory '" + dir + "': " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<PipelineSpec> out;
  std::set<std::string> names;
  for (const std::string& f : files) {
    ELLM_ASSIGN_OR_RETURN(PipelineSpec spec, LoadPipelineFile(f));
    ELLM_RETURN_IF_ERROR(CheckPipelineTemplates(spec));
    if (!names.insert(spec.name).second) {
      return InvalidArgumentError("pipeline " + f + ": the name '" + spec.name +
                                  "' is already used by another file in " + dir);
    }
    out.push_back(std::move(spec));
  }
  if (out.empty()) return NotFoundError("no pipeline files (*.yaml) in '" + dir + "'");
  return out;
}

Status RegisterPipelines(const std::vector<PipelineSpec>& specs, TextGenerator* generator,
                         const ingest::ExtractOptions& extract, ProcessorRegistry* registry) {
  for (const PipelineSpec& spec : specs) {
    if (generator == nullptr) break;
    ELLM_RETURN_IF_ERROR(
        registry->Add(std::make_unique<PipelineProcessor>(spec, generator, extract)));
  }
  return registry->Add(MakeDocumentStatsProcessor(extract));
}

bool PipelineNeedsModel(std::string_view name) { return name != "document-stats"; }

std::string DefaultPipelinesDir() {
  if (const char* env = std::getenv("ELLM_PIPELINES_DIR")) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto installed = exe.parent_path().parent_path() / "share" / "ellm" / "pipelines";
    if (std::filesystem::is_directory(installed, ec)) return installed.string();
  }
  return ELLM_SOURCE_PIPELINES_DIR;
}

PipelineProcessor::PipelineProcessor(PipelineSpec spec, TextGenerator* generator,
                                     ingest::ExtractOptions extract)
    : spec_(std::move(spec)), generator_(generator), extract_(std::move(extract)) {
  for (const auto& [kind, sections] : spec_.kinds) {
    PipelineSpec variant = spec_;
    variant.kinds.clear();
    variant.sections = sections;
    variants_.emplace_back(kind,
                           std::make_unique<PipelineProcessor>(variant, generator_, extract_));
  }
}

PipelineResult PipelineProcessor::Load(const PipelineRequest& job, const std::atomic<bool>& cancel,
                                       std::vector<PipelineDoc>* docs, PipelineOutput* out) {
  const int n = static_cast<int>(job.documents.size());
  for (int i = 0; i < n; ++i) {
    if (cancel.load()) return PipelineResult::Cancelled();
    if (progress_) progress_({"extract", i, n});
    const ingest::JobDocument& jd = job.documents[i];
    auto doc = LoadJobDocument(jd, extract_);
    if (!doc.ok()) {
      return PipelineResult::FailedWith(DocumentErrorCode(doc.status()),
                                        DocumentName(i, n, jd) + ": " + doc.status().message(),
                                        doc.status());
    }
    std::string title = doc->metadata.title;
    if (title.empty()) title = std::filesystem::path(jd.is_inline ? jd.name : jd.path).filename();
    PipelineDoc d{title, ingest::RenderForModel(*doc), 0, std::move(doc->headings)};
    d.tokens = generator_->CountTokens(d.text);
    out->documents.push_back({i, jd.Label(), doc->metadata.sha256, doc->metadata.page_count,
                              d.tokens, OcrPagesOf(*doc)});
    docs->push_back(std::move(d));
  }
  if (progress_) progress_({"extract", n, n});
  return {};
}

std::vector<TextGenerator::Section> PipelineProcessor::GeneratorSections() const {
  std::vector<TextGenerator::Section> sections;
  if (spec_.sections.empty()) {
    sections.push_back({spec_.output_prefix, spec_.generation.max_tokens});
    return sections;
  }
  for (size_t i = 0; i < spec_.sections.size(); ++i) {
    const auto& s = spec_.sections[i];
    // A section without a heading continues the previous one on a new line.
    std::string before = i == 0 ? spec_.output_prefix : (s.heading.empty() ? "\n" : "\n\n");
    std::string head = s.heading.empty() ? "" : "## " + s.heading + "\n";
    if (spec_.output == OutputForm::kJson) before = i == 0 ? spec_.output_prefix : "";
    std::vector<std::string> stop = s.stop;
    if (spec_.output == OutputForm::kMarkdown && !s.heading.empty()) {
      // A heading the model writes itself ends its section: the next one is ours.
      if (stop.empty()) stop = spec_.generation.stop;
      stop.push_back("\n#");
    }
    sections.push_back({before + head + s.lead, s.max_tokens, stop});
  }
  return sections;
}

PipelineResult PipelineProcessor::MapReduce(std::vector<PipelineDoc>& docs, int64_t available,
                                            const std::string& params_json,
                                            const std::atomic<bool>& cancel, PipelineOutput* r,
                                            MappedLines* mapped) {
  auto count = [&](const std::string& t) { return generator_->CountTokens(t); };
  const int64_t per_doc = available / static_cast<int64_t>(docs.size());
  GenerationSettings map_settings = spec_.generation;
  map_settings.max_tokens = spec_.map_max_tokens;
  map_settings.stop.push_back("\n\n");
  // Section-wise: a one-document Markdown pipeline with sections maps each
  // chunk through its own sections (the structure the reduce step is asked
  // for, figures checked and cited per chunk), instead of free notes; a
  // chunk is then sized like the document it stands for (per_doc).
  const bool section_wise =
      docs.size() == 1 && !spec_.sections.empty() && spec_.output == OutputForm::kMarkdown;
  const int64_t chunk_budget = section_wise ? per_doc
                                            : generator_->context() - count(spec_.map_prompt) -
                                                  spec_.map_max_tokens -
                                                  count(spec_.system_prompt) - kMargin;
  if (chunk_budget < 64) {
    return PipelineResult::Failed("context_overflow", "the context is too small for the map step");
  }
  const bool prefix_bullet = Trim(spec_.map_prompt).ends_with("-");
  int levels = 0, chunks_total = 0;
  while (TotalTokens(docs) > available) {
    if (++levels > kMaxLevels) {
      return PipelineResult::Failed("context_overflow", "the notes still do not fit after " +
                                                            std::to_string(kMaxLevels) +
                                                            " levels of map-reduce");
    }
    for (PipelineDoc& d : docs) {
      if (d.tokens <= per_doc) continue;
      std::vector<std::string> chunks = SplitForBudget(d.text, chunk_budget, count);
      std::string notes;
      for (size_t k = 0; k < chunks.size(); ++k) {
        if (cancel.load()) return PipelineResult::Cancelled();
        const std::string part = std::to_string(k + 1), parts = std::to_string(chunks.size());
        if (progress_) {
          progress_({"map " + part + "/" + parts, static_cast<int64_t>(k),
                     static_cast<int64_t>(chunks.size())});
        }
        PipelineDoc piece = d;
        piece.text = chunks[k];
        auto prompt =
            section_wise
                ? RenderTemplate(spec_.prompt_template, Vars({piece}, params_json))
                : RenderTemplate(
                      spec_.map_prompt,
                      {{"chunk", chunks[k]}, {"part", part}, {"parts", parts}, {"title", d.title}});
        if (!prompt.ok()) {
          return PipelineResult::Failed("pipeline_error", prompt.status().message());
        }
        auto g = section_wise ? generator_->GenerateSections(spec_.system_prompt, *prompt,
                                                             spec_.format, spec_.generation,
                                                             GeneratorSections(), cancel, nullptr)
                              : generator_->Generate(spec_.system_prompt, *prompt, spec_.format,
                                                     map_settings, cancel, nullptr);
        if (!g.ok()) {
          return PipelineResult::FailedWith("engine_error", g.status().ToString(), g.status());
        }
        if (g->cancelled) return PipelineResult::Cancelled();
        AddGeneration(*r, *g);
        std::string note = Trim(g->text);
        if (section_wise) {
          // Figures found nowhere in this chunk go now; the kept ones carry
          // their pages into the reduce step ("[p. N]").
          if (auto checked = VerifySections(note, {SplitPages(chunks[k])})) note = checked->first;
          for (const auto& sec : spec_.sections) {
            const auto where = sec.verify_figures ? SectionBody(note, sec.heading) : std::nullopt;
            if (!where || levels > 1) continue;
            std::string body = note.substr(where->first, where->second - where->first);
            for (size_t a = 0; a <= body.size();) {
              size_t nl = body.find('\n', a);
              if (nl == std::string::npos) nl = body.size();
              (*mapped)[sec.heading].push_back(body.substr(a, nl - a));
              a = nl + 1;
            }
          }
        } else {
          note = (prefix_bullet ? "-" : "") + note;
        }
        std::string range = PageRange(chunks[k]);
        notes += (notes.empty() ? "" : "\n\n") + std::string("Part ") + part +
                 (range.empty() ? "" : " (" + range + ")") + ":\n" + note;
      }
      chunks_total += static_cast<int>(chunks.size());
      d.text = std::move(notes);
      d.tokens = count(d.text);
    }
  }
  r->strategy = std::string(section_wise ? "map-reduce, section-wise (" : "map-reduce (") +
                std::to_string(chunks_total) + " chunks, " + std::to_string(levels) +
                (levels == 1 ? " level)" : " levels)");
  return {};
}

PipelineResult PipelineProcessor::Run(const PipelineRequest& job, const std::atomic<bool>& cancel) {
  PipelineResult result = RunSteps(job, cancel);
  if (result.output) NoteOcrPages(&*result.output);
  return result;
}

PipelineResult PipelineProcessor::RunSteps(const PipelineRequest& job,
                                           const std::atomic<bool>& cancel) {
  const int n = static_cast<int>(job.documents.size());
  if (n < spec_.min_documents || n > spec_.max_documents) {
    return PipelineResult::Failed(
        "invalid_documents",
        "pipeline '" + spec_.name + "' takes " + std::to_string(spec_.min_documents) + " to " +
            std::to_string(spec_.max_documents) + " documents, got " + std::to_string(n));
  }
  PipelineOutput out;
  std::vector<PipelineDoc> docs;
  PipelineResult loaded = Load(job, cancel, &docs, &out);
  if (loaded.cancelled || !loaded.error_code.empty()) return loaded;
  if (spec_.kinds.empty() || docs.empty()) {
    return RunLoaded(job, std::move(docs), std::move(out), cancel);
  }
  return RunKind(job, std::move(docs), std::move(out), cancel);
}

PipelineResult PipelineProcessor::RunLoaded(const PipelineRequest& job,
                                            std::vector<PipelineDoc> docs, PipelineOutput out,
                                            const std::atomic<bool>& cancel) {
  const int n = static_cast<int>(docs.size());
  if (spec_.compare_clauses) return RunClauseComparison(docs, std::move(out), cancel);
  if (!spec_.fields.empty()) return RunFields(job, docs, std::move(out), cancel);
  // The text as read, for checking figures after map-reduce replaced it.
  std::vector<std::vector<Page>> source_pages;
  MappedLines mapped;  // verified figure lines of section-wise map steps
  for (const PipelineDoc& d : docs) source_pages.push_back(SplitPages(d.text));

  auto count = [&](const std::string& t) { return generator_->CountTokens(t); };
  PipelineOutput& r = out;
  auto render = [&](const std::vector<PipelineDoc>& ds) {
    return RenderTemplate(spec_.prompt_template, Vars(ds, job.params_json));
  };
  std::vector<PipelineDoc> empty_docs = docs;
  for (PipelineDoc& d : empty_docs) d.text.clear();
  auto overhead = render(empty_docs);
  if (!overhead.ok()) return PipelineResult::Failed("pipeline_error", overhead.status().message());
  int64_t answer_room = spec_.generation.max_tokens;
  if (!spec_.sections.empty()) {
    answer_room = 0;
    for (const auto& s : spec_.sections)
      answer_room += s.max_tokens + count(s.heading + s.lead) + 4;
  }
  const int64_t available = generator_->context() - answer_room - count(*overhead) -
                            count(spec_.system_prompt) - count(spec_.output_prefix) - kMargin;
  r.strategy = "single-pass";
  // A longer document than the model digests well in one pass goes
  // section-wise even when it fits (PipelineSpec::single_pass_max_tokens).
  std::string why;
  int64_t limit = available;
  if (spec_.overflow == OverflowStrategy::kMapReduce && !spec_.sections.empty()) {
    const auto [rule, tokens] = SinglePassLimit(job.params_json);
    if (tokens > 0 && tokens < available && TotalTokens(docs) > tokens) {
      limit = tokens;
      why = "; " + std::to_string(TotalTokens(docs)) + " tokens > single_pass_max_tokens " +
            std::to_string(tokens) + " (" + rule + ")";
    }
  }
  if (TotalTokens(docs) > available && why.empty()) {
    why = "; " + std::to_string(TotalTokens(docs)) + " tokens > the context's room " +
          std::to_string(available);
  }
  if (TotalTokens(docs) > limit) {
    if (spec_.overflow == OverflowStrategy::kFail || available <= 0) {
      return PipelineResult::Failed("context_overflow",
                                    "the documents have " + std::to_string(TotalTokens(docs)) +
                                        " tokens; the context leaves room for " +
                                        std::to_string(std::max<int64_t>(available, 0)));
    }
    if (spec_.overflow == OverflowStrategy::kTruncate) {
      const int64_t per_doc = available / n;
      for (PipelineDoc& d : docs) {
        if (d.tokens <= per_doc) continue;
        d.text = FirstForBudget(d.text, per_doc, count);
        d.tokens = count(d.text);
      }
      r.strategy = "truncate";
    } else {
      PipelineResult reduced = MapReduce(docs, limit, job.params_json, cancel, &r, &mapped);
      if (reduced.cancelled || !reduced.error_code.empty()) return reduced;
    }
    r.strategy += why;
  }

  auto prompt = render(docs);
  if (!prompt.ok()) return PipelineResult::Failed("pipeline_error", prompt.status().message());
  const std::vector<TextGenerator::Section> sections = GeneratorSections();
  // The first document's block may be shared with other jobs (one contract
  // compared with many): split the prompt there, and offer it to the
  // generator's prefix cache when the pipeline opts in (prefix_cache).
  SharedPrefix shared_prefix{.cache = spec_.prefix_cache};
  if (r.strategy == "single-pass" && !docs.empty() && !docs.front().text.empty()) {
    const size_t at = prompt->find(docs.front().text);
    if (at != std::string::npos) shared_prefix.chars = at + docs.front().text.size();
  }
  auto g =
      generator_->GenerateSections(spec_.system_prompt, *prompt, spec_.format, spec_.generation,
                                   sections, cancel, progress_, shared_prefix);
  if (!g.ok()) return PipelineResult::FailedWith("engine_error", g.status().ToString(), g.status());
  if (g->cancelled) return PipelineResult::Cancelled();
  AddGeneration(r, *g);
  std::string answer = g->text;
  if (spec_.output == OutputForm::kJson) {
    auto obj = ParseOutputObject(answer, spec_.schema);
    if (!obj.ok()) {
      PipelineResult failed = PipelineResult::Failed(
          "output_invalid", "pipeline '" + spec_.name + "': " + obj.status().message());
      failed.error_answer = answer.substr(0, 200);
      return failed;
    }
    r.output_json = obj->dump();
    r.output_text = obj->dump(2);
  } else {
    PipelineResult step = MarkdownAnswer(answer, docs, source_pages, cancel, &mapped, &r);
    if (step.cancelled || !step.error_code.empty()) return step;
  }
  return Finish(std::move(out));
}

// The Markdown answer's sections cleaned, the map steps' and the outline's
// figure lines merged, every section checked (VerifySections) and the
// outline appended; an empty result on success.
PipelineResult PipelineProcessor::MarkdownAnswer(const std::string& answer,
                                                 const std::vector<PipelineDoc>& docs,
                                                 const std::vector<std::vector<Page>>& source_pages,
                                                 const std::atomic<bool>& cancel,
                                                 MappedLines* mapped_lines, PipelineOutput* r) {
  MappedLines& mapped = *mapped_lines;
  r->output_text = Trim(spec_.sections.empty() ? answer : DropRepeatedLines(answer));
  // The outline reads each top-level section on its own; the key figures
  // it finds join the figure section like a map step's.
  std::string outline_lines;
  nlohmann::ordered_json outline_json;
  if (!spec_.outline.empty() && docs.size() == 1) {
    std::vector<std::string> figures;
    PipelineResult step =
        Outline(docs[0], source_pages[0], cancel, r, &outline_lines, &outline_json, &figures);
    if (step.cancelled || !step.error_code.empty()) return step;
    for (const auto& sec : spec_.sections) {
      if (!sec.verify_figures) continue;
      auto& lines = mapped[sec.heading];
      lines.insert(lines.end(), figures.begin(), figures.end());
      break;
    }
  }
  for (const auto& [heading, lines] : mapped) {
    const auto where = SectionBody(r->output_text, heading);
    if (!where) continue;
    const std::string body = r->output_text.substr(where->first, where->second - where->first);
    r->output_text.replace(where->first, where->second - where->first,
                           MergeFigureLines(body, lines, kMaxMergedFigureLines));
  }
  std::optional<nlohmann::ordered_json> result;
  if (auto checked = VerifySections(r->output_text, source_pages)) {
    r->output_text = std::move(checked->first);
    result = std::move(checked->second);
  }
  if (!outline_lines.empty()) {
    r->output_text += "\n\n## " + spec_.outline + "\n" + Trim(outline_lines);
    if (!result) result = nlohmann::ordered_json::object();
    (*result)["outline"] = std::move(outline_json);
  }
  if (result) r->output_json = result->dump();
  return {};
}

PipelineResult PipelineProcessor::Finish(PipelineOutput out) const {
  out.model_fingerprint = generator_->fingerprint();
  out.pipeline_name = spec_.name;
  out.pipeline_version = spec_.version;
  PipelineResult result;
  result.output = std::move(out);
  return result;
}

}  // namespace ellm::pipelines
