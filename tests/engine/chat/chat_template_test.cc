// ChatTemplate: which template a model gets (its own Jinja, a named built-in,
// a .jinja file) and how a Jinja template is applied to a conversation as
// llama.cpp applies it (BOS text dropped when the tokenizer adds BOS).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/jinja.h"
#include "ellm/engine/chat.h"
#include "gguf_builder.h"
#include "test_env.h"

namespace ellm {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Llama 3's vocabulary (BOS <|begin_of_text|>, added by the tokenizer).
std::unique_ptr<Tokenizer> Llama3Tokenizer(const std::string& shared) {
  auto file = gguf::GgufFile::Open(shared + "/ggml-vocab-llama-bpe.gguf");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(*file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return std::move(*tok);
}

// A metadata-only model file; `bytes` must outlive `file`.
struct ModelFile {
  ModelFile(const std::string& arch, const std::string& tmpl) {
    ellm::testing::GgufBuilder b;
    b.Str("general.architecture", arch);
    if (!tmpl.empty()) b.Str("tokenizer.chat_template", tmpl);
    bytes = b.Build();
    auto parsed = gguf::GgufFile::Parse(bytes, "model.gguf");
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    file = std::make_unique<gguf::GgufFile>(std::move(*parsed));
  }
  operator const gguf::GgufFile&() const { return *file; }  // NOLINT: a test helper
  std::vector<uint8_t> bytes;
  std::unique_ptr<gguf::GgufFile> file;
};

TEST(ChatTemplate, AppliesTheFilesOwnJinjaTemplateAsLlamaCppDoes) {
  ELLM_REQUIRE_VOCABS(shared);
  ELLM_REQUIRE_LLAMA_SRC(src);
  auto tok = Llama3Tokenizer(shared);
  ASSERT_TRUE(tok->add_bos());
  const std::string tmpl =
      ReadFile(src + "/models/templates/meta-llama-Llama-3.2-3B-Instruct.jinja");
  ASSERT_FALSE(tmpl.empty());
  auto t = ChatTemplate::FromGguf(ModelFile("llama", tmpl), *tok, "");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->is_jinja());
  EXPECT_EQ(t->name(), "tokenizer.chat_template of 'model.gguf'");
  auto text = t->Apply({{"system", "Be brief."}, {"user", "Hi "}}, true);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  // The template writes {{ bos_token }} first; the tokenizer adds BOS itself.
  EXPECT_EQ(text->rfind("<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date:", 0),
            0u)
      << *text;
  EXPECT_NE(
      text->find("Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"),
      std::string::npos)
      << *text;
  EXPECT_EQ(text->substr(text->size() - 47), "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, ChoosesNamedBuiltinFileOrDetected) {
  ELLM_REQUIRE_VOCABS(shared);
  auto tok = Llama3Tokenizer(shared);
  const ModelFile with("llama", "{{ messages[0]['content'] }}!");
  const ModelFile without("qwen2", "");

  auto own = ChatTemplate::FromGguf(with, *tok, "");
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(*own->Apply({{"user", "hey"}}, true), "hey!");

  auto named = ChatTemplate::FromGguf(with, *tok, "chatml");
  ASSERT_TRUE(named.ok());
  EXPECT_FALSE(named->is_jinja());
  EXPECT_EQ(named->name(), "chatml (built-in)");
  EXPECT_EQ(*named->Apply({{"user", "hey"}}, true),
            "<|im_start|>user\nhey<|im_end|>\n<|im_start|>assistant\n");

  auto detected = ChatTemplate::FromGguf(without, *tok, "");
  ASSERT_TRUE(detected.ok());
  EXPECT_EQ(detected->name(), "chatml (built-in)");

  const std::string dir = ellm::testing::MakeTempDir("ellm-chat-template");
  std::ofstream(dir + "/t.jinja")
      << "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}\n";
  auto file = ChatTemplate::FromGguf(without, *tok, dir + "/t.jinja");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->name(), dir + "/t.jinja");
  EXPECT_EQ(*file->Apply({{"user", "a"}, {"assistant", "b"}}, false), "<user>a<assistant>b");
  EXPECT_TRUE(ValidateChatTemplateSpec(dir + "/t.jinja").ok());
  std::filesystem::remove_all(dir);
}

TEST(ChatTemplate, BadTemplatesAreErrorsNeverFallbacks) {
  ELLM_REQUIRE_VOCABS(shared);
  auto tok = Llama3Tokenizer(shared);
  // The file's own template does not parse: an error naming it and the line.
  auto broken = ChatTemplate::FromGguf(ModelFile("llama", "ok\n{% if %}"), *tok, "");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("tokenizer.chat_template of 'model.gguf'"),
            std::string::npos)
      << broken.status().message();
  EXPECT_NE(broken.status().message().find("line 2"), std::string::npos);
  // A template that raises (Gemma 2 refuses a system role): the error carries its message.
  auto raises = ChatTemplate::FromGguf(
      ModelFile("gemma2",
                "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not "
                "supported') }}{% endif %}"),
      *tok, "");
  ASSERT_TRUE(raises.ok());
  auto text = raises->Apply({{"system", "x"}, {"user", "y"}}, true);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("System role not supported"), std::string::npos);
  // Unknown names and unreadable files are refused when validated.
  EXPECT_FALSE(ValidateChatTemplateSpec("vicuna").ok());
  const Status missing = ValidateChatTemplateSpec("/nonexistent/t.jinja");
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("cannot be read"), std::string::npos);
  EXPECT_TRUE(ValidateChatTemplateSpec("").ok());
  EXPECT_TRUE(ValidateChatTemplateSpec("gemma").ok());
}

