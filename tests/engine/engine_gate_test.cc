// EngineGate: interactive turns go before batch turns, and a batch turn
// that yields lets a waiting interactive turn run, then resumes.
#include "ellm/engine/engine_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace ellm {
namespace {

using namespace std::chrono_literals;

TEST(EngineGate, ABatchTurnYieldsToAWaitingInteractiveOne) {
  EngineGate gate;
  std::mutex mu;
  std::vector<std::string> order;
  auto note = [&](const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(s);
  };
  std::atomic<bool> batch_started{false};
  std::thread batch([&] {
    EngineGate::Turn turn = gate.Batch();
    batch_started = true;
    note("batch slice 1");
    while (gate.interactive_waiting() == 0) std::this_thread::sleep_for(1ms);
    turn.Yield();  // the interactive turn runs here
    note("batch slice 2");
  });
  while (!batch_started) std::this_thread::sleep_for(1ms);
  {
    EngineGate::Turn turn = gate.Interactive();
    note("interactive");
  }
  batch.join();
  EXPECT_EQ(order, (std::vector<std::string>{"batch slice 1", "interactive", "batch slice 2"}));
  EXPECT_EQ(gate.yields(), 1);
}

TEST(EngineGate, YieldWithNobodyWaitingKeepsTheTurn) {
  EngineGate gate;
  EngineGate::Turn turn = gate.Batch();
  turn.Yield();
  EXPECT_EQ(gate.yields(), 0);
}

TEST(EngineGate, OneTurnAtATime) {
  EngineGate gate;
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 50; ++k) {
        EngineGate::Turn turn = i % 2 ? gate.Interactive() : gate.Batch();
        const int now = ++inside;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        --inside;
        turn.Yield();  // may let another turn in: not counted as inside
        const int again = ++inside;
        seen = most.load();
        while (again > seen && !most.compare_exchange_weak(seen, again)) {
        }
        --inside;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(most.load(), 1);
}

}  // namespace
}  // namespace ellm
