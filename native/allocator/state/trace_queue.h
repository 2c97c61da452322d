// Live trace events (memory.onTrace, PyTorch's attachAllocatorTraceTracker): the ledger
// copies each entry whose action a subscriber asked for into this bounded queue as it
// commits, and JS drains it in batches on its event loop. A consumer that falls behind
// loses the newest entries, counted, never blocks the allocator and never grows memory
// past the capacity.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "trace_ring.h"

namespace cca {

class TraceQueue {
 public:
  // mask: bit (1 << action) for each action wanted; 0 turns delivery off and frees the queue.
  void configure(std::uint32_t mask, std::size_t capacity) {
    mask_ = mask;
    capacity_ = capacity == 0 ? 1 : capacity;
    if (mask == 0) {
      std::vector<TraceEntry>().swap(entries_);
      dropped_ = 0;
    }
  }
  std::uint32_t mask() const { return mask_; }
  bool wants(TraceAction action) const { return (mask_ >> static_cast<unsigned>(action)) & 1u; }
  void push(const TraceEntry& e) {
    if (entries_.size() < capacity_) {
      entries_.push_back(e);
    } else {
      ++dropped_;
    }
  }
  // Moves the queued entries out (oldest first) with the count dropped since the last drain.
  void drain(std::vector<TraceEntry>& out, std::uint64_t& dropped) {
    out.clear();
    out.swap(entries_);
    dropped = dropped_;
    dropped_ = 0;
  }

 private:
  std::uint32_t mask_ = 0;
  std::size_t capacity_ = 1;
  std::vector<TraceEntry> entries_;
  std::uint64_t dropped_ = 0;
};

}  // namespace cca
