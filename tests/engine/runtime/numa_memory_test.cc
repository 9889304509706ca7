// NodeMemory on this machine (the pages land where the policy says, as the
// kernel reports through get_mempolicy(2) and move_pages(2)), the recording
// fake a KV cache is tested with, and LockMemory's RLIMIT_MEMLOCK error.
#include "ellm/engine/numa_memory.h"
#include "ellm/base/sanitizers.h"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "ellm/engine/numa.h"

namespace ellm {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// The policy the kernel holds for the page at `p`: mode and node mask bits 0-63.
struct Policy {
  int mode = -1;
  uint64_t nodes = 0;
};
Policy PolicyAt(void* p) {
  Policy policy;
  unsigned long mask[16] = {};  // 1024 nodes, libnuma's maximum
  EXPECT_EQ(get_mempolicy(&policy.mode, mask, 1024, p, MPOL_F_ADDR), 0) << std::strerror(errno);
  policy.nodes = mask[0];
  return policy;
}

TEST(SystemNodeMemory, AllocatesUsableZeroedPagesBoundToNodeZero) {
  if (numa_available() < 0) GTEST_SKIP() << "kernel without NUMA support";
  const size_t bytes = kMiB + 1;  // not a whole number of pages
  StatusOr<void*> mem = SystemNodeMemory().Allocate(bytes, 0);
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  auto* p = static_cast<uint8_t*>(*mem);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % sysconf(_SC_PAGESIZE), 0u);
  Policy policy = PolicyAt(p);
  EXPECT_EQ(policy.mode, MPOL_BIND);
  EXPECT_EQ(policy.nodes, 1u);
  EXPECT_EQ(NodeOfPage(p).status().code(), StatusCode::kNotFound);  // untouched yet
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[bytes - 1], 0);
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(i * 7);
  for (size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(p[i], static_cast<uint8_t>(i * 7)) << i;
  for (size_t off : {size_t{0}, bytes / 2, bytes - 1}) {
    StatusOr<int> node = NodeOfPage(p + off);
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    EXPECT_EQ(*node, 0) << "offset " << off;
  }
  SystemNodeMemory().Free(p, bytes);
}

TEST(SystemNodeMemory, NoNodeMeansTheDefaultPolicy) {
  if (numa_available() < 0) GTEST_SKIP() << "kernel without NUMA support";
  StatusOr<void*> mem = SystemNodeMemory().Allocate(64 * 1024, -1);
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  EXPECT_EQ(PolicyAt(*mem).mode, MPOL_DEFAULT);
  SystemNodeMemory().Free(*mem, 64 * 1024);
}

TEST(SystemNodeMemory, InterleavesOverTheGivenNodes) {
  if (numa_available() < 0) GTEST_SKIP() << "kernel without NUMA support";
  StatusOr<void*> mem = SystemNodeMemory().AllocateInterleaved(4 * kMiB, {0});
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  Policy policy = PolicyAt(static_cast<uint8_t*>(*mem) + 3 * kMiB);
  EXPECT_EQ(policy.mode, MPOL_INTERLEAVE);
  EXPECT_EQ(policy.nodes, 1u);
  SystemNodeMemory().Free(*mem, 4 * kMiB);
}

TEST(SystemNodeMemory, InterleaveRangeSetsThePolicyOfACallersMapping) {
  if (numa_available() < 0) GTEST_SKIP() << "kernel without NUMA support";
  const size_t bytes = 2 * kMiB;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_EQ(PolicyAt(p).mode, MPOL_DEFAULT);
  // An unaligned start and length: whole pages around them are covered.
  Status s = InterleaveRange(static_cast<uint8_t*>(p) + 100, bytes - 200, {0});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(PolicyAt(p).mode, MPOL_INTERLEAVE);
  EXPECT_EQ(PolicyAt(static_cast<uint8_t*>(p) + bytes - 1).mode, MPOL_INTERLEAVE);
  munmap(p, bytes);
}

TEST(SystemNodeMemory, RefusesANodeThatDoesNotExist) {
  const int missing = (numa_available() < 0 ? 0 : numa_max_node()) + 1;
  StatusOr<void*> mem = SystemNodeMemory().Allocate(4096, missing);
  ASSERT_FALSE(mem.ok());
  EXPECT_EQ(mem.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mem.status().message().find("NUMA node " + std::to_string(missing)), std::string::npos)
      << mem.status().message();
  EXPECT_FALSE(SystemNodeMemory().AllocateInterleaved(4096, {0, missing}).ok());
  EXPECT_FALSE(SystemNodeMemory().Allocate(0, 0).ok());
}

