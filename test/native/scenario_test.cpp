// Scenarios with exact expected stats, worked out by hand from PyTorch's rules.
#include <cstring>

#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

TEST(reuse_after_free_needs_no_device_call) {
  Fixture f;
  DevicePtr p = f.a().malloc(1000, 0);
  CHECK_EQ(f.cur(kAllocatedBytes), std::int64_t{1024});
  CHECK_EQ(f.cur(kRequestedBytes), std::int64_t{1000});
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{2 * MiB});
  CHECK_EQ(f.cur(kSegment, kSmallPool), std::int64_t{1});
  CHECK_EQ(f.cur(kSegment, kLargePool), std::int64_t{0});
  CHECK_EQ(f.cur(kInactiveSplit), std::int64_t{1});
  CHECK_EQ(f.cur(kInactiveSplitBytes), std::int64_t{2 * MiB - 1024});
  f.a().free(p);
  CHECK_EQ(f.cur(kAllocatedBytes), std::int64_t{0});
  CHECK_EQ(f.cur(kActive), std::int64_t{0});
  CHECK_EQ(f.cur(kInactiveSplit), std::int64_t{0});  // merged back into one unsplit block
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{2 * MiB});
  DevicePtr q = f.a().malloc(1000, 0);
  CHECK_EQ(q, p);
  DeviceStats s = f.a().stats();
  CHECK_EQ(s.num_device_alloc, std::int64_t{1});
  CHECK_EQ(s.arrays[kAllocation][kAggregate].allocated, std::int64_t{2});
  CHECK_EQ(s.arrays[kAllocation][kAggregate].freed, std::int64_t{1});
  CHECK_EQ(f.sim().live_allocations(), std::size_t{1});
  CHECK_VALID(f.a());
}

TEST(split_and_merge_track_inactive_split) {
  Fixture f;
  DevicePtr a = f.a().malloc(512, 0);
  DevicePtr b = f.a().malloc(512, 0);
  DevicePtr c = f.a().malloc(512, 0);
  CHECK_EQ(b, a + 512);
  CHECK_EQ(c, a + 1024);
  const std::int64_t tail = 2 * MiB - 1536;
  CHECK_EQ(f.cur(kInactiveSplit), std::int64_t{1});
  CHECK_EQ(f.cur(kInactiveSplitBytes), tail);
  f.a().free(b);  // a [b free] c tail
  CHECK_EQ(f.cur(kInactiveSplit), std::int64_t{2});
  CHECK_EQ(f.cur(kInactiveSplitBytes), tail + 512);
  f.a().free(a);  // [a+b free] c tail
  CHECK_EQ(f.cur(kInactiveSplit), std::int64_t{2});
  CHECK_EQ(f.cur(kInactiveSplitBytes), tail + 1024);
  CHECK_EQ(segments(f.a())[0].blocks.size(), std::size_t{3});
  f.a().free(c);  // everything merges into one unsplit block
  CHECK_EQ(f.cur(kInactiveSplit), std::int64_t{0});
  CHECK_EQ(f.cur(kInactiveSplitBytes), std::int64_t{0});
  CHECK_EQ(segments(f.a())[0].blocks.size(), std::size_t{1});
  // Best fit: of two free holes, the smaller one that fits wins, then the lower address.
  DevicePtr x = f.a().malloc(4096, 0);
  DevicePtr y = f.a().malloc(512, 0);
  DevicePtr z = f.a().malloc(2048, 0);
  DevicePtr w = f.a().malloc(512, 0);
  f.a().free(x);  // hole of 4096 at x
  f.a().free(z);  // hole of 2048 at z
  CHECK_EQ(f.a().malloc(1500, 0), z);
  CHECK_EQ(f.a().malloc(1500, 0), x);
  (void)y;
  (void)w;
  CHECK_VALID(f.a());
}

TEST(blocks_are_never_reused_across_streams) {
  Fixture f;
  StreamId s1 = f.a().create_stream();
  DevicePtr p = f.a().malloc(1000, 0);
  f.a().free(p);
  DevicePtr q = f.a().malloc(1000, s1);
  CHECK(q != p);
  CHECK_EQ(f.cur(kSegment), std::int64_t{2});
  f.a().free(q);
  CHECK_EQ(f.a().malloc(1000, s1), q);
  CHECK_EQ(f.a().malloc(1000, 0), p);
  CHECK_VALID(f.a());
}

