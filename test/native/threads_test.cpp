// Several threads share one allocator per device, as worker threads of one process do.
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "common/futex_mutex.h"
#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

// The allocator's lock under contention: every increment made under it survives, so waiters
// were woken and none entered while another held it.
TEST(concurrent_lockers_of_the_futex_mutex_exclude_and_wake) {
  FutexMutex mu;
  std::int64_t counter = 0;  // plain: only the lock orders it (TSan checks that too)
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50000; ++i) {
        std::lock_guard<FutexMutex> lock(mu);
        ++counter;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK_EQ(counter, std::int64_t{200000});
  CHECK(mu.try_lock());
  CHECK(!mu.try_lock());
  mu.unlock();
}

TEST(concurrent_threads_share_one_allocator_safely) {
  Fixture f(4 * GiB, AllocatorConfig{}, 2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&f, t] {
      auto& a = f.a(t % 2);
      StreamId s = t < 2 ? 0 : a.create_stream();
      std::vector<DevicePtr> mine;
      std::uint64_t x = 88172645463325252ull + static_cast<std::uint64_t>(t);
      for (int i = 0; i < 20000; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if (mine.size() < 32 && (x & 1)) {
          mine.push_back(a.malloc(512 + (x % (3 * MiB)), s));
        } else if (!mine.empty()) {
          a.free(mine.back());
          mine.pop_back();
        }
      }
      for (DevicePtr p : mine) a.free(p);
    });
  }
  for (auto& t : threads) t.join();
  for (int d = 0; d < 2; ++d) {
    CHECK_VALID(f.a(d));
    CHECK_EQ(f.cur(kAllocatedBytes, kAggregate, d), std::int64_t{0});
    CHECK_EQ(f.a(d).live_allocation_count(), std::size_t{0});
  }
}

// Every kind of call at once, as a monitoring loop, a history toggle and workers would make
// them: the mutex must order all of it (ThreadSanitizer runs this in CI).
TEST(concurrent_mixed_operations_with_snapshots_and_history) {
  Fixture f(4 * GiB, AllocatorConfig{}, 1);
  auto& a = f.a();
  SyncCopies copies = f.copies();
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&a, copies, t]() mutable {
      const StreamId s = a.create_stream();
      const StreamId other = a.create_stream();
      std::vector<DevicePtr> mine;
      unsigned char buf[256] = {};
      std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(t + 1);
      for (int i = 0; i < 6000; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if (mine.size() < 24 && (x & 1)) {
          mine.push_back(a.malloc(256 + (x % (2 * MiB)), (x & 2) ? s : 0));
          copies.copy_to_device(mine.back(), 0, buf, sizeof buf);
          if (x & 4) a.record_stream(mine.back(), other);
        } else if (!mine.empty()) {
          copies.copy_to_host(buf, mine.back(), 0, 64);
          a.free(mine.back());
          mine.pop_back();
        }
        if (i % 1000 == 0) a.synchronize_stream(other);
      }
      for (DevicePtr p : mine) a.free(p);
      a.synchronize_stream(other);
      a.destroy_stream(other);
      a.destroy_stream(s);
    });
  }
  threads.emplace_back([&a, &stop] {  // a monitoring loop
    while (!stop.load()) {
      DeviceSnapshot snap = a.snapshot(0, true);
      CHECK(snap.segments.size() <= 4096);
      DeviceStats st = a.stats();
      (void)st;
      std::size_t free_bytes = 0;
      std::size_t total = 0;
      a.mem_get_info(&free_bytes, &total);
    }
  });
  threads.emplace_back([&a, &stop] {  // history switched on and off, the cache emptied
    int n = 0;
    while (!stop.load()) {
      HistoryOptions h;
      h.enabled = (n % 3) != 0;
      h.context = RecordContext::kAlloc;
      h.max_entries = 1000;
      h.clear_history = (n % 5) == 0;
      a.set_history(h);
      (void)a.next_history_seq();
      if (n % 7 == 0) a.empty_cache();
      ++n;
    }
  });
  for (int t = 0; t < 3; ++t) threads[static_cast<std::size_t>(t)].join();
  stop.store(true);
  for (std::size_t t = 3; t < threads.size(); ++t) threads[t].join();
  CHECK_VALID(a);
  CHECK_EQ(f.cur(kAllocatedBytes, kAggregate), std::int64_t{0});
}
