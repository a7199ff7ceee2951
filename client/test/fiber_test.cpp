// Fibers and their carrier thread (fiber.hpp): the order fibers run in, a wake
// that comes before its park, waiting on a condition from a fiber and from a
// thread alike, the exception state each fiber keeps across a park, and the
// stack it gets. No database.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fiber.hpp"

namespace {

using docket::detail::Carrier;
using docket::detail::Fiber;

constexpr std::size_t kStack = std::size_t{256} * 1024;

TEST(Fiber, ACarrierRunsItsFibersInTurnAndReturnsWhenAllReturned) {
  Carrier carrier(kStack);
  std::vector<std::string> order;
  std::vector<Fiber*> fibers(2, nullptr);
  for (int i = 0; i < 2; ++i) {
    carrier.add([&, i] {
      fibers[i] = Fiber::current();
      order.push_back("start " + std::to_string(i));
      fibers[i]->wake();  // a permit: the park below returns at once
      fibers[i]->park();
      order.push_back("after permit " + std::to_string(i));
      if (i == 0) {
        fibers[0]->park();  // until fiber 1 wakes it
        order.push_back("woken 0");
      } else {
        fibers[0]->wake();
        order.push_back("woke 0");
      }
    });
  }
  EXPECT_EQ(carrier.live(), 2u);
  EXPECT_EQ(Fiber::current(), nullptr);
  std::thread thread([&] { carrier.run(); });
  thread.join();
  EXPECT_EQ(carrier.live(), 0u);
  EXPECT_NE(fibers[0], fibers[1]);
  const std::vector<std::string> expected{"start 0",        "after permit 0", "start 1",
                                          "after permit 1", "woke 0",         "woken 0"};
  EXPECT_EQ(order, expected);
}

TEST(Fiber, AWakeFromAnotherThreadResumesAParkedFiberOnItsOwnThread) {
  Carrier carrier(kStack);
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<Fiber*> parked;
  bool ready = false;
  int waited = 0;
  std::thread::id ran_on[2];
  for (int i = 0; i < 2; ++i) {
    carrier.add([&, i] {
      ran_on[i] = std::this_thread::get_id();
      std::unique_lock<std::mutex> lock(mutex);
      docket::detail::wait_for(lock, cv, parked, [&] { return ready; });
      ++waited;
      EXPECT_EQ(std::this_thread::get_id(), ran_on[i]);
    });
  }
  std::thread thread([&] { carrier.run(); });
  // Both fibers park on the condition: the carrier thread waits for a wake.
  for (;;) {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (parked.size() == 2) break;
    }
    std::this_thread::yield();
  }
  {
    const std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(waited, 0);
    ready = true;
    docket::detail::wake_parked(parked);
    EXPECT_TRUE(parked.empty());
  }
  cv.notify_all();
  thread.join();
  EXPECT_EQ(waited, 2);
  EXPECT_EQ(ran_on[0], ran_on[1]);
  EXPECT_NE(ran_on[0], std::this_thread::get_id());
}

TEST(Fiber, WaitForOnAThreadWaitsOnTheConditionVariable) {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<Fiber*> parked;
  bool ready = false;
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lock(mutex);
    docket::detail::wait_for(lock, cv, parked, [&] { return ready; });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    const std::lock_guard<std::mutex> lock(mutex);
    EXPECT_TRUE(parked.empty());  // a thread does not park
    ready = true;
  }
  cv.notify_all();
  waiter.join();
}

TEST(Fiber, WakeParkedWakesAtMostTheCountAskedInTheOrderTheyParked) {
  Carrier carrier(kStack);
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<Fiber*> parked;
  int tickets = 0;
  std::vector<int> served;
  for (int i = 0; i < 3; ++i) {
    carrier.add([&, i] {
      std::unique_lock<std::mutex> lock(mutex);
      docket::detail::wait_for(lock, cv, parked, [&] { return tickets > 0; });
      --tickets;
      served.push_back(i);
    });
  }
  std::thread thread([&] { carrier.run(); });
  auto parked_count = [&] {
    const std::lock_guard<std::mutex> lock(mutex);
    return parked.size();
  };
  while (parked_count() != 3) std::this_thread::yield();
  {
    const std::lock_guard<std::mutex> lock(mutex);
    tickets = 2;
    docket::detail::wake_parked(parked, 2);
    EXPECT_EQ(parked.size(), 1u);
  }
  while (parked_count() != 1 || carrier.live() != 1) std::this_thread::yield();
  {
    const std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(served, (std::vector<int>{0, 1}));
    tickets = 1;
    docket::detail::wake_parked(parked);
  }
  thread.join();
  EXPECT_EQ(served, (std::vector<int>{0, 1, 2}));
}

