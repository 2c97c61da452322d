// MemPools' calls on one device's allocator (PyTorch's torch.cuda.MemPool and use_mem_pool
// over createOrIncrefPool / beginAllocateToPool), a facet (facet_access.h): they create
// private pools and set the routing (pool_routing.h) that the allocator's requests follow.
#pragma once
#include <cstdint>

#include "../caching_allocator.h"

namespace cca {

class MemPools {
 public:
  explicit MemPools(DeviceCachingAllocator& allocator) : a_(allocator) {}

  // Creates a private pool; returns its id n (the MemPool id is (0, n)). use_count 1. With
  // no_split its blocks are never split (a request takes a whole cached block or segment).
  std::uint32_t create_pool(bool no_split = false);
  // use_on_oom: before an out-of-memory error (after a device malloc failed, before the
  // cache is released), a request not routed to a MemPool may take a cached block of this
  // pool (PyTorch's try_mempool_fallback). Pools are tried in the order they were marked.
  void set_use_on_oom(std::uint32_t pool, bool use);
  // Routes the calling thread's allocations to the pool until end_allocate_to_pool
  // (nested routes: the newest wins). Each begin adds a use; each end removes it.
  void begin_allocate_to_pool(std::uint32_t pool);
  void end_allocate_to_pool(std::uint32_t pool);
  // Drops the MemPool's own use; at use_count 0 its cached memory is released (now, and by
  // later empty_cache calls) and the pool is erased once it holds no segment.
  void release_pool(std::uint32_t pool);
  int pool_use_count(std::uint32_t pool) const;
  bool pool_exists(std::uint32_t pool) const;

 private:
  DeviceCachingAllocator& a_;
};

}  // namespace cca
