// Several threads share one allocator per device, as worker threads of one process do.
#include <thread>

#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

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
