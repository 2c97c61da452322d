// Settings of one device's allocator: the memory fraction and the config.
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
  if (s != Status::kOk) throw device_error(device_, "cudaMemGetInfo", s);
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

std::size_t DeviceCachingAllocator::max_split_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_.max_split_size;
}

AllocatorConfig DeviceCachingAllocator::config() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_;
}

}  // namespace cca
