// One consistent reading of a device for metrics (Prometheus, OpenTelemetry): cheap enough
// to take many times a second whatever the size of the cache or the history.
#include <algorithm>

#include "caching_allocator.h"

namespace cca {

DeviceCachingAllocator::MonitorSample DeviceCachingAllocator::monitor_sample() const {
  std::lock_guard<std::mutex> lock(mu_);
  MonitorSample m;
  m.stats = stats_.view();
  m.largest_free_small = small_blocks_.largest_free();
  m.largest_free_large = large_blocks_.largest_free();
  for (const auto& [id, pool] : pools_) {
    m.largest_free_small = std::max(m.largest_free_small, pool->small.largest_free());
    m.largest_free_large = std::max(m.largest_free_large, pool->large.largest_free());
  }
  if (history_.enabled) {
    m.history_entries = ring_.size();
    m.history_capacity = ring_.max_entries();
  }
  return m;
}

}  // namespace cca
