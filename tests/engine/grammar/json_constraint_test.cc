// Grammar-constrained decoding: the byte automaton accepts exactly the
// documents a schema allows; schemas we cannot enforce are refused by
// keyword; and, over real vocabularies, decoding from random logits under
// the constraint always ends in a document that parses and validates.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "ellm/engine/constraint.h"
#include "grammar/json_matcher.h"
#include "test_env.h"

namespace ellm::grammar {
namespace {

// Whether `text` is a complete document for `schema_json` (byte by byte).
bool Accepts(const std::string& schema_json, const std::string& text) {
  auto schema = Schema::Parse(schema_json);
  EXPECT_TRUE(schema.ok()) << schema.status().ToString();
  JsonMatcher m(*schema);
  StateSet s = m.Start(), next;
  for (unsigned char c : text) {
    m.Step(s, c, next);
    if (next.empty()) return false;
    s.swap(next);
  }
  return m.CanEnd(s);
}

constexpr const char* kInvoice = R"({
  "type": "object",
  "properties": {
    "party": {"type": "string", "enum": ["A", "B"]},
    "amount": {"type": "number", "minimum": 0},
    "currency": {"type": "string", "maxLength": 3, "minLength": 3},
    "due": {"type": "string", "format": "date"},
    "page": {"type": "integer"},
    "notes": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
  },
  "required": ["party", "amount", "due"],
  "additionalProperties": false
})";

TEST(JsonMatcher, AcceptsExactlyTheDocumentsTheSchemaAllows) {
  const std::pair<std::string, bool> cases[] = {
      {R"({"party": "A", "amount": 4.2e3, "due": "2026-03-14"})", true},
      {R"({"party":"B","amount":0,"currency":"EUR","due":"2026-03-14","page":7,"notes":["x","y"]})",
       true},
      {"{\n  \"party\": \"A\",\n  \"amount\": 1,\n  \"due\": \"2026-01-01\"\n}", true},
      {R"({"party": "C", "amount": 1, "due": "2026-03-14"})", false},   // not in enum
      {R"({"party": "A", "due": "2026-03-14"})", false},                // required missing
      {R"({"amount": 1, "party": "A", "due": "2026-03-14"})", false},   // declared order
      {R"({"party": "A", "amount": -1, "due": "2026-03-14"})", false},  // minimum 0
      {R"({"party": "A", "amount": 1, "due": "14.03.2026"})", false},   // format date
      {R"({"party": "A", "amount": 1, "currency": "EURO", "due": "2026-03-14"})", false},
      {R"({"party": "A", "amount": 1, "due": "2026-03-14", "page": 1.5})", false},  // integer
      {R"({"party": "A", "amount": 1, "due": "2026-03-14", "notes": ["a","b","c"]})", false},
      {R"({"party": "A", "amount": 1, "due": "2026-03-14", "extra": 1})", false},
      {R"({"party": "A", "amount": 01, "due": "2026-03-14"})", false},  // leading zero
      {R"({"party": "A", "amount": 1, "due": "2026-03-14"} )", false},  // nothing after
      {R"({"party": "A", "amount": 1, "due": "2026-03-14")", false},    // unfinished
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(Accepts(kInvoice, text), want) << text;
}

TEST(JsonMatcher, AnyOfRefsLiteralsAndFreeObjects) {
  const std::string tree = R"({"$defs": {"node": {"type": "object", "properties": {
      "name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["name"], "additionalProperties": false}}, "$ref": "#/$defs/node"})";
  EXPECT_TRUE(
      Accepts(tree, R"({"name":"a","children":[{"name":"b"},{"name":"c","children":[]}]})"));
  EXPECT_FALSE(Accepts(tree, R"({"name":"a","children":[{"nam":"b"}]})"));
  const std::string any = "{}";
  EXPECT_TRUE(Accepts(any, R"({"k": [1, true, null, {"x": "y\u00e9\n"}], "n": -0.5e-3})"));
  EXPECT_TRUE(Accepts(any, "12"));
  EXPECT_FALSE(Accepts(any, R"({"k": tru})"));
  const std::string alt =
      R"({"anyOf": [{"type": "integer"}, {"const": "none"}, {"type": "null"}]})";
  EXPECT_TRUE(Accepts(alt, "42"));
  EXPECT_TRUE(Accepts(alt, "\"none\""));
  EXPECT_TRUE(Accepts(alt, "null"));
  EXPECT_FALSE(Accepts(alt, "\"nope\""));
  const std::string literals = R"({"enum": ["a", "ab", 1, 12]})";
  for (const char* ok : {"\"a\"", "\"ab\"", "1", "12"}) EXPECT_TRUE(Accepts(literals, ok)) << ok;
  for (const char* bad : {"\"abc\"", "123", "\"b\""}) EXPECT_FALSE(Accepts(literals, bad)) << bad;
  const std::string strings = R"({"type": "array", "items": {"type": "string"}, "minItems": 1})";
  EXPECT_TRUE(Accepts(strings, R"(["a\"b\\c\u0041"])"));
  EXPECT_FALSE(Accepts(strings, "[]"));
  EXPECT_FALSE(Accepts(strings, "[\"a\nb\"]"));  // a raw newline inside a string
}

TEST(JsonSchema, RefusesWhatItCannotEnforceByKeyword) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"type": "string", "pattern": "^[0-9]+$"})", "keyword 'pattern'"},
      {R"({"type": "number", "maximum": 10})", "numeric bounds"},
      {R"({"type": "string", "format": "email"})", "format 'email'"},
      {R"({"type": "object", "properties": {"a": {"allOf": []}}})",
       "at #/properties/a: keyword 'allOf'"},
      {R"({"$ref": "https://example.com/s.json"})", "only local $ref"},
      {R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})", "'b' is not declared"},
      {R"({"type": "strin"})", "unknown type 'strin'"},
      {R"({"type": )", "not valid JSON"},
  };
  for (const auto& [schema, want] : cases) {
    auto s = Schema::Parse(schema);
    ASSERT_FALSE(s.ok()) << schema;
    EXPECT_NE(s.status().message().find(want), std::string::npos)
        << schema << ": " << s.status().message();
  }
}

