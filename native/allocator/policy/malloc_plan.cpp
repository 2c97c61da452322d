// Replay's dry run of malloc's chain (caching_allocator.cpp): each step asks what the real
// one would decide, in its order, and stops where it would stop; nothing changes. Kept apart
// so the chain's code stays the allocator's alone and replay's question is one call.
#include "caching_allocator.h"

namespace cca {

DeviceCachingAllocator::AllocParams DeviceCachingAllocator::request_for(std::uint64_t size, StreamId stream,
                                                                       std::uint32_t pool) const {
  AllocParams p;
  p.requested = size;
  p.size = round_size(static_cast<Bytes>(size), config_);
  p.stream = stream;
  p.pool = &pool_of(pool == 0 ? nullptr : &private_pool(pool), is_small_request(p.size));
  p.alloc_size = allocation_size(p.size, config_);
  return p;
}

DeviceCachingAllocator::MallocPlan DeviceCachingAllocator::plan_malloc(std::uint64_t size, StreamId stream,
                                                                      std::uint32_t pool) const {
  MallocPlan plan;
  std::lock_guard<FutexMutex> lock(mu_);
  check_stream(stream);
  plan.limited = fraction_set_;
  if (size == 0 || size >= kOneExaByte) return plan;
  const AllocParams p = request_for(size, stream, pool);
  // get_free_block: a cached block ends the chain.
  if (const Block* b = best_cached_block(*p.pool, p.stream, p.size, config_)) {
    plan.cached = MallocPlan::Cached{b->ptr, b->size};
    return plan;
  }
  // Under a memory fraction: garbage collection, or the fraction refusing a new segment,
  // gives memory back before the device is asked.
  if (fraction_set_) {
    bool collectable = false;
    for (const Block* b : ledger_.default_pool(false).in_order()) collectable |= !b->is_split() && !b->expandable;
    const bool collects = gc_enabled() && total_reserved() > gc_threshold_bytes() && collectable;
    plan.limit_releases = collects || over_memory_fraction(p.alloc_size);
  }
  // With max_split_size: the oversize segments released before the retry, had the device
  // malloc failed.
  const AvailableRelease r = available_cached_blocks(p);
  for (const Block* b : r.blocks) plan.oversize_sizes.push_back(b->size);
  plan.oversize_retries = r.enough;
  return plan;
}

}  // namespace cca
