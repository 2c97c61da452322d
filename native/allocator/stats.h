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
#include <vector>

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

struct Stat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;
  std::int64_t freed = 0;

  void increase(std::int64_t n) {
    current += n;
    if (current > peak) peak = current;
    allocated += n;
  }
  void decrease(std::int64_t n) {
    current -= n;
    freed += n;
  }
  void apply(std::int64_t delta) {
    if (delta > 0) increase(delta);
    if (delta < 0) decrease(-delta);
  }
};

struct DeviceStats {
  std::array<std::array<Stat, 3>, kNumStatKinds> arrays{};
  Stat oversize_allocations;
  Stat oversize_segments;
  std::int64_t num_alloc_retries = 0;
  std::int64_t num_ooms = 0;
  std::int64_t num_sync_all_streams = 0;
  std::int64_t num_device_alloc = 0;
  std::int64_t num_device_free = 0;

  const Stat& get(StatKind k, StatPool p) const { return arrays[k][p]; }
  void reset_peak();
  void reset_accumulated();
};

// The net effect of one transition on the current values, per pool.
class StatDelta {
 public:
  void add_block(const Block& b, int sign);
  void add_segment(const Segment& s, int sign);
  void apply_to(DeviceStats& stats) const;

 private:
  void add(int kind, int pool, std::int64_t v) {
    d_[kind][pool] += v;
    touched_ |= 1u << kind;
  }

  std::array<std::array<std::int64_t, 2>, kNumStatKinds> d_{};  // [kind][small, large]
  std::uint32_t touched_ = 0;  // bit k set when kind k may be non-zero: commits skip the rest
  std::int64_t oversize_allocations_ = 0;
  std::int64_t oversize_segments_ = 0;
};

// memory_stats() as flat keys in PyTorch's sorted order ("active.all.allocated", ...):
// the 122 keys of torch.cuda.memory_stats().
const std::vector<std::string>& stat_keys();
// Fills values in stat_keys() order. max_split_size is -1 when unlimited.
void stat_values(const DeviceStats& stats, std::int64_t max_split_size, double* out);

}  // namespace cca
