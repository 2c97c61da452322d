// One side of the core A/B (bench/core-ab.mjs): the cached pair and history recording
// against one build of the core. Compiled twice into one program, once against the old
// core's sources (with its namespace renamed, -Dcca=cca_old) and once against the current
// ones, each time inside the namespace AB_SIDE, so both cores run in the same process and
// the runs can interleave.
#include <cstdint>
#include <vector>

// Either tree's layout: the allocator's folders by layer, or the flat one before them.
#if __has_include("allocator/policy/caching_allocator.h")
#include "allocator/policy/caching_allocator.h"
#else
#include "allocator/caching_allocator.h"
#endif
#include "device/sim/sim_device.h"
// The metrics read moved into a facet; a base tree from before it reads it on the class.
#if __has_include("allocator/policy/facets/ledger_reads.h")
#include "allocator/policy/facets/ledger_reads.h"
#define AB_MONITOR_READER(a) cca::LedgerReads(a)
#else
#define AB_MONITOR_READER(a) (a)
#endif
#include "../cache_setup.h"
#include "../timing.h"

namespace AB_SIDE {

namespace {

struct State {
  explicit State(std::size_t n)
      : platform(cca::SimOptions{1, std::size_t{64} << 30}), a(platform.device(0), cca::AllocatorConfig{}) {
    bench::fill_cache(a, n);
  }
  cca::SimPlatform platform;
  cca::DeviceCachingAllocator a;
};

}  // namespace

void* setup(std::size_t n) { return new State(n); }
void teardown(void* s) { delete static_cast<State*>(s); }
bool valid(void* s) { return static_cast<State*>(s)->a.validate().empty(); }

// Exact-fit cached alloc+free of 4096 bytes: no split, no merge, no device call.
double pair_ns(void* s, std::size_t iters) {
  cca::DeviceCachingAllocator& a = static_cast<State*>(s)->a;
  return bench::ns_per_op(iters, [&](std::size_t) { a.free(a.malloc(4096, 0)); });
}

// 40 KiB: bigger than every cached block but a segment's free tail, which is split on
// alloc and merged back on free.
double split_ns(void* s, std::size_t iters) {
  cca::DeviceCachingAllocator& a = static_cast<State*>(s)->a;
  return bench::ns_per_op(iters, [&](std::size_t) { a.free(a.malloc(40960, 0)); });
}

// The exact-fit pair with history on (3 trace entries per pair into a wrapping 100k ring).
double traced_ns(void* s, std::size_t iters) {
  cca::DeviceCachingAllocator& a = static_cast<State*>(s)->a;
  cca::HistoryOptions h;
  h.enabled = true;
  h.max_entries = 100000;
  a.set_history(h);
  const double ns = bench::ns_per_op(iters, [&](std::size_t) { a.free(a.malloc(4096, 0)); });
  a.set_history(cca::HistoryOptions{});
  return ns;
}

// What a metrics scrape reads (MonitorSample) and memory_stats() as flat values.
double sample_ns(void* s, std::size_t iters) {
  cca::DeviceCachingAllocator& a = static_cast<State*>(s)->a;
  const auto& reader = AB_MONITOR_READER(a);  // made once, as the loop's frame is on both sides
  std::vector<double> values(cca::stat_keys().size());
  volatile double sink = 0;
  const double ns = bench::ns_per_op(iters, [&](std::size_t) {
    const auto m = reader.monitor_sample();
    cca::stat_values(m.stats, -1, values.data());
    sink = sink + values[0] + static_cast<double>(m.largest_free_large);
  });
  return ns;
}

}  // namespace AB_SIDE
