#include "fiber.hpp"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <utility>

#include <cxxabi.h>

#if defined(__SANITIZE_ADDRESS__)
#define DOCKET_FIBER_ASAN 1
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define DOCKET_FIBER_TSAN 1
#include <sanitizer/tsan_interface.h>
#endif

namespace docket::detail {

namespace {

// libstdc++'s per-thread exception state (unwind-cxx.h, __cxa_eh_globals):
// the chain of exceptions being handled and the count of those thrown and not
// caught yet. A fiber that parks inside a catch block must find its own chain
// when it resumes, not one another fiber of its thread left behind.
#if defined(__ARM_EABI_UNWINDER__)
#error "the ARM EABI unwinder keeps more per-thread exception state: extend EhGlobals"
#endif
struct EhGlobals {
  void* caught = nullptr;
  unsigned int uncaught = 0;
};

EhGlobals* eh_globals() noexcept {
  return reinterpret_cast<EhGlobals*>(abi::__cxa_get_globals());
}

thread_local Fiber* t_current = nullptr;

std::size_t page_size() noexcept {
  return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

struct Fiber::Context {
  ucontext_t machine{};
  EhGlobals eh{};  // while switched out
  void* mapping = nullptr;
  std::size_t mapping_bytes = 0;
  const void* stack_bottom = nullptr;  // the stack to switch to (sanitizers)
  std::size_t stack_bytes = 0;
#if DOCKET_FIBER_ASAN
  void* fake_stack = nullptr;
#endif
#if DOCKET_FIBER_TSAN
  void* tsan_fiber = nullptr;
  bool owns_tsan_fiber = false;
#endif

  ~Context() {
#if DOCKET_FIBER_TSAN
    if (owns_tsan_fiber) __tsan_destroy_fiber(tsan_fiber);
#endif
    if (mapping != nullptr) ::munmap(mapping, mapping_bytes);
  }

  // Leaves this context for `to`; returns once something switches back.
  // `leaving`: this context never runs again (its fiber returned).
  void switch_to(Context& to, bool leaving) noexcept {
    EhGlobals* globals = eh_globals();
    eh = *globals;
    *globals = to.eh;
#if DOCKET_FIBER_ASAN
    __sanitizer_start_switch_fiber(leaving ? nullptr : &fake_stack, to.stack_bottom,
                                   to.stack_bytes);
#else
    (void)leaving;
#endif
#if DOCKET_FIBER_TSAN
    __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
    ::swapcontext(&machine, &to.machine);
#if DOCKET_FIBER_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
  }
};

Fiber::Fiber(Carrier& carrier, std::function<void()> body, std::size_t stack_size)
    : carrier_(carrier), body_(std::move(body)), context_(std::make_unique<Context>()) {
  const std::size_t page = page_size();
  const std::size_t usable = (stack_size + page - 1) / page * page;
  Context& context = *context_;
  context.mapping_bytes = usable + page;
  void* mapping = ::mmap(nullptr, context.mapping_bytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED) throw std::bad_alloc();
  context.mapping = mapping;
  // The guard page: the stack grows down into it and faults.
  if (::mprotect(mapping, page, PROT_NONE) != 0) throw std::bad_alloc();
  context.stack_bottom = static_cast<char*>(mapping) + page;
  context.stack_bytes = usable;
  if (::getcontext(&context.machine) != 0) throw std::bad_alloc();
  context.machine.uc_stack.ss_sp = const_cast<void*>(context.stack_bottom);
  context.machine.uc_stack.ss_size = usable;
  context.machine.uc_link = nullptr;  // entry() never returns
  // entry() finds its fiber in t_current, set by the carrier that switches to it.
  ::makecontext(&context.machine, &Fiber::entry, 0);
#if DOCKET_FIBER_TSAN
  context.tsan_fiber = __tsan_create_fiber(0);
  context.owns_tsan_fiber = true;
#endif
}

Fiber::~Fiber() = default;

Fiber* Fiber::current() noexcept {
  return t_current;
}

void Fiber::entry() noexcept {
  Fiber* const self = t_current;
  Carrier& carrier = self->carrier_;
#if DOCKET_FIBER_ASAN
  // The first switch into this stack: it learns the thread's own stack, to
  // which every switch back goes.
  __sanitizer_finish_switch_fiber(nullptr, &carrier.own_->stack_bottom, &carrier.own_->stack_bytes);
#endif
  self->body_();          // noexcept: a throw terminates, as from a thread's body
  self->body_ = nullptr;  // what it captured goes now, on this stack
  {
    const std::lock_guard<std::mutex> lock(carrier.mutex_);
    self->state_ = State::finished;
  }
  t_current = nullptr;
  self->context_->switch_to(*carrier.own_, true);
  __builtin_unreachable();
}

void Fiber::park() noexcept {
  {
    const std::lock_guard<std::mutex> lock(carrier_.mutex_);
    if (permit_) {
      permit_ = false;
      return;
    }
    state_ = State::parked;
  }
  // A wake() from now on queues this fiber; its carrier is this thread, which
  // takes it from the queue only after the switch below.
  t_current = nullptr;
  context_->switch_to(*carrier_.own_, false);
  t_current = this;
}

void Fiber::wake() noexcept {
  const std::lock_guard<std::mutex> lock(carrier_.mutex_);
  if (state_ == State::parked)
    carrier_.make_ready(*this);
  else if (state_ != State::finished)
    permit_ = true;
}

namespace {

// AddressSanitizer's redzones make frames several times larger.
std::size_t sanitized(std::size_t stack_size) {
#if DOCKET_FIBER_ASAN
  return stack_size * 4;
#else
  return stack_size;
#endif
}

}  // namespace

Carrier::Carrier(std::size_t stack_size)
    : stack_size_(sanitized(stack_size)), own_(std::make_unique<Fiber::Context>()) {}

Carrier::~Carrier() = default;

void Carrier::add(std::function<void()> body) {
  // Not under mutex_: mapping the stack takes system calls.
  std::unique_ptr<Fiber> fiber(new Fiber(*this, std::move(body), stack_size_));
  const std::lock_guard<std::mutex> lock(mutex_);
  Fiber& added = *fiber;
  fibers_.push_back(std::move(fiber));
  make_ready(added);
}

void Carrier::make_ready(Fiber& fiber) {
  fiber.state_ = Fiber::State::ready;
  ready_.push_back(&fiber);
  if (sleeping_) ready_cv_.notify_one();
}

std::size_t Carrier::live() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return fibers_.size();
}

void Carrier::resume(Fiber& fiber) noexcept {
  t_current = &fiber;
  own_->switch_to(*fiber.context_, false);
  t_current = nullptr;
}

void Carrier::run() noexcept {
#if DOCKET_FIBER_TSAN
  own_->tsan_fiber = __tsan_get_current_fiber();
#endif
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    while (ready_.empty()) {
      if (fibers_.empty()) return;
      sleeping_ = true;
      ready_cv_.wait(lock);
      sleeping_ = false;
    }
    Fiber* fiber = ready_.front();
    ready_.pop_front();
    fiber->state_ = Fiber::State::running;
    lock.unlock();
    resume(*fiber);
    lock.lock();
    if (fiber->state_ != Fiber::State::finished) continue;
    for (auto it = fibers_.begin(); it != fibers_.end(); ++it) {
      if (it->get() != fiber) continue;
      std::unique_ptr<Fiber> done = std::move(*it);
      fibers_.erase(it);
      lock.unlock();
      done.reset();  // unmaps its stack
      lock.lock();
      break;
    }
  }
}

void wait_for(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
              std::vector<Fiber*>& parked, const std::function<bool()>& done) {
  Fiber* const self = Fiber::current();
  if (self == nullptr) {
    cv.wait(lock, done);
    return;
  }
  while (!done()) {
    parked.push_back(self);
    lock.unlock();
    self->park();
    lock.lock();
    // Woken (and removed) by wake_parked, or by an earlier wake() than this
    // wait's (a permit): then it is still listed.
    const auto it = std::find(parked.begin(), parked.end(), self);
    if (it != parked.end()) parked.erase(it);
  }
}

void wake_parked(std::vector<Fiber*>& parked, std::size_t n) noexcept {
  const std::size_t woken = n == 0 ? parked.size() : std::min(n, parked.size());
  for (std::size_t i = 0; i < woken; ++i) parked[i]->wake();
  parked.erase(parked.begin(), parked.begin() + static_cast<std::ptrdiff_t>(woken));
}

}  // namespace docket::detail
