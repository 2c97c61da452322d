// One device's caching allocator: PyTorch's policy (see the overview at the top of
// caching_allocator.cpp) over the device contract. It decides and calls the device; the
// ledger (ledger.h) holds the state and records each outcome, and this class can only read
// it between transitions.
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
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../../device/device.h"
#include "config.h"
#include "ipc_mappings.h"
#include "pool_routing.h"
#include "../../common/futex_mutex.h"
#include "../../common/scoped_value.h"
#include "../../common/debug.h"
#include "../../common/errors.h"
#include "../../common/owner_counters.h"
#include "../state/history_options.h"
#include "../state/ledger.h"
#include "size_policy.h"
#include "../state/snapshot.h"
#include "stream_events.h"

namespace cca {

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
  // The same, counting the allocation in `counters` under the lock (a C client's figures).
  DevicePtr malloc_counted(std::uint64_t size, StreamId stream, std::uint32_t owner, CallContext ctx,
                           OwnerCounters& counters);
  // Frees a pointer from malloc. Throws InvalidPointerError for anything else (a foreign
  // pointer, an interior pointer, a double free), changing nothing.
  void free(DevicePtr ptr, CallContext ctx = {});
  // Throws InvalidArgumentError (ERR_CCA_INVALID_STREAM) unless `stream` is live here.
  void require_live_stream(StreamId stream) const;
  // Makes the block wait, when freed, for the work queued on `stream` so far.
  void record_stream(DevicePtr ptr, StreamId stream);
  // Waits for all pending frees, then returns every unsplit free block to the device. The
  // segment_free entries carry ctx's label, and its stack (context 'all') or else the stack
  // that allocated each segment.
  void empty_cache(CallContext ctx = {});
  // Caching off (PyTorch's caching_allocator_enable(False)), for sanitizer runs: empties
  // the cache, then every allocation gets a segment of its own and every free that
  // completes returns its segment to the device at once, so compute-sanitizer sees a use
  // after free. Stats and history go on as usual. Memory allocated before caching went off
  // returns once its whole segment is free. On again: caching resumes from an empty cache.
  void set_caching_enabled(bool enabled);
  bool caching_enabled() const;

  // --- streams brought by native code (streams.cpp) ---
  // Makes a stream the allocator did not create usable with it (counted: each adopt needs a
  // release). InvalidArgumentError (ERR_CCA_INVALID_STREAM) for 0 or a stream created here.
  void adopt_stream(StreamId stream);
  // Undoes one adopt; the last waits for the stream's work and forgets it, without
  // destroying it. InvalidArgumentError (ERR_CCA_INVALID_STREAM) unless it was adopted.
  void release_stream(StreamId stream);

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
  // The one setting the stats report (max_split_size), without copying the whole config.
  Bytes max_split_size() const;

  DeviceStats stats() const;
  void reset_peak_stats();
  void reset_accumulated_stats();
  void mem_get_info(Bytes* free_bytes, Bytes* total_bytes);

  // Frees every live allocation made by `owner` (a JS environment being torn down).
  Bytes release_owner(std::uint32_t owner);
  std::size_t live_allocation_count() const;

  // Called when no cached block fits, before asking the device; return true if memory
  // was freed. Runs without the allocator's mutex.
  void add_free_memory_callback(std::function<bool()> callback);
  // Called before an OutOfMemoryError is thrown, without the allocator's mutex.
  void add_oom_observer(std::function<void(const OutOfMemoryInfo&)> observer);

  // Starts, changes or stops recording history (PyTorch's _record_memory_history).
  // Disabling, or clear_history, frees the ring.
  void set_history(const HistoryOptions& options);
  // Takes the next number of the device's history order, as a trace entry would: an event
  // recorded outside the ring (an annotation) is ordered against the entries by it.
  std::uint64_t next_history_seq();
  // The state as data. With include_traces=false it reads no trace entry: its cost depends
  // only on the number of segments and blocks. Appends a `snapshot` trace entry.
  // pool_filter: only that private pool's segments (0: every segment).
  DeviceSnapshot snapshot(std::uint32_t pool_filter, bool include_traces);
  // The same, with the history's entries given to `traces` (none read when it is nullptr)
  // instead of copied into DeviceSnapshot::traces.
  DeviceSnapshot snapshot(std::uint32_t pool_filter, TraceSink* traces);

  // MemPools' and CUDA graph capture's calls are facets (facets/mem_pools.h,
  // facets/graph_captures.h); the routing they set is the allocator's (pool_routing.h).

  // Checks every invariant; returns "" when all hold, else the first broken clause.
  std::string validate() const;
  Device& device() { return device_; }
  int device_index() const { return device_.index(); }

