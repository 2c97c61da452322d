// One transition's effect: each touched block or segment is recorded before and after the
// mutation, the event counter it bumps (a device malloc, a retry, ...) is named, and the
// whole is committed at once (Ledger::commit) together with the transition's trace entries,
// so neither the stats nor the history can disagree with the blocks.
#pragma once
#include "../../common/debug.h"
#include "segment.h"
#include "stats.h"
#include "trace_ring.h"
#include "block_pool.h"

namespace cca {

// A transition's trace entries: at most two (a free that completes at once records both).
struct TraceBatch {
  TraceEntry entries[2];
  int count = 0;
};

class StateChange {
 public:
  explicit StateChange(bool tracing = false) : tracing_(tracing) {}
  // At most two entries per transition (a free that completes at once records both).
  void trace(TraceAction action, DevicePtr addr, std::uint64_t size, StreamId stream, std::uint32_t stack,
             std::uint32_t tag, std::uint32_t pool = 0) {
    if (!tracing_) return;
    CCA_ASSERT(traces_.count < 2);
    traces_.entries[traces_.count++] = TraceEntry{addr, size, stream, 0, 0, stack, tag, pool, action};
    // ticks and seq are left for Ledger::record_traces, which sets both before the entry
    // reaches the ring.
  }
  int trace_count() const { return traces_.count; }
  const TraceBatch& traces() const { return traces_; }

  void before(const Block& b) { delta_.add_block(b, -1); }
  void after(const Block& b) { delta_.add_block(b, +1); }
  void before(const Segment& s) { delta_.add_segment(s, -1); }
  void after(const Segment& s) { delta_.add_segment(s, +1); }
  const StatDelta& delta() const { return delta_; }

  // The one event counter this transition adds 1 to.
  void count(Counter c) {
    CCA_ASSERT(counter_ == Counter::kNone);
    counter_ = c;
  }
  Counter counter() const { return counter_; }

 private:
  StatDelta delta_;
  bool tracing_;
  Counter counter_ = Counter::kNone;
  TraceBatch traces_;
};

// StatDelta's per-block record, here rather than in stats.cpp so each transition inlines it:
// a transition that just set a block's state then records it with that state known, and the
// compiler drops the other cases.
inline void StatDelta::set_pool(const BlockPool* pool) {
  const int p = pool->is_small ? kSmallPool : kLargePool;
  CCA_ASSERT(pool_ == -1 || pool_ == p);  // one transition touches the blocks of one pool
  pool_ = p;
}

inline void StatDelta::add_block(const Block& b, int sign) {
  set_pool(b.pool);
  const auto size = static_cast<std::int64_t>(b.size);
  // A block is never empty nor near 2^63 bytes (the validator checks both): with the sign of
  // each byte delta known, the compiler drops the tests a commit makes on it.
  CCA_ASSUME(size > 0);
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

}  // namespace cca
