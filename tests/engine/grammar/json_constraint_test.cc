// Grammar-constrained decoding: the byte automaton accepts exactly the
// documents a schema allows; schemas we cannot enforce are refused by
// keyword; and, over real vocabularies, decoding from random logits under
// the constraint always ends in a document that parses and validates.
// Tagged documents (a model's native tool-call blocks): the tags byte for
// byte, the number of blocks, and the lazy trigger that leaves text free
// until it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "ellm/engine/constraint.h"
#include "grammar/json_matcher.h"
#include "test_env.h"

namespace ellm::grammar {
namespace {

// Whether `text` is a complete document for `schema_json` (byte by byte),
// in tags when `framing` has them.
bool AcceptsFramed(const std::string& schema_json, const Framing& framing,
                   const std::string& text) {
  auto schema = Schema::Parse(schema_json);
  EXPECT_TRUE(schema.ok()) << schema.status().ToString();
  JsonMatcher m(*schema, framing);
  StateSet s = m.Start(), next;
  for (unsigned char c : text) {
    m.Step(s, c, next);
    if (next.empty()) return false;
    s.swap(next);
  }
  return m.CanEnd(s);
}
bool Accepts(const std::string& schema_json, const std::string& text) {
  return AcceptsFramed(schema_json, {}, text);
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

// A call as Hermes' and Qwen 2.5's templates ask for it.
constexpr const char* kCall = R"({"anyOf": [
    {"type": "object", "properties": {"name": {"const": "get_weather"},
     "arguments": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
                   "required": ["city"]}}, "required": ["name", "arguments"]},
    {"type": "object", "properties": {"name": {"const": "get_time"},
     "arguments": {"type": "object"}}, "required": ["name", "arguments"]}]})";