 private:
  // Features built around this class (facets/: replay's planning, native clients, IPC,
  // MemPools' and captures' calls, copies, device work, reads) come through one door that
  // lists what they touch (facet_access.h).
  friend class FacetAccess;

  struct AllocParams {
    std::uint64_t requested = 0;
    Bytes size = 0;        // rounded
    Bytes alloc_size = 0;  // segment size if a new segment is needed
    StreamId stream = 0;
    const BlockPool* pool = nullptr;
    const Block* block = nullptr;
    bool block_in_free_set = false;  // a cached block (true) or a new segment's (false)
    Status device_status = Status::kOk;
    bool rejected = false;  // refused by throw_on_cudamalloc_oom: no retries
    CallContext ctx;
  };

  // --- the malloc fallback chain (caching_allocator.cpp) ---
  template <class Counted>
  DevicePtr malloc_with(std::uint64_t size, StreamId stream, std::uint32_t owner, CallContext ctx, Counted&& counted);
  // Throws unless `stream` is 0 or live here. The last stream found live is remembered (and
  // forgotten when it goes), so a loop on one created stream skips the set's lookup.
  void check_stream(StreamId stream) const {
    if (stream != 0 && stream != last_live_stream_) check_stream_in_set(stream);
  }
  void check_stream_in_set(StreamId stream) const;
  // The pool a rounded request goes to: a capture's pool when `stream` is being captured,
  // else the thread's routed MemPool, else the default one.
  const BlockPool& pool_for(Bytes rounded, StreamId stream) const {
    const bool small = is_small_request(rounded);
    // Routes are rare: the common case asks for nothing but the default pool.
    if (routing_.routed) return pool_of(routed_pool(stream), small);
    return ledger_.default_pool(small);
  }
  // A MemPool's small or large pool; the default pools for nullptr.
  const BlockPool& pool_of(const PrivatePool* p, bool small) const {
    if (p == nullptr) return ledger_.default_pool(small);
    return small ? p->small : p->large;
  }
  // Best fit among the cached blocks (inline: the cached alloc's path).
  bool get_free_block(AllocParams& p) {
    if (gc_enabled()) ledger_.free_block_searched(*p.pool);
    p.block = best_cached_block(*p.pool, p.stream, p.size, config_);
    p.block_in_free_set = true;
    return p.block != nullptr;
  }
  bool trigger_free_memory_callbacks(std::unique_lock<FutexMutex>& lock);
  // After a cache miss: garbage collection, a new segment, releases and retries; false: OOM.
  bool malloc_from_device(AllocParams& p);
  bool alloc_block(AllocParams& p, bool is_retry);
  // A cached block of a use_on_oom MemPool for a request of the default pools (pool_routing.cpp).
  bool try_mempool_fallback(AllocParams& p);
  const Block* hand_out(const AllocParams& p, std::uint32_t owner);
  // (Inline: the cached free's path.) A block used on other streams waits for their work:
  // out of line, as is the return of memory with caching off.
  void free_block(const Block* block, CallContext ctx) {
    if (!block->stream_uses.empty()) return free_used_block(block, ctx);
    ledger_.free_requested(block, 0, ctx);
    if (!caching_enabled_) release_uncached(block, ctx);
  }
  // Events on the streams the block was used on (recording them is the one step that can
  // fail; it comes before any change), or during a graph capture, a wait for its end.
  void free_used_block(const Block* block, CallContext ctx);
  void release_uncached(const Block* block, CallContext ctx);
  [[noreturn]] void throw_oom(const AllocParams& p, std::unique_lock<FutexMutex>& lock);
  // --- releasing memory (release.cpp) ---
  struct AvailableRelease {
    std::vector<const Block*> blocks;  // in the order they are released
    bool enough = false;               // the request is retried after them
  };
  AvailableRelease available_cached_blocks(const AllocParams& p) const;
  bool release_available_cached_blocks(const AllocParams& p);
  void release_cached_blocks();
  void release_free_blocks(const BlockPool& pool);
  void release_segment(const Block* block);
  void garbage_collect_cached_blocks();
  bool gc_enabled() const { return fraction_set_ && config_.garbage_collection_threshold > 0.0; }
  // Reserved bytes above which garbage collection frees cached blocks.
  Bytes gc_threshold_bytes() const {
    return static_cast<Bytes>(config_.garbage_collection_threshold * static_cast<double>(allowed_memory_maximum_));
  }
  // Whether the memory fraction refuses `alloc_size` more bytes of segments.
  bool over_memory_fraction(Bytes alloc_size) const {
    return fraction_set_ && total_reserved() + alloc_size > allowed_memory_maximum_;
  }
  // Frees whose events completed become free (inline: every malloc asks; the common answer
  // is "nothing pending"). Nothing during a capture: an event query would invalidate it.
  void process_events() {
    if (routing_.capture_work) {
      if (!routing_.captures.empty()) return;
      if (!routing_.deferred.empty()) insert_deferred_events();
    }
    if (events_.pending() != 0) process_completed_events();
  }
  void process_completed_events();
  // After a block's free completed (at once or when its events did): with caching off, its
  // memory goes back to the device when it is a whole segment (or mapped pages).
  void release_if_uncached(const Block* block);
  void free_completed(const Block* block);
  void synchronize_and_free_events();
  // Frees the size bins of destroyed streams once they hold no block.
  void drop_dead_stream_bins();
  // Waits for a live stream's work and forgets it (destroying it too when `destroy`); the
  // caller holds the lock. Throws DeviceError when the device refuses, changing nothing.
  void forget_stream_locked(StreamId stream, bool destroy);
  // free()'s error for a pointer that is not a live allocation: a double free, an interior
  // pointer, or a foreign one, said as such. The caller holds the lock.
  [[noreturn]] void throw_not_allocated(DevicePtr ptr) const;
  // --- expandable segments (expandable_segments.cpp) ---
  bool use_expandable() const { return config_.expandable_segments && caching_enabled_ && device_.vmm_granularity() != 0; }
  const Block* find_expandable_block(const AllocParams& p);
  bool map_block(const Block* to_map, Bytes size, const AllocParams& p);
  const Block* try_allocate_expandable_block(const AllocParams& p);
  void unmap_block(const Block* block);
  void release_expandable_segment(const Block* block);
  // --- captures (captures.cpp) ---
  // free_used_block while capture bookkeeping exists: forgets the block's capture-time stream
  // uses, and during a capture defers the free (true: done).
  bool free_during_capture(const Block* block, CallContext ctx);
  // A destroyed stream leaves the capture uses too (each entry stays inside its block's uses).
  void forget_capture_uses_of(StreamId stream);
  // record_stream's bookkeeping during a capture (the use is dropped when the free's events
  // are finally recorded: the capture's streams run only inside the graph).
  void note_capture_stream_use(const Block* block, StreamId stream);
  // The block's memory waits, when freed, for the work queued on `stream` so far.
  void stream_used(const Block* block, StreamId stream) {
    ledger_.stream_used(block, stream);
    if (!routing_.captures.empty()) note_capture_stream_use(block, stream);
  }
  // After the last capture ended: records the deferred frees' events.
  void insert_deferred_events();
  // ERR_CCA_CAPTURE_UNSUPPORTED for `what` while a capture is routed here.
  void refuse_during_capture(const char* what) const;
  // --- routing to MemPools and captures (pool_routing.cpp) ---
  const PrivatePool* routed_pool(StreamId stream) const;
  const PrivatePool& private_pool(std::uint32_t pool) const;  // throws for an unknown id
  const PrivatePool& live_pool(std::uint32_t pool) const;     // and for a released one
  void release_freeable_pools();

