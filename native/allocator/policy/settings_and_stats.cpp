// What one device's allocator is told and what it reports, each under its lock: settings (the
// memory fraction, the config), history settings and the order numbers annotations share
// with trace entries, and stats: memory_stats(), their resets, and the one-lock sample a
// metrics scrape takes (it walks no block list and reads no trace entry).
#include <algorithm>
#include <cmath>

#include "caching_allocator.h"

namespace cca {

void DeviceCachingAllocator::set_memory_fraction(double fraction) {
  if (!std::isfinite(fraction) || fraction < 0.0 || fraction > 1.0) {
    throw InvalidArgumentError("memory fraction must be a number in [0, 1], got " + std::to_string(fraction));
  }
  Bytes free_bytes = 0;
  Bytes total_bytes = 0;
  Status s = device_.mem_get_info(&free_bytes, &total_bytes);
  if (s != Status::kOk) throw device_error(device_, "cudaMemGetInfo", s);
  std::lock_guard<FutexMutex> lock(mu_);
  fraction_ = fraction;
  fraction_set_ = true;
  allowed_memory_maximum_ = static_cast<Bytes>(fraction * static_cast<double>(total_bytes));
}

double DeviceCachingAllocator::memory_fraction() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return fraction_;
}

void DeviceCachingAllocator::set_config(const AllocatorConfig& config) {
  {
    std::lock_guard<FutexMutex> lock(mu_);
    config_ = config;
  }
  if (config.per_process_memory_fraction_set) set_memory_fraction(config.per_process_memory_fraction);
}

Bytes DeviceCachingAllocator::max_split_size() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return config_.max_split_size;
}

AllocatorConfig DeviceCachingAllocator::config() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return config_;
}


void DeviceCachingAllocator::set_history(const HistoryOptions& options) {
  std::lock_guard<FutexMutex> lock(mu_);
  ledger_.set_history(options);
}

std::uint64_t DeviceCachingAllocator::next_history_seq() {
  std::lock_guard<FutexMutex> lock(mu_);
  return ledger_.next_seq();
}


DeviceStats DeviceCachingAllocator::stats() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return ledger_.stats().view();
}

void DeviceCachingAllocator::reset_peak_stats() {
  std::lock_guard<FutexMutex> lock(mu_);
  ledger_.reset_peak_stats();
}

void DeviceCachingAllocator::reset_accumulated_stats() {
  std::lock_guard<FutexMutex> lock(mu_);
  ledger_.reset_accumulated_stats();
}

}  // namespace cca
