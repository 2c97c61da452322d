#include "stats.h"
#include "../../common/hot.h"

#include <algorithm>
#include <utility>

#include "block_pool.h"
#include "../../common/debug.h"
#include "segment.h"
#include "state_change.h"

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
  num_device_alloc = num_device_free = num_oom_rejections = 0;
}

void StatDelta::add_segment(const Segment& s, int sign) {
  if (s.expandable) return;  // counted through its mapped blocks
  set_pool(s.pool);
  add(kSegment, sign);
  add(kReservedBytes, sign * static_cast<std::int64_t>(s.size));
  if (s.counted_oversize) oversize_segments_ += sign;
}

namespace {

const char* const kKindNames[kNumStatKinds] = {
    "allocation",     "segment",      "active",       "inactive_split",       "allocated_bytes",
    "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes"};
const char* const kPoolNames[3] = {"all", "small_pool", "large_pool"};

const char* const kFieldNames[4] = {"current", "peak", "allocated", "freed"};

// Every stat value in one fixed order: kinds x pools x fields, the two oversize stats, the
// counters, max_split_size. key_order() names them in the same order; memory_stats() wants
// them sorted by name, so stat_values() writes them through that sort's permutation.
// Straight-line stores: memory_stats() is called from monitoring loops.
constexpr std::size_t kNumKeys = kNumStatKinds * 3 * 4 + 2 * 4 + 6 + 1;

void flatten(const DeviceStats& s, std::int64_t max_split_size, std::int64_t* out) {
  const auto put = [&out](const Stat& st) {
    *out++ = st.current;
    *out++ = st.peak;
    *out++ = st.allocated;
    *out++ = st.freed;
  };
  for (const auto& kind : s.arrays) {
    for (const Stat& st : kind) put(st);
  }
  put(s.oversize_allocations);
  put(s.oversize_segments);
  *out++ = s.num_alloc_retries;
  *out++ = s.num_ooms;
  *out++ = s.num_sync_all_streams;
  *out++ = s.num_device_alloc;
  *out++ = s.num_device_free;
  *out++ = s.num_oom_rejections;
  *out++ = max_split_size;
}

struct KeyOrder {
  std::vector<std::string> sorted_keys;
  std::vector<std::size_t> from;  // sorted position i holds flatten()'s value from[i]
};

const KeyOrder& key_order() {
  static const KeyOrder order = [] {
    std::vector<std::string> names;
    for (int k = 0; k < kNumStatKinds; ++k) {
      for (int p = 0; p < 3; ++p) {
        for (const char* f : kFieldNames) names.push_back(std::string(kKindNames[k]) + "." + kPoolNames[p] + "." + f);
      }
    }
    for (const char* stat : {"oversize_allocations.", "oversize_segments."}) {
      for (const char* f : kFieldNames) names.push_back(std::string(stat) + f);
    }
    for (const char* counter : {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
                                "num_device_free", "num_oom_rejections", "max_split_size"}) {
      names.emplace_back(counter);
    }
    CCA_ASSERT(names.size() == kNumKeys);
    KeyOrder o;
    o.from.resize(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) o.from[i] = i;
    // memory_stats() returns an OrderedDict sorted by key.
    std::sort(o.from.begin(), o.from.end(), [&](std::size_t a, std::size_t b) { return names[a] < names[b]; });
    for (std::size_t i : o.from) o.sorted_keys.push_back(names[i]);
    return o;
  }();
  return order;
}

}  // namespace

const char* stat_kind_name(int kind) { return kKindNames[kind]; }
const char* stat_pool_name(int pool) { return kPoolNames[pool]; }

const std::vector<std::string>& stat_keys() { return key_order().sorted_keys; }

void stat_values(const DeviceStats& stats, std::int64_t max_split_size, double* out) {
  std::int64_t flat[kNumKeys];
  flatten(stats, max_split_size, flat);
  const std::vector<std::size_t>& from = key_order().from;
  for (std::size_t i = 0; i < kNumKeys; ++i) out[i] = static_cast<double>(flat[from[i]]);
}

double stat_value(const DeviceStats& stats, std::int64_t max_split_size, std::size_t index) {
  std::int64_t flat[kNumKeys];
  flatten(stats, max_split_size, flat);
  return static_cast<double>(flat[key_order().from.at(index)]);
}

}  // namespace cca
