// Where tests find the real parts they need (the model, the broker), and the
// rule for when those are missing: with CI=true a missing part fails the
// test; on a developer machine it skips with a message saying how to get it.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace ellm::testing {

bool InCi();
// The Gemma 3 270M Q4_K_M file: $ELLM_TEST_MODEL, else <repo>/models/...; empty if absent.
std::string ModelPath();
// host:port of the test broker ($ELLM_TEST_KAFKA, default 127.0.0.1:19092), or
// empty when nothing accepts connections there.
std::string KafkaBrokers();
// A fresh directory under $TMPDIR, removed by the caller (or left for debugging).
std::string MakeTempDir(const std::string& prefix);
std::string SourceDir();
// llama.cpp v0.5.0's source as node-llama-cpp bundles it (reference data:
// models/templates/*.jinja, models/ggml-vocab-*): $ELLM_LLAMA_SRC, else the
// cache folder scripts/reference/llama-source unpacks into; empty if absent.
std::string LlamaSourceDir();
// llama.cpp's test vocabularies with their golden tokenizations
// (ggml-vocab-NAME.gguf, .gguf.inp, .gguf.out): LlamaSourceDir()/models;
// empty if absent.
std::string VocabDir();

}  // namespace ellm::testing

#define ELLM_REQUIRE_OR_SKIP_(cond, what)                                       \
  do {                                                                          \
    if (!(cond)) {                                                              \
      if (::ellm::testing::InCi()) FAIL() << what << " is missing and CI=true"; \
      GTEST_SKIP() << what << " is missing";                                    \
    }                                                                           \
  } while (0)

// Declares `std::string var` with the model path, or fails/skips.
#define ELLM_REQUIRE_MODEL(var)                   \
  std::string var = ::ellm::testing::ModelPath(); \
  ELLM_REQUIRE_OR_SKIP_(!var.empty(), "the model (run scripts/fetch-model)")

// Declares `std::string var` with the broker address, or fails/skips.
#define ELLM_REQUIRE_KAFKA(var)                      \
  std::string var = ::ellm::testing::KafkaBrokers(); \
  ELLM_REQUIRE_OR_SKIP_(!var.empty(), "the Kafka broker (run scripts/kafka start)")

// Declares `std::string var` with llama.cpp's vocabulary folder, or fails/skips.
#define ELLM_REQUIRE_VOCABS(var)                 \
  std::string var = ::ellm::testing::VocabDir(); \
  ELLM_REQUIRE_OR_SKIP_(!var.empty(),            \
                        "llama.cpp's test vocabularies (run scripts/reference/llama-source)")

// Declares `std::string var` with llama.cpp's source folder, or fails/skips.
#define ELLM_REQUIRE_LLAMA_SRC(var)                    \
  std::string var = ::ellm::testing::LlamaSourceDir(); \
  ELLM_REQUIRE_OR_SKIP_(!var.empty(), "llama.cpp's source (run scripts/reference/llama-source)")