// Timeline (stream 0 allocates; s1 is held, so its work does not finish until released):
//   stream 0: malloc p ---- free p ............................ malloc -> p again
//   s1:            record_stream(p) [work on p running ......] complete
TEST(record_stream_defers_reuse_until_events_complete) {
  Fixture f;
  StreamId s1 = f.a().create_stream();
  f.sim().hold_stream(s1, true);
  DevicePtr p = f.a().malloc(4096, 0);
  f.a().record_stream(p, s1);
  f.a().free(p);
  CHECK_EQ(f.cur(kAllocatedBytes), std::int64_t{0});
  CHECK_EQ(f.cur(kActiveBytes), std::int64_t{4096});  // active_pending_free
  CHECK_EQ(f.cur(kActive), std::int64_t{1});
  CHECK_EQ(f.cur(kRequestedBytes), std::int64_t{4096});
  CHECK(segments(f.a())[0].blocks[0].state == BlockState::kPendingFree);
  CHECK_VALID(f.a());
  DevicePtr q = f.a().malloc(4096, 0);
  CHECK(q != p);
  CHECK_EQ(q, p + 4096);
  f.sim().complete_stream(s1);
  DevicePtr r = f.a().malloc(4096, 0);  // the event is collected at the start of malloc
  CHECK_EQ(r, p);
  CHECK_EQ(f.cur(kActiveBytes), std::int64_t{8192});
  CHECK_VALID(f.a());
}

TEST(record_stream_on_own_stream_is_ignored_and_empty_cache_waits_for_events) {
  Fixture f;
  StreamId s1 = f.a().create_stream();
  StreamId s2 = f.a().create_stream();
  f.sim().hold_stream(s2, true);
  DevicePtr p = f.a().malloc(3 * MiB, s1);
  f.a().record_stream(p, s1);  // its own stream: nothing to wait for
  f.a().free(p);
  CHECK_EQ(f.cur(kActive), std::int64_t{0});
  DevicePtr q = f.a().malloc(3 * MiB, s1);
  CHECK_EQ(q, p);
  f.a().record_stream(q, s2);
  f.a().record_stream(q, s2);
  f.a().free(q);
  CHECK_EQ(f.cur(kActive), std::int64_t{1});
  f.a().empty_cache();  // synchronizes on the outstanding event, then releases everything
  CHECK_EQ(f.cur(kActive), std::int64_t{0});
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{0});
  CHECK_EQ(f.a().stats().num_sync_all_streams, std::int64_t{1});
  CHECK_EQ(f.sim().live_allocations(), std::size_t{0});
  CHECK_VALID(f.a());
}

TEST(oom_retry_releases_the_cache_once) {
  Fixture f(64 * MiB);
  StreamId s1 = f.a().create_stream();
  DevicePtr x = f.a().malloc(40 * MiB, s1);
  f.a().free(x);  // cached on s1; useless for stream 0
  DevicePtr y = f.a().malloc(40 * MiB, 0);
  CHECK(y != 0);
  DeviceStats s = f.a().stats();
  CHECK_EQ(s.num_alloc_retries, std::int64_t{1});
  CHECK_EQ(s.num_sync_all_streams, std::int64_t{1});
  CHECK_EQ(s.num_device_alloc, std::int64_t{2});
  CHECK_EQ(s.num_device_free, std::int64_t{1});
  CHECK_EQ(s.num_ooms, std::int64_t{0});
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{40 * MiB});
  CHECK_EQ(f.cur(kSegment, kLargePool), std::int64_t{1});
  CHECK_VALID(f.a());
}

