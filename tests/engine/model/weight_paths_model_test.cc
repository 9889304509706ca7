// Engine::WeightPaths on the test model: every weight matrix is listed once,
// and none falls back to the row-wise kernels unless packing is turned off
// (issue 35: no silent slow fallback; `ellm bench --json` reports the list).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "ellm/engine/engine.h"
#include "test_env.h"

namespace ellm {
namespace {

TEST(EngineWeightPaths, ListsEveryMatrixOnceAndNoneRunsRowWise) {
  ELLM_REQUIRE_MODEL(path);
  auto engine = Engine::Load(path, {.threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  const std::vector<WeightPath> paths = (*engine)->WeightPaths();
  // q, k, v, o, gate, up, down per layer, and the output matrix.
  EXPECT_EQ(paths.size(), 7u * static_cast<size_t>((*engine)->info().n_layer) + 1);
  const char* env = std::getenv("ELLM_PACKED_WEIGHTS");
  const bool packing = env == nullptr || std::string_view(env) != "off";
  std::set<std::string> names;
  for (const WeightPath& p : paths) {
    EXPECT_TRUE(names.insert(p.tensor).second) << p.tensor << " is listed twice";
    EXPECT_EQ(p.packed, packing) << p.tensor << " (" << p.type << ")";
  }
}

}  // namespace
}  // namespace ellm
