// PyTorch's DeviceStats: nine stat arrays (all / small_pool / large_pool), two oversize
// stats and the scalar counters, with PyTorch's increase/decrease semantics.
//
// Stats never change by hand at call sites: a transition records each touched block's
// contribution before and after (StatDelta), and the net change is applied once. So the
// stats are a function of block states and cannot drift from them; the validator checks
// exactly that.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../../common/hot.h"
#include "../../common/stat.h"
#include "block.h"

namespace cca {

enum StatKind : int {
  kAllocation,
  kSegment,
  kActive,
  kInactiveSplit,
  kAllocatedBytes,
  kReservedBytes,
  kActiveBytes,
  kInactiveSplitBytes,
  kRequestedBytes,
  kNumStatKinds,
};

enum StatPool : int { kAggregate = 0, kSmallPool = 1, kLargePool = 2 };

// "allocation", "segment", ...: the names memory_stats() keys use.
const char* stat_kind_name(int kind);
// "all", "small_pool", "large_pool".
const char* stat_pool_name(int pool);

// The event counters among the stats; a transition names the one it bumps (StateChange).
enum class Counter : std::uint8_t {
  kNone,
  kDeviceAlloc,      // num_device_alloc: a segment allocated or pages mapped
  kDeviceFree,       // num_device_free: a segment freed or pages unmapped
  kAllocRetry,       // num_alloc_retries: the whole cache released before a last try
  kOom,              // num_ooms
  kSyncAllStreams,   // num_sync_all_streams: every pending free waited for
  kOomRejection,     // num_oom_rejections: refused by throw_on_cudamalloc_oom
};

// The stats kept as they are reported: the two oversize stats and the event counters.
struct StatScalars {
  Stat oversize_allocations;
  Stat oversize_segments;
  std::int64_t num_alloc_retries = 0;
  std::int64_t num_ooms = 0;
  std::int64_t num_sync_all_streams = 0;
  std::int64_t num_device_alloc = 0;
  std::int64_t num_device_free = 0;
  std::int64_t num_oom_rejections = 0;
};

// The stats as PyTorch reports them (memory_stats()): a value, built on demand from
// StatCounters.
struct DeviceStats : StatScalars {
  std::array<std::array<Stat, 3>, kNumStatKinds> arrays{};
};

// One MemPool's reserved_bytes (all / small_pool / large_pool): PyTorch's
// reserved_bytes_by_private_pools[(0, id)].
struct PoolReserved {
  std::uint32_t id = 0;
  std::array<Stat, 3> reserved{};
};

// What a commit updates: per kind, each pool's current, peak and allocated, and the
// aggregate's current and peak (one cache line). The rest of DeviceStats follows from
// these: "all" allocated is the pools' sum (a transition touches one pool), and freed is
// allocated - current + the current at the last reset_accumulated. So a commit does 5
// stores per kind instead of PyTorch's 8.
class StatCounters : public StatScalars {
 public:
  // Only a rise can move a peak or the allocated total, so a fall updates the two currents
  // alone and an untouched kind nothing: of a cached pair's 18 kind updates, 7 rise.
  CCA_HOT_INLINE void apply(int kind, int pool, std::int64_t delta) {
    if (delta == 0) return;
    Kind& k = kinds_[kind];
    PoolCounter& c = k.pools[pool - 1];
    c.current += delta;
    k.all_current += delta;
    if (delta < 0) return;
    c.peak = c.current > c.peak ? c.current : c.peak;
    c.allocated += delta;
    k.all_peak = k.all_current > k.all_peak ? k.all_current : k.all_peak;
  }
  std::int64_t current(StatKind kind, StatPool pool) const {
    const Kind& k = kinds_[kind];
    return pool == kAggregate ? k.all_current : k.pools[pool - 1].current;
  }
  void bump(Counter c) {
    switch (c) {
      case Counter::kNone: break;
      case Counter::kDeviceAlloc: ++num_device_alloc; break;
      case Counter::kDeviceFree: ++num_device_free; break;
      case Counter::kAllocRetry: ++num_alloc_retries; break;
      case Counter::kOom: ++num_ooms; break;
      case Counter::kSyncAllStreams: ++num_sync_all_streams; break;
      case Counter::kOomRejection: ++num_oom_rejections; break;
    }
  }
  DeviceStats view() const;
  void reset_peak();
  void reset_accumulated();

 private:
  struct PoolCounter {
    std::int64_t current = 0;
    std::int64_t peak = 0;
    std::int64_t allocated = 0;
  };
  struct alignas(64) Kind {
    PoolCounter pools[2];  // small, large
    std::int64_t all_current = 0;
    std::int64_t all_peak = 0;
  };
  std::array<Kind, kNumStatKinds> kinds_{};
  std::array<std::array<std::int64_t, 2>, kNumStatKinds> freed_base_{};  // [kind][small, large]
};

// The net effect of one transition on the current values. A transition touches the blocks
// of one segment, so of one pool: the delta is for that pool and for "all".
class StatDelta {
 public:
  void add_block(const Block& b, int sign);
  void add_segment(const Segment& s, int sign);
  // Inline, so where a transition knows its blocks' states (just set, or CCA_ASSUME) the
  // compiler can drop the kinds they cannot move.
  CCA_HOT_INLINE void apply_to(StatCounters& stats) const {
    if (pool_ >= 0) apply_kinds(stats, std::make_integer_sequence<int, kNumStatKinds>{});
    if (oversize_allocations_ != 0) stats.oversize_allocations.apply(oversize_allocations_);
    if (oversize_segments_ != 0) stats.oversize_segments.apply(oversize_segments_);
  }
  // Each kind by a constant index, so the deltas a transition fixes fold into the updates.
  template <int... K>
  CCA_HOT_INLINE void apply_kinds(StatCounters& stats, std::integer_sequence<int, K...>) const {
    (stats.apply(K, pool_, d_[K]), ...);
  }
  // What the change did to reserved_bytes, and in which StatPool, for a MemPool's own figures.
  std::int64_t reserved_change() const { return d_[kReservedBytes]; }
  int stat_pool() const { return pool_; }

 private:
  void set_pool(const BlockPool* pool);
  void add(int kind, std::int64_t v) { d_[kind] += v; }

  std::int64_t d_[kNumStatKinds] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  int pool_ = -1;  // the StatPool of the recorded blocks, -1 until one is recorded
  std::int64_t oversize_allocations_ = 0;
  std::int64_t oversize_segments_ = 0;
};

// memory_stats() as flat keys in PyTorch's sorted order ("active.all.allocated", ...):
// the 122 keys of torch.cuda.memory_stats() and the newer num_oom_rejections.
const std::vector<std::string>& stat_keys();
// Fills values in stat_keys() order. max_split_size is -1 when unlimited.
void stat_values(const DeviceStats& stats, std::int64_t max_split_size, double* out);
// The one value at stat_keys() position `index` (memory_allocated() and the like).
double stat_value(const DeviceStats& stats, std::int64_t max_split_size, std::size_t index);

}  // namespace cca
