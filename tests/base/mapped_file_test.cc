#include "ellm/base/mapped_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_env.h"

namespace ellm {
namespace {

TEST(MappedFile, MapsContentAndEmptyFiles) {
  std::string dir = testing::MakeTempDir("ellm-map");
  { std::ofstream(dir + "/a") << "hello"; }
  { std::ofstream(dir + "/empty"); }
  auto a = MappedFile::Open(dir + "/a");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(a->data()), a->size()), "hello");
  auto e = MappedFile::Open(dir + "/empty");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->size(), 0u);
  auto m = MappedFile::Open(dir + "/missing");
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(MappedFile::Open(dir).status().code(), StatusCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ellm
