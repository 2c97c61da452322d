// MemPools: private pools with per-thread routing, PyTorch's use_count and release rules.
#include <thread>

#include "allocator/policy/facets/mem_pools.h"
#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

TEST(mem_pool_routes_allocations_and_keeps_them_apart) {
  Fixture f;
  auto& a = f.a();
  HistoryOptions h;
  h.enabled = true;
  h.max_entries = 100;
  a.set_history(h);
  const std::uint32_t pool = MemPools(a).create_pool();
  CHECK_EQ(MemPools(a).pool_use_count(pool), 1);
  DevicePtr outside = a.malloc(4096, 0);
  MemPools(a).begin_allocate_to_pool(pool);
  CHECK_EQ(MemPools(a).pool_use_count(pool), 2);
  DevicePtr inside = a.malloc(4096, 0);
  DevicePtr other_thread = 0;
  std::thread([&] { other_thread = a.malloc(4096, 0); }).join();  // only this thread is routed
  MemPools(a).end_allocate_to_pool(pool);
  CHECK_EQ(MemPools(a).pool_use_count(pool), 1);
  CHECK_EQ(other_thread, outside + 4096);  // the default pool's segment
  auto pool_snap = a.snapshot(pool, true);
  CHECK_EQ(pool_snap.segments.size(), std::size_t{1});
  CHECK_EQ(pool_snap.segments[0].pool, pool);
  CHECK_EQ(pool_snap.segments[0].address, inside);
  auto all = a.snapshot(0, false);
  CHECK_EQ(all.segments.size(), std::size_t{2});
  bool alloc_with_pool = false;
  for (const TraceEntry& e : pool_snap.traces) alloc_with_pool |= e.action == TraceAction::kAlloc && e.pool == pool && e.addr == inside;
  CHECK(alloc_with_pool);
  // A block freed into the pool is reused only by routed allocations.
  a.free(inside);
  DevicePtr again = a.malloc(4096, 0);
  CHECK(again != inside);
  MemPools(a).begin_allocate_to_pool(pool);
  CHECK_EQ(a.malloc(4096, 0), inside);
  MemPools(a).end_allocate_to_pool(pool);
  CHECK_EQ(f.cur(kSegment), std::int64_t{2});  // pool memory counts in the device's stats
  CHECK_VALID(a);
}

TEST(released_mem_pool_frees_its_cache_and_disappears_once_empty) {
  Fixture f;
  auto& a = f.a();
  const std::uint32_t pool = MemPools(a).create_pool();
  MemPools(a).begin_allocate_to_pool(pool);
  std::vector<DevicePtr> ptrs;
  for (int i = 0; i < 1000; ++i) ptrs.push_back(a.malloc(4096, 0));  // PR #172672's workload
  MemPools(a).end_allocate_to_pool(pool);
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{2 * MiB * 2});  // 4 MiB of 4 KiB blocks: 2 segments
  DevicePtr keep = ptrs.back();
  ptrs.pop_back();
  for (DevicePtr p : ptrs) a.free(p);
  MemPools(a).release_pool(pool);  // use_count 0: the free segment goes back; the pool lives while `keep` does
  CHECK(MemPools(a).pool_exists(pool));
  CHECK_EQ(f.cur(kSegment), std::int64_t{1});
  CHECK_VALID(a);
  a.free(keep);
  CHECK(MemPools(a).pool_exists(pool));
  a.empty_cache();  // the released pool's last segment goes, and the pool with it
  CHECK(!MemPools(a).pool_exists(pool));
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{0});
  CHECK_VALID(a);
  CHECK_THROWS(MemPools(a).begin_allocate_to_pool(pool), InvalidArgumentError, "INVALID_POOL");
  CHECK_THROWS(MemPools(a).release_pool(pool), InvalidArgumentError, "INVALID_POOL");
  CHECK_THROWS(MemPools(a).end_allocate_to_pool(pool), InvalidArgumentError, "INVALID_POOL");
}

TEST(nested_routes_resolve_newest_first) {
  Fixture f;
  auto& a = f.a();
  const std::uint32_t p1 = MemPools(a).create_pool();
  const std::uint32_t p2 = MemPools(a).create_pool();
  CHECK(p2 > p1);
  MemPools(a).begin_allocate_to_pool(p1);
  MemPools(a).begin_allocate_to_pool(p2);
  DevicePtr in2 = a.malloc(512, 0);
  MemPools(a).end_allocate_to_pool(p2);
  DevicePtr in1 = a.malloc(512, 0);
  MemPools(a).end_allocate_to_pool(p1);
  CHECK_EQ(a.snapshot(p2, false).segments.at(0).address, in2);
  CHECK_EQ(a.snapshot(p1, false).segments.at(0).address, in1);
  CHECK_THROWS(MemPools(a).end_allocate_to_pool(p1), InvalidArgumentError, "INVALID_POOL");
  CHECK_VALID(a);
}
