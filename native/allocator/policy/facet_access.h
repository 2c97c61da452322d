// The door the allocator's facets go through. A facet is a feature built around
// DeviceCachingAllocator rather than inside it, as rmm composes adaptors around a small
// resource contract: replay's planning (facets/replay_planner.h), native clients' calls
// (facets/client_calls.h), CUDA IPC (facets/ipc.h), the ledger's locked reads
// (facets/ledger_reads.h), lookups of an address (facets/address_lookups.h), device work
// over buffers (facets/device_work.h), the copies that wait (facets/sync_copies.h), MemPools'
// and graph capture's calls (facets/mem_pools.h, facets/graph_captures.h) and live trace
// events (facets/live_traces.h). Each
// uses only what this class offers: the allocator's lock, its ledger and device, and a few
// of its own steps named in the allocator's words. The class a newcomer reads to understand
// allocation (caching_allocator.h) declares none of them; this header lists everything they
// touch.
#pragma once
#include <cstdint>
#include <mutex>
#include <vector>

#include "caching_allocator.h"

namespace cca {

class FacetAccess {
 public:
  static std::unique_lock<FutexMutex> lock(const DeviceCachingAllocator& a) { return std::unique_lock<FutexMutex>(a.mu_); }
  // The same mutex, for a std::lock_guard where no unlock mid-way is needed (no owns flag to
  // keep: the metrics sample's path counts its instructions).
  static FutexMutex& mutex(const DeviceCachingAllocator& a) { return a.mu_; }
  static Ledger& ledger(DeviceCachingAllocator& a) { return a.ledger_; }
  static const Ledger& ledger(const DeviceCachingAllocator& a) { return a.ledger_; }
  static Device& device(const DeviceCachingAllocator& a) { return a.device_; }
  static const AllocatorConfig& config(const DeviceCachingAllocator& a) { return a.config_; }
  static IpcMappings& ipc(DeviceCachingAllocator& a) { return a.ipc_; }
  static PoolRouting& routing(DeviceCachingAllocator& a) { return a.routing_; }
  static const PoolRouting& routing(const DeviceCachingAllocator& a) { return a.routing_; }
  static bool caching_on(const DeviceCachingAllocator& a) { return a.caching_enabled_; }
  // A MemPool by id: private_pool throws for an unknown one, live_pool for a released one too.
  static const PrivatePool& private_pool(const DeviceCachingAllocator& a, std::uint32_t pool) { return a.private_pool(pool); }
  static const PrivatePool& live_pool(const DeviceCachingAllocator& a, std::uint32_t pool) { return a.live_pool(pool); }
  // Released pools give back their cached segments; an empty one is erased.
  static void release_freeable_pools(DeviceCachingAllocator& a) { a.release_freeable_pools(); }
  static std::uint32_t& trace_subscriber(DeviceCachingAllocator& a) { return a.trace_subscriber_; }
  // Throws unless `stream` is 0 or live on the allocator.
  static void check_stream(const DeviceCachingAllocator& a, StreamId stream) { a.check_stream(stream); }
  // MemPool `pool`'s small or large pool (0: the default pools); throws for an unknown pool.
  static const BlockPool& pool(const DeviceCachingAllocator& a, std::uint32_t pool, bool small) {
    return a.pool_of(pool == 0 ? nullptr : &a.private_pool(pool), small);
  }
  // free()'s steps for a block already found: its error for a pointer that is no live
  // allocation, and the free itself.
  [[noreturn]] static void throw_not_allocated(const DeviceCachingAllocator& a, DevicePtr ptr) { a.throw_not_allocated(ptr); }
  static void free_block(DeviceCachingAllocator& a, const Block* block, CallContext ctx) { a.free_block(block, ctx); }
  // Checks that [base + offset, + bytes) lies in a live allocation (or in memory mapped from
  // another process); returns the stream work on it runs on. Throws naming `what`.
  static StreamId live_range(const DeviceCachingAllocator& a, DevicePtr base, std::uint64_t offset, std::uint64_t bytes,
                             const char* what);
  // The block's memory waits, when freed, for the work queued on `stream` so far.
  static void stream_used(DeviceCachingAllocator& a, const Block* block, StreamId stream) { a.stream_used(block, stream); }
  // ERR_CCA_CAPTURE_UNSUPPORTED for `what` while a capture is routed on the allocator.
  static void refuse_during_capture(const DeviceCachingAllocator& a, const char* what) { a.refuse_during_capture(what); }
  // A wholly free segment given back to the device.
  static void release_segment(DeviceCachingAllocator& a, const Block* block) { a.release_segment(block); }
  // The OutOfMemoryError of a request for a `size`-byte segment of `pool` on `stream`.
  [[noreturn]] static void throw_segment_oom(DeviceCachingAllocator& a, Bytes size, StreamId stream, const BlockPool& pool,
                                             std::unique_lock<FutexMutex>& lock);
  static void check_after_operation(const DeviceCachingAllocator& a) { a.check_after_operation(); }

  static bool fraction_set(const DeviceCachingAllocator& a) { return a.fraction_set_; }
  // What malloc's chain would decide after a cache miss (the caller holds the lock).
  struct MissOutcome {
    // With a memory fraction set: it gives memory back before the device is asked (garbage
    // collection due, or the fraction refusing the new segment).
    bool limit_releases = false;
    // With max_split_size: the cached oversize segments it would release had the device
    // malloc failed, and whether it would then retry.
    std::vector<Bytes> oversize_sizes;
    bool oversize_retries = false;
  };
  // The request malloc would make of `size` bytes on `stream` in `pool`: rounded, its pool,
  // and the best cached block for it (nullptr: a miss), then what the miss would do.
  static const Block* cached_block_for(const DeviceCachingAllocator& a, std::uint64_t size, StreamId stream, std::uint32_t pool);
  static MissOutcome miss_outcome(const DeviceCachingAllocator& a, std::uint64_t size, StreamId stream, std::uint32_t pool);

 private:
  // A request as malloc would make it: rounded, in `pool` or the default pools.
  static DeviceCachingAllocator::AllocParams request_for(const DeviceCachingAllocator& a, std::uint64_t size, StreamId stream,
                                                         std::uint32_t pool);
};

}  // namespace cca
