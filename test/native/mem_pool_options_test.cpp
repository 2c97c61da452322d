// PyTorch's newer MemPool options and the stats that came with them: use_on_oom (a pool's
// cache as the fallback before an out-of-memory error), no_split, per-pool reserved bytes,
// and throw_on_cudamalloc_oom's rejections.
#include "allocator/policy/facets/mem_pools.h"
#include "../../native/allocator/policy/facets/ledger_reads.h"
#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

namespace {
AllocatorConfig throwing_config() {
  AllocatorConfig cfg = AllocatorConfig::parse("throw_on_cudamalloc_oom:True");
  return cfg;
}
}  // namespace

TEST(use_on_oom_pool_serves_a_request_the_device_cannot) {
  Fixture f(64 * MiB);
  auto& a = f.a();
  const std::uint32_t pool = MemPools(a).create_pool();
  MemPools(a).begin_allocate_to_pool(pool);
  const DevicePtr cached = a.malloc(20 * MiB, 0);
  MemPools(a).end_allocate_to_pool(pool);
  a.free(cached);  // 20 MiB cached in the pool
  const DevicePtr fill = a.malloc(40 * MiB, 0);  // the device keeps 4 MiB
  // Without the option the pool's cache is not the default pools': out of memory.
  CHECK_THROWS(a.malloc(8 * MiB, 0), OutOfMemoryError, "OUT_OF_MEMORY");
  CHECK_EQ(a.stats().num_ooms, std::int64_t{1});
  MemPools(a).set_use_on_oom(pool, true);
  const DevicePtr fallback = a.malloc(8 * MiB, 0);
  CHECK_EQ(fallback, cached);  // split from the pool's cached block, as PyTorch does
  auto snap = a.snapshot(pool, false);
  CHECK_EQ(snap.segments.size(), std::size_t{1});
  CHECK_EQ(a.stats().num_ooms, std::int64_t{1});
  CHECK_VALID(a);
  // It is the pool's block: freed, it goes back to the pool.
  a.free(fallback);
  CHECK_EQ(a.snapshot(pool, false).segments[0].allocated_size, std::size_t{0});
  // Unmarked, or released, the pool is no fallback.
  MemPools(a).set_use_on_oom(pool, false);
  CHECK_THROWS(a.malloc(8 * MiB, 0), OutOfMemoryError, "OUT_OF_MEMORY");
  MemPools(a).set_use_on_oom(pool, true);
  MemPools(a).release_pool(pool);  // its cache goes back to the device too
  CHECK(!MemPools(a).pool_exists(pool));
  CHECK(a.malloc(8 * MiB, 0) != 0);
  a.free(fill);
  CHECK_VALID(a);
  CHECK_THROWS(MemPools(a).set_use_on_oom(pool, true), InvalidArgumentError, "INVALID_POOL");
}

TEST(use_on_oom_is_not_used_for_a_request_routed_to_a_pool) {
  Fixture f(64 * MiB);
  auto& a = f.a();
  const std::uint32_t fallback = MemPools(a).create_pool();
  const std::uint32_t routed = MemPools(a).create_pool();
  MemPools(a).set_use_on_oom(fallback, true);
  MemPools(a).begin_allocate_to_pool(fallback);
  a.free(a.malloc(20 * MiB, 0));
  MemPools(a).end_allocate_to_pool(fallback);
  const DevicePtr fill = a.malloc(40 * MiB, 0);
  MemPools(a).begin_allocate_to_pool(routed);
  CHECK_THROWS(a.malloc(8 * MiB, 0), OutOfMemoryError, "OUT_OF_MEMORY");
  MemPools(a).end_allocate_to_pool(routed);
  a.free(fill);
  CHECK_VALID(a);
}

TEST(no_split_pool_hands_out_whole_blocks) {
  Fixture f;
  auto& a = f.a();
  const std::uint32_t pool = MemPools(a).create_pool(true);
  MemPools(a).begin_allocate_to_pool(pool);
  const DevicePtr small = a.malloc(4096, 0);
  const DevicePtr large = a.malloc(3 * MiB, 0);
  MemPools(a).end_allocate_to_pool(pool);
  auto segs = segments(a);
  CHECK_EQ(segs.size(), std::size_t{2});
  for (const SegmentOf& s : segs) CHECK_EQ(s.blocks.size(), std::size_t{1});
  // The whole segment is the allocation: 2 MiB for 4 KiB, 20 MiB for 3 MiB.
  CHECK_EQ(f.cur(kAllocatedBytes), std::int64_t{2 * MiB + 20 * MiB});
  CHECK_EQ(f.cur(kInactiveSplit), std::int64_t{0});
  CHECK_VALID(a);
  // The default pools still split.
  const DevicePtr shared = a.malloc(4096, 0);
  CHECK_EQ(f.cur(kInactiveSplit), std::int64_t{1});
  a.free(small);
  a.free(large);
  a.free(shared);
  // Freed whole blocks serve smaller routed requests whole again.
  MemPools(a).begin_allocate_to_pool(pool);
  CHECK_EQ(a.malloc(1 * MiB, 0), small);
  CHECK_EQ(a.malloc(4 * MiB, 0), large);
  MemPools(a).end_allocate_to_pool(pool);
  CHECK_EQ(f.cur(kAllocatedBytes), std::int64_t{2 * MiB + 20 * MiB});
  CHECK_VALID(a);
}

