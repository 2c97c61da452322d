// MemPools: private pools of one device's allocator, and per-thread routing into them
// (PyTorch's use_mem_pool / beginAllocateToPool).
#include <atomic>
#include <string>

#include "caching_allocator.h"

namespace cca {

namespace {
// MemPool ids (0, n) are unique in the process, as PyTorch's counter makes them.
std::atomic<std::uint32_t> g_next_pool_id{1};

InvalidArgumentError unknown_pool(std::uint32_t pool, int device) {
  return InvalidArgumentError("MemPool (0, " + std::to_string(pool) + ") does not exist on device " +
                                  std::to_string(device) + " (released, or created on another device)",
                              "ERR_CCA_INVALID_POOL");
}
}  // namespace

PrivatePool& DeviceCachingAllocator::private_pool(std::uint32_t pool) const {
  auto it = pools_.find(pool);
  if (it == pools_.end()) throw unknown_pool(pool, device_.index());
  return *it->second;
}

PrivatePool* DeviceCachingAllocator::routed_pool() const {
  const std::thread::id self = std::this_thread::get_id();
  for (auto it = routes_.rbegin(); it != routes_.rend(); ++it) {
    if (it->first == self) return pools_.at(it->second).get();
  }
  return nullptr;
}

std::uint32_t DeviceCachingAllocator::create_pool() {
  std::lock_guard<std::mutex> lock(mu_);
  const std::uint32_t id = g_next_pool_id.fetch_add(1);
  pools_.emplace(id, std::make_unique<PrivatePool>(id));
  return id;
}

void DeviceCachingAllocator::begin_allocate_to_pool(std::uint32_t pool) {
  std::lock_guard<std::mutex> lock(mu_);
  PrivatePool& p = private_pool(pool);
  if (p.use_count <= 0) throw unknown_pool(pool, device_.index());
  ++p.use_count;
  routes_.emplace_back(std::this_thread::get_id(), pool);
}

void DeviceCachingAllocator::end_allocate_to_pool(std::uint32_t pool) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::thread::id self = std::this_thread::get_id();
  for (auto it = routes_.rbegin(); it != routes_.rend(); ++it) {
    if (it->first == self && it->second == pool) {
      routes_.erase(std::next(it).base());
      --private_pool(pool).use_count;
      release_freeable_pools();
      return;
    }
  }
  throw InvalidArgumentError("this thread is not allocating to MemPool (0, " + std::to_string(pool) + ")",
                             "ERR_CCA_INVALID_POOL");
}

void DeviceCachingAllocator::release_pool(std::uint32_t pool) {
  std::lock_guard<std::mutex> lock(mu_);
  PrivatePool& p = private_pool(pool);
  if (p.use_count <= 0) throw unknown_pool(pool, device_.index());
  --p.use_count;
  release_freeable_pools();
  check_after_operation();
}

int DeviceCachingAllocator::pool_use_count(std::uint32_t pool) const {
  std::lock_guard<std::mutex> lock(mu_);
  return private_pool(pool).use_count;
}

bool DeviceCachingAllocator::pool_exists(std::uint32_t pool) const {
  std::lock_guard<std::mutex> lock(mu_);
  return pools_.count(pool) > 0;
}

// Released pools (use_count 0) give back their cached segments; a pool with no segment
// left is erased. Live allocations keep their segments until freed.
void DeviceCachingAllocator::release_freeable_pools() {
  for (auto it = pools_.begin(); it != pools_.end();) {
    PrivatePool& p = *it->second;
    if (p.use_count <= 0) {
      release_free_blocks(p.large);
      release_free_blocks(p.small);
    }
    if (p.use_count <= 0 && p.segment_count == 0) {
      it = pools_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace cca
