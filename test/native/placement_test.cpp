// place_segment: replay's rebuild of a recorded segment. The layout must come out as given,
// behave afterwards like any other segment, and a layout that is not one must change nothing.
#include "allocator/policy/facets/mem_pools.h"
#include "fixture.h"
#include "../../native/allocator/policy/facets/replay_planner.h"
#include "harness.h"

using namespace cca;
using namespace test;

namespace {

// (offset, size, allocated) of each block of the only segment at `base`.
std::vector<std::tuple<std::size_t, std::size_t, bool>> layout(DeviceCachingAllocator& a, DevicePtr base) {
  std::vector<std::tuple<std::size_t, std::size_t, bool>> out;
  for (const SegmentOf& s : segments(a)) {
    if (s.address != base) continue;
    for (const SnapshotBlock& b : s.blocks) out.emplace_back(b.address - base, b.size, b.state == BlockState::kAllocated);
  }
  return out;
}

using L = std::vector<std::tuple<std::size_t, std::size_t, bool>>;

}  // namespace

TEST(a_placed_segment_has_its_live_blocks_at_their_offsets_and_free_gaps_between) {
  Fixture f;
  auto& a = f.a();
  const std::vector<DevicePtr> p = ReplayPlanner(a).place_segment(40 * MiB, 0, 0, false,
                                                   {{0, 2 * MiB + 512, 2 * MiB + 100}, {8 * MiB, 4 * MiB, 4 * MiB}, {30 * MiB, 10 * MiB, 9 * MiB}}, 7);
  CHECK_EQ(p.size(), std::size_t{4});  // the segment, then its live blocks
  const DevicePtr base = p[0];
  CHECK_EQ(p[1], base);
  CHECK_EQ(p[2], base + 8 * MiB);
  CHECK_EQ(p[3], base + 30 * MiB);
  CHECK(layout(a, base) == L({{0, 2 * MiB + 512, true}, {2 * MiB + 512, 6 * MiB - 512, false}, {8 * MiB, 4 * MiB, true},
                              {12 * MiB, 18 * MiB, false}, {30 * MiB, 10 * MiB, true}}));
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t(40 * MiB));
  CHECK_EQ(f.cur(kAllocatedBytes), std::int64_t(16 * MiB + 512));
  CHECK_EQ(f.cur(kRequestedBytes), std::int64_t(15 * MiB + 100));
  CHECK_EQ(f.cur(kAllocation), std::int64_t{3});
  CHECK_EQ(f.cur(kSegment), std::int64_t{1});
  CHECK_EQ(f.cur(kInactiveSplit), std::int64_t{2});
  CHECK_VALID(a);
  // It is then a segment like any other: best fit takes the 6 MiB gap (whole: what would be
  // left is under 1 MiB), and a free merges with the free neighbour.
  const std::uint64_t device_allocs = a.stats().num_device_alloc;
  CHECK_EQ(a.malloc(5 * MiB, 0), base + 2 * MiB + 512);
  a.free(p[2]);
  CHECK(layout(a, base) == L({{0, 2 * MiB + 512, true}, {2 * MiB + 512, 6 * MiB - 512, true}, {8 * MiB, 22 * MiB, false},
                              {30 * MiB, 10 * MiB, true}}));
  CHECK_EQ(a.stats().num_device_alloc, device_allocs);
  CHECK_EQ(a.release_owner(7), std::size_t{2});  // the placed blocks are the owner's
  CHECK_VALID(a);
}

