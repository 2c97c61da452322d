// The device query and the hooks of one device's allocator: releasing what a JS
// environment left behind, and the free-memory callbacks and OOM observers.
#include "caching_allocator.h"

namespace cca {

void DeviceCachingAllocator::mem_get_info(Bytes* free_bytes, Bytes* total_bytes) {
  Status s = device_.mem_get_info(free_bytes, total_bytes);
  if (s != Status::kOk) throw device_error(device_, "cudaMemGetInfo", s);
}

Bytes DeviceCachingAllocator::release_owner(std::uint32_t owner) {
  std::lock_guard<FutexMutex> lock(mu_);
  if (trace_subscriber_ == owner && owner != 0) {  // its onTrace went with it
    trace_subscriber_ = 0;
    ledger_.set_trace_subscription(0, 0);
  }
  std::vector<const Block*> owned;
  ledger_.for_each_allocated([&](const Block* b) {
    if (b->owner == owner) owned.push_back(b);
  });
  for (const Block* b : owned) free_block(b, CallContext{});
  check_after_operation();
  return owned.size();
}

std::size_t DeviceCachingAllocator::live_allocation_count() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return ledger_.allocated_count();
}

void DeviceCachingAllocator::add_free_memory_callback(std::function<bool()> callback) {
  std::lock_guard<FutexMutex> lock(mu_);
  free_memory_callbacks_.push_back(std::move(callback));
}

void DeviceCachingAllocator::add_oom_observer(std::function<void(const OutOfMemoryInfo&)> observer) {
  std::lock_guard<FutexMutex> lock(mu_);
  oom_observers_.push_back(std::move(observer));
}

}  // namespace cca
