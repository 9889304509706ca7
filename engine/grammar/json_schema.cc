#include "grammar/json_schema.h"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ellm/base/json.h"

namespace ellm::grammar {

using Json = nlohmann::ordered_json;

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const Json& doc) : doc_(doc) {}

  StatusOr<Schema> Run() {
    Schema s;
    out_ = &s.nodes_;
    ELLM_ASSIGN_OR_RETURN(s.root_, Compile(doc_, "#"));
    return s;
  }

  // The node for "any JSON value" (objects with any keys, arrays of anything).
  int AnyValue() {
    if (any_ >= 0) return any_;
    any_ = Add(SchemaNode{.kind = NodeKind::kAnyOf});
    const int object = Add(SchemaNode{.kind = NodeKind::kObject});
    const int array = Add(SchemaNode{.kind = NodeKind::kArray});
    const int string = Add(SchemaNode{.kind = NodeKind::kString});
    const int number = Add(SchemaNode{.kind = NodeKind::kNumber});
    const int literal =
        Add(SchemaNode{.kind = NodeKind::kLiterals, .literals = {"true", "false", "null"}});
    (*out_)[object].additional = any_;
    (*out_)[array].items = any_;
    (*out_)[any_].alternatives = {object, array, string, number, literal};
    return any_;
  }

  void Use(std::vector<SchemaNode>* out) { out_ = out; }

 private:
  int Add(SchemaNode n) {
    out_->push_back(std::move(n));
    return static_cast<int>(out_->size()) - 1;
  }

  static Status Bad(const std::string& where, const std::string& what) {
    return InvalidArgumentError("JSON schema at " + where + ": " + what);
  }

  // One level of recursion per schema within a schema and per $ref
  // followed: the JSON's nesting bounds the first, but not a chain of
  // $defs each naming the next, so both count here.
  StatusOr<int> Compile(const Json& s, const std::string& where) {
    if (depth_ >= kMaxGeneratedJsonDepth) {
      return Bad(where, "nested deeper than " + std::to_string(kMaxGeneratedJsonDepth) +
                            " levels (each $ref followed counts as one)");
    }
    ++depth_;
    StatusOr<int> node = CompileLevel(s, where);
    --depth_;
    return node;
  }

  StatusOr<int> CompileLevel(const Json& s, const std::string& where) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) return Bad(where, "'false' accepts nothing");
      return AnyValue();
    }
    if (!s.is_object()) return Bad(where, "expected an object or a boolean");
    static const char* const kKnown[] = {"type",
                                         "properties",
                                         "required",
                                         "additionalProperties",
                                         "items",
                                         "minItems",
                                         "maxItems",
                                         "minLength",
                                         "maxLength",
                                         "format",
                                         "enum",
                                         "const",
                                         "anyOf",
                                         "oneOf",
                                         "$ref",
                                         "$defs",
                                         "definitions",
                                         "$schema",
                                         "$id",
                                         "title",
                                         "description",
                                         "default",
                                         "examples",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "exclusiveMaximum"};
    for (const auto& [key, value] : s.items()) {
      if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
        return UnimplementedError("JSON schema at " + where + ": keyword '" + key +
                                  "' is not supported by constrained decoding");
      }
    }
    if (s.contains("maximum") || s.contains("exclusiveMaximum") || s.contains("exclusiveMinimum") ||
        (s.contains("minimum") && !(s["minimum"].is_number() && s["minimum"].get<double>() == 0))) {
      return UnimplementedError("JSON schema at " + where +
                                ": numeric bounds other than \"minimum\": 0 are not supported by "
                                "constrained decoding");
    }
    if (s.contains("$ref")) return Ref(s["$ref"], where);
    if (s.contains("const")) {
      return Add(SchemaNode{.kind = NodeKind::kLiterals, .literals = {s["const"].dump()}});
    }
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty())
        return Bad(where, "enum must be a non-empty array");
      if (s["enum"].size() > 64) {
        return UnimplementedError("JSON schema at " + where + ": more than 64 enum values");
      }
      SchemaNode n{.kind = NodeKind::kLiterals};
      for (const auto& v : s["enum"]) n.literals.push_back(v.dump());
      return Add(std::move(n));
    }
    for (const char* alt : {"anyOf", "oneOf"}) {
      if (!s.contains(alt)) continue;
      if (!s[alt].is_array() || s[alt].empty())
        return Bad(where, std::string(alt) + " must be a non-empty array");
      std::vector<int> alts;
      for (size_t i = 0; i < s[alt].size(); ++i) {
        ELLM_ASSIGN_OR_RETURN(int a,
                              Compile(s[alt][i], where + "/" + alt + "/" + std::to_string(i)));
        alts.push_back(a);
      }
      return Add(SchemaNode{.kind = NodeKind::kAnyOf, .alternatives = std::move(alts)});
    }
    if (!s.contains("type")) {
      if (s.contains("properties")) return Typed(s, "object", where);
      if (s.contains("items")) return Typed(s, "array", where);
      return AnyValue();
    }
    const Json& type = s["type"];
    if (type.is_string()) return Typed(s, type.get<std::string>(), where);
    if (!type.is_array() || type.empty())
      return Bad(where, "type must be a string or a non-empty array");
    std::vector<int> alts;
    for (const auto& t : type) {
      if (!t.is_string()) return Bad(where, "type must list strings");
      ELLM_ASSIGN_OR_RETURN(int a, Typed(s, t.get<std::string>(), where));
      alts.push_back(a);
    }
    if (alts.size() == 1) return alts[0];
    return Add(SchemaNode{.kind = NodeKind::kAnyOf, .alternatives = std::move(alts)});
  }

  StatusOr<int> Ref(const Json& ref, const std::string& where) {
    if (!ref.is_string()) return Bad(where, "$ref must be a string");
    const std::string r = ref.get<std::string>();
    if (auto it = refs_.find(r); it != refs_.end()) return it->second;
    std::string path;
    if (r.rfind("#/$defs/", 0) == 0) {
      path = "/$defs/" + r.substr(8);
    } else if (r.rfind("#/definitions/", 0) == 0) {
      path = "/definitions/" + r.substr(14);
    } else {
      return UnimplementedError("JSON schema at " + where + ": only local $ref (#/$defs/NAME, " +
                                "#/definitions/NAME) is supported, not '" + r + "'");
    }
    // nlohmann throws on a malformed pointer ("~2"); the client wrote it.
    std::optional<Json::json_pointer> ptr;
    try {
      ptr.emplace(path);
    } catch (const nlohmann::json::exception&) {
      return Bad(where, "$ref '" + r + "' is not a valid JSON pointer");
    }
    if (!doc_.contains(*ptr)) return Bad(where, "$ref '" + r + "' points nowhere");
    // A placeholder first, so that recursive definitions end.
    const int node = Add(SchemaNode{.kind = NodeKind::kAnyOf});
    refs_[r] = node;
    ELLM_ASSIGN_OR_RETURN(int target, Compile(doc_[*ptr], r));
    (*out_)[node].alternatives = {target};
    return node;
  }

  StatusOr<int> Typed(const Json& s, const std::string& type, const std::string& where) {
    if (type == "string") {
      SchemaNode n{.kind = NodeKind::kString};
      ELLM_RETURN_IF_ERROR(Bound(s, "minLength", where, n.min_length));
      ELLM_RETURN_IF_ERROR(Bound(s, "maxLength", where, n.max_length));
      if (s.contains("format")) {
        const std::string f = s["format"].is_string() ? s["format"].get<std::string>() : "";
        if (f != "date") {
          return UnimplementedError("JSON schema at " + where + ": format '" + f +
                                    "' is not supported by constrained decoding (supported: date)");
        }
        n.shape = "dddd-dd-dd";
      }
      return Add(std::move(n));
    }
    if (type == "number" || type == "integer") {
      return Add(SchemaNode{.kind = type == "number" ? NodeKind::kNumber : NodeKind::kInteger,
                            .non_negative = s.contains("minimum")});
    }
    if (type == "boolean")
      return Add(SchemaNode{.kind = NodeKind::kLiterals, .literals = {"true", "false"}});
    if (type == "null") return Add(SchemaNode{.kind = NodeKind::kLiterals, .literals = {"null"}});
    if (type == "array") {
      SchemaNode n{.kind = NodeKind::kArray};
      ELLM_RETURN_IF_ERROR(Bound(s, "minItems", where, n.min_items));
      ELLM_RETURN_IF_ERROR(Bound(s, "maxItems", where, n.max_items));
      int items = -1;
      if (s.contains("items")) {
        ELLM_ASSIGN_OR_RETURN(items, Compile(s["items"], where + "/items"));
      } else {
        items = AnyValue();
      }
      n.items = items;
      return Add(std::move(n));
    }
    if (type == "object") return Object(s, where);
    return Bad(where, "unknown type '" + type + "'");
  }

  StatusOr<int> Object(const Json& s, const std::string& where) {
    SchemaNode n{.kind = NodeKind::kObject};
    std::vector<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return Bad(where, "required must be an array");
      for (const auto& r : s["required"]) {
        if (!r.is_string()) return Bad(where, "required must list strings");
        required.push_back(r.get<std::string>());
      }
    }
    const bool has_properties = s.contains("properties") && !s["properties"].empty();
    if (has_properties) {
      if (!s["properties"].is_object()) return Bad(where, "properties must be an object");
      for (const auto& [name, sub] : s["properties"].items()) {
        ELLM_ASSIGN_OR_RETURN(int node, Compile(sub, where + "/properties/" + name));
        n.property_names.push_back(Json(name).dump());
        n.property_nodes.push_back(node);
        n.property_required.push_back(std::find(required.begin(), required.end(), name) !=
                                      required.end());
      }
      for (const std::string& r : required) {
        if (!s["properties"].contains(r))
          return Bad(where, "required property '" + r + "' is not declared");
      }
      if (n.property_names.size() > 64) return Bad(where, "more than 64 properties");
      const Json add = s.value("additionalProperties", Json(false));
      if (!(add.is_boolean() && !add.get<bool>())) {
        return UnimplementedError("JSON schema at " + where +
                                  ": additionalProperties beside declared properties is not "
                                  "supported by constrained decoding (set it to false)");
      }
    } else {
      if (!required.empty()) return Bad(where, "required names properties that are not declared");
      const Json add = s.value("additionalProperties", Json(true));
      if (add.is_boolean() && !add.get<bool>()) {
        n.property_names.clear();  // only {}
      } else {
        ELLM_ASSIGN_OR_RETURN(n.additional, Compile(add, where + "/additionalProperties"));
      }
    }
    return Add(std::move(n));
  }

  static Status Bound(const Json& s, const char* key, const std::string& where, int64_t& out) {
    if (!s.contains(key)) return OkStatus();
    if (!s[key].is_number_unsigned())
      return Bad(where, std::string(key) + " must be a non-negative integer");
    out = s[key].get<int64_t>();
    return OkStatus();
  }

  const Json& doc_;
  std::vector<SchemaNode>* out_ = nullptr;
  std::map<std::string, int> refs_;
  int any_ = -1;
  int depth_ = 0;  // Compile calls in progress
};

StatusOr<Schema> Schema::Parse(std::string_view json_text) {
  // The compiler recurses once per level of the schema. Schemas come from a
  // client's request (bounded to kMaxJsonDepth there) or are ours wrapped
  // around one (ToolReplySchema): twice the limit admits those, no more.
  StatusOr<Json> doc = ParseOrderedJson(json_text, {.max_depth = kMaxGeneratedJsonDepth});
  if (!doc.ok()) return doc.status().WithContext("JSON schema");
  return SchemaCompiler(*doc).Run();
}

Schema Schema::AnyObject() {
  Schema s;
  const Json doc = Json::object();
  SchemaCompiler c(doc);
  c.Use(&s.nodes_);
  const int any = c.AnyValue();
  s.root_ = s.nodes_[static_cast<size_t>(any)].alternatives[0];  // the object alternative
  return s;
}

}  // namespace ellm::grammar
