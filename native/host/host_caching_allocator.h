// Pinned host memory, cached as PyTorch's CachingHostAllocator caches it: a request is
// rounded up to a power of two and served by a free block of that size when one is ready,
// else by a new page-locked block. A block used by copies on streams is not reusable when
// freed: an event is recorded on each of those streams, and the block returns to its free
// list once they completed. One allocator serves every device (the memory is portable).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "../common/stat.h"
#include "../device/device.h"
#include "host_history.h"

namespace cca {

// PyTorch's host_memory_stats(): each Stat as current/peak/allocated/freed, and the time
// spent in the driver's host alloc and free calls, in microseconds.
struct HostDurationStat {
  std::int64_t total = 0, max = 0, min = 0, count = 0;
  void add(std::int64_t us);
};

struct HostStats {
  Stat allocations;      // blocks owned (handed out and cached)
  Stat allocated_bytes;  // their rounded sizes
  Stat active_requests;  // blocks handed out and not yet reusable
  Stat active_bytes;
  std::int64_t num_host_alloc = 0;
  std::int64_t num_host_free = 0;
  HostDurationStat host_alloc_time;
  HostDurationStat host_free_time;
};

class HostCachingAllocator {
 public:
  // `devices[d]` records the events of work on device d; devices[0] allocates the memory.
  explicit HostCachingAllocator(std::vector<Device*> devices);
  ~HostCachingAllocator();  // gives every block back, live or not (the process is ending)
  HostCachingAllocator(const HostCachingAllocator&) = delete;
  HostCachingAllocator& operator=(const HostCachingAllocator&) = delete;

  // A block of at least `size` bytes (nullptr for 0). The system refusing page-locked memory
  // is an OutOfMemoryError (ERR_CCA_HOST_OUT_OF_MEMORY); other failures a DeviceError.
  // `stack`: the caller's stack id, kept with the block and its history entry while history
  // keeps alloc stacks.
  void* allocate(std::size_t size, std::size_t* rounded = nullptr, std::uint32_t stack = 0);
  // Returns a block handed out by allocate(); InvalidPointerError for anything else.
  // `stack` goes on the free_requested entry while history keeps free stacks.
  void free(void* ptr, std::uint32_t stack = 0);
  // Whether [ptr, ptr + bytes) lies inside one block handed out and not freed.
  bool contains(const void* ptr, std::size_t bytes) const;
  // Marks that block as used by work on `stream` of `device` (a copy queued there): its
  // free then waits for that work. False, changing nothing, if the range is in no live block.
  bool record_use(const void* ptr, std::size_t bytes, int device, StreamId stream);
  // Frees every cached block whose events completed.
  void empty_cache();

  // History (PyTorch's record_pinned_host_memory): see host_history.h.
  void set_history(const HostHistoryOptions& options, bool clear);
  bool history_enabled() const;
  // One live pinned block as a host segment of the snapshot: PyTorch writes one segment of
  // one block per pinned block.
  struct BlockRecord {
    std::uint64_t address;
    std::uint64_t size;
    int state;  // 0 inactive, 1 active_allocated, 2 active_pending_free (the device's order)
    std::uint32_t stack;
  };
  // Every block by address, and (when `traces` is set) the history's entries, oldest first;
  // both empty while history is off.
  void history_snapshot(std::vector<BlockRecord>& blocks, std::vector<HostTraceEntry>* traces) const;
  // Stack ids the history and live blocks still name.
  void append_stacks(std::vector<std::uint32_t>& ids) const;

  HostStats stats() const;
  void reset_peak_stats();
  void reset_accumulated_stats();

 private:
  struct Block {
    char* ptr;
    std::size_t size;
    bool handed_out = false;
    int pending_events = 0;
    std::vector<std::pair<int, StreamId>> uses;
    std::uint32_t stack = 0;  // the allocating call's, while handed out and history keeps it
  };
  struct PendingEvent {
    int device;
    EventId event;
    Block* block;
  };
  Block* find_locked(const void* ptr, std::size_t bytes) const;
  void process_events_locked();
  void make_reusable_locked(Block* b);
  void release_locked(Block* b);
  [[noreturn]] void throw_host_oom(std::size_t size, std::size_t block_size) const;

  std::vector<Device*> devices_;
  mutable std::mutex mu_;
  std::map<const char*, Block*> blocks_;            // every block, by address
  std::map<std::size_t, std::vector<Block*>> free_;  // ready blocks by size
  std::vector<PendingEvent> pending_;
  HostStats stats_;
  HostHistory history_;
};

}  // namespace cca