TEST(oom_error_carries_the_numbers_and_pytorch_wording) {
  Fixture f(64 * MiB);
  DevicePtr keep = f.a().malloc(8 * MiB, 0);  // a 20 MiB segment, 8 MiB allocated
  bool observed = false;
  f.a().add_oom_observer([&](const OutOfMemoryInfo& i) { observed = i.alloc_size == 100 * MiB; });
  try {
    f.a().malloc(100 * MiB - 5, 0);
    CHECK(false);
  } catch (const OutOfMemoryError& e) {
    CHECK_EQ(e.code(), std::string("ERR_CUDA_OUT_OF_MEMORY"));
    CHECK_EQ(e.info().requested, std::uint64_t{100 * MiB - 5});
    CHECK_EQ(e.info().alloc_size, std::uint64_t{100 * MiB});
    CHECK_EQ(e.info().device_total, std::uint64_t{64 * MiB});
    CHECK_EQ(e.info().device_free, std::uint64_t{44 * MiB});
    CHECK_EQ(e.info().allocated, std::uint64_t{8 * MiB});
    CHECK_EQ(e.info().reserved, std::uint64_t{20 * MiB});
    const std::string m = e.what();
    CHECK(m.rfind("CUDA out of memory. Tried to allocate 100.00 MiB. GPU 0 has a total capacity of "
                  "64.00 MiB of which 44.00 MiB is free. Of the allocated memory 8.00 MiB is allocated "
                  "by the caching allocator, and 12.00 MiB is reserved by the caching allocator but "
                  "unallocated.", 0) == 0);
    CHECK(m.find("max_split_size_mb") != std::string::npos);
    CHECK(m.find("simulated") != std::string::npos);
  }
  CHECK(observed);
  DeviceStats s = f.a().stats();
  CHECK_EQ(s.num_ooms, std::int64_t{1});
  CHECK_EQ(s.num_alloc_retries, std::int64_t{1});
  f.a().free(keep);
  CHECK_VALID(f.a());
  CHECK_THROWS(f.a().malloc(std::uint64_t{1} << 60, 0), OutOfMemoryError, "OUT_OF_MEMORY");
  CHECK_EQ(f.a().stats().num_ooms, std::int64_t{1});  // the 1 EiB check touches nothing
}

TEST(memory_fraction_caps_reserved_memory) {
  Fixture f(GiB);
  f.a().set_memory_fraction(0.5);
  DevicePtr p = f.a().malloc(400 * MiB, 0);
  CHECK(p != 0);
  try {
    f.a().malloc(200 * MiB, 0);
    CHECK(false);
  } catch (const OutOfMemoryError& e) {
    CHECK_EQ(e.info().allowed, std::uint64_t{512 * MiB});
    CHECK(std::string(e.what()).find("512.00 MiB allowed; ") != std::string::npos);
  }
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{400 * MiB});
  f.a().set_memory_fraction(1.0);
  CHECK(f.a().malloc(200 * MiB, 0) != 0);
  CHECK_THROWS(f.a().set_memory_fraction(1.5), InvalidArgumentError, "INVALID_ARGUMENT");
  CHECK_VALID(f.a());
}

TEST(empty_cache_releases_unsplit_free_blocks_only) {
  Fixture f;
  DevicePtr small_live = f.a().malloc(4096, 0);
  DevicePtr small_free = f.a().malloc(3000, 0);   // same 2 MiB segment
  DevicePtr large_free = f.a().malloc(12 * MiB, 0);
  f.a().free(small_free);
  f.a().free(large_free);
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{2 * MiB + 12 * MiB});
  f.a().empty_cache();
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{2 * MiB});  // the small segment is still split
  CHECK_EQ(f.a().stats().num_device_free, std::int64_t{1});
  f.a().free(small_live);
  f.a().empty_cache();
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{0});
  CHECK_EQ(f.sim().used_bytes(), std::size_t{0});
  CHECK_VALID(f.a());
}

TEST(oversize_blocks_are_not_split_and_are_released_first) {
  AllocatorConfig cfg = AllocatorConfig::parse("max_split_size_mb:40");
  Fixture f(160 * MiB, cfg);
  DevicePtr big = f.a().malloc(100 * MiB, 0);
  CHECK_EQ(f.a().stats().oversize_allocations.current, std::int64_t{1});
  CHECK_EQ(f.a().stats().oversize_segments.current, std::int64_t{1});
  f.a().free(big);
  // A small request never takes an oversize block...
  DevicePtr mid = f.a().malloc(30 * MiB, 0);
  CHECK(mid != big);
  CHECK_EQ(f.cur(kSegment), std::int64_t{2});
  // ...and an oversize request takes one only within max_non_split_rounding (20 MiB),
  // whole: 90 MiB gets the 100 MiB block unsplit.
  f.a().free(mid);
  DevicePtr again = f.a().malloc(90 * MiB, 0);
  CHECK_EQ(again, big);
  CHECK_EQ(segments(f.a()).back().blocks.size(), std::size_t{1});
  f.a().free(again);
  // 60 MiB: the 100 MiB block is too big to take (>= 60 + 20) and the device has only
  // 30 MiB left, so the cached oversize block is released first, with no full retry.
  DevicePtr sixty = f.a().malloc(60 * MiB, 0);
  CHECK(sixty != 0);
  DeviceStats s = f.a().stats();
  CHECK_EQ(s.num_alloc_retries, std::int64_t{0});
  CHECK_EQ(s.num_device_free, std::int64_t{1});
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{90 * MiB});
  CHECK_VALID(f.a());
}

