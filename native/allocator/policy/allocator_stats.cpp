// Reading one device's stats: memory_stats(), their resets, and the one-lock sample a
// metrics scrape takes (cheap enough for many times a second, whatever the size of the
// cache or the history: it walks no block list and reads no trace entry).
#include <algorithm>

#include "caching_allocator.h"

namespace cca {

DeviceStats DeviceCachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ledger_.stats().view();
}

void DeviceCachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  ledger_.reset_peak_stats();
}

void DeviceCachingAllocator::reset_accumulated_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  ledger_.reset_accumulated_stats();
}

DeviceCachingAllocator::MonitorSample DeviceCachingAllocator::monitor_sample() const {
  std::lock_guard<std::mutex> lock(mu_);
  MonitorSample m;
  m.stats = ledger_.stats().view();
  m.largest_free_small = ledger_.default_pool(true).largest_free();
  m.largest_free_large = ledger_.default_pool(false).largest_free();
  ledger_.for_each_private_pool([&m](const PrivatePool& p) {
    m.largest_free_small = std::max(m.largest_free_small, p.small.largest_free());
    m.largest_free_large = std::max(m.largest_free_large, p.large.largest_free());
  });
  if (ledger_.history().enabled) {
    m.history_entries = ledger_.ring().size();
    m.history_capacity = ledger_.ring().max_entries();
  }
  return m;
}

}  // namespace cca