// What the KV cache will do with a plan: one allocation per (layer, head)
// slice on plan.KvNode(). The fake records each node asked for.
TEST(RecordingNodeMemory, RecordsTheNodeEachKvSliceAskedFor) {
  NumaPlan plan = *PlanNuma(FakeTopology(4, 8), NumaMode::kDistribute, 32, 32, 8);
  const size_t slice_bytes = 2 * 128 * 2 * 1024;  // K and V, dim 128, f16, 1024 positions
  RecordingNodeMemory memory;
  std::vector<void*> slices;
  for (int il = 0; il < plan.n_layer; ++il) {
    for (int h = 0; h < plan.n_kv_head; ++h) {
      StatusOr<void*> p = memory.Allocate(slice_bytes, plan.KvNode(il, h));
      ASSERT_TRUE(p.ok());
      static_cast<uint8_t*>(*p)[slice_bytes - 1] = 1;  // usable to the end
      slices.push_back(*p);
    }
  }
  std::vector<RecordingNodeMemory::Request> requests = memory.requests();
  ASSERT_EQ(requests.size(), 256u);
  std::map<int, int> per_node;
  for (const auto& r : requests) {
    EXPECT_EQ(r.bytes, slice_bytes);
    ++per_node[r.node];
  }
  EXPECT_EQ(per_node, (std::map<int, int>{{0, 64}, {1, 64}, {2, 64}, {3, 64}}));
  // Layer 0: heads 0-1 on node 0 ... heads 6-7 on node 3; layer 1 shifted by one.
  EXPECT_EQ(requests[0].node, 0);
  EXPECT_EQ(requests[7].node, 3);
  EXPECT_EQ(requests[8 + 0].node, 1);
  EXPECT_EQ(requests[8 + 7].node, 0);
  memory.Free(slices[3], slice_bytes);
  EXPECT_TRUE(memory.requests()[3].freed);
  EXPECT_FALSE(memory.requests()[4].freed);
}

TEST(RecordingNodeMemory, RecordsInterleavedRequests) {
  RecordingNodeMemory memory;
  StatusOr<void*> p = memory.AllocateInterleaved(3 * kMiB, {0, 1, 2});
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(memory.requests().size(), 1u);
  EXPECT_EQ(memory.requests()[0].interleave, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(memory.requests()[0].node, -1);
}

TEST(RecordingNodeMemoryDeathTest, FreeWithTheWrongSizeAborts) {
  EXPECT_DEATH(
      {
        RecordingNodeMemory memory;
        void* p = *memory.Allocate(8192, 0);
        memory.Free(p, 3 * 8192);
      },
      "Free\\(.*of an allocation of 8192 bytes");
}

// Runs LockMemory(bytes) in a child process that has dropped CAP_IPC_LOCK
// (root ignores RLIMIT_MEMLOCK otherwise) and lowered RLIMIT_MEMLOCK to
// `limit`; returns "OK" or the error message.
std::string LockInChild(rlim_t limit, size_t bytes) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2] = {};
    std::string result;
    rlimit rl = {limit, limit};
    if (syscall(SYS_capget, &header, caps) != 0) {
      result = "capget failed";
    } else {
      caps[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
      caps[CAP_TO_INDEX(CAP_IPC_LOCK)].permitted &= ~CAP_TO_MASK(CAP_IPC_LOCK);
      if (syscall(SYS_capset, &header, caps) != 0) {
        result = "capset failed";
      } else if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
        result = "setrlimit failed";
      } else {
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        Status s = LockMemory(p, bytes, "KV cache");
        result = s.ok() ? "OK" : std::string(StatusCodeName(s.code())) + ": " + s.message();
      }
    }
    ssize_t unused = write(fds[1], result.data(), result.size());
    (void)unused;
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, n);
  close(fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  return out;
}

// AddressSanitizer replaces mlock(2) with a no-op that succeeds, so the
// limit cannot be hit in a sanitized build; the Release run covers it.
#if ELLM_ASAN
#define ELLM_SKIP_UNDER_ASAN() GTEST_SKIP() << "ASan's mlock interceptor never fails"
#else
#define ELLM_SKIP_UNDER_ASAN() (void)0
#endif

TEST(LockMemory, OverTheLimitNamesRlimitMemlockAndHowToRaiseIt) {
  ELLM_SKIP_UNDER_ASAN();
  std::string msg = LockInChild(64 * 1024, kMiB);
  EXPECT_NE(msg.find("RESOURCE_EXHAUSTED"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot lock KV cache (1.0 MiB)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("RLIMIT_MEMLOCK is 64.0 KiB (soft) / 64.0 KiB (hard)"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("needs 1.0 MiB more"), std::string::npos) << msg;
  EXPECT_NE(msg.find("LimitMEMLOCK=infinity"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ulimit -l"), std::string::npos) << msg;
}

TEST(LockMemory, ZeroLimitIsReportedTheSameWay) {
  ELLM_SKIP_UNDER_ASAN();
  std::string msg = LockInChild(0, 64 * 1024);
  EXPECT_NE(msg.find("RLIMIT_MEMLOCK is 0 B (soft) / 0 B (hard)"), std::string::npos) << msg;
}

TEST(LockMemory, WithinTheLimitSucceeds) { EXPECT_EQ(LockInChild(kMiB, 64 * 1024), "OK"); }

}  // namespace
}  // namespace ellm
