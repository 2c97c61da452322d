// The door's steps that compose the allocator's own (facet_access.h).
#include "facet_access.h"

#include <string>

#include "../../common/message_format.h"

namespace cca {

void FacetAccess::throw_segment_oom(DeviceCachingAllocator& a, Bytes size, StreamId stream, const BlockPool& pool,
                                    std::unique_lock<FutexMutex>& lock) {
  DeviceCachingAllocator::AllocParams p;
  p.requested = size;
  p.size = size;
  p.alloc_size = size;
  p.stream = stream;
  p.pool = &pool;
  a.throw_oom(p, lock);
}

StreamId FacetAccess::live_range(const DeviceCachingAllocator& a, DevicePtr base, std::uint64_t offset,
                                 std::uint64_t bytes, const char* what) {
  const Block* b = base == 0 ? nullptr : a.ledger_.find_allocated(base);
  std::uint64_t size = 0;
  StreamId stream = 0;
  if (b != nullptr && b->state == BlockState::kAllocated) {
    size = b->requested_size;
    stream = b->stream;
  } else if (base != 0 && a.ipc_.imported(base, &size)) {
    // another process's memory, mapped here: the default stream's
  } else {
    throw InvalidPointerError(std::string(what) + ": " + hex(base) + " is not a live allocation on device " +
                              std::to_string(a.device_.index()) +
                              " (freed already, or not from this allocator); use a buffer from cuda.alloc()");
  }
  // requested_size is what the caller asked for: the rounding beyond it is not theirs.
  if (offset > size || bytes > size - offset) {
    throw InvalidArgumentError(std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                                   std::to_string(offset) + " lie outside the allocation at " + hex(base) + " of " +
                                   std::to_string(size) + " bytes; stay within the buffer's size",
                               "ERR_CCA_OUT_OF_BOUNDS");
  }
  return stream;
}

DeviceCachingAllocator::AllocParams FacetAccess::request_for(const DeviceCachingAllocator& a, std::uint64_t size,
                                                             StreamId stream, std::uint32_t pool) {
  DeviceCachingAllocator::AllocParams p;
  p.requested = size;
  p.size = round_size(static_cast<Bytes>(size), a.config_);
  p.stream = stream;
  p.pool = &FacetAccess::pool(a, pool, is_small_request(p.size));
  p.alloc_size = allocation_size(p.size, a.config_);
  return p;
}

const Block* FacetAccess::cached_block_for(const DeviceCachingAllocator& a, std::uint64_t size, StreamId stream,
                                           std::uint32_t pool) {
  const DeviceCachingAllocator::AllocParams p = request_for(a, size, stream, pool);
  return best_cached_block(*p.pool, p.stream, p.size, a.config_);
}

FacetAccess::MissOutcome FacetAccess::miss_outcome(const DeviceCachingAllocator& a, std::uint64_t size, StreamId stream,
                                                   std::uint32_t pool) {
  MissOutcome out;
  const DeviceCachingAllocator::AllocParams p = request_for(a, size, stream, pool);
  if (a.fraction_set_) {
    bool collectable = false;
    for (const Block* b : a.ledger_.default_pool(false).in_order()) collectable |= !b->is_split() && !b->expandable;
    const bool collects = a.gc_enabled() && a.total_reserved() > a.gc_threshold_bytes() && collectable;
    out.limit_releases = collects || a.over_memory_fraction(p.alloc_size);
  }
  const DeviceCachingAllocator::AvailableRelease r = a.available_cached_blocks(p);
  for (const Block* b : r.blocks) out.oversize_sizes.push_back(b->size);
  out.oversize_retries = r.enough;
  return out;
}

}  // namespace cca
