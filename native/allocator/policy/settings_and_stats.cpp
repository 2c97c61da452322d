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

void DeviceCachingAllocator::set_trace_subscription(std::uint32_t mask, std::size_t capacity, std::uint32_t owner) {
  std::lock_guard<FutexMutex> lock(mu_);
  if (trace_subscriber_ != 0 && trace_subscriber_ != owner) {
    if (mask == 0) return;  // not this owner's to stop
    throw InvalidArgumentError("live trace events of device " + std::to_string(device_.index()) +
                                   " go to another JS environment (its memory.onTrace); stop that one first",
                               "ERR_CCA_TRACE_IN_USE");
  }
  trace_subscriber_ = mask == 0 ? 0 : owner;
  ledger_.set_trace_subscription(mask, capacity);
}

void DeviceCachingAllocator::drain_traces(std::vector<TraceEntry>& out, std::uint64_t& dropped) {
  std::lock_guard<FutexMutex> lock(mu_);
  ledger_.drain_traces(out, dropped);
}

Bytes DeviceCachingAllocator::history_bytes() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return ledger_.ring().capacity_bytes();
}

std::uint64_t DeviceCachingAllocator::next_history_seq() {
  std::lock_guard<FutexMutex> lock(mu_);
  return ledger_.next_seq();
}


DeviceStats DeviceCachingAllocator::stats() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return ledger_.stats().view();
}

std::vector<PoolReserved> DeviceCachingAllocator::pool_reserved_stats() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return ledger_.pool_reserved();
}

std::vector<TagStat> DeviceCachingAllocator::tag_stats() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return ledger_.tag_counters().read();
}

void DeviceCachingAllocator::reset_peak_stats() {
  std::lock_guard<FutexMutex> lock(mu_);
  ledger_.reset_peak_stats();
}

void DeviceCachingAllocator::reset_accumulated_stats() {
  std::lock_guard<FutexMutex> lock(mu_);
  ledger_.reset_accumulated_stats();
}

DeviceCachingAllocator::MonitorSample DeviceCachingAllocator::monitor_sample() const {
  std::lock_guard<FutexMutex> lock(mu_);
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
