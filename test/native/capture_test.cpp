// The allocator under CUDA graph capture (Note [Allocating under graph capture] in
// allocator/policy/captures.cpp), on the simulator, whose streams can be marked captured
// and which refuses (and counts) event work while one is, as the driver's global capture
// mode does. The graphs themselves run on the fake driver (test/api/graphs.test.ts).
#include <thread>

#include "allocator/policy/facets/mem_pools.h"
#include "allocator/policy/facets/graph_captures.h"
#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

namespace {
// One capture on `stream`, routed to `pool` as the compute layer does it.
struct Capture {
  Capture(Fixture& f, StreamId stream, std::uint32_t pool) : f(f), stream(stream), pool(pool) {
    id = f.sim().begin_capture_status(stream);
    GraphCaptures(f.a()).begin_allocate_to_capture(pool, id);
  }
  void end() {
    if (ended) return;
    ended = true;
    GraphCaptures(f.a()).end_allocate_to_capture(pool, id);
    f.sim().end_capture_status(stream);
  }
  ~Capture() { end(); }
  Fixture& f;
  StreamId stream;
  std::uint32_t pool;
  std::uint64_t id = 0;
  bool ended = false;
};
}  // namespace

TEST(capture_routes_its_streams_allocations_to_its_pool_and_no_other) {
  Fixture f;
  auto& a = f.a();
  const StreamId s = a.create_stream();
  const StreamId eager = a.create_stream();
  const std::uint32_t pool = GraphCaptures(a).reserve_pool_id();
  CHECK(!MemPools(a).pool_exists(pool));
  DevicePtr inside = 0;
  DevicePtr outside = 0;
  {
    Capture c(f, s, pool);
    CHECK(GraphCaptures(a).capture_underway());
    CHECK_EQ(MemPools(a).pool_use_count(pool), 1);  // made by the capture, its use
    inside = a.malloc(4096, s);
    outside = a.malloc(4096, eager);  // a stream not in the capture: the default pools
    a.free(inside);                   // back to the capture's pool, reused inside it
    CHECK_EQ(a.malloc(4096, s), inside);
    a.free(inside);
  }
  CHECK(!GraphCaptures(a).capture_underway());
  CHECK_EQ(a.snapshot(pool, false).segments.size(), std::size_t{1});
  CHECK_EQ(a.snapshot(pool, false).segments[0].address, inside);
  // After the capture, nothing outside the pool gets its memory: not eager work on the
  // capture's stream, not anyone.
  const DevicePtr later = a.malloc(4096, s);
  CHECK(later != inside);
  a.free(later);
  a.free(outside);
  CHECK_VALID(a);
}

TEST(a_side_stream_forked_into_the_capture_allocates_from_its_pool) {
  Fixture f;
  auto& a = f.a();
  const StreamId s = a.create_stream();
  const StreamId side = a.create_stream();
  const std::uint32_t pool = GraphCaptures(a).reserve_pool_id();
  Capture c(f, s, pool);
  f.sim().begin_capture_status(side, c.id);  // joined with an event wait, as the driver reports it
  const DevicePtr p = a.malloc(1 << 20, side);
  CHECK_EQ(a.snapshot(pool, false).segments.size(), std::size_t{1});
  a.free(p);
  f.sim().end_capture_status(side);
  c.end();
  CHECK_VALID(a);
}

TEST(no_event_is_recorded_or_queried_during_a_capture_and_deferred_frees_complete_after) {
  Fixture f;
  auto& a = f.a();
  const StreamId s = a.create_stream();
  const StreamId other = a.create_stream();
  const std::uint32_t pool = GraphCaptures(a).reserve_pool_id();
  // A block from before the capture, used on another stream: its free must wait for that
  // stream, which means an event, which a capture forbids.
  const DevicePtr before = a.malloc(8192, 0);
  a.record_stream(before, other);
  f.sim().hold_stream(other, true);
  const std::size_t calls = f.sim().event_calls();
  DevicePtr captured = 0;
  {
    Capture c(f, s, pool);
    a.free(before);                       // deferred: no event now
    captured = a.malloc(8192, s);
    a.record_stream(captured, other);     // a use recorded during the capture...
    a.free(captured);                     // ...deferred too
    for (int i = 0; i < 10; ++i) a.free(a.malloc(512, s));  // mallocs process no events now
    CHECK_EQ(GraphCaptures(a).frees_deferred_by_capture(), std::size_t{2});
    CHECK_EQ(f.sim().event_calls(), calls);
    CHECK_EQ(f.sim().capture_violations(), std::size_t{0});
    CHECK_VALID(a);
  }
  // After the capture: the next malloc records the deferred events. The block used on
  // `other` before the capture waits for it; the capture's own use of `other` is dropped.
  a.free(a.malloc(512, 0));
  CHECK_EQ(GraphCaptures(a).frees_deferred_by_capture(), std::size_t{0});
  CHECK(f.sim().event_calls() > calls);
  CHECK_EQ(f.sim().pending_events(), std::size_t{1});
  const DeviceSnapshot snap = a.snapshot(0, false);
  int pending = 0;
  for (const SnapshotBlock& b : snap.blocks) pending += b.state == BlockState::kPendingFree;
  CHECK_EQ(pending, 1);  // `before`; `captured` completed at once
  f.sim().hold_stream(other, false);
  f.sim().complete_stream(other);
  a.free(a.malloc(512, 0));
  CHECK_EQ(f.sim().pending_events(), std::size_t{0});
  CHECK_EQ(f.sim().capture_violations(), std::size_t{0});
  CHECK_VALID(a);
}

