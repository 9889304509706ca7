// SessionOptions::Validate: the one check of a session's settings that
// config files, CLI flags and Engine::NewSession share.
#include <gtest/gtest.h>

#include <string>

#include "ellm/engine/engine.h"

namespace ellm {
namespace {

void ExpectInvalid(const SessionOptions& o, const std::string& words) {
  const Status s = o.Validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << words;
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
}

TEST(SessionOptions, ValidateNamesTheSettingThatCannotWork) {
  EXPECT_TRUE(SessionOptions{}.Validate().ok());
  SessionOptions o;
  o.n_ctx = 0;
  ExpectInvalid(o, "n_ctx >= 1");
  o = {};
  o.micro_batch = 0;
  ExpectInvalid(o, "micro_batch >= 1");
  o = {};
  o.kv_memory_budget = 1 << 20;
  ExpectInvalid(o, "spill directory");
  o.spill_dir = "/tmp";
  EXPECT_TRUE(o.Validate().ok());
  o.spill_zstd_level = 0;  // raw, the default
  EXPECT_TRUE(o.Validate().ok());
  o.spill_zstd_level = -1;
  ExpectInvalid(o, "zstd level");
  o.spill_zstd_level = 20;
  ExpectInvalid(o, "zstd level");
  o.spill_zstd_level = 0;
  o.kv_spill_map = true;  // in place: raw blocks only
  EXPECT_TRUE(o.Validate().ok());
  o.spill_zstd_level = 1;
  ExpectInvalid(o, "need raw spill blocks");
  o = {};
  o.sparse_attention.sink_tokens = -1;
  ExpectInvalid(o, "sparse attention");
  o = {};
  o.bf16_attention_weights = true;
  EXPECT_TRUE(o.Validate().ok());
  o.kv_type = KvType::kF32;
  ExpectInvalid(o, "bf16 KV cache");
}

}  // namespace
}  // namespace ellm
