#include "ellm/pipelines/pipeline_spec.h"

#include "ellm/pipelines/backbone.h"

#include <yaml-cpp/yaml.h>

#include "ellm/engine/constraint.h"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace ellm::pipelines {
namespace {

// yaml-cpp throws; every exception is turned into a Status in this file.
Status At(const std::string& source, const YAML::Node& node, const std::string& what) {
  std::string where = source;
  if (node.IsDefined() && node.Mark().line >= 0)
    where += ":" + std::to_string(node.Mark().line + 1);
  return InvalidArgumentError("pipeline " + where + ": " + what);
}

template <typename T>
Status ReadScalar(const std::string& src, const YAML::Node& parent, const char* key, T& out,
                  bool required) {
  YAML::Node n = parent[key];
  if (!n) {
    return required ? At(src, parent, std::string("missing required key '") + key + "'")
                    : OkStatus();
  }
  try {
    out = n.as<T>();
  } catch (const YAML::Exception&) {
    return At(src, n, std::string("key '") + key + "' has the wrong type");
  }
  return OkStatus();
}

Status ParseFields(const YAML::Node& root, const std::string& src, PipelineSpec& spec) {
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "differences_prompt", spec.differences_prompt, false));
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "differences_lead", spec.differences_lead, false));
  ELLM_RETURN_IF_ERROR(
      ReadScalar(src, root, "differences_max_tokens", spec.differences_max_tokens, false));
  if (spec.differences_max_tokens <= 0) {
    return At(src, root["differences_max_tokens"], "differences_max_tokens must be positive");
  }
  std::string compare;
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "compare", compare, false));
  if (!compare.empty() && compare != "clauses") {
    return At(src, root["compare"], "compare '" + compare + "': expected clauses");
  }
  spec.compare_clauses = compare == "clauses";
  YAML::Node fields = root["fields"];
  if (spec.compare_clauses) {
    if (fields) return At(src, fields, "compare: clauses computes its terms: no fields");
    if (root["sections"]) return At(src, root["sections"], "compare: clauses takes no sections");
    if (spec.min_documents != 2 || spec.max_documents != 2) {
      return At(src, root["compare"], "compare: clauses needs documents {min: 2, max: 2}");
    }
    return OkStatus();
  }
  if (!fields) {
    if (!spec.differences_prompt.empty())
      return At(src, root["differences_prompt"], "differences_prompt needs fields or compare");
    return OkStatus();
  }
  if (!fields.IsSequence() || fields.size() == 0) return At(src, fields, "fields must be a list");
  std::set<std::string> names;
  for (const auto& n : fields) {
    if (!n.IsMap()) return At(src, n, "each field is a mapping: name, label, type, lead");
    for (const auto& kv : n) {
      static const std::set<std::string> kFieldKeys = {"name", "label",    "type",
                                                       "lead", "keywords", "max_tokens"};
      if (!kFieldKeys.count(kv.first.as<std::string>())) {
        return At(src, kv.first, "unknown field key '" + kv.first.as<std::string>() + "'");
      }
    }
    PipelineSpec::Field f;
    std::string type = "text";
    ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "name", f.name, true));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "label", f.label, false));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "type", type, false));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "lead", f.lead, true));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "keywords", f.keywords, false));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "max_tokens", f.max_tokens, false));
    if (!std::regex_match(f.name, std::regex("[a-z0-9_]+"))) {
      return At(src, n["name"], "field name '" + f.name + "' must be lowercase letters, digits, _");
    }
    if (!names.insert(f.name).second) return At(src, n["name"], "field '" + f.name + "' twice");
    auto kind = ParseFactKind(type);
    if (!kind.ok()) return At(src, n["type"], kind.status().message());
    f.type = *kind;
    if (f.label.empty()) f.label = f.name;
    if (f.max_tokens <= 0) return At(src, n["max_tokens"], "max_tokens must be positive");
    spec.fields.push_back(std::move(f));
  }
  if (!spec.sections.empty() || !spec.output_prefix.empty() ||
      !spec.generation.json_schema.empty()) {
    return At(src, fields,
              "fields write the answer themselves: no sections, output_prefix or "
              "generation.json_schema");
  }
  if (spec.max_documents > 2) return At(src, fields, "fields take one or two documents");
  return OkStatus();
}