TEST(empty_cache_and_synchronizations_are_refused_during_a_capture_changing_nothing) {
  Fixture f;
  auto& a = f.a();
  const StreamId s = a.create_stream();
  const StreamId spare = a.create_stream();
  a.free(a.malloc(4096, 0));
  const std::uint32_t pool = GraphCaptures(a).reserve_pool_id();
  Capture c(f, s, pool);
  const auto before = f.all_stats();
  CHECK_THROWS(a.empty_cache(), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(a.synchronize(), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(a.synchronize_stream(s), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(a.query_stream(s), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(a.destroy_stream(spare), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(a.set_caching_enabled(false), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK(f.all_stats() == before);
  CHECK_EQ(f.sim().capture_violations(), std::size_t{0});
  CHECK_VALID(a);
  c.end();
  a.empty_cache();
  a.destroy_stream(spare);
}

TEST(the_oom_path_does_not_release_the_whole_cache_during_a_capture) {
  Fixture f(64 * MiB);
  auto& a = f.a();
  const StreamId s = a.create_stream();
  // A cached 20 MiB segment of the default pool that releasing the cache would free.
  a.free(a.malloc(4 * MiB, 0));
  const std::uint32_t pool = GraphCaptures(a).reserve_pool_id();
  Capture c(f, s, pool);
  const DevicePtr big = a.malloc(40 * MiB, s);
  CHECK_THROWS(a.malloc(20 * MiB, s), OutOfMemoryError, "ERR_CUDA_OUT_OF_MEMORY");
  CHECK_EQ(f.cur(kSegment), std::int64_t{2});  // the cached segment is still there
  CHECK_EQ(f.sim().capture_violations(), std::size_t{0});
  a.free(big);
  c.end();
  CHECK_VALID(a);
}

TEST(a_graph_pool_returns_its_memory_once_released_and_empty_cache_runs) {
  Fixture f;
  auto& a = f.a();
  const StreamId s = a.create_stream();
  const std::uint32_t pool = GraphCaptures(a).reserve_pool_id();
  {
    Capture c(f, s, pool);
    a.free(a.malloc(3 * MiB, s));
    a.free(a.malloc(1000, s));
  }
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{22 * MiB});  // 20 MiB large + 2 MiB small
  a.empty_cache();  // the graph lives: its pool keeps its memory
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{22 * MiB});
  MemPools(a).release_pool(pool);  // the graph is destroyed
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{0});
  CHECK(!MemPools(a).pool_exists(pool));
  CHECK_VALID(a);
}

TEST(graphs_sharing_a_pool_keep_it_until_the_last_is_destroyed) {
  Fixture f;
  auto& a = f.a();
  const StreamId s = a.create_stream();
  const std::uint32_t pool = GraphCaptures(a).reserve_pool_id();
  DevicePtr first = 0;
  {
    Capture c(f, s, pool);
    first = a.malloc(4096, s);
    a.free(first);
  }
  {
    Capture c(f, s, pool);
    CHECK_EQ(MemPools(a).pool_use_count(pool), 2);
    CHECK_EQ(a.malloc(4096, s), first);  // the second graph reuses the first one's memory
    a.free(first);
  }
  MemPools(a).release_pool(pool);
  CHECK(MemPools(a).pool_exists(pool));
  CHECK_EQ(f.cur(kSegment), std::int64_t{1});
  MemPools(a).release_pool(pool);
  CHECK(!MemPools(a).pool_exists(pool));
  CHECK_EQ(f.cur(kSegment), std::int64_t{0});
  CHECK_VALID(a);
}

TEST(capture_routing_refuses_bad_pools_and_caching_off) {
  Fixture f;
  auto& a = f.a();
  const StreamId s = a.create_stream();
  const std::uint32_t pool = GraphCaptures(a).reserve_pool_id();
  CHECK_THROWS(GraphCaptures(a).begin_allocate_to_capture(pool + 1000, 7), InvalidArgumentError, "ERR_CCA_INVALID_POOL");
  Capture c(f, s, pool);
  const DevicePtr kept = a.malloc(4096, s);
  CHECK_THROWS(GraphCaptures(a).begin_allocate_to_capture(pool, c.id + 1), InvalidArgumentError, "ERR_CCA_INVALID_POOL");
  CHECK_THROWS(GraphCaptures(a).end_allocate_to_capture(pool, c.id + 1), InvalidArgumentError, "ERR_CCA_INVALID_POOL");
  c.end();
  // Released while a block of it is live: the pool stays for that block, but no capture
  // may use it any more. (Once gone, the id makes a new pool, as PyTorch's handles do.)
  MemPools(a).release_pool(pool);
  CHECK(MemPools(a).pool_exists(pool));
  CHECK_THROWS(GraphCaptures(a).begin_allocate_to_capture(pool, 9), InvalidArgumentError, "ERR_CCA_INVALID_POOL");
  a.free(kept);
  a.empty_cache();  // a released pool's last segment goes at the next release of the cache
  CHECK(!MemPools(a).pool_exists(pool));
  a.set_caching_enabled(false);
  const std::uint32_t other = GraphCaptures(a).reserve_pool_id();
  CHECK_THROWS(GraphCaptures(a).begin_allocate_to_capture(other, 9), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK(!GraphCaptures(a).capture_underway());
  CHECK_VALID(a);
}

// A capture on one thread while another allocates and frees on its own stream: only the
// capture's stream is routed, and the other thread's frees that wait on other streams are
// deferred, not evented, until the capture ends (run under TSan by its name).
TEST(concurrent_capture_on_one_thread_while_another_allocates) {
  Fixture f;
  auto& a = f.a();
  const StreamId s = a.create_stream();
  const StreamId t = a.create_stream();
  const StreamId u = a.create_stream();
  const std::uint32_t pool = GraphCaptures(a).reserve_pool_id();
  Capture c(f, s, pool);
  std::thread other([&] {
    for (int i = 0; i < 2000; ++i) {
      const DevicePtr p = a.malloc(static_cast<std::uint64_t>(512 * (1 + i % 7)), t);
      if (i % 3 == 0) a.record_stream(p, u);
      a.free(p);
    }
  });
  for (int i = 0; i < 2000; ++i) a.free(a.malloc(static_cast<std::uint64_t>(1024 * (1 + i % 5)), s));
  other.join();
  CHECK_EQ(f.sim().capture_violations(), std::size_t{0});
  CHECK_VALID(a);
  c.end();
  a.free(a.malloc(512, t));
  CHECK_EQ(GraphCaptures(a).frees_deferred_by_capture(), std::size_t{0});
  for (const SnapshotSegment& seg : a.snapshot(0, false).segments) {
    CHECK(seg.pool == 0 || seg.pool == pool);
    if (seg.pool == pool) CHECK(seg.stream == s);
  }
  CHECK_VALID(a);
}

TEST(the_oom_message_counts_what_graph_pools_keep_cached) {
  Fixture f(64 * MiB);
  auto& a = f.a();
  const StreamId s = a.create_stream();
  const std::uint32_t pool = GraphCaptures(a).reserve_pool_id();
  {
    Capture c(f, s, pool);
    a.free(a.malloc(30 * MiB, s));  // cached in the graph's pool, which the graph keeps
  }
  bool thrown = false;
  try {
    a.malloc(40 * MiB, 0);
  } catch (const OutOfMemoryError& e) {
    thrown = true;
    const std::string m = e.what();
    CHECK(m.find("Of the allocated memory 30.00 MiB is allocated by the caching allocator, with 30.00 MiB allocated "
                 "in private pools (e.g., CUDA Graphs), and 0 bytes is reserved") != std::string::npos);
  }
  CHECK(thrown);
  MemPools(a).release_pool(pool);
  CHECK_EQ(f.cur(kReservedBytes), std::int64_t{0});
  CHECK_VALID(a);
}
