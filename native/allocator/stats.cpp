#include "stats.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "block_pool.h"

namespace cca {

void DeviceStats::reset_peak() {
  for (auto& kind : arrays) {
    for (auto& s : kind) s.peak = s.current;
  }
  oversize_allocations.peak = oversize_allocations.current;
  oversize_segments.peak = oversize_segments.current;
}

void DeviceStats::reset_accumulated() {
  for (auto& kind : arrays) {
    for (auto& s : kind) s.allocated = s.freed = 0;
  }
  oversize_allocations.allocated = oversize_allocations.freed = 0;
  oversize_segments.allocated = oversize_segments.freed = 0;
  num_alloc_retries = num_ooms = num_sync_all_streams = 0;
  num_device_alloc = num_device_free = 0;
}

void StatDelta::add_block(const Block& b, int sign) {
  const int p = b.pool->is_small ? 0 : 1;
  const auto size = static_cast<std::int64_t>(b.size);
  const bool expandable = b.expandable;
  // An expandable segment reserves only what is mapped: each mapped block counts its bytes
  // (and PyTorch counts no `segment` for it).
  if (expandable && b.mapped) add(kReservedBytes, p, sign * size);
  switch (b.state) {
    case BlockState::kAllocated:
      add(kAllocation, p, sign);
      add(kAllocatedBytes, p, sign * size);
      if (b.counted_oversize) oversize_allocations_ += sign;
      [[fallthrough]];
    case BlockState::kPendingFree:
      add(kActive, p, sign);
      add(kActiveBytes, p, sign * size);
      add(kRequestedBytes, p, sign * static_cast<std::int64_t>(b.requested_size));
      break;
    case BlockState::kFree:
      if (b.is_split() && !expandable) {
        add(kInactiveSplit, p, sign);
        add(kInactiveSplitBytes, p, sign * size);
      }
      break;
  }
}

void StatDelta::add_segment(const Segment& s, int sign) {
  if (s.expandable) return;  // counted through its mapped blocks
  const int p = s.pool->is_small ? 0 : 1;
  add(kSegment, p, sign);
  add(kReservedBytes, p, sign * static_cast<std::int64_t>(s.size));
  if (s.counted_oversize) oversize_segments_ += sign;
}

void StatDelta::apply_to(DeviceStats& stats) const {
  for (std::uint32_t bits = touched_; bits != 0; bits &= bits - 1) {
    const int k = __builtin_ctz(bits);
    const std::int64_t small = d_[k][0];
    const std::int64_t large = d_[k][1];
    if (small != 0) stats.arrays[k][kSmallPool].apply(small);
    if (large != 0) stats.arrays[k][kLargePool].apply(large);
    if (small + large != 0) stats.arrays[k][kAggregate].apply(small + large);
  }
  if (oversize_allocations_ != 0) stats.oversize_allocations.apply(oversize_allocations_);
  if (oversize_segments_ != 0) stats.oversize_segments.apply(oversize_segments_);
}

namespace {

using Getter = std::function<double(const DeviceStats&, std::int64_t)>;

struct KeyTable {
  std::vector<std::string> keys;
  std::vector<Getter> getters;
};

const KeyTable& key_table() {
  static const KeyTable table = [] {
    static const char* kKindNames[kNumStatKinds] = {
        "allocation",     "segment",        "active",       "inactive_split",       "allocated_bytes",
        "reserved_bytes", "active_bytes",   "inactive_split_bytes", "requested_bytes"};
    static const char* kPoolNames[3] = {"all", "small_pool", "large_pool"};
    static const char* kFieldNames[4] = {"current", "peak", "allocated", "freed"};
    auto field = [](const Stat& s, int f) -> double {
      switch (f) {
        case 0: return static_cast<double>(s.current);
        case 1: return static_cast<double>(s.peak);
        case 2: return static_cast<double>(s.allocated);
        default: return static_cast<double>(s.freed);
      }
    };
    std::vector<std::pair<std::string, Getter>> rows;
    for (int k = 0; k < kNumStatKinds; ++k) {
      for (int p = 0; p < 3; ++p) {
        for (int f = 0; f < 4; ++f) {
          rows.emplace_back(std::string(kKindNames[k]) + "." + kPoolNames[p] + "." + kFieldNames[f],
                            [=](const DeviceStats& s, std::int64_t) { return field(s.arrays[k][p], f); });
        }
      }
    }
    for (int f = 0; f < 4; ++f) {
      rows.emplace_back(std::string("oversize_allocations.") + kFieldNames[f],
                        [=](const DeviceStats& s, std::int64_t) { return field(s.oversize_allocations, f); });
      rows.emplace_back(std::string("oversize_segments.") + kFieldNames[f],
                        [=](const DeviceStats& s, std::int64_t) { return field(s.oversize_segments, f); });
    }
    rows.emplace_back("num_alloc_retries", [](const DeviceStats& s, std::int64_t) { return double(s.num_alloc_retries); });
    rows.emplace_back("num_ooms", [](const DeviceStats& s, std::int64_t) { return double(s.num_ooms); });
    rows.emplace_back("num_sync_all_streams", [](const DeviceStats& s, std::int64_t) { return double(s.num_sync_all_streams); });
    rows.emplace_back("num_device_alloc", [](const DeviceStats& s, std::int64_t) { return double(s.num_device_alloc); });
    rows.emplace_back("num_device_free", [](const DeviceStats& s, std::int64_t) { return double(s.num_device_free); });
    rows.emplace_back("max_split_size", [](const DeviceStats&, std::int64_t m) { return double(m); });
    // memory_stats() returns an OrderedDict sorted by key.
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    KeyTable t;
    for (auto& r : rows) {
      t.keys.push_back(r.first);
      t.getters.push_back(std::move(r.second));
    }
    return t;
  }();
  return table;
}

}  // namespace

const std::vector<std::string>& stat_keys() { return key_table().keys; }

void stat_values(const DeviceStats& stats, std::int64_t max_split_size, double* out) {
  const auto& getters = key_table().getters;
  for (std::size_t i = 0; i < getters.size(); ++i) out[i] = getters[i](stats, max_split_size);
}

}  // namespace cca