// Decodes from random logits under the constraint until end of generation;
// returns the text.
std::string RandomDecode(JsonConstraint& c, const Tokenizer& tok, uint32_t seed) {
  // One buffer of noise, read at a different offset each step (drawing
  // fresh noise for every logit would cost more than the decoding).
  const size_t n = static_cast<size_t>(tok.vocab_size());
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> noise(2 * n);
  for (float& v : noise) v = normal(rng);
  std::vector<float> logits(n);
  std::string text;
  c.Reset();
  for (int step = 0; step < 400; ++step) {
    const size_t offset = (static_cast<size_t>(step) * 7919 + rng()) % n;
    std::copy(noise.begin() + static_cast<std::ptrdiff_t>(offset),
              noise.begin() + static_cast<std::ptrdiff_t>(offset + n), logits.begin());
    // Favour ending once it is allowed, so documents stay short.
    if (c.Complete()) logits[static_cast<size_t>(tok.eos())] += 6.0f;
    if (c.Mask(logits) == 0) {
      ADD_FAILURE() << "no token allowed after: " << text;
      return text;
    }
    const TokenId id =
        static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_TRUE(c.Accept(id).ok());
    if (tok.IsEndOfGeneration(id)) return text;
    text += tok.TokenToPiece(id);
  }
  ADD_FAILURE() << "no end after 400 tokens: " << text;
  return text;
}

TEST(JsonConstraint, RandomLogitsAlwaysGiveValidDocumentsOnRealVocabularies) {
  ELLM_REQUIRE_SHARED(shared);
  const std::string schema = R"({"type": "object", "properties": {
      "party": {"enum": ["Supplier", "Buyer"]}, "amount": {"type": "number", "minimum": 0},
      "due": {"type": "string", "format": "date"},
      "clauses": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}},
      "required": ["party", "amount", "due"], "additionalProperties": false})";
  for (const char* vocab : {"llama-spm", "llama-bpe", "qwen2"}) {
    SCOPED_TRACE(vocab);
    auto file = gguf::GgufFile::Open(shared + "/testdata/tokenizers/ggml-vocab-" + vocab + ".gguf");
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto tok = Tokenizer::FromGguf(*file);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    auto c = JsonConstraint::FromSchema(schema, **tok);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (uint32_t seed = 1; seed <= 5; ++seed) {
      const std::string text = RandomDecode(**c, **tok, seed);
      const auto j = nlohmann::json::parse(text, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << text;
      ASSERT_TRUE(j.is_object()) << text;
      EXPECT_TRUE(j["party"] == "Supplier" || j["party"] == "Buyer") << text;
      EXPECT_TRUE(j["amount"].is_number() && j["amount"].get<double>() >= 0) << text;
      const std::string due = j["due"].get<std::string>();
      EXPECT_EQ(due.size(), 10u) << text;
      EXPECT_EQ(due[4], '-') << text;
      if (j.contains("clauses")) {
        EXPECT_LE(j["clauses"].size(), 3u) << text;
        for (const auto& cl : j["clauses"]) EXPECT_TRUE(cl.is_string()) << text;
      }
      for (const auto& [k, v] : j.items()) {
        EXPECT_TRUE(k == "party" || k == "amount" || k == "due" || k == "clauses") << text;
      }
    }
  }
}

TEST(JsonConstraint, RefusesTokensThatBreakTheDocument) {
  ELLM_REQUIRE_SHARED(shared);
  auto file = gguf::GgufFile::Open(shared + "/testdata/tokenizers/ggml-vocab-llama-bpe.gguf");
  ASSERT_TRUE(file.ok());
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_TRUE(tok.ok());
  auto c = JsonConstraint::AnyObject(**tok);
  EXPECT_FALSE(c->Accept((*tok)->eos()).ok());  // nothing written yet
  const TokenId brace = (*tok)->Find("{");
  const TokenId x = (*tok)->Find("x");
  ASSERT_GE(brace, 0);
  ASSERT_GE(x, 0);
  EXPECT_FALSE(c->Accept(x).ok());
  c->Reset();
  EXPECT_TRUE(c->Accept(brace).ok());
  EXPECT_FALSE(c->Complete());
  EXPECT_TRUE(c->Accept((*tok)->Find("}")).ok());
  EXPECT_TRUE(c->Complete());
  std::vector<float> logits(static_cast<size_t>((*tok)->vocab_size()), 0.0f);
  // A complete object: only end of generation is left.
  const size_t allowed = c->Mask(logits);
  EXPECT_GE(allowed, 1u);
  EXPECT_EQ(logits[static_cast<size_t>((*tok)->eos())], 0.0f);
  EXPECT_TRUE(std::isinf(logits[static_cast<size_t>(brace)]));
}

}  // namespace
}  // namespace ellm::grammar
