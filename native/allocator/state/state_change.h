// One transition's effect: each touched block or segment is recorded before and after the
// mutation, the event counter it bumps (a device malloc, a retry, ...) is named, and the
// whole is committed at once (Ledger::commit) together with the transition's trace entries,
// so neither the stats nor the history can disagree with the blocks.
#pragma once
#include "../../common/debug.h"
#include "segment.h"
#include "stats.h"
#include "trace_ring.h"

namespace cca {

class StateChange {
 public:
  explicit StateChange(bool tracing = false) : tracing_(tracing) {}
  // At most two entries per transition (a free that completes at once records both).
  void trace(TraceAction action, DevicePtr addr, std::uint64_t size, StreamId stream, std::uint32_t stack,
             std::uint32_t tag, std::uint32_t pool = 0) {
    if (!tracing_) return;
    CCA_ASSERT(count_ < 2);
    TraceEntry& e = entries_[count_++];
    e.action = action;
    e.addr = addr;
    e.size = size;
    e.stream = stream;
    e.stack = stack;
    e.tag = tag;
    e.pool = pool;
    // ticks and seq are left for Ledger::record_traces, which sets both before the entry
    // reaches the ring.
  }
  int trace_count() const { return count_; }
  const TraceEntry& trace_entry(int i) const { return entries_[i]; }

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
  int count_ = 0;
  TraceEntry entries_[2];
};

}  // namespace cca