TEST(JsonMatcher, FramedAcceptsTagsAroundEachDocument) {
  const std::string weather =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>";
  const std::string time = "<tool_call>\n{\"name\":\"get_time\",\"arguments\":{}}\n</tool_call>";
  const Framing one{"<tool_call>\n", "\n</tool_call>", 1, 1};
  const Framing many{"<tool_call>\n", "\n</tool_call>", 1, -1};
  EXPECT_TRUE(AcceptsFramed(kCall, one, weather));
  EXPECT_TRUE(AcceptsFramed(kCall, one, time));
  EXPECT_FALSE(AcceptsFramed(kCall, one, weather + "\n" + time));  // one block at most
  EXPECT_FALSE(AcceptsFramed(kCall, one, weather + "\n"));         // nothing after the last
  EXPECT_TRUE(AcceptsFramed(kCall, many, weather + "\n" + time));
  EXPECT_TRUE(AcceptsFramed(kCall, many, weather + time));
  EXPECT_TRUE(AcceptsFramed(kCall, many, weather + "\n\n" + time + "\n"));
  EXPECT_FALSE(AcceptsFramed(kCall, many, weather + "\nand " + time));  // text between
  EXPECT_FALSE(AcceptsFramed(kCall, many, ""));                         // at least one
  EXPECT_FALSE(AcceptsFramed(kCall, one, "Sure. " + weather));          // not lazy: blocks only
  EXPECT_FALSE(AcceptsFramed(
      kCall, one, "<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>"));  // tags
  EXPECT_FALSE(AcceptsFramed(
      kCall, one, "<tool_call>\n{\"name\":\"get_date\",\"arguments\":{}}\n</tool_call>"));
  EXPECT_FALSE(AcceptsFramed(
      kCall, one, "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{}}\n</tool_call>"));
  EXPECT_FALSE(AcceptsFramed(kCall, one, weather.substr(0, weather.size() - 1)));  // unclosed
  // A bare number ends where the close tag begins.
  EXPECT_TRUE(AcceptsFramed(R"({"type": "integer"})", one, "<tool_call>\n42\n</tool_call>"));
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

// Issue 53: the schema compiler recurses per schema level and per $ref
// followed; neither a deep schema nor a long chain of $defs (flat JSON) may
// exhaust the stack, and a malformed pointer is an error, not an exception.
TEST(JsonSchema, BoundsNestingAndRefChains) {
  auto deep = Schema::Parse(std::string(2000000, '[') + std::string(2000000, ']'));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("JSON schema: JSON nested deeper than 128 levels"),
            std::string::npos)
      << deep.status().message();
  auto chain = [](int links) {
    std::string defs;
    for (int i = 0; i < links; ++i) {
      defs += "\"d" + std::to_string(i) + "\": {\"$ref\": \"#/$defs/d" + std::to_string(i + 1) +
              "\"}, ";
    }
    defs += "\"d" + std::to_string(links) + "\": {\"type\": \"string\"}";
    return Schema::Parse("{\"$ref\": \"#/$defs/d0\", \"$defs\": {" + defs + "}}");
  };
  EXPECT_TRUE(chain(100).ok()) << chain(100).status().message();
  auto long_chain = chain(1000);
  ASSERT_FALSE(long_chain.ok());
  EXPECT_NE(long_chain.status().message().find("nested deeper than 128 levels"), std::string::npos)
      << long_chain.status().message();
  auto pointer = Schema::Parse(R"({"$ref": "#/$defs/a~2"})");
  ASSERT_FALSE(pointer.ok());
  EXPECT_NE(pointer.status().message().find("not a valid JSON pointer"), std::string::npos)
      << pointer.status().message();
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
  ELLM_REQUIRE_VOCABS(shared);
  const std::string schema = R"({"type": "object", "properties": {
      "party": {"enum": ["Supplier", "Buyer"]}, "amount": {"type": "number", "minimum": 0},
      "due": {"type": "string", "format": "date"},
      "clauses": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}},
      "required": ["party", "amount", "due"], "additionalProperties": false})";
  for (const char* vocab : {"llama-spm", "llama-bpe", "qwen2"}) {
    SCOPED_TRACE(vocab);
    auto file = gguf::GgufFile::Open(shared + "/ggml-vocab-" + vocab + ".gguf");
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
  ELLM_REQUIRE_VOCABS(shared);
  auto file = gguf::GgufFile::Open(shared + "/ggml-vocab-llama-bpe.gguf");
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

// The text between each open and close tag, as JSON; fails on text outside.
std::vector<nlohmann::json> Blocks(const std::string& text, const std::string& open,
                                   const std::string& close) {
  std::vector<nlohmann::json> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t b = text.find(open, at);
    if (b == std::string::npos) {
      EXPECT_EQ(text.find_first_not_of(" \n\t", at), std::string::npos) << text;
      break;
    }
    EXPECT_EQ(text.find_first_not_of(" \n\t", at), b) << text;
    const size_t e = text.find(close, b);
    if (e == std::string::npos) {
      ADD_FAILURE() << "unclosed: " << text;
      break;
    }
    out.push_back(
        nlohmann::json::parse(text.substr(b + open.size(), e - b - open.size()), nullptr, false));
    at = e + close.size();
  }
  return out;
}

