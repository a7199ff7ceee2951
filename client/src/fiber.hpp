// Fibers: runners that share a few threads (WorkerPoolOptions::runner_threads).
// A Carrier is one thread running many fibers, one at a time; a fiber gives its
// thread up only where it waits for the pool (the flusher's confirmation of a
// step, the next claim), by park(), and runs again on the same thread once
// another thread wake()s it. A step then costs a switch of stacks in user space
// instead of two kernel thread switches, which is what a runner thread waiting
// on a condition variable costs (measured: about two context switches and
// four futex calls per step at concurrency 200).
//
// What a fiber keeps across park() that a thread would keep anyway: its stack,
// and the C++ runtime's exception state (the exceptions being handled, as
// std::current_exception() sees them), which libstdc++ keeps per thread and
// this file swaps per fiber. What it shares with the other fibers of its
// thread: thread_local variables, and the thread itself while it runs (a
// handler that blocks the thread, in a system call or on a lock, holds up the
// others; one that parks while holding a lock another fiber of the same
// thread takes deadlocks them).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace docket::detail {

class Carrier;

class Fiber {
 public:
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;
  ~Fiber();

  // The fiber running on this thread, or null on a plain thread.
  static Fiber* current() noexcept;

  // Suspends this fiber (the running one) until wake(); returns at once if a
  // wake() came since the last park() (a waker never needs to know whether the
  // fiber got to park yet). Only a fiber parks itself.
  void park() noexcept;
  // Makes the fiber run again (from any thread, the fiber's own included).
  void wake() noexcept;

 private:
  friend class Carrier;
  struct Context;  // the saved machine and runtime state (fiber.cpp)
  enum class State { ready, running, parked, finished };

  Fiber(Carrier& carrier, std::function<void()> body, std::size_t stack_size);
  static void entry() noexcept;  // the fiber's first frame: runs body_

  Carrier& carrier_;
  std::function<void()> body_;
  State state_ = State::ready;  // carrier_.mutex_
  bool permit_ = false;         // carrier_.mutex_: a wake() while not parked
  std::unique_ptr<Context> context_;
};

// One thread's fibers. The thread calls run(), which returns once every fiber
// added has returned; add() may be called from any thread until then.
class Carrier {
 public:
  // stack_size: bytes of each fiber's stack (rounded up to pages), not counting
  // the guard page below it that turns an overflow into a crash, not a
  // corruption.
  explicit Carrier(std::size_t stack_size);
  Carrier(const Carrier&) = delete;
  Carrier& operator=(const Carrier&) = delete;
  ~Carrier();

  // A fiber running `body`, which must not throw (a throw ends the process, as
  // from a thread's body); it starts when run() gets to it.
  void add(std::function<void()> body);
  // The thread body: runs fibers until none is left.
  void run() noexcept;
  // Fibers added and not returned yet.
  std::size_t live() const;

 private:
  friend class Fiber;
  void resume(Fiber& fiber) noexcept;
  void make_ready(Fiber& fiber);  // mutex_ held

  const std::size_t stack_size_;
  mutable std::mutex mutex_;
  std::condition_variable ready_cv_;
  bool sleeping_ = false;  // run() waits on ready_cv_
  std::deque<Fiber*> ready_;
  std::deque<std::unique_ptr<Fiber>> fibers_;
  std::unique_ptr<Fiber::Context> own_;  // the thread's context while a fiber runs
};

// Waits on `cv` (with `lock` held on its mutex) until `done()`, as
// cv.wait(lock, done) does; a fiber parks instead, after adding itself to
// `parked` (guarded by the same mutex), and the notifier wakes what it finds
// there (wake_parked).
void wait_for(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
              std::vector<Fiber*>& parked, const std::function<bool()>& done);
// Wakes (and removes) up to `n` fibers of `parked` (mutex held): every one
// for n = 0.
void wake_parked(std::vector<Fiber*>& parked, std::size_t n = 0) noexcept;

}  // namespace docket::detail
