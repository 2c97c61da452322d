#include "stats.h"

#include <algorithm>
#include <utility>

#include "block_pool.h"
#include "debug.h"
#include "segment.h"

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
  CCA_ASSERT(pool_ == -1 || pool_ == p);  // one transition touches the blocks of one pool
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

const char* const kKindNames[kNumStatKinds] = {
    "allocation",     "segment",      "active",       "inactive_split",       "allocated_bytes",
    "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes"};
const char* const kPoolNames[3] = {"all", "small_pool", "large_pool"};

// One memory_stats() key: which Stat of DeviceStats and which of its fields, or a scalar
// counter, or neither (max_split_size, a setting). A flat table built once: memory_stats()
// is called from monitoring loops.
struct KeyRow {
  std::string key;
  int kind = -1;                          // >= 0: arrays[kind][pool]
  int pool = 0;
  const Stat DeviceStats::*stat = nullptr;  // else: an oversize Stat
  std::int64_t Stat::*field = nullptr;
  std::int64_t StatScalars::*scalar = nullptr;  // else: a counter
};

std::int64_t value_of(const KeyRow& r, const DeviceStats& s, std::int64_t max_split_size) {
  if (r.field != nullptr) {
    const Stat& st = r.kind >= 0 ? s.arrays[r.kind][r.pool] : s.*(r.stat);
    return st.*(r.field);
  }
  return r.scalar != nullptr ? s.*(r.scalar) : max_split_size;
}

const std::vector<KeyRow>& key_rows() {
  static const std::vector<KeyRow> rows = [] {
    static const char* kFieldNames[4] = {"current", "peak", "allocated", "freed"};
    std::int64_t Stat::*const fields[4] = {&Stat::current, &Stat::peak, &Stat::allocated, &Stat::freed};
    std::vector<KeyRow> out;
    for (int k = 0; k < kNumStatKinds; ++k) {
      for (int p = 0; p < 3; ++p) {
        for (int f = 0; f < 4; ++f) {
          KeyRow r;
          r.key = std::string(kKindNames[k]) + "." + kPoolNames[p] + "." + kFieldNames[f];
          r.kind = k;
          r.pool = p;
          r.field = fields[f];
          out.push_back(r);
        }
      }
    }
    const std::pair<const char*, const Stat DeviceStats::*> oversize[2] = {
        {"oversize_allocations.", &DeviceStats::oversize_allocations},
        {"oversize_segments.", &DeviceStats::oversize_segments}};
    for (const auto& [name, stat] : oversize) {
      for (int f = 0; f < 4; ++f) {
        KeyRow r;
        r.key = std::string(name) + kFieldNames[f];
        r.stat = stat;
        r.field = fields[f];
        out.push_back(r);
      }
    }
    const std::pair<const char*, std::int64_t StatScalars::*> counters[5] = {
        {"num_alloc_retries", &StatScalars::num_alloc_retries},
        {"num_ooms", &StatScalars::num_ooms},
        {"num_sync_all_streams", &StatScalars::num_sync_all_streams},
        {"num_device_alloc", &StatScalars::num_device_alloc},
        {"num_device_free", &StatScalars::num_device_free}};
    for (const auto& [name, scalar] : counters) {
      KeyRow r;
      r.key = name;
      r.scalar = scalar;
      out.push_back(r);
    }
    KeyRow setting;
    setting.key = "max_split_size";
    out.push_back(setting);
    // memory_stats() returns an OrderedDict sorted by key.
    std::sort(out.begin(), out.end(), [](const KeyRow& a, const KeyRow& b) { return a.key < b.key; });
    return out;
  }();
  return rows;
}

}  // namespace

const char* stat_kind_name(int kind) { return kKindNames[kind]; }
const char* stat_pool_name(int pool) { return kPoolNames[pool]; }

const std::vector<std::string>& stat_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const KeyRow& r : key_rows()) out.push_back(r.key);
    return out;
  }();
  return keys;
}

void stat_values(const DeviceStats& stats, std::int64_t max_split_size, double* out) {
  const std::vector<KeyRow>& rows = key_rows();
  for (std::size_t i = 0; i < rows.size(); ++i) out[i] = static_cast<double>(value_of(rows[i], stats, max_split_size));
}

}  // namespace cca
