// Randomized operation sequences over two simulated devices and several streams, with the
// validator after every step. Seeded and deterministic; a failure prints the seed and step.
// CCA_RANDOM_OPS sets the number of operations (default 100000; the sanitizer run uses
// fewer). Graph captures come and go among the operations: while one is underway on a
// device, the simulator refuses any event record, query or synchronization there (as the
// driver would invalidate the capture), so an allocator that made one fails the run, and the
// calls a capture forbids are checked to be refused. This is a correctness stress, not a
// benchmark.
#include <cstdlib>
#include <iostream>
#include <map>

#include "allocator/policy/facets/mem_pools.h"
#include "allocator/policy/facets/graph_captures.h"
#include "common/errors.h"
#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

namespace {

struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

struct Live {
  int device;
  StreamId stream;
};

std::size_t ops_from_env() {
  const char* v = std::getenv("CCA_RANDOM_OPS");
  return v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : 100000;
}

// A snapshot (with or without traces) shows exactly the allocator's state: the same
// segments and blocks, summing to the stats.
void check_snapshot_matches_state(DeviceCachingAllocator& a) {
  const DeviceSnapshot fast = a.snapshot(0, false);
  const DeviceSnapshot full = a.snapshot(0, true);
  CHECK_EQ(fast.segments.size(), full.segments.size());
  CHECK_EQ(fast.blocks.size(), full.blocks.size());
  const auto stats = a.stats();
  std::int64_t reserved = 0, allocated = 0, active = 0, requested = 0;
  for (std::size_t i = 0; i < fast.segments.size(); ++i) {
    const SnapshotSegment& s = fast.segments[i];
    CHECK_EQ(s.address, full.segments[i].address);
    CHECK_EQ(s.allocated_size, full.segments[i].allocated_size);
    if (i > 0) CHECK(fast.segments[i - 1].address < s.address);
    std::size_t sum = 0;
    for (std::size_t j = 0; j < s.block_count; ++j) {
      const SnapshotBlock& b = fast.blocks[s.first_block + j];
      CHECK_EQ(b.address, s.address + sum);
      CHECK(b.state == full.blocks[s.first_block + j].state);
      sum += b.size;
    }
    CHECK_EQ(sum, s.total_size);
    reserved += static_cast<std::int64_t>(s.total_size);
    allocated += static_cast<std::int64_t>(s.allocated_size);
    active += static_cast<std::int64_t>(s.active_size);
    requested += static_cast<std::int64_t>(s.requested_size);
  }
  CHECK_EQ(reserved, stats.arrays[kReservedBytes][kAggregate].current);
  CHECK_EQ(allocated, stats.arrays[kAllocatedBytes][kAggregate].current);
  CHECK_EQ(active, stats.arrays[kActiveBytes][kAggregate].current);
  CHECK_EQ(requested, stats.arrays[kRequestedBytes][kAggregate].current);
}

void run_sequence(std::uint64_t seed, std::size_t ops) {
  Fixture f(256 * MiB, AllocatorConfig{}, 2);
  Rng rng{seed};
  std::map<DevicePtr, Live> live;
  std::vector<std::vector<StreamId>> streams(2, std::vector<StreamId>{0});
  std::vector<std::uint32_t> routes(2, 0);  // the MemPool each device routes to, 0 for none
  std::vector<std::uint32_t> fallbacks(2, 0);  // each device's use_on_oom MemPool, 0 for none
  // A graph capture per device at most (stream, pool, id; stream 0: none), and the pools of
  // the graphs still alive (each holds one use; a pool may appear twice: shared).
  struct Capturing {
    StreamId stream = 0;
    std::uint32_t pool = 0;
    std::uint64_t id = 0;
  };
  std::vector<Capturing> capturing(2);
  std::vector<std::vector<std::uint32_t>> graphs(2);
  std::size_t captures_begun = 0;
  std::size_t frees_deferred = 0;  // steps at which some free waited for a capture's end
  std::size_t step = 0;
  // Device 1 records history into a small ring, so recording and wrap-around run under
  // the validator (and the sanitizers) too.
  HistoryOptions history;
  history.enabled = true;
  history.context = RecordContext::kAll;
  history.max_entries = 64 + seed % 64;
  f.a(1).set_history(history);
  try {
    for (step = 0; step < ops; ++step) {
      const int dev = static_cast<int>(rng.below(2));
      auto& a = f.a(dev);
      auto& ss = streams[static_cast<std::size_t>(dev)];
      const std::uint64_t op = rng.below(100);
      if (op < 45) {
        std::uint64_t size;
        const std::uint64_t kind = rng.below(10);
        if (kind < 6) size = 1 + rng.below(64 * KiB);
        else if (kind < 8) size = 1 + rng.below(2 * MiB);
        else if (kind < 9) size = 1 + rng.below(24 * MiB);
        else size = 1 + rng.below(120 * MiB);
        StreamId s = ss[rng.below(ss.size())];
        try {
          DevicePtr p = a.malloc(size, s, 0, CallContext{static_cast<std::uint32_t>(1 + step % 7), 0});
          if (p % 512 != 0) harness::fail(__FILE__, __LINE__, "unaligned pointer");
          if (live.count(p)) harness::fail(__FILE__, __LINE__, "pointer handed out twice");
          live[p] = Live{dev, s};
        } catch (const OutOfMemoryError&) {
          // expected under pressure: 256 MiB per device
        }
      } else if (op < 85) {
        if (live.empty()) continue;
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng.below(live.size())));
        f.a(it->second.device).free(it->first);
        live.erase(it);
      } else if (op < 90) {
        if (live.empty()) continue;
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng.below(live.size())));
        auto& owner_streams = streams[static_cast<std::size_t>(it->second.device)];
        f.a(it->second.device).record_stream(it->first, owner_streams[rng.below(owner_streams.size())]);
      } else if (op < 93) {
        if (ss.size() < 4) {
          StreamId s = a.create_stream();
          f.sim(dev).hold_stream(s, rng.below(2) == 0);
          ss.push_back(s);
        }
      } else if (op < 95) {
        if (ss.size() > 1) f.sim(dev).complete_stream(ss[1 + rng.below(ss.size() - 1)]);
      } else if (op < 96) {
        if (ss.size() > 1) {
          std::size_t i = 1 + rng.below(ss.size() - 1);
          StreamId s = ss[i];
          bool used = false;
          for (auto& [p, l] : live) used = used || (l.device == dev && l.stream == s);
          if (capturing[static_cast<std::size_t>(dev)].stream != 0) {
            CHECK_THROWS(a.destroy_stream(s), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
          } else if (!used) {
            a.destroy_stream(s);
            ss.erase(ss.begin() + static_cast<long>(i));
          }
        }
      } else if (capturing[static_cast<std::size_t>(dev)].stream != 0 && op < 99) {
        // What a capture forbids is refused, changing nothing (the validator runs below).
        if (op < 97) CHECK_THROWS(a.empty_cache(), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
        else if (op < 98) CHECK_THROWS(a.synchronize(), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
        else CHECK_THROWS(a.set_caching_enabled(!a.caching_enabled()), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
      } else if (op < 97) {
        a.empty_cache();
        if (dev == 1 && a.snapshot(0, true).traces.size() > history.max_entries) {
          harness::fail(__FILE__, __LINE__, "ring holds more than max_entries");
        }
      } else if (op < 98) {
        // Toggle routing into a MemPool on this thread: create+begin, or end+release.
        // A pool may split or not; once routing ends it is released, or kept as the
        // device's out-of-memory fallback (use_on_oom) until the next one is made.
        auto& route = routes[static_cast<std::size_t>(dev)];
        auto& fallback = fallbacks[static_cast<std::size_t>(dev)];
        if (route == 0) {
          route = MemPools(a).create_pool(rng.below(4) == 0);
          MemPools(a).begin_allocate_to_pool(route);
        } else {
          MemPools(a).end_allocate_to_pool(route);
          if (fallback != 0) MemPools(a).release_pool(fallback);
          fallback = 0;
          if (rng.below(2) == 0) {
            MemPools(a).set_use_on_oom(route, true);
            fallback = route;
          } else {
            MemPools(a).release_pool(route);
          }
          route = 0;
        }
      } else if (op < 99) {
        const std::uint64_t which = rng.below(4);
        a.set_config(which == 0   ? AllocatorConfig::parse("max_split_size_mb:40")
                     : which == 1 ? AllocatorConfig::parse("expandable_segments:True")
                     : which == 2 ? AllocatorConfig::parse("throw_on_cudamalloc_oom:True")
                                  : AllocatorConfig{});
      } else if (rng.below(3) == 0) {
        a.set_memory_fraction(rng.below(2) ? 1.0 : 0.5);
      } else if (rng.below(2) == 0) {
        // A graph capture: begin on a created stream (into a new pool or a live graph's, shared),
        // or end it (the graph lives on), or destroy a graph (its pool's use given back).
        auto& c = capturing[static_cast<std::size_t>(dev)];
        auto& alive = graphs[static_cast<std::size_t>(dev)];
        if (c.stream == 0 && ss.size() > 1 && a.caching_enabled() && rng.below(3) != 0) {
          c.stream = ss[1 + rng.below(ss.size() - 1)];
          c.pool = !alive.empty() && rng.below(2) == 0 ? alive[rng.below(alive.size())] : GraphCaptures(a).reserve_pool_id();
          GraphCaptures(a).begin_allocate_to_capture(c.pool, 0);
          c.id = f.sim(dev).begin_capture_status(c.stream);
          GraphCaptures(a).capture_started(c.pool, c.id);
          ++captures_begun;
        } else if (c.stream != 0) {
          GraphCaptures(a).end_allocate_to_capture(c.pool, c.id);
          f.sim(dev).end_capture_status(c.stream);
          alive.push_back(c.pool);
          c = Capturing{};
        } else if (!alive.empty()) {
          const std::size_t i = rng.below(alive.size());
          MemPools(a).release_pool(alive[i]);
          alive.erase(alive.begin() + static_cast<long>(i));
        }
      } else if (capturing[static_cast<std::size_t>(dev)].stream == 0) {
        a.set_caching_enabled(!a.caching_enabled());  // caching off: every free to the device
      }
      for (int d = 0; d < 2; ++d) {
        const std::string v = f.a(d).validate();
        if (!v.empty()) harness::fail(__FILE__, __LINE__, "device " + std::to_string(d) + ": " + v);
      }
      if (step % 97 == 0) check_snapshot_matches_state(f.a(dev));
      if (GraphCaptures(a).frees_deferred_by_capture() > 0) ++frees_deferred;
    }
    // The sequence did what it is for (at the default length; a short sanitizer run may not).
    if (ops >= 20000) {
      CHECK(captures_begun > 10);
      CHECK(frees_deferred > 0);
    }
    for (int d = 0; d < 2; ++d) {
      auto& c = capturing[static_cast<std::size_t>(d)];
      if (c.stream != 0) {
        GraphCaptures(f.a(d)).end_allocate_to_capture(c.pool, c.id);
        f.sim(d).end_capture_status(c.stream);
        graphs[static_cast<std::size_t>(d)].push_back(c.pool);
      }
      for (std::uint32_t pool : graphs[static_cast<std::size_t>(d)]) MemPools(f.a(d)).release_pool(pool);
      CHECK_EQ(f.sim(d).capture_violations(), std::size_t{0});
      if (routes[static_cast<std::size_t>(d)] != 0) {
        MemPools(f.a(d)).end_allocate_to_pool(routes[static_cast<std::size_t>(d)]);
        MemPools(f.a(d)).release_pool(routes[static_cast<std::size_t>(d)]);
      }
      if (fallbacks[static_cast<std::size_t>(d)] != 0) MemPools(f.a(d)).release_pool(fallbacks[static_cast<std::size_t>(d)]);
    }
    for (auto& [p, l] : live) f.a(l.device).free(p);
    for (int d = 0; d < 2; ++d) {
      f.a(d).empty_cache();
      CHECK_VALID(f.a(d));
      CHECK_EQ(f.a(d).stats().arrays[kReservedBytes][kAggregate].current, std::int64_t{0});
      CHECK_EQ(f.sim(d).used_bytes(), std::size_t{0});
    }
  } catch (const std::exception& e) {
    std::cout << "random sequence failed: seed " << seed << ", step " << step << "\n";
    throw;
  }
}

}  // namespace

TEST(randomized_sequences_keep_every_invariant) {
  const std::size_t total = ops_from_env();
  const std::uint64_t seeds[] = {0x9E3779B97F4A7C15ull, 12345, 271828, 314159};
  for (std::uint64_t seed : seeds) run_sequence(seed, total / 4);
}