// A list of sections: heading, lead, max_tokens, stop, verify, extract,
// extract_sentences.
Status ParseSectionList(const YAML::Node& secs, const std::string& src,
                        std::vector<PipelineSpec::Section>* out) {
  {
    if (!secs.IsSequence()) return At(src, secs, "sections must be a list");
    for (const auto& n : secs) {
      if (!n.IsMap()) return At(src, n, "each section is a mapping: heading, lead, max_tokens");
      for (const auto& kv : n) {
        std::string k = kv.first.as<std::string>();
        if (k != "heading" && k != "lead" && k != "max_tokens" && k != "stop" && k != "verify" &&
            k != "extract" && k != "extract_sentences") {
          return At(src, kv.first, "unknown section key '" + k + "'");
        }
      }
      PipelineSpec::Section sec;
      ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "heading", sec.heading, false));
      ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "lead", sec.lead, false));
      ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "max_tokens", sec.max_tokens, false));
      ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "stop", sec.stop, false));
      if (sec.max_tokens < 0) return At(src, n["max_tokens"], "max_tokens must be >= 0");
      std::vector<std::string> verify;
      if (YAML::Node v = n["verify"]; v && v.IsScalar()) {
        verify.push_back(v.as<std::string>());
      } else {
        ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "verify", verify, false));
      }
      for (const std::string& what : verify) {
        if (what == "figures") {
          sec.verify_figures = true;
        } else if (what == "statements") {
          sec.verify_statements = true;
        } else {
          return At(src, n["verify"], "verify '" + what + "': expected figures or statements");
        }
      }
      ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "extract", sec.extract, false));
      ELLM_RETURN_IF_ERROR(ReadScalar(src, n, "extract_sentences", sec.extract_sentences, false));
      if (!sec.extract.empty() && !ParseBackbonePart(sec.extract)) {
        return At(src, n["extract"],
                  "extract '" + sec.extract +
                      "': expected purpose, figures, risks, conclusions or obligations");
      }
      if (sec.extract_sentences < 0 || sec.extract_sentences > 20) {
        return At(src, n["extract_sentences"], "extract_sentences must be 0..20");
      }
      out->push_back(sec);
    }
  }
  return OkStatus();
}

// sections, and kinds: {manual: {sections: [...]}, contract: {...}}.
Status ParseSections(const YAML::Node& root, const std::string& src, PipelineSpec& spec) {
  if (YAML::Node secs = root["sections"]) {
    ELLM_RETURN_IF_ERROR(ParseSectionList(secs, src, &spec.sections));
  }
  YAML::Node kinds = root["kinds"];
  if (!kinds) return OkStatus();
  if (!kinds.IsMap()) return At(src, kinds, "kinds must map a kind to its sections");
  if (spec.sections.empty()) return At(src, kinds, "kinds need the report's own sections");
  for (const auto& kv : kinds) {
    const std::string kind = kv.first.as<std::string>();
    if (kind != "manual" && kind != "contract") {
      return At(src, kv.first, "kind '" + kind + "': expected manual or contract");
    }
    if (!kv.second.IsMap() || !kv.second["sections"] || kv.second.size() != 1) {
      return At(src, kv.second, "kind '" + kind + "' takes one key, sections");
    }
    std::vector<PipelineSpec::Section> sections;
    ELLM_RETURN_IF_ERROR(ParseSectionList(kv.second["sections"], src, &sections));
    if (sections.empty()) return At(src, kv.second, "kind '" + kind + "' has no sections");
    spec.kinds.emplace_back(kind, std::move(sections));
  }
  return OkStatus();
}