TEST(garbage_collection_frees_old_cached_blocks_under_a_fraction) {
  AllocatorConfig cfg = AllocatorConfig::parse("garbage_collection_threshold:0.5");
  Fixture f(GiB, cfg);
  f.a().set_memory_fraction(0.8);  // allowed 819 MiB, gc above 409 MiB
  std::vector<DevicePtr> ps;
  for (int i = 0; i < 5; ++i) ps.push_back(f.a().malloc(100 * MiB, 0));
  for (DevicePtr p : ps) f.a().free(p);
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{500 * MiB});
  // A request that needs a new segment triggers gc before asking the device.
  f.a().malloc(300 * MiB, 0);
  CHECK(f.cur(kReservedBytes) < std::int64_t{800 * MiB});
  CHECK(f.a().stats().num_device_free >= 1);
  CHECK_EQ(f.a().stats().num_alloc_retries, std::int64_t{0});
  CHECK_VALID(f.a());
}

TEST(device_malloc_failure_is_retried_after_releasing_the_cache) {
  Fixture f;
  DevicePtr p = f.a().malloc(1000, 0);
  f.a().free(p);
  f.sim().fail_next_mallocs(1);
  DevicePtr q = f.a().malloc(5 * MiB, 0);
  CHECK(q != 0);
  CHECK_EQ(f.a().stats().num_alloc_retries, std::int64_t{1});
  CHECK_EQ(f.cur(kSegment), std::int64_t{1});  // the cached small segment was released
  CHECK_VALID(f.a());
}

TEST(free_memory_callbacks_run_before_the_device_is_asked) {
  Fixture f;
  int calls = 0;
  f.a().add_free_memory_callback([&] {
    ++calls;
    return false;
  });
  f.a().malloc(1000, 0);
  CHECK_EQ(calls, 1);
  f.a().malloc(1000, 0);  // served from the cache: no callback
  CHECK_EQ(calls, 1);
  CHECK_VALID(f.a());
}

TEST(release_owner_frees_what_an_environment_allocated) {
  Fixture f;
  f.a().malloc(1000, 0, 7);
  f.a().malloc(2000, 0, 7);
  DevicePtr other = f.a().malloc(3000, 0, 8);
  CHECK_EQ(f.a().release_owner(7), std::size_t{2});
  CHECK_EQ(f.a().live_allocation_count(), std::size_t{1});
  f.a().free(other);
  CHECK_VALID(f.a());
}

// The counters keep PyTorch's semantics after resets: allocated/freed count from the last
// reset_accumulated (freed is derived, so check it by hand), peaks restart at current, and
// "all" is the sum of the pools for allocated and freed.
TEST(stat_counters_across_resets) {
  Fixture f;
  DevicePtr small = f.a().malloc(4096, 0);          // small pool
  DevicePtr large = f.a().malloc(3 * MiB, 0);       // large pool
  f.a().free(large);
  f.a().reset_accumulated_stats();
  DeviceStats s = f.a().stats();
  CHECK_EQ(s.arrays[kAllocatedBytes][kSmallPool].allocated, std::int64_t{0});
  CHECK_EQ(s.arrays[kAllocatedBytes][kSmallPool].freed, std::int64_t{0});
  CHECK_EQ(s.arrays[kAllocatedBytes][kSmallPool].current, std::int64_t{4096});
  CHECK_VALID(f.a());
  DevicePtr again = f.a().malloc(3 * MiB, 0);
  f.a().free(small);
  s = f.a().stats();
  CHECK_EQ(s.arrays[kAllocatedBytes][kLargePool].allocated, std::int64_t{3 * MiB});
  CHECK_EQ(s.arrays[kAllocatedBytes][kLargePool].freed, std::int64_t{0});
  CHECK_EQ(s.arrays[kAllocatedBytes][kSmallPool].allocated, std::int64_t{0});
  CHECK_EQ(s.arrays[kAllocatedBytes][kSmallPool].freed, std::int64_t{4096});
  CHECK_EQ(s.arrays[kAllocatedBytes][kAggregate].allocated, std::int64_t{3 * MiB});
  CHECK_EQ(s.arrays[kAllocatedBytes][kAggregate].freed, std::int64_t{4096});
  CHECK_EQ(s.arrays[kAllocatedBytes][kAggregate].current, std::int64_t{3 * MiB});
  CHECK_EQ(s.arrays[kAllocatedBytes][kAggregate].peak, std::int64_t{3 * MiB + 4096});
  f.a().reset_peak_stats();
  s = f.a().stats();
  CHECK_EQ(s.arrays[kAllocatedBytes][kAggregate].peak, std::int64_t{3 * MiB});
  CHECK_EQ(s.arrays[kAllocatedBytes][kSmallPool].peak, std::int64_t{0});
  f.a().free(again);
  s = f.a().stats();
  CHECK_EQ(s.arrays[kAllocatedBytes][kLargePool].freed, std::int64_t{3 * MiB});
  CHECK_EQ(s.arrays[kAllocation][kAggregate].allocated, std::int64_t{1});
  CHECK_EQ(s.arrays[kAllocation][kAggregate].freed, std::int64_t{2});
  CHECK_VALID(f.a());
}