TEST(placed_small_and_free_segments_and_mem_pool_segments) {
  Fixture f;
  auto& a = f.a();
  const std::vector<DevicePtr> small = ReplayPlanner(a).place_segment(2 * MiB, 0, 0, true, {{512 * KiB, 4 * KiB, 4000}}, 0);
  const DevicePtr small_base = small[0];
  CHECK_EQ(small[1], small_base + 512 * KiB);
  CHECK(layout(a, small_base) == L({{0, 512 * KiB, false}, {512 * KiB, 4 * KiB, true}, {516 * KiB, 2 * MiB - 516 * KiB, false}}));
  CHECK_EQ(a.malloc(4 * KiB, 0), small_base);  // the smaller gap, in the small pool
  const DevicePtr free_base = ReplayPlanner(a).place_segment(24 * MiB, 0, 0, false, {}, 0).at(0);
  CHECK_EQ(segments(a).size(), std::size_t{2});
  const std::uint64_t device_allocs = a.stats().num_device_alloc;
  const DevicePtr in_free = a.malloc(20 * MiB, 0);  // the free placed segment serves it
  CHECK_EQ(a.stats().num_device_alloc, device_allocs);
  a.free(in_free);
  // A placed segment that holds nothing can be given back; one that holds a block cannot.
  CHECK_THROWS(ReplayPlanner(a).unplace_segment(small_base), InvalidPointerError, "");
  CHECK_THROWS(ReplayPlanner(a).unplace_segment(free_base + 512), InvalidPointerError, "");
  ReplayPlanner(a).unplace_segment(free_base);
  CHECK_EQ(segments(a).size(), std::size_t{1});
  const std::uint32_t pool = MemPools(a).create_pool();
  const DevicePtr pooled = ReplayPlanner(a).place_segment(20 * MiB, 0, pool, false, {{0, 12 * MiB, 12 * MiB}}, 0)[1];
  CHECK_EQ(a.snapshot(pool, false).segments.size(), std::size_t{1});
  CHECK_EQ(a.snapshot(pool, false).segments[0].address, pooled);
  CHECK(a.malloc(8 * MiB, 0) != pooled + 12 * MiB);  // the pool's free tail is the pool's alone
  a.empty_cache();
  CHECK_VALID(a);
}

TEST(a_layout_that_is_not_one_is_refused_and_changes_nothing) {
  Fixture f(64 * MiB);
  auto& a = f.a();
  const DevicePtr keep = a.malloc(3 * MiB, 0);
  const std::vector<double> before = f.all_stats();
  const std::size_t used = f.sim().used_bytes();
  const std::vector<std::vector<PlacedBlock>> bad = {
      {{0, 4 * MiB, 4 * MiB}, {2 * MiB, 4 * MiB, 4 * MiB}},   // overlapping
      {{8 * MiB, 4 * MiB, 4 * MiB}, {0, 4 * MiB, 4 * MiB}},   // not sorted
      {{100, 4 * MiB, 4 * MiB}},                              // not 512-aligned
      {{0, 4 * MiB + 1, 4 * MiB}},                            // a block size not a multiple of 512
      {{18 * MiB, 4 * MiB, 4 * MiB}},                         // past the end
      {{0, 4 * MiB, 5 * MiB}},                                // asked for more than its block
      {{0, 0, 0}},                                            // empty
  };
  for (const auto& live : bad) CHECK_THROWS(ReplayPlanner(a).place_segment(20 * MiB, 0, 0, false, live, 0), InvalidArgumentError, "ERR_INVALID_ARG_VALUE");
  CHECK_THROWS(ReplayPlanner(a).place_segment(4 * MiB, 0, 0, true, {}, 0), InvalidArgumentError, "ERR_INVALID_ARG_VALUE");  // small is 2 MiB
  CHECK_THROWS(ReplayPlanner(a).place_segment(20 * MiB + 100, 0, 0, false, {}, 0), InvalidArgumentError, "ERR_INVALID_ARG_VALUE");
  CHECK_THROWS(ReplayPlanner(a).place_segment(20 * MiB, 12345, 0, false, {}, 0), InvalidArgumentError, "ERR_CCA_INVALID_STREAM");
  CHECK_THROWS(ReplayPlanner(a).place_segment(20 * MiB, 0, 99, false, {}, 0), InvalidArgumentError, "ERR_CCA_INVALID_POOL");
  CHECK(f.all_stats() == before);
  CHECK_EQ(f.sim().used_bytes(), used);
  // No room on the device: the usual OOM, and the segment is not made.
  CHECK_THROWS(ReplayPlanner(a).place_segment(62 * MiB, 0, 0, false, {}, 0), OutOfMemoryError, "");
  CHECK_EQ(f.sim().used_bytes(), used);
  AllocatorConfig expandable;
  expandable.expandable_segments = true;
  a.set_config(expandable);
  CHECK_THROWS(ReplayPlanner(a).place_segment(20 * MiB, 0, 0, false, {}, 0), InvalidArgumentError, "ERR_INVALID_ARG_VALUE");
  a.free(keep);
  CHECK_VALID(a);
}