// Tagged documents over Qwen 2's vocabulary (Qwen 2.5 writes <tool_call>).
class TaggedJsonConstraint : public ::testing::Test {
 protected:
  void SetUp() override {
    ELLM_REQUIRE_VOCABS(shared);
    auto file = gguf::GgufFile::Open(shared + "/ggml-vocab-qwen2.gguf");
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    file_.emplace(std::move(*file));
    auto tok = Tokenizer::FromGguf(*file_);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tok_ = std::move(*tok);
  }
  std::optional<gguf::GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(TaggedJsonConstraint, RandomLogitsAlwaysGiveWellFormedBlocks) {
  for (int32_t max_blocks : {1, -1}) {
    SCOPED_TRACE(max_blocks);
    const TaggedJson tags{"<tool_call>\n", "\n</tool_call>", 1, max_blocks, ""};
    auto c = JsonConstraint::FromSchemaInTags(kCall, tags, *tok_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      const std::string text = RandomDecode(**c, *tok_, seed);
      const auto blocks = Blocks(text, tags.open, tags.close);
      ASSERT_GE(blocks.size(), 1u) << text;
      if (max_blocks == 1) {
        EXPECT_EQ(blocks.size(), 1u) << text;
      }
      for (const auto& j : blocks) {
        ASSERT_TRUE(j.is_object()) << text;
        EXPECT_TRUE(j["name"] == "get_weather" || j["name"] == "get_time") << text;
        EXPECT_TRUE(j["arguments"].is_object()) << text;
        if (j["name"] == "get_weather") {
          EXPECT_TRUE(j["arguments"]["city"].is_string()) << text;
        }
      }
    }
  }
  // Refused: tags that cannot frame anything, a trigger that is not the
  // open tag's start.
  EXPECT_FALSE(JsonConstraint::FromSchemaInTags(kCall, {"", "x", 1, 1, ""}, *tok_).ok());
  EXPECT_FALSE(JsonConstraint::FromSchemaInTags(kCall, {"<a>", "</a>", 2, 1, ""}, *tok_).ok());
  EXPECT_FALSE(JsonConstraint::FromSchemaInTags(kCall, {"<a>", "</a>", 1, 1, "<b"}, *tok_).ok());
}

TEST_F(TaggedJsonConstraint, LazyTagsLeaveTextFreeUntilTheTrigger) {
  const TaggedJson tags{"<tool_call>\n", "\n</tool_call>", 1, 1, "<tool_call>"};
  auto made = JsonConstraint::FromSchemaInTags(kCall, tags, *tok_);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  JsonConstraint& c = **made;
  std::vector<float> logits(static_cast<size_t>(tok_->vocab_size()), 0.0f);
  // Free text: every token allowed, and the reply may end.
  const size_t n_all = c.Mask(logits);
  EXPECT_GT(n_all, logits.size() - 64);
  for (TokenId id : tok_->Encode("Paris is sunny; let me check <tool", false, false)) {
    ASSERT_TRUE(c.Accept(id).ok());
  }
  EXPECT_TRUE(c.Complete());
  EXPECT_FALSE(c.Finished());
  // "_call>" completes the trigger: only a token that then starts the
  // block ("\n") may do it.
  std::fill(logits.begin(), logits.end(), 0.0f);
  c.Mask(logits);
  const TokenId ok_piece = tok_->Find("_call");
  ASSERT_GE(ok_piece, 0);
  EXPECT_EQ(logits[static_cast<size_t>(ok_piece)], 0.0f);  // trigger not yet whole
  ASSERT_TRUE(c.Accept(ok_piece).ok());
  std::fill(logits.begin(), logits.end(), 0.0f);
  c.Mask(logits);
  for (const char* bad : {">{", ">.", ">\n\n"}) {
    const TokenId id = tok_->Find(bad);
    if (id >= 0) {
      EXPECT_TRUE(std::isinf(logits[static_cast<size_t>(id)])) << bad;
    }
  }
  const TokenId gt = tok_->Find(">");
  ASSERT_GE(gt, 0);
  EXPECT_EQ(logits[static_cast<size_t>(gt)], 0.0f);
  ASSERT_TRUE(c.Accept(gt).ok());
  // Triggered: now held to a block, which must be whole before the end.
  EXPECT_FALSE(c.Complete());
  EXPECT_FALSE(c.Accept(tok_->Find("x")).ok());
  for (TokenId id : tok_->Encode("\n", false, false)) ASSERT_TRUE(c.Accept(id).ok());
  for (TokenId id : tok_->Encode(R"({"name": "get_time", "arguments": {}})", false, false)) {
    ASSERT_TRUE(c.Accept(id).ok()) << tok_->TokenToPiece(id);
  }
  EXPECT_FALSE(c.Complete());
  for (TokenId id : tok_->Encode("\n</tool_call>", false, false)) ASSERT_TRUE(c.Accept(id).ok());
  EXPECT_TRUE(c.Complete());
  EXPECT_TRUE(c.Finished());  // one block at most: only the end may follow
  // Reset starts free again.
  c.Reset();
  EXPECT_TRUE(c.Accept(tok_->Find("x")).ok());
}

}  // namespace
}  // namespace ellm::grammar
