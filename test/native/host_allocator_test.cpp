// The pinned host allocator: PyTorch's rounding and stats, reuse only after the copies that
// used a block completed, and bad frees refused without a change.
#include "fixture.h"
#include "harness.h"
#include "host/host_caching_allocator.h"

using namespace cca;
using namespace test;

// Issue 43: the system refusing page-locked memory is an out-of-memory error of host memory,
// not a device failure, and, as in PyTorch, a failed allocation is not timed or counted.
TEST(a_refused_pinned_allocation_is_a_host_out_of_memory_changing_no_stat) {
  SimPlatform platform(SimOptions{1, GiB});
  HostCachingAllocator host({&platform.device(0)});
  host.free(host.allocate(4096));  // one cached block of 4 KiB
  const HostStats before = host.stats();
  platform.sim_device(0).fail_next_host_allocs(1);
  bool thrown = false;
  try {
    host.allocate(3 << 20);
  } catch (const OutOfMemoryError& e) {
    thrown = true;
    CHECK_EQ(e.code(), std::string("ERR_CCA_HOST_OUT_OF_MEMORY"));
    CHECK_EQ(e.info().alloc_size, std::uint64_t{4} << 20);  // rounded to a power of two
    CHECK_EQ(e.info().requested, std::uint64_t{3} << 20);
    CHECK_EQ(e.info().cached_free, std::uint64_t{4096});
    CHECK_EQ(e.info().device, static_cast<std::uint64_t>(-1));
    CHECK(std::string(e.what()).find("Pinned host memory out of memory. Tried to allocate 4.00 MiB") == 0);
    CHECK(std::string(e.what()).find("memory.empty_host_cache()") != std::string::npos);
  }
  CHECK(thrown);
  const HostStats after = host.stats();
  CHECK_EQ(after.num_host_alloc, before.num_host_alloc);
  CHECK_EQ(after.host_alloc_time.count, before.host_alloc_time.count);
  CHECK_EQ(after.allocated_bytes.current, before.allocated_bytes.current);
  void* p = host.allocate(3 << 20);  // the next one is made
  CHECK(p != nullptr);
  host.free(p);
}

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
