// One device's caching allocator: PyTorch's policy (see the overview at the top of
// caching_allocator.cpp) over the device contract.
//
// Thread safety: every public method may be called from any thread; one mutex per device
// serializes them. Callbacks and OOM observers run without the mutex held.
// Stream semantics: memory returned for stream S may be used by work on S at once; it is
// reused for another allocation on S only after free(), and by work on another stream only
// after record_stream() made the allocator wait for that stream.
// Sizes are in bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../device/device.h"
#include "block.h"
#include "block_pool.h"
#include "config.h"
#include "debug.h"
#include "errors.h"
#include "pointer_map.h"
#include "snapshot.h"
#include "stats.h"
#include "stream_uses.h"
#include "trace_ring.h"

namespace cca {

class StateChange;

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

class DeviceCachingAllocator {
 public:
  DeviceCachingAllocator(Device& device, const AllocatorConfig& config);
  // Returns every segment to the device. Live allocations are released too.
  ~DeviceCachingAllocator();
  DeviceCachingAllocator(const DeviceCachingAllocator&) = delete;
  DeviceCachingAllocator& operator=(const DeviceCachingAllocator&) = delete;

  // Returns size bytes usable on `stream` (0 for size 0). Throws InvalidArgumentError for
  // an unknown stream, OutOfMemoryError when even an empty cache cannot satisfy it (and
  // for 1 EiB or more, before touching any state), DeviceError on other device failures.
  DevicePtr malloc(std::uint64_t size, StreamId stream, std::uint32_t owner = 0, CallContext ctx = {});
  // Frees a pointer from malloc. Throws InvalidPointerError for anything else (a foreign
  // pointer, an interior pointer, a double free), changing nothing.
  void free(DevicePtr ptr, CallContext ctx = {});
  // Copies and fills (copies.cpp): only inside the live allocation at `base`, within the
  // caller's size, on its own stream, waited for before returning. Anything else throws
  // InvalidPointerError or InvalidArgumentError (ERR_CCA_OUT_OF_BOUNDS), touching nothing.
  void copy_to_device(DevicePtr base, std::uint64_t offset, const void* src, std::uint64_t bytes);
  void copy_to_host(void* dst, DevicePtr base, std::uint64_t offset, std::uint64_t bytes);
  void fill(DevicePtr base, std::uint64_t offset, unsigned char value, std::uint64_t bytes);
  // Throws InvalidArgumentError (ERR_CCA_INVALID_STREAM) unless `stream` is live here.
  void require_live_stream(StreamId stream) const;
  // Makes the block wait, when freed, for the work queued on `stream` so far.
  void record_stream(DevicePtr ptr, StreamId stream);
  // Waits for all pending frees, then returns every unsplit free block to the device.
  void empty_cache();

  StreamId create_stream();
  void destroy_stream(StreamId stream);
  void synchronize_stream(StreamId stream);
  // True when the work queued on the stream is done (does not wait).
  bool query_stream(StreamId stream);
  void synchronize();

  // Caps reserved memory at fraction * device total; in [0, 1].
  void set_memory_fraction(double fraction);
  double memory_fraction() const;
  void set_config(const AllocatorConfig& config);
  AllocatorConfig config() const;

  DeviceStats stats() const;
  // What a metrics scrape reads, taken under one lock so the figures agree: the stats, the
  // largest free block of the small and the large pools (private pools included), and the
  // history ring's fill. Reads no trace entry and walks no block list.
  struct MonitorSample {
    DeviceStats stats;
    std::size_t largest_free_small = 0;
    std::size_t largest_free_large = 0;
    std::size_t history_entries = 0;
    std::size_t history_capacity = 0;  // 0 while history is off
  };
  MonitorSample monitor_sample() const;
  void reset_peak_stats();
  void reset_accumulated_stats();
  void mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes);

  // Frees every live allocation made by `owner` (a JS environment being torn down).
  std::size_t release_owner(std::uint32_t owner);
  std::size_t live_allocation_count() const;

  // Called when no cached block fits, before asking the device; return true if memory
  // was freed. Runs without the allocator's mutex.
  void add_free_memory_callback(std::function<bool()> callback);
  // Called before an OutOfMemoryError is thrown, without the allocator's mutex.
  void add_oom_observer(std::function<void(const OutOfMemoryInfo&)> observer);

  // Starts, changes or stops recording history (PyTorch's _record_memory_history).
  // Disabling, or clear_history, frees the ring.
  void set_history(const HistoryOptions& options);
  HistoryOptions history() const;
  // Bytes the trace ring holds (0 once history is disabled or cleared).
  std::size_t history_bytes() const;
  // Takes the next number of the device's history order, as a trace entry would: an event
  // recorded outside the ring (an annotation) is ordered against the entries by it.
  std::uint64_t next_history_seq();
  // The state as data. With include_traces=false it reads no trace entry: its cost depends
  // only on the number of segments and blocks. Appends a `snapshot` trace entry.
  // pool_filter: only that private pool's segments (0: every segment).
  DeviceSnapshot snapshot(std::uint32_t pool_filter, bool include_traces);
  // --- MemPools (private pools) ---
  // Creates a private pool; returns its id n (the MemPool id is (0, n)). use_count 1.
  std::uint32_t create_pool();
  // Routes the calling thread's allocations to the pool until end_allocate_to_pool
  // (nested routes: the newest wins). Each begin adds a use; each end removes it.
  void begin_allocate_to_pool(std::uint32_t pool);
  void end_allocate_to_pool(std::uint32_t pool);
  // Drops the MemPool's own use; at use_count 0 its cached memory is released (now, and by
  // later empty_cache calls) and the pool is erased once it holds no segment.
  void release_pool(std::uint32_t pool);
  int pool_use_count(std::uint32_t pool) const;
  bool pool_exists(std::uint32_t pool) const;

