#include "stats.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "block_pool.h"
#include "debug.h"

namespace cca {

DeviceStats StatCounters::view() const {
  DeviceStats out;
  for (int k = 0; k < kNumStatKinds; ++k) {
    const Kind& kind = kinds_[k];
    Stat& all = out.arrays[k][kAggregate];
    for (int p = 0; p < 2; ++p) {
      const PoolCounter& c = kind.pools[p];
      Stat& s = out.arrays[k][p + 1];
      s.current = c.current;
      s.peak = c.peak;
      s.allocated = c.allocated;
      s.freed = c.allocated - c.current + freed_base_[k][p];
      all.allocated += s.allocated;
      all.freed += s.freed;
    }
    all.current = kind.all_current;
    all.peak = kind.all_peak;
  }
  static_cast<StatScalars&>(out) = *this;
  return out;
}

void StatCounters::reset_peak() {
  for (Kind& k : kinds_) {
    for (PoolCounter& c : k.pools) c.peak = c.current;
    k.all_peak = k.all_current;
  }
  oversize_allocations.peak = oversize_allocations.current;
  oversize_segments.peak = oversize_segments.current;
}

void StatCounters::reset_accumulated() {
  for (int k = 0; k < kNumStatKinds; ++k) {
    for (int p = 0; p < 2; ++p) {
      kinds_[k].pools[p].allocated = 0;
      freed_base_[k][p] = kinds_[k].pools[p].current;
    }
  }
  oversize_allocations.allocated = oversize_allocations.freed = 0;
  oversize_segments.allocated = oversize_segments.freed = 0;
  num_alloc_retries = num_ooms = num_sync_all_streams = 0;
  num_device_alloc = num_device_free = 0;
}

void StatDelta::set_pool(const BlockPool* pool) {
  const int p = pool->is_small ? kSmallPool : kLargePool;
  if (CCA_DEBUG >= 1 && pool_ != -1 && pool_ != p) CCA_FAIL("one transition touched blocks of two pools");
  pool_ = p;
}

void StatDelta::add_block(const Block& b, int sign) {
  set_pool(b.pool);
  const auto size = static_cast<std::int64_t>(b.size);
  const bool expandable = b.expandable;
  // An expandable segment reserves only what is mapped: each mapped block counts its bytes
  // (and PyTorch counts no `segment` for it).
  if (expandable && b.mapped) add(kReservedBytes, sign * size);
  switch (b.state) {
    case BlockState::kAllocated:
      add(kAllocation, sign);
      add(kAllocatedBytes, sign * size);
      if (b.counted_oversize) oversize_allocations_ += sign;
      [[fallthrough]];
    case BlockState::kPendingFree:
      add(kActive, sign);
      add(kActiveBytes, sign * size);
      add(kRequestedBytes, sign * static_cast<std::int64_t>(b.requested_size));
      break;
    case BlockState::kFree:
      if (b.is_split() && !expandable) {
        add(kInactiveSplit, sign);
        add(kInactiveSplitBytes, sign * size);
      }
      break;
  }
}

void StatDelta::add_segment(const Segment& s, int sign) {
  if (s.expandable) return;  // counted through its mapped blocks
  set_pool(s.pool);
  add(kSegment, sign);
  add(kReservedBytes, sign * static_cast<std::int64_t>(s.size));
  if (s.counted_oversize) oversize_segments_ += sign;
}

void StatDelta::apply_to(StatCounters& stats) const {
  // Every kind, touched or not: straight-line code beats skipping the zeros.
  if (pool_ >= 0) {
    for (int k = 0; k < kNumStatKinds; ++k) stats.apply(k, pool_, d_[k]);
  }
  if (oversize_allocations_ != 0) stats.oversize_allocations.apply(oversize_allocations_);
  if (oversize_segments_ != 0) stats.oversize_segments.apply(oversize_segments_);
}

namespace {

// Each key reads one int64 of DeviceStats, found by its byte offset (-1: max_split_size,
// which is not a stat). A flat table: memory_stats() is called from monitoring loops.
struct KeyTable {
  std::vector<std::string> keys;
  std::vector<std::ptrdiff_t> offsets;
};

const KeyTable& key_table() {
  static const KeyTable table = [] {
    static const char* kKindNames[kNumStatKinds] = {
        "allocation",     "segment",        "active",       "inactive_split",       "allocated_bytes",
        "reserved_bytes", "active_bytes",   "inactive_split_bytes", "requested_bytes"};
    static const char* kPoolNames[3] = {"all", "small_pool", "large_pool"};
    static const char* kFieldNames[4] = {"current", "peak", "allocated", "freed"};
    const DeviceStats probe;
    const auto at = [&](const std::int64_t& field) {
      return reinterpret_cast<const char*>(&field) - reinterpret_cast<const char*>(&probe);
    };
    const auto fields = [](const Stat& st) {
      return std::array<const std::int64_t*, 4>{&st.current, &st.peak, &st.allocated, &st.freed};
    };
    std::vector<std::pair<std::string, std::ptrdiff_t>> rows;
    for (int k = 0; k < kNumStatKinds; ++k) {
      for (int p = 0; p < 3; ++p) {
        for (int f = 0; f < 4; ++f) {
          rows.emplace_back(std::string(kKindNames[k]) + "." + kPoolNames[p] + "." + kFieldNames[f],
                            at(*fields(probe.arrays[k][p])[f]));
        }
      }
    }
    for (int f = 0; f < 4; ++f) {
      rows.emplace_back(std::string("oversize_allocations.") + kFieldNames[f], at(*fields(probe.oversize_allocations)[f]));
      rows.emplace_back(std::string("oversize_segments.") + kFieldNames[f], at(*fields(probe.oversize_segments)[f]));
    }
    rows.emplace_back("num_alloc_retries", at(probe.num_alloc_retries));
    rows.emplace_back("num_ooms", at(probe.num_ooms));
    rows.emplace_back("num_sync_all_streams", at(probe.num_sync_all_streams));
    rows.emplace_back("num_device_alloc", at(probe.num_device_alloc));
    rows.emplace_back("num_device_free", at(probe.num_device_free));
    rows.emplace_back("max_split_size", -1);
    // memory_stats() returns an OrderedDict sorted by key.
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    KeyTable t;
    for (auto& r : rows) {
      t.keys.push_back(r.first);
      t.offsets.push_back(r.second);
    }
    return t;
  }();
  return table;
}

}  // namespace

const std::vector<std::string>& stat_keys() { return key_table().keys; }

void stat_values(const DeviceStats& stats, std::int64_t max_split_size, double* out) {
  const auto& offsets = key_table().offsets;
  const char* base = reinterpret_cast<const char*>(&stats);
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    std::int64_t v = max_split_size;
    if (offsets[i] >= 0) std::memcpy(&v, base + offsets[i], sizeof v);
    out[i] = static_cast<double>(v);
  }
}

}  // namespace cca