// A byte-pair vocabulary of three tokens: enough for a ChatTemplate.
std::unique_ptr<Tokenizer> TinyTokenizer() {
  ellm::testing::GgufBuilder b;
  b.Str("general.architecture", "llama")
      .Str("tokenizer.ggml.model", "gpt2")
      .Str("tokenizer.ggml.pre", "gpt-2")
      .StrArray("tokenizer.ggml.tokens", {"a", "b", "ab"})
      .StrArray("tokenizer.ggml.merges", {"a b"});
  const std::vector<uint8_t> bytes = b.Build();
  auto file = gguf::GgufFile::Parse(bytes, "tiny.gguf");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(*file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return std::move(*tok);
}

// Issue 53: a template that overflows, outruns its step budget or outgrows
// a bound on the sample conversations is refused when it is loaded, with
// the bound it hit, not at the first request.
TEST(ChatTemplate, HostileTemplateIsRefusedAtLoadWithItsReason) {
  auto tok = TinyTokenizer();
  const std::pair<std::string, std::string> hostile[] = {
      {"{{ (-9223372036854775807-1) // -1 }}", "integer overflow in '//'"},
      {"{% set ns=namespace(a=0) %}{% set ns.a=ns %}{{ ns }}", "cyclic"},
      {"{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}",
       "parser nesting deeper than"},
      {"{{ 2 ** 9223372036854775807 }}", "integer overflow in '**'"},
      {"{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}"
       "{{ f(40) }}",
       "macro calls"},
      {"{{ \"x\" * 10**11 }}", "string longer than"},
      {"{% for m in messages %}{% for i in range(100000) %}{{ i }}{% endfor %}{% endfor %}",
       "step budget"},
      // Only the conversation with tools meets this one.
      {"{{ messages[0].content }}{% if tools %}{{ 'x' * 10**11 }}{% endif %}",
       "string longer than"},
  };
  for (const auto& [source, reason] : hostile) {
    auto t = ChatTemplate::FromJinja(source, "hostile.jinja", *tok);
    ASSERT_FALSE(t.ok()) << source.substr(0, 80);
    EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted) << t.status().ToString();
    EXPECT_EQ(t.status().reason(), jinja::kLimitReason);
    EXPECT_NE(t.status().message().find("hostile.jinja"), std::string::npos)
        << t.status().message();
    EXPECT_NE(t.status().message().find(reason), std::string::npos) << t.status().message();
  }
  // The file's own template: the error Engine keeps for chat requests.
  auto own =
      ChatTemplate::FromGguf(ModelFile("llama", "{{ 1 - (-9223372036854775807-1) }}"), *tok, "");
  ASSERT_FALSE(own.ok());
  EXPECT_NE(own.status().message().find("refused by a dry run at load: tokenizer.chat_template "
                                        "of 'model.gguf': chat template line 1: integer "
                                        "overflow in '-'"),
            std::string::npos)
      << own.status().message();
  // A template that raises for a conversation it does not accept is a
  // request's error, not a refusal at load.
  auto raises = ChatTemplate::FromJinja(
      "{% if messages[0].role == 'system' %}{{ raise_exception('no system role') }}{% endif %}",
      "picky.jinja", *tok);
  ASSERT_TRUE(raises.ok()) << raises.status().ToString();
}

TEST(ChatTemplate, Gemma3TemplateRunsAfterTheDryRun) {
  auto tok = TinyTokenizer();
  const std::string source =
      ReadFile(ellm::testing::SourceDir() + "/scripts/reference/templates/google-gemma-3-it.jinja");
  ASSERT_FALSE(source.empty());
  auto t = ChatTemplate::FromJinja(source, "gemma-3.jinja", *tok);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto text = t->Apply({{"user", "Hi"}}, true);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"),
            std::string::npos)
      << *text;
}

}  // namespace
}  // namespace ellm
