// The ledger's locked reads (ledger_reads.h).
#include "ledger_reads.h"

#include <algorithm>
#include <mutex>

#include "../facet_access.h"

namespace cca {

MonitorSample LedgerReads::monitor_sample() const {
  const std::lock_guard<FutexMutex> lock(FacetAccess::mutex(a_));
  const Ledger& ledger = FacetAccess::ledger(a_);
  MonitorSample m;
  m.stats = ledger.stats().view();
  m.largest_free_small = ledger.default_pool(true).largest_free();
  m.largest_free_large = ledger.default_pool(false).largest_free();
  ledger.for_each_private_pool([&m](const PrivatePool& p) {
    m.largest_free_small = std::max(m.largest_free_small, p.small.largest_free());
    m.largest_free_large = std::max(m.largest_free_large, p.large.largest_free());
  });
  if (ledger.history().enabled) {
    m.history_entries = ledger.ring().size();
    m.history_capacity = ledger.ring().max_entries();
  }
  return m;
}

std::vector<PoolReserved> LedgerReads::pool_reserved_stats() const {
  const std::lock_guard<FutexMutex> lock(FacetAccess::mutex(a_));
  return FacetAccess::ledger(a_).pool_reserved();
}

std::vector<TagStat> LedgerReads::tag_stats() const {
  const std::lock_guard<FutexMutex> lock(FacetAccess::mutex(a_));
  return FacetAccess::ledger(a_).tag_counters().read();
}

Bytes LedgerReads::history_bytes() const {
  const std::lock_guard<FutexMutex> lock(FacetAccess::mutex(a_));
  return FacetAccess::ledger(a_).ring().capacity_bytes();
}

std::vector<std::uint32_t> LedgerReads::referenced_stacks() const {
  const std::lock_guard<FutexMutex> lock(FacetAccess::mutex(a_));
  const Ledger& ledger = FacetAccess::ledger(a_);
  std::vector<std::uint32_t> ids;
  ledger.for_each_segment([&ids](const Segment& segment) {
    if (segment.stack) ids.push_back(segment.stack);
    for (const Block* b = segment.head; b != nullptr; b = b->next) {
      if (b->state != BlockState::kFree && b->alloc_stack) ids.push_back(b->alloc_stack);
    }
  });
  ledger.ring().for_each([&](const TraceEntry& e) {
    if (e.stack) ids.push_back(e.stack);
  });
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace cca
