// The allocator's lock. Every cached alloc and free takes it once, uncontended in the common
// case; glibc's pthread mutex spent ~50 instructions per lock+unlock there (type dispatch,
// owner and user counts), a sixth of a cached pair's bookkeeping outside the ledger. This
// one is a word and a futex (Drepper, "Futexes Are Tricky", mutex 3): lock is one
// compare-exchange and unlock one exchange until a thread has to wait.
#pragma once
#include <atomic>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#include <thread>
#endif

namespace cca {

class FutexMutex {
 public:
  FutexMutex() = default;
  FutexMutex(const FutexMutex&) = delete;
  FutexMutex& operator=(const FutexMutex&) = delete;

  void lock() {
    int expected = kFree;
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire, std::memory_order_relaxed)) return;
    lock_contended(expected);
  }
  bool try_lock() {
    int expected = kFree;
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kWaiters) wake_one();
  }

 private:
  // kWaiters: locked, and a thread may sleep on the word, so unlock must wake one.
  enum : int { kFree = 0, kLocked = 1, kWaiters = 2 };

  void lock_contended(int seen) {
    // A waiter marks the word kWaiters before sleeping; taking it marked is safe (one spare
    // wake at most), taking it unmarked could strand a sleeper.
    if (seen != kWaiters) seen = state_.exchange(kWaiters, std::memory_order_acquire);
    while (seen != kFree) {
      wait_while(kWaiters);
      seen = state_.exchange(kWaiters, std::memory_order_acquire);
    }
  }
#if defined(__linux__)
  int* word() { return reinterpret_cast<int*>(&state_); }
  void wait_while(int value) { syscall(SYS_futex, word(), FUTEX_WAIT_PRIVATE, value, nullptr, nullptr, 0); }
  void wake_one() { syscall(SYS_futex, word(), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0); }
#else
  void wait_while(int value) {
    while (state_.load(std::memory_order_relaxed) == value) std::this_thread::yield();
  }
  void wake_one() {}
#endif

  static_assert(sizeof(std::atomic<int>) == sizeof(int), "the futex word is the atomic itself");
  std::atomic<int> state_{kFree};
};

}  // namespace cca