// Caching off (caching_allocator_enable(False)): the cache is emptied, each allocation is
// a segment of its own, and a completed free returns it to the device at once; with
// expandable segments configured, allocations still take plain segments.
TEST(caching_off_returns_every_free_to_the_device) {
  Fixture f(256 * MiB, AllocatorConfig::parse("expandable_segments:True"));
  f.a().free(f.a().malloc(3 * MiB, 0));
  CHECK(f.cur(kReservedBytes) > 0);
  f.a().set_caching_enabled(false);
  CHECK(!f.a().caching_enabled());
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{0});
  DevicePtr p = f.a().malloc(1000, 0);
  DevicePtr q = f.a().malloc(5 * MiB, 0);
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{1024 + 5 * MiB});
  CHECK_EQ(f.cur(kSegment), std::int64_t{2});
  CHECK_EQ(f.sim().live_allocations(), std::size_t{2});
  CHECK_VALID(f.a());
  f.a().free(p);
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{5 * MiB});
  // A free that waits on another stream's work returns when that work is done.
  StreamId side = f.a().create_stream();
  f.sim().hold_stream(side, true);
  f.a().record_stream(q, side);
  f.a().free(q);
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{5 * MiB});
  f.sim().complete_stream(side);
  f.a().free(f.a().malloc(512, 0));  // collects the completed event, and returns its own segment
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{0});
  CHECK_EQ(f.sim().live_allocations(), std::size_t{0});
  CHECK_VALID(f.a());
  f.a().set_caching_enabled(true);
  f.a().free(f.a().malloc(1000, 0));
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{2 * MiB});  // cached again
  CHECK_VALID(f.a());
}

// An inactive block's requested_size is the last request made of its block object, as
// PyTorch writes it: alloc_found_block splits the front off as a new block and the free
// remainder keeps the object (and its last request), so after a freed block absorbs its
// neighbours and is split again, the remainder can show a request larger than itself. Only
// active blocks' requests count in the segment's requested_size (PyTorch's snapshot()).
TEST(inactive_requested_size_is_the_block_objects_last_request_as_pytorch_writes_it) {
  Fixture f;
  const DevicePtr a = f.a().malloc(188000, 0);  // the front of a fresh 2 MiB segment
  f.a().free(a);                               // absorbs the (never allocated) remainder
  const DevicePtr b = f.a().malloc(1000, 0);   // split again: the remainder is a's object
  CHECK_EQ(b, a);
  for (int i = 0; i < 1900; ++i) f.a().malloc(1000, 0);  // shrink that remainder below 188000
  const DeviceSnapshot s = f.a().snapshot(0, false);
  CHECK_EQ(s.segments.size(), std::size_t{1});
  const SnapshotBlock& tail = s.blocks.back();
  CHECK(tail.state == BlockState::kFree);
  CHECK_EQ(tail.size, Bytes{2 * MiB - 1901 * 1024});
  CHECK_EQ(tail.requested_size, Bytes{188000});     // stale, and larger than the block
  CHECK_EQ(s.segments[0].requested_size, Bytes{1901 * 1000});  // active blocks only
  CHECK_VALID(f.a());
}