  Bytes total_reserved() const { return ledger_.reserved_bytes(); }
  // In CCA_DEBUG >= 3 builds, runs the validator and aborts on a broken invariant.
  void check_after_operation() const {
    if (CCA_VALIDATE_EVERY_OPERATION) {
      const std::string problem = ledger_.validate(events_.pending() + routing_.deferred.size());
      if (!problem.empty()) CCA_FAIL(problem.c_str());
    }
  }

  Device& device_;
  mutable FutexMutex mu_;
  Ledger ledger_;
  AllocatorConfig config_;
  bool caching_enabled_ = true;
  // The call whose work releases segments (its label and stack go on their segment_free
  // entries), set for the length of that call (a ScopedValue).
  CallContext release_ctx_{};
  StreamEvents events_;
  std::unordered_set<StreamId> streams_;  // live streams created or adopted here (0 is always live)
  mutable StreamId last_live_stream_ = 0;  // check_stream's memo: 0, or a member of streams_
  std::unordered_map<StreamId, int> adopted_;  // adopted streams and their adopt counts
  IpcMappings ipc_;  // other processes' memory mapped here (facets/ipc.h)
  bool fraction_set_ = false;
  double fraction_ = 1.0;
  Bytes allowed_memory_maximum_ = 0;
  PoolRouting routing_;  // MemPool routes and captures (pool_routing.h)
  std::uint32_t trace_subscriber_ = 0;           // the owner whose onTrace holds the queue (facets/live_traces.h)
  std::vector<std::function<bool()>> free_memory_callbacks_;
  std::vector<std::function<void(const OutOfMemoryInfo&)>> oom_observers_;
};

}  // namespace cca
