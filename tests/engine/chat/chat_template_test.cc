// ChatTemplate: which template a model gets (its own Jinja, a named built-in,
// a .jinja file) and how a Jinja template is applied to a conversation as
// llama.cpp applies it (BOS text dropped when the tokenizer adds BOS).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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
  auto file = gguf::GgufFile::Open(shared + "/testdata/tokenizers/ggml-vocab-llama-bpe.gguf");
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
  ELLM_REQUIRE_SHARED(shared);
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
  ELLM_REQUIRE_SHARED(shared);
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
  ELLM_REQUIRE_SHARED(shared);
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

}  // namespace
}  // namespace ellm