TEST(replays_questions_about_a_request_change_nothing) {
  AllocatorConfig cfg;
  cfg.max_split_size = 40 * MiB;
  Fixture f(16 * GiB, cfg);
  auto& a = f.a();
  // Free and cached: a 24 MiB block and two oversize segments (60 and 50 MiB) of stream 0.
  const DevicePtr small_one = a.malloc(24 * MiB, 0);
  const DevicePtr big = a.malloc(60 * MiB, 0);
  const DevicePtr other = a.malloc(50 * MiB, 0);
  a.free(small_one);
  a.free(big);
  a.free(other);
  const std::vector<double> before = f.all_stats();
  // Best fit, within the oversize rules: a 20 MiB request takes the 24 MiB block, never an oversize one.
  CHECK(ReplayPlanner(a).plan_malloc(20 * MiB, 0, 0).cached.has_value());
  CHECK_EQ(ReplayPlanner(a).plan_malloc(20 * MiB, 0, 0).cached->ptr, small_one);
  CHECK_EQ(ReplayPlanner(a).plan_malloc(45 * MiB, 0, 0).cached->ptr, other);
  CHECK(!ReplayPlanner(a).plan_malloc(100 * MiB, 0, 0).cached.has_value());
  // A cached block ends the dry run, as it ends malloc's chain: nothing after it is asked.
  CHECK(ReplayPlanner(a).plan_malloc(45 * MiB, 0, 0).oversize_sizes.empty());
  // With none cached, before a retry: the oversize segment that fits, or the largest ones until enough.
  const auto fits = ReplayPlanner(a).plan_malloc(61 * MiB, 0, 0);
  CHECK(!fits.cached.has_value());
  CHECK(fits.oversize_sizes == std::vector<std::size_t>({60 * MiB, 50 * MiB}));
  CHECK(fits.oversize_retries);
  const auto largest = ReplayPlanner(a).plan_malloc(100 * MiB, 0, 0);
  CHECK(largest.oversize_sizes == std::vector<std::size_t>({60 * MiB, 50 * MiB}));
  CHECK(largest.oversize_retries);
  CHECK(ReplayPlanner(a).plan_malloc(200 * MiB, 0, 0).oversize_retries == false);
  CHECK(!ReplayPlanner(a).plan_malloc(100 * MiB, 0, 0).limited);
  CHECK(f.all_stats() == before);
  CHECK_VALID(a);
}

// Random layouts placed among random allocations and frees, under each setting that changes
// splitting: the validator after every step, and every placed block freed like any other.
TEST(random_layouts_keep_every_invariant) {
  std::uint64_t s = 0x9e3779b97f4a7c15ull;
  auto below = [&s](std::uint64_t n) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s % n;
  };
  for (int setting = 0; setting < 3; ++setting) {
    AllocatorConfig cfg;
    if (setting == 1) cfg.max_split_size = 20 * MiB;
    if (setting == 2) cfg.roundup_power2_divisions.fill(4);
    Fixture f(64 * GiB, cfg);
    auto& a = f.a();
    const StreamId side = a.create_stream();
    std::vector<DevicePtr> live;
    for (int step = 0; step < 600; ++step) {
      const std::uint64_t op = below(10);
      if (op < 2) {
        const bool small = below(3) == 0;
        const std::size_t size = small ? kSmallBuffer : (1 + below(32)) * 2 * MiB;
        std::vector<PlacedBlock> layout;
        for (std::size_t at = below(4) * 512 * KiB; at < size;) {
          const std::size_t room = (size - at) / kMinBlockSize;
          const std::size_t block = (1 + below(std::min<std::size_t>(room, small ? 512 : 16384))) * kMinBlockSize;
          if (below(2) == 0) layout.push_back({at, block, block - below(kMinBlockSize)});
          at += block + below(3) * 256 * KiB;
        }
        for (DevicePtr p : ReplayPlanner(a).place_segment(size, below(2) ? side : 0, 0, small, layout, 0)) live.push_back(p);
        live.erase(live.end() - static_cast<long>(layout.size() + 1));  // the segment's own address
      } else if (op < 6 && !live.empty()) {
        const std::size_t k = below(live.size());
        a.free(live[k]);
        live.erase(live.begin() + static_cast<long>(k));
      } else {
        live.push_back(a.malloc(1 + below(below(2) ? MiB : 48 * MiB), below(2) ? side : 0));
      }
      CHECK_VALID(a);
      if (step % 97 == 0) a.empty_cache();
    }
    for (DevicePtr p : live) a.free(p);
    a.empty_cache();
    CHECK_EQ(f.cur(kSegment), std::int64_t{0});
    CHECK_VALID(a);
  }
}
