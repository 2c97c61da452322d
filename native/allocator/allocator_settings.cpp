// Settings, stats and hooks of one device's allocator: the memory fraction, the config,
// stat snapshots and resets, environment release, and the callback registries.
#include <cmath>

#include "caching_allocator.h"

namespace cca {

void DeviceCachingAllocator::set_memory_fraction(double fraction) {
  if (!std::isfinite(fraction) || fraction < 0.0 || fraction > 1.0) {
    throw InvalidArgumentError("memory fraction must be a number in [0, 1], got " + std::to_string(fraction));
  }
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  Status s = device_.mem_get_info(&free_bytes, &total_bytes);
  if (s != Status::kOk) throw DeviceError(std::string("cudaMemGetInfo failed: ") + status_name(s));
  std::lock_guard<std::mutex> lock(mu_);
  fraction_ = fraction;
  fraction_set_ = true;
  allowed_memory_maximum_ = static_cast<std::size_t>(fraction * static_cast<double>(total_bytes));
}

double DeviceCachingAllocator::memory_fraction() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fraction_;
}

void DeviceCachingAllocator::set_config(const AllocatorConfig& config) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    config_ = config;
  }
  if (config.per_process_memory_fraction_set) set_memory_fraction(config.per_process_memory_fraction);
}

AllocatorConfig DeviceCachingAllocator::config() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_;
}

DeviceStats DeviceCachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_.view();
}

void DeviceCachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.reset_peak();
}

void DeviceCachingAllocator::reset_accumulated_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.reset_accumulated();
}

void DeviceCachingAllocator::mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) {
  Status s = device_.mem_get_info(free_bytes, total_bytes);
  if (s != Status::kOk) throw DeviceError(std::string("cudaMemGetInfo failed: ") + status_name(s));
}

std::size_t DeviceCachingAllocator::release_owner(std::uint32_t owner) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Block*> owned;
  allocated_.for_each([&](DevicePtr, Block* b) {
    if (b->owner == owner) owned.push_back(b);
  });
  for (Block* b : owned) free_requested(b, CallContext{});
  check_after_operation();
  return owned.size();
}

std::size_t DeviceCachingAllocator::live_allocation_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocated_.size();
}

void DeviceCachingAllocator::add_free_memory_callback(std::function<bool()> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  free_memory_callbacks_.push_back(std::move(callback));
}

void DeviceCachingAllocator::add_oom_observer(std::function<void(const OutOfMemoryInfo&)> observer) {
  std::lock_guard<std::mutex> lock(mu_);
  oom_observers_.push_back(std::move(observer));
}

}  // namespace cca
