// Expandable segments (Note [Expandable segments] in native/allocator/policy/expandable_segments.cpp)
// on the simulated device's VMM.
#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

namespace {
AllocatorConfig expandable() { return AllocatorConfig::parse("expandable_segments:True"); }
void record_history(DeviceCachingAllocator& a) {
  HistoryOptions h;
  h.enabled = true;
  h.max_entries = 100;
  a.set_history(h);
}
std::vector<TraceAction> actions(DeviceCachingAllocator& a) {
  std::vector<TraceAction> out;
  for (const TraceEntry& e : a.snapshot(0, true).traces) {
    if (e.action != TraceAction::kSnapshot) out.push_back(e.action);
  }
  return out;
}
}  // namespace

TEST(expandable_segment_maps_pages_on_demand_and_grows_contiguously) {
  Fixture f(GiB, expandable());
  auto& a = f.a();
  record_history(a);
  DevicePtr x = a.malloc(15 * MiB, 0);  // large pool: 20 MiB pages
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{20 * MiB});
  CHECK_EQ(f.cur(kSegment), std::int64_t{0});  // mapping counts no segment, as in PyTorch
  CHECK_EQ(f.sim().mapped_bytes(), std::size_t{20 * MiB});
  DevicePtr y = a.malloc(15 * MiB, 0);  // 5 MiB left + the next page: stays contiguous
  CHECK_EQ(y, x + 15 * MiB);
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{40 * MiB});
  CHECK_EQ(a.stats().num_device_alloc, std::int64_t{2});
  CHECK_EQ(f.cur(kInactiveSplit), std::int64_t{0});  // expandable blocks are left out
  auto snap = a.snapshot(0, false);
  CHECK_EQ(snap.segments.size(), std::size_t{1});  // one contiguous mapped range
  CHECK(snap.segments[0].is_expandable);
  CHECK_EQ(snap.segments[0].total_size, std::size_t{40 * MiB});
  CHECK_EQ(snap.segments[0].block_count, std::size_t{3});
  CHECK_VALID(a);
  const auto t = actions(a);
  CHECK(t.size() == 4 && t[0] == TraceAction::kSegmentMap && t[1] == TraceAction::kAlloc &&
        t[2] == TraceAction::kSegmentMap && t[3] == TraceAction::kAlloc);
  // Small requests map 2 MiB pages in the small pool's own segment.
  DevicePtr s = a.malloc(1000, 0);
  CHECK(s < x || s >= x + 40 * MiB);
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{42 * MiB});
  a.free(s);
  a.free(x);
  a.free(y);
  CHECK_VALID(a);
}

TEST(releasing_the_cache_unmaps_whole_free_pages_only) {
  Fixture f(GiB, expandable());
  auto& a = f.a();
  record_history(a);
  DevicePtr x = a.malloc(15 * MiB, 0);
  DevicePtr y = a.malloc(15 * MiB, 0);
  CHECK_EQ(f.sim().reservations(), std::size_t{1});
  a.free(y);  // free: [15, 40) MiB; page 1 = [20, 40) lies wholly inside
  a.empty_cache();
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{20 * MiB});
  CHECK_EQ(f.sim().mapped_bytes(), std::size_t{20 * MiB});
  CHECK_EQ(a.stats().num_device_free, std::int64_t{1});
  CHECK(actions(a).back() == TraceAction::kSegmentUnmap);
  CHECK_VALID(a);
  DevicePtr z = a.malloc(15 * MiB, 0);  // maps page 1 again, at the same address
  CHECK_EQ(z, y);
  a.free(z);
  a.free(x);
  a.empty_cache();  // nothing mapped: the address range goes back too
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{0});
  CHECK_EQ(f.sim().mapped_bytes(), std::size_t{0});
  CHECK(segments(a).empty());
  CHECK_EQ(f.sim().reservations(), std::size_t{0});  // the address range itself went back
  CHECK_VALID(a);
}

TEST(expandable_segments_run_out_cleanly_and_stay_per_stream) {
  Fixture f(64 * MiB, expandable());
  auto& a = f.a();
  StreamId s1 = a.create_stream();
  DevicePtr x = a.malloc(30 * MiB, 0);   // 2 pages of 20 MiB
  DevicePtr y = a.malloc(15 * MiB, s1);  // its own segment: 1 page
  CHECK(y < x || y >= x + 40 * MiB);
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{60 * MiB});
  bool oom = false;
  try {
    a.malloc(30 * MiB, 0);  // needs 2 more pages; the device has 4 MiB
  } catch (const OutOfMemoryError& e) {
    oom = true;
    CHECK_EQ(e.info().device_free, std::uint64_t{4 * MiB});
  }
  CHECK(oom);
  CHECK_VALID(a);
  a.free(y);
  DevicePtr z = a.malloc(15 * MiB, 0);  // s1's page went back in the OOM retry
  CHECK(z >= x && z < x + 2 * GiB);
  CHECK_EQ(a.stats().num_alloc_retries, std::int64_t{2});
  CHECK_VALID(a);
}

TEST(turning_expandable_segments_off_skips_their_blocks) {
  Fixture f(GiB, expandable());
  auto& a = f.a();
  DevicePtr x = a.malloc(15 * MiB, 0);
  a.free(x);
  a.set_config(AllocatorConfig{});
  DevicePtr y = a.malloc(15 * MiB, 0);  // a fixed segment, not the cached expandable block
  CHECK(y != x);
  CHECK_EQ(f.cur(kSegment), std::int64_t{1});
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{20 * MiB + 16 * MiB});
  a.set_config(expandable());
  CHECK_EQ(a.malloc(15 * MiB, 0), x);  // and on again, it is reused
  CHECK_VALID(a);
}