// libstdc++ keeps the exceptions being handled per thread; a fiber that parks
// in a catch block must find its own when it resumes, whatever the other
// fibers of its thread threw and caught meanwhile.
TEST(Fiber, EachFiberKeepsTheExceptionItHandlesAcrossAPark) {
  Carrier carrier(kStack);
  std::vector<Fiber*> fibers(2, nullptr);
  std::vector<std::string> seen;
  for (int i = 0; i < 2; ++i) {
    carrier.add([&, i] {
      fibers[i] = Fiber::current();
      try {
        throw std::runtime_error("fiber " + std::to_string(i));
      } catch (const std::exception&) {
        EXPECT_EQ(std::uncaught_exceptions(), 0);
        if (i == 0) {
          fibers[0]->park();  // fiber 1 throws, catches and parks in its catch
        } else {
          fibers[0]->wake();
          fibers[1]->park();
        }
        try {
          std::rethrow_exception(std::current_exception());
        } catch (const std::exception& again) {
          seen.push_back(again.what());
        }
        if (i == 0) fibers[1]->wake();
      }
      EXPECT_FALSE(std::current_exception());
    });
  }
  std::thread thread([&] { carrier.run(); });
  thread.join();
  EXPECT_EQ(seen, (std::vector<std::string>{"fiber 0", "fiber 1"}));
}

TEST(Fiber, AFiberHasTheStackItAskedFor) {
  Carrier carrier(kStack);
  bool done = false;
  carrier.add([&] {
    // Half the stack in one frame, touched at both ends: no fault, no guard page.
    volatile char frame[kStack / 2];
    std::memset(const_cast<char*>(frame), 1, sizeof frame);
    done = frame[0] == 1 && frame[sizeof frame - 1] == 1;
  });
  std::thread thread([&] { carrier.run(); });
  thread.join();
  EXPECT_TRUE(done);
}

TEST(Fiber, ManyFibersPingPongThroughAQueue) {
  // Two carriers on two threads, 100 fibers each; every fiber waits 50 times
  // for a token the fibers of the other carrier hand it.
  constexpr int kFibers = 100;
  constexpr int kRounds = 50;
  Carrier a(kStack);
  Carrier b(kStack);
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<Fiber*> parked_a;
  std::vector<Fiber*> parked_b;
  int tokens_a = 0;
  int tokens_b = 0;
  std::atomic<int> finished{0};
  auto body = [&](int& mine, std::vector<Fiber*>& my_parked, int& theirs,
                  std::vector<Fiber*>& their_parked, bool starts) {
    for (int r = 0; r < kRounds; ++r) {
      std::unique_lock<std::mutex> lock(mutex);
      if (!starts || r > 0) {
        docket::detail::wait_for(lock, cv, my_parked, [&] { return mine > 0; });
        --mine;
      }
      ++theirs;
      docket::detail::wake_parked(their_parked, 1);
    }
    finished.fetch_add(1);
  };
  for (int i = 0; i < kFibers; ++i) {
    a.add([&] { body(tokens_a, parked_a, tokens_b, parked_b, true); });
    b.add([&] { body(tokens_b, parked_b, tokens_a, parked_a, false); });
  }
  std::thread ta([&] { a.run(); });
  std::thread tb([&] { b.run(); });
  ta.join();
  tb.join();
  EXPECT_EQ(finished.load(), 2 * kFibers);
  EXPECT_EQ(a.live() + b.live(), 0u);
}

}  // namespace
