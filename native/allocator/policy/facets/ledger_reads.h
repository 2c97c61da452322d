// Reads of the ledger that take the allocator's lock and nothing else: what a metrics
// scrape, memory_stats_by_tag, the MemPools' reserved bytes and the JS stack table ask for
// (a facet: facet_access.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../caching_allocator.h"

namespace cca {

// What a metrics scrape reads, taken under one lock so the figures agree: the stats, the
// largest free block of the small and the large pools (private pools included), and the
// history ring's fill. Reads no trace entry and walks no block list.
struct MonitorSample {
  DeviceStats stats;
  Bytes largest_free_small = 0;
  Bytes largest_free_large = 0;
  std::size_t history_entries = 0;
  Bytes history_capacity = 0;  // 0 while history is off
};

class LedgerReads {
 public:
  explicit LedgerReads(const DeviceCachingAllocator& allocator) : a_(allocator) {}

  MonitorSample monitor_sample() const;
  // Each live MemPool's reserved_bytes (PyTorch's reserved_bytes_by_private_pools).
  std::vector<PoolReserved> pool_reserved_stats() const;
  // Live memory per (owner, tag) ever tagged here (memory_stats_by_tag).
  std::vector<TagStat> tag_stats() const;
  // Bytes the trace ring holds (0 once history is disabled or cleared).
  Bytes history_bytes() const;
  // Stack ids still referenced by live blocks, segments or the ring (for the JS stack table).
  std::vector<std::uint32_t> referenced_stacks() const;

 private:
  const DeviceCachingAllocator& a_;
};

}  // namespace cca
