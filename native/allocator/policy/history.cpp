// History settings of one device's allocator (PyTorch's _record_memory_history), and the
// order numbers annotations share with trace entries.
#include "caching_allocator.h"

namespace cca {

void DeviceCachingAllocator::set_history(const HistoryOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  ledger_.set_history(options);
}

std::size_t DeviceCachingAllocator::history_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ledger_.ring().capacity_bytes();
}

std::uint64_t DeviceCachingAllocator::next_history_seq() {
  std::lock_guard<std::mutex> lock(mu_);
  return ledger_.next_seq();
}

}  // namespace cca