TEST(private_pool_reserved_bytes_follow_its_segments) {
  Fixture f;
  auto& a = f.a();
  const std::uint32_t pool = MemPools(a).create_pool();
  MemPools(a).begin_allocate_to_pool(pool);
  const DevicePtr s = a.malloc(4096, 0);
  const DevicePtr l = a.malloc(30 * MiB, 0);
  MemPools(a).end_allocate_to_pool(pool);
  a.free(a.malloc(4096, 0));  // the default pools' segment is not the pool's
  const auto find = [&]() {
    for (const PoolReserved& r : LedgerReads(a).pool_reserved_stats()) {
      if (r.id == pool) return r;
    }
    return PoolReserved{};
  };
  PoolReserved r = find();
  CHECK_EQ(r.id, pool);
  CHECK_EQ(r.reserved[kAggregate].current, std::int64_t{2 * MiB + 30 * MiB});
  CHECK_EQ(r.reserved[kSmallPool].current, std::int64_t{2 * MiB});
  CHECK_EQ(r.reserved[kLargePool].current, std::int64_t{30 * MiB});
  a.free(l);
  MemPools(a).release_pool(pool);  // the free large segment goes; the small one holds `s`
  r = find();
  CHECK_EQ(r.reserved[kAggregate].current, std::int64_t{2 * MiB});
  CHECK_EQ(r.reserved[kAggregate].peak, std::int64_t{32 * MiB});
  CHECK_EQ(r.reserved[kLargePool].freed, std::int64_t{30 * MiB});
  a.reset_peak_stats();
  a.reset_accumulated_stats();
  r = find();
  CHECK_EQ(r.reserved[kAggregate].peak, std::int64_t{2 * MiB});
  CHECK_EQ(r.reserved[kLargePool].freed, std::int64_t{0});
  CHECK_VALID(a);
  a.free(s);
  a.empty_cache();
  CHECK_EQ(LedgerReads(a).pool_reserved_stats().size(), std::size_t{0});  // erased with the pool
}

TEST(throw_on_cudamalloc_oom_rejects_without_releasing_the_cache) {
  Fixture f(GiB, throwing_config());
  auto& a = f.a();
  a.set_memory_fraction(0.5);
  a.free(a.malloc(100 * MiB, 0));  // cached: a retry would release it
  const DevicePtr keep = a.malloc(400 * MiB, 0);
  try {
    a.malloc(200 * MiB, 0);
    CHECK(false);
  } catch (const OutOfMemoryError& e) {
    CHECK(std::string(e.what()).find("throw_on_cudamalloc_oom") != std::string::npos);
  }
  const DeviceStats st = a.stats();
  CHECK_EQ(st.num_oom_rejections, std::int64_t{1});
  CHECK_EQ(st.num_ooms, std::int64_t{0});
  CHECK_EQ(st.num_alloc_retries, std::int64_t{0});
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{500 * MiB});  // the cached 100 MiB stayed
  // Without the option the same request releases the cache, retries, and still fails.
  a.set_config(AllocatorConfig{});
  a.set_memory_fraction(0.5);
  CHECK_THROWS(a.malloc(200 * MiB, 0), OutOfMemoryError, "OUT_OF_MEMORY");
  CHECK_EQ(a.stats().num_ooms, std::int64_t{1});
  CHECK_EQ(a.stats().num_alloc_retries, std::int64_t{1});
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{400 * MiB});
  a.reset_accumulated_stats();
  CHECK_EQ(a.stats().num_oom_rejections, std::int64_t{0});
  a.free(keep);
  CHECK_VALID(a);
}

TEST(throw_on_cudamalloc_oom_without_a_fraction_changes_nothing) {
  Fixture f(64 * MiB, throwing_config());
  auto& a = f.a();
  a.free(a.malloc(20 * MiB, 0));
  const DevicePtr big = a.malloc(50 * MiB, 0);  // released the cached 20 MiB and retried
  CHECK(big != 0);
  CHECK_EQ(a.stats().num_alloc_retries, std::int64_t{1});
  CHECK_EQ(a.stats().num_oom_rejections, std::int64_t{0});
  a.free(big);
}
