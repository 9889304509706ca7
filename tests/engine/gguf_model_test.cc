// Reads the real Gemma 3 270M Q4_K_M file's header and metadata. The full
// loader and its checks against llama.cpp come with the engine core.
#include <gtest/gtest.h>

#include <map>

#include "ellm/engine/gguf.h"
#include "test_env.h"

namespace ellm::gguf {
namespace {

TEST(GemmaModelFile, HeaderAndMetadataAreAsPublished) {
  ELLM_REQUIRE_MODEL(path);
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->file_size(), 253113024u);
  EXPECT_EQ(*f->GetString("general.architecture"), "gemma3");
  EXPECT_EQ(*f->GetUint("gemma3.block_count"), 18u);
  EXPECT_EQ(*f->GetUint("gemma3.embedding_length"), 640u);
  EXPECT_EQ(*f->GetUint("gemma3.attention.head_count"), 4u);
  EXPECT_EQ(*f->GetUint("gemma3.attention.head_count_kv"), 1u);
  EXPECT_EQ(*f->GetUint("gemma3.attention.key_length"), 256u);
  EXPECT_EQ(*f->GetUint("gemma3.attention.sliding_window"), 512u);
  EXPECT_EQ(*f->GetString("tokenizer.ggml.model"), "llama");
  auto tokens = f->GetArray("tokenizer.ggml.tokens", ValueType::kString);
  ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
  EXPECT_EQ((*tokens)->count, 262144u);
  EXPECT_EQ(*f->GetUint("tokenizer.ggml.bos_token_id"), 2u);
  EXPECT_EQ(*f->GetUint("tokenizer.ggml.eos_token_id"), 1u);
  EXPECT_EQ((*tokens)->strings[2], "<bos>");
}

TEST(GemmaModelFile, TensorTableMatchesTheQ4KMMix) {
  ELLM_REQUIRE_MODEL(path);
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->tensors().size(), 236u);
  const TensorInfo* embd = f->FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, quant::TensorType::kQ8_0);
  EXPECT_EQ(embd->ne[0], 640);
  EXPECT_EQ(embd->ne[1], 262144);
  std::map<quant::TensorType, int> by_type;
  uint64_t total = 0;
  for (const auto& t : f->tensors()) {
    ++by_type[t.type];
    total += t.n_bytes;
  }
  // 640 is not a multiple of 256: many tensors fall back from K-quants.
  EXPECT_GT(by_type[quant::TensorType::kQ5_0] + by_type[quant::TensorType::kQ8_0], 50);
  EXPECT_GT(by_type[quant::TensorType::kQ4_K], 0);
  EXPECT_LE(f->data_offset() + total, f->file_size());
  EXPECT_GT(total, f->file_size() * 9 / 10);
}

}  // namespace
}  // namespace ellm::gguf