Status ParseInto(const YAML::Node& root, const std::string& src, PipelineSpec& spec) {
  if (!root.IsMap()) return At(src, root, "expected a mapping at the top level");
  static const std::set<std::string> kKeys = {"name",
                                              "version",
                                              "system",
                                              "prompt",
                                              "documents",
                                              "generation",
                                              "output",
                                              "overflow",
                                              "format",
                                              "schema",
                                              "output_prefix",
                                              "map_prompt",
                                              "map_max_tokens",
                                              "single_pass_max_tokens",
                                              "outline",
                                              "outline_terms",
                                              "description",
                                              "sections",
                                              "kinds",
                                              "fields",
                                              "compare",
                                              "differences_prompt",
                                              "differences_max_tokens",
                                              "differences_lead",
                                              "prefix_cache"};
  for (const auto& kv : root) {
    std::string k = kv.first.as<std::string>();
    if (!kKeys.count(k)) return At(src, kv.first, "unknown key '" + k + "'");
  }
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "name", spec.name, true));
  if (!std::regex_match(spec.name, std::regex("[a-z0-9][a-z0-9-]*"))) {
    return At(src, root["name"],
              "name '" + spec.name + "' must be lowercase letters, digits and '-'");
  }
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "version", spec.version, true));
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "system", spec.system_prompt, false));
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "prompt", spec.prompt_template, true));
  if (YAML::Node d = root["documents"]) {
    ELLM_RETURN_IF_ERROR(ReadScalar(src, d, "min", spec.min_documents, false));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, d, "max", spec.max_documents, false));
    if (spec.min_documents < 0 || spec.max_documents < spec.min_documents) {
      return At(src, d, "documents: need 0 <= min <= max");
    }
  }
  if (YAML::Node g = root["generation"]) {
    GenerationSettings& gs = spec.generation;
    ELLM_RETURN_IF_ERROR(ReadScalar(src, g, "max_tokens", gs.max_tokens, false));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, g, "temperature", gs.temperature, false));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, g, "top_p", gs.top_p, false));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, g, "top_k", gs.top_k, false));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, g, "repeat_penalty", gs.repeat_penalty, false));
    ELLM_RETURN_IF_ERROR(
        ReadScalar(src, g, "stop_on_repeated_line", gs.stop_on_repeated_line, false));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, g, "stop", gs.stop, false));
    ELLM_RETURN_IF_ERROR(ReadScalar(src, g, "json_schema", gs.json_schema, false));
    if (!gs.json_schema.empty()) {
      if (Status s = ValidateJsonSchema(gs.json_schema); !s.ok()) {
        return At(src, g["json_schema"], "generation.json_schema: " + s.message());
      }
    }
    if (gs.max_tokens <= 0)
      return At(src, g["max_tokens"], "generation.max_tokens must be positive");
    if (gs.temperature < 0) return At(src, g["temperature"], "generation.temperature must be >= 0");
    if (gs.top_p <= 0 || gs.top_p > 1)
      return At(src, g["top_p"], "generation.top_p must be in (0, 1]");
  }
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "output_prefix", spec.output_prefix, false));
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "prefix_cache", spec.prefix_cache, false));
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "map_prompt", spec.map_prompt, false));
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "map_max_tokens", spec.map_max_tokens, false));
  if (spec.map_max_tokens <= 0) return At(src, root["map_max_tokens"], "must be positive");
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "outline", spec.outline, false));
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "outline_terms", spec.outline_terms, false));
  if (spec.outline_terms < 0 || spec.outline_terms > 20) {
    return At(src, root["outline_terms"], "outline_terms must be between 0 and 20");
  }
  if (spec.outline_terms > 0 && spec.outline.empty()) {
    return At(src, root["outline_terms"], "outline_terms needs an outline heading (outline:)");
  }
  if (YAML::Node sp = root["single_pass_max_tokens"]) {
    auto tokens = [&](const YAML::Node& n, int64_t* out) -> Status {
      try {
        *out = n.as<int64_t>();
      } catch (const YAML::Exception&) {
        return At(src, n, "single_pass_max_tokens: expected a number of tokens");
      }
      if (*out < 0) return At(src, n, "single_pass_max_tokens must be >= 0");
      return OkStatus();
    };
    PipelineSpec::SinglePassRule fallback;
    bool has_default = false;
    if (sp.IsMap()) {
      for (const auto& kv : sp) {
        PipelineSpec::SinglePassRule rule;
        rule.model = kv.first.as<std::string>();
        ELLM_RETURN_IF_ERROR(tokens(kv.second, &rule.tokens));
        if (rule.model == "default") {
          rule.model.clear();
          fallback = rule;
          has_default = true;
        } else {
          spec.single_pass_max_tokens.push_back(rule);
        }
      }
    } else {
      ELLM_RETURN_IF_ERROR(tokens(sp, &fallback.tokens));
      has_default = true;
    }
    if (has_default) spec.single_pass_max_tokens.push_back(fallback);
  }
  ELLM_RETURN_IF_ERROR(ParseSections(root, src, spec));
  ELLM_RETURN_IF_ERROR(ParseFields(root, src, spec));
  std::string format = "plain";
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "format", format, false));
  if (format == "plain")
    spec.format = PromptFormat::kPlain;
  else if (format == "chat")
    spec.format = PromptFormat::kChat;
  else
    return At(src, root["format"], "format '" + format + "': expected plain or chat");
  if (YAML::Node schema = root["schema"]) {
    if (!schema.IsMap()) return At(src, schema, "schema must map keys to types");
    static const std::map<std::string, JsonType> kTypes = {{"string", JsonType::kString},
                                                           {"number", JsonType::kNumber},
                                                           {"boolean", JsonType::kBoolean},
                                                           {"array", JsonType::kArray},
                                                           {"object", JsonType::kObject}};
    for (const auto& kv : schema) {
      std::string type = kv.second.IsScalar() ? kv.second.as<std::string>() : "";
      auto it = kTypes.find(type);
      if (it == kTypes.end()) {
        return At(src, kv.second,
                  "schema type '" + type + "': expected string, number, boolean, array or object");
      }
      spec.schema.emplace_back(kv.first.as<std::string>(), it->second);
    }
  }
  std::string output = "markdown", overflow = "map-reduce";
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "output", output, false));
  ELLM_RETURN_IF_ERROR(ReadScalar(src, root, "overflow", overflow, false));
  if (output == "markdown")
    spec.output = OutputForm::kMarkdown;
  else if (output == "json")
    spec.output = OutputForm::kJson;
  else
    return At(src, root["output"], "output '" + output + "': expected markdown or json");
  if (overflow == "map-reduce")
    spec.overflow = OverflowStrategy::kMapReduce;
  else if (overflow == "truncate")
    spec.overflow = OverflowStrategy::kTruncate;
  else if (overflow == "fail")
    spec.overflow = OverflowStrategy::kFail;
  else
    return At(src, root["overflow"],
              "overflow '" + overflow + "': expected map-reduce, truncate or fail");
  if (spec.output == OutputForm::kJson && spec.schema.empty() && spec.fields.empty()) {
    return At(src, root["output"], "output: json needs a schema (keys and their types)");
  }
  if (spec.output == OutputForm::kJson) {
    for (const auto& sec : spec.sections) {
      if (!sec.heading.empty()) {
        return At(src, root["sections"], "sections of a json output take no heading");
      }
    }
  }
  if (!spec.generation.json_schema.empty()) {
    if (spec.output != OutputForm::kJson) {
      return At(src, root["generation"], "generation.json_schema is for output: json");
    }
    if (!spec.sections.empty() || !spec.output_prefix.empty()) {
      return At(src, root["generation"],
                "generation.json_schema writes the whole object: it takes no sections or "
                "output_prefix");
    }
  }
  if (spec.output != OutputForm::kJson && !spec.schema.empty()) {
    return At(src, root["schema"], "schema is only for output: json");
  }
  if (!spec.fields.empty() && !spec.schema.empty()) {
    return At(src, root["schema"], "a pipeline with fields has its own result form: no schema");
  }
  return OkStatus();
}

}  // namespace

StatusOr<PipelineSpec> ParsePipeline(const std::string& yaml_text, const std::string& source) {
  PipelineSpec spec;
  spec.source = source;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    ELLM_RETURN_IF_ERROR(ParseInto(root, source, spec));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError("pipeline " + source + ":" + std::to_string(e.mark.line + 1) +
                                ": " + e.msg);
  }
  return spec;
}

StatusOr<PipelineSpec> LoadPipelineFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read pipeline file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParsePipeline(ss.str(), path);
}

StatusOr<std::string> RenderTemplate(const std::string& text,
                                     const std::map<std::string, std::string>& vars) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find("{{", i);
    if (open == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    out.append(text, i, open - i);
    if (text.compare(open, 4, "{{{{") == 0) {
      out += "{{";
      i = open + 4;
      continue;
    }
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) {
      return InvalidArgumentError("template: unclosed '{{' at offset " + std::to_string(open));
    }
    std::string name = text.substr(open + 2, close - open - 2);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    auto it = vars.find(name);
    if (it == vars.end())
      return InvalidArgumentError("template: unknown placeholder '{{" + name + "}}'");
    out += it->second;
    i = close + 2;
  }
  return out;
}

}  // namespace ellm::pipelines
