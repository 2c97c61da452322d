// The pinned host allocator: PyTorch's rounding and stats, reuse only after the copies that
// used a block completed, and bad frees refused without a change.
#include "fixture.h"
#include "harness.h"
#include "host/host_caching_allocator.h"

using namespace cca;
using namespace test;

TEST(host_allocator_rounds_caches_and_counts) {
  SimPlatform platform(SimOptions{1, GiB});
  HostCachingAllocator host({&platform.device(0)});
  std::size_t rounded = 0;
  void* a = host.allocate(1000, &rounded);
  CHECK_EQ(rounded, std::size_t{1024});
  CHECK(host.contains(static_cast<char*>(a) + 500, 524));
  CHECK(!host.contains(static_cast<char*>(a) + 500, 525));
  host.free(a);
  CHECK(!host.contains(a, 1));
  void* b = host.allocate(600);  // 1024 again: the cached block
  CHECK_EQ(b, a);
  HostStats s = host.stats();
  CHECK_EQ(s.num_host_alloc, std::int64_t{1});
  CHECK_EQ(s.allocations.current, std::int64_t{1});
  CHECK_EQ(s.allocated_bytes.current, std::int64_t{1024});
  CHECK_EQ(s.active_requests.current, std::int64_t{1});
  CHECK_EQ(s.active_requests.allocated, std::int64_t{2});
  CHECK_EQ(s.host_alloc_time.count, std::int64_t{1});
  CHECK_THROWS(host.free(static_cast<char*>(b) + 8), InvalidPointerError, "ERR_CCA_INVALID_POINTER");
  host.free(b);
  CHECK_THROWS(host.free(b), InvalidPointerError, "ERR_CCA_INVALID_POINTER");
  CHECK_EQ(host.stats().active_requests.current, std::int64_t{0});
  host.empty_cache();
  s = host.stats();
  CHECK_EQ(s.num_host_free, std::int64_t{1});
  CHECK_EQ(s.allocations.current, std::int64_t{0});
  CHECK_EQ(s.allocated_bytes.peak, std::int64_t{1024});
  CHECK_EQ(platform.sim_device(0).host_allocations(), std::size_t{0});
  host.reset_accumulated_stats();
  CHECK_EQ(host.stats().allocations.allocated, std::int64_t{0});
  CHECK_EQ(host.allocate(0), static_cast<void*>(nullptr));
}

TEST(host_block_reused_only_after_its_copy_completed) {
  SimPlatform platform(SimOptions{1, GiB});
  SimDevice& d = platform.sim_device(0);
  HostCachingAllocator host({&d});
  StreamId s = 0;
  CHECK(d.stream_create(&s) == Status::kOk);
  d.hold_stream(s, true);
  void* a = host.allocate(4096);
  CHECK(host.record_use(a, 4096, 0, s));
  CHECK(!host.record_use(static_cast<char*>(a) + 4000, 200, 0, s));  // past the block
  host.free(a);
  CHECK_EQ(host.stats().active_requests.current, std::int64_t{1});  // not reusable yet
  void* b = host.allocate(4096);
  CHECK(b != a);
  host.empty_cache();  // a is waiting: it stays
  CHECK_EQ(host.stats().allocations.current, std::int64_t{2});
  d.complete_stream(s);
  d.hold_stream(s, false);
  void* c = host.allocate(4096);
  CHECK_EQ(c, a);
  host.free(b);
  host.free(c);
  host.empty_cache();
  CHECK_EQ(host.stats().allocations.current, std::int64_t{0});
  CHECK_EQ(d.pending_events(), std::size_t{0});
  CHECK(d.stream_destroy(s) == Status::kOk);
}
