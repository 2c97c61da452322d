// The allocation history: a ring of fixed-size entries, oldest first when read. It holds
// at most max_entries; the oldest are overwritten after that. Disabling history or
// clearing it frees the memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cca {

enum class TraceAction : std::uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kSnapshot,
  kOom,
  kAnnotate,  // metadata attached to a live allocation after the fact (_annotate_memory)
  kNumActions,
};

const char* trace_action_name(TraceAction action);

// 56 bytes, no pointers: recording is a few stores. No member initializers, so a
// transition's scratch entries cost nothing when history is off; an entry reaches the ring
// only through Ledger::record_traces, with every field set.
struct TraceEntry {
  std::uint64_t addr;    // for kOom: the device's free bytes
  std::uint64_t size;    // alloc: the caller's size; free_*: requested size; segment_*: its size;
                         // oom: the rounded request; snapshot: active bytes; annotate: the
                         // allocation's requested size
  std::uint64_t stream;
  std::uint64_t ticks;   // clock_ticks() when recorded
  // The event's place in the device's history, from the counter annotations also draw on:
  // two events a microsecond apart share a time_us, never a seq.
  std::uint64_t seq;
  std::uint32_t stack;   // interned stack id (0: none captured)
  std::uint32_t tag;     // interned user metadata / tag id (0: none)
  std::uint32_t pool;    // the private pool's id n of (0, n); 0: the default pool
  TraceAction action;
};

class TraceRing {
 public:
  // At least 1. Shrinking keeps the newest entries.
  void set_max_entries(std::size_t n);
  std::size_t max_entries() const { return max_; }
  // The slot of a new newest entry, for the caller to fill (no copy through a temporary).
  TraceEntry& append() {
    if (entries_.size() < max_) return entries_.emplace_back();
    TraceEntry& slot = entries_[next_];
    next_ = next_ + 1 == max_ ? 0 : next_ + 1;
    overflowed_ = true;
    return slot;
  }
  std::size_t size() const { return entries_.size(); }
  // True once an entry was overwritten since the last clear (trace_alloc_overflowed).
  bool overflowed() const { return overflowed_; }
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < entries_.size(); ++i) f(entries_[(next_ + i) % entries_.size()]);
  }
  // Drops every entry and releases the memory.
  void clear();
  std::size_t capacity_bytes() const { return entries_.capacity() * sizeof(TraceEntry); }

 private:
  std::vector<TraceEntry> entries_;
  std::size_t next_ = 0;  // the oldest entry once full
  std::size_t max_ = 1;
  bool overflowed_ = false;
};

}  // namespace cca