  // Stack ids still referenced by live blocks, segments or the ring (for the JS stack table).
  std::vector<std::uint32_t> referenced_stacks() const;

  // Checks every invariant; returns "" when all hold, else the first broken clause.
  std::string validate() const;
  Device& device() { return device_; }
  int device_index() const { return device_.index(); }

 private:
  struct AllocParams {
    std::uint64_t requested = 0;
    std::size_t size = 0;        // rounded
    std::size_t alloc_size = 0;  // segment size if a new segment is needed
    StreamId stream = 0;
    BlockPool* pool = nullptr;
    Block* block = nullptr;
    Status device_status = Status::kOk;
    CallContext ctx;
  };

  // --- the state transitions (transitions.cpp): the only code that changes blocks ---
  Block* segment_allocated(DevicePtr ptr, std::size_t size, const AllocParams& p);
  Block* hand_out(Block* free_block, const AllocParams& p, std::uint32_t owner);
  void free_requested(Block* block, CallContext ctx);
  void free_completed(Block* block);
  void complete_free(Block* block, StateChange& change, std::uint32_t stack);
  void segment_released(Block* block);
  void commit(const StateChange& change);
  // Expandable segments (expandable_segments.cpp).
  void merge_free_neighbours(Block* block, StateChange& change);
  Block* find_expandable_block(const AllocParams& p);
  bool map_block(Block* to_map, std::size_t size, const AllocParams& p);
  Block* try_allocate_expandable_block(const AllocParams& p);
  void unmap_block(Block* block);
  void release_expandable_segment(Block* block);
  bool use_expandable() const { return config_.expandable_segments && device_.vmm_granularity() != 0; }
  // A trace entry with no state change (oom, snapshot).
  void record_event(TraceAction action, DevicePtr addr, std::uint64_t size, StreamId stream, std::uint32_t stack);
  bool tracing() const { return history_.enabled; }
  // The stack a trace entry carries under the current context level.
  std::uint32_t trace_stack(std::uint32_t stack) const {
    return history_.context >= RecordContext::kAlloc ? stack : 0;
  }

  const Block& live_range(DevicePtr base, std::uint64_t offset, std::uint64_t bytes, const char* what) const;
  void finish_copy(Status s, StreamId stream, const char* what);

  // --- policy (caching_allocator.cpp) ---
  void check_stream(StreamId stream) const;
  BlockPool& pool_for(std::size_t rounded) {
    if (!routes_.empty()) {
      if (PrivatePool* p = routed_pool()) return rounded <= kSmallSize ? p->small : p->large;
    }
    return rounded <= kSmallSize ? small_blocks_ : large_blocks_;
  }
  PrivatePool* routed_pool() const;
  PrivatePool& private_pool(std::uint32_t pool) const;  // throws for an unknown id
  void release_freeable_pools();
  // Frees the size bins of destroyed streams once they hold no block.
  void drop_dead_stream_bins();
  bool get_free_block(AllocParams& p);
  bool trigger_free_memory_callbacks(std::unique_lock<std::mutex>& lock);
  bool alloc_block(AllocParams& p, bool is_retry);
  bool release_available_cached_blocks(const AllocParams& p);
  void release_cached_blocks();
  void release_free_blocks(BlockPool& pool);
  void garbage_collect_cached_blocks();
  void process_events();
  void synchronize_and_free_events();
  void insert_events(Block* block);
  bool gc_enabled() const { return fraction_set_ && config_.garbage_collection_threshold > 0.0; }
  [[noreturn]] void throw_oom(const AllocParams& p, std::unique_lock<std::mutex>& lock);
  std::size_t total_reserved() const;
  std::string validate_locked() const;
  // In CCA_DEBUG >= 3 builds, runs the validator and aborts on a broken invariant.
  void check_after_operation() const {
    if (CCA_VALIDATE_EVERY_OPERATION) {
      const std::string problem = validate_locked();
      if (!problem.empty()) CCA_FAIL(problem.c_str());
    }
  }

  Block* new_block();
  void delete_block(Block* block);

  Device& device_;
  mutable std::mutex mu_;
  AllocatorConfig config_;
  BlockPool small_blocks_{true};
  BlockPool large_blocks_{false};
  PointerMap allocated_;  // kAllocated blocks by address
  std::unordered_map<DevicePtr, std::unique_ptr<Segment>> segments_;
  StreamEvents events_;
  std::unordered_set<StreamId> streams_;  // live streams created here (0 is always live)
  StatCounters stats_;
  bool fraction_set_ = false;
  double fraction_ = 1.0;
  std::size_t allowed_memory_maximum_ = 0;
  std::vector<Block*> spare_blocks_;  // recycled Block objects: no heap traffic on split/merge
  HistoryOptions history_;
  TraceRing ring_;
  std::uint64_t history_seq_ = 0;  // the last seq handed out; never reset, so never reused
  std::unordered_map<std::uint32_t, std::unique_ptr<PrivatePool>> pools_;
  // (thread, pool) routes in the order they began: PyTorch's captures_underway.
  std::vector<std::pair<std::thread::id, std::uint32_t>> routes_;
  std::vector<std::function<bool()>> free_memory_callbacks_;
  std::vector<std::function<void(const OutOfMemoryInfo&)>> oom_observers_;
};

}  // namespace cca
