// What the history records (PyTorch's _record_memory_history settings), and what a caller
// tells the allocator about one call: its interned stack and tag.
#pragma once
#include <cstddef>
#include <cstdint>

namespace cca {

// How much context history keeps (PyTorch's RecordContext).
enum class RecordContext : std::uint8_t {
  kNever = 0,  // no stacks
  kState = 1,  // stacks of live blocks only
  kAlloc = 2,  // also on trace entries (frees carry the allocation's stack)
  kAll = 3,    // frees carry the stack of the free site
};

struct HistoryOptions {
  bool enabled = false;  // record trace entries into the ring
  RecordContext context = RecordContext::kNever;
  std::size_t max_entries = 1;
  std::uint32_t skip_mask = 0;  // bit (1 << action): kept out of the ring
  bool clear_history = false;
};

// What the caller knows about a call: its interned stack and tag (0: none).
struct CallContext {
  std::uint32_t stack = 0;
  std::uint32_t tag = 0;
};

}  // namespace cca
