// The pinned host allocator's history, as PyTorch 2.14 records it (record_pinned_host_memory,
// PR #182407): a ring of entries of five actions, each with the block's address and rounded
// size, a clock reading, and the stack the JS side captured (an id of its stack table; 0 for
// none). No stream, device or pool is kept: PyTorch writes stream 0, pool (0, 0) and no
// device for every host entry.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cca {

// In the order HostHistory::action_names() lists them.
enum class HostAction : std::uint8_t { kSegmentAlloc, kAlloc, kFreeRequested, kFreeCompleted, kSegmentFree, kCount };

struct HostTraceEntry {
  std::uint64_t addr;
  std::uint64_t size;
  std::uint64_t ticks;  // clock_ticks() when recorded
  std::uint32_t stack;
  HostAction action;
};

// Whose stacks are kept (PyTorch's context): 0 none, 1 'state' (live blocks and their alloc
// entries), 2 'alloc' (the same for host memory), 3 'all' (free requests too).
struct HostHistoryOptions {
  bool enabled = false;
  int context = 0;
  std::size_t max_entries = 0;  // ring size; 0 keeps nothing
};

class HostHistory {
 public:
  static const char* const* action_names();

  // Starts, changes or stops recording; `clear` empties the ring. Stopping frees the ring,
  // as the device history's does (a snapshot shows host data only while recording, as
  // PyTorch's does).
  void set(const HostHistoryOptions& options, bool clear);
  bool enabled() const { return options_.enabled; }
  // Whether an alloc (level 1) or a free request (level 3) keeps its stack.
  bool keeps_alloc_stacks() const { return options_.enabled && options_.context >= 1; }
  bool keeps_free_stacks() const { return options_.enabled && options_.context >= 3; }

  void record(HostAction action, const void* addr, std::size_t size, std::uint32_t stack);
  // Oldest first.
  std::vector<HostTraceEntry> entries() const;
  std::size_t size() const { return ring_.size(); }
  void append_stacks(std::vector<std::uint32_t>& ids) const;

 private:
  HostHistoryOptions options_;
  std::vector<HostTraceEntry> ring_;
  std::size_t next_ = 0;  // where the next entry goes once the ring is full
};

}  // namespace cca
