// MemPools: private pools of one device's allocator, and per-thread routing into them
// (PyTorch's use_mem_pool / beginAllocateToPool).
#include <algorithm>
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

std::uint32_t DeviceCachingAllocator::next_pool_id() { return g_next_pool_id.fetch_add(1); }
std::uint32_t DeviceCachingAllocator::peek_next_pool_id() { return g_next_pool_id.load(); }

const PrivatePool& DeviceCachingAllocator::private_pool(std::uint32_t pool) const {
  const PrivatePool* p = ledger_.private_pool(pool);
  if (p == nullptr) throw unknown_pool(pool, device_.index());
  return *p;
}

// A capture's pool first: memory a graph's work names must never be handed to work outside
// the graph, even inside use_mem_pool (PyTorch tries the newest route first, whatever kind).
const PrivatePool* DeviceCachingAllocator::routed_pool(StreamId stream) const {
  if (!captures_.empty() && capture_routing_) {
    Device::CaptureInfo info;
    const Status s = device_.stream_capture_info(stream, &info);
    if (s != Status::kOk) throw device_error(device_, "cudaStreamGetCaptureInfo", s);
    if (info.active) {
      for (auto it = captures_.rbegin(); it != captures_.rend(); ++it) {
        if (it->first == info.id && info.id != 0) return ledger_.private_pool(it->second);
      }
    }
  }
  const std::thread::id self = std::this_thread::get_id();
  for (auto it = routes_.rbegin(); it != routes_.rend(); ++it) {
    if (it->first == self) return ledger_.private_pool(it->second);
  }
  return nullptr;
}

std::uint32_t DeviceCachingAllocator::create_pool(bool no_split) {
  std::lock_guard<FutexMutex> lock(mu_);
  const std::uint32_t id = next_pool_id();
  ledger_.pool_created(id, no_split);
  return id;
}

void DeviceCachingAllocator::set_use_on_oom(std::uint32_t pool, bool use) {
  std::lock_guard<FutexMutex> lock(mu_);
  if (private_pool(pool).use_count <= 0) throw unknown_pool(pool, device_.index());
  auto it = std::find(use_on_oom_pools_.begin(), use_on_oom_pools_.end(), pool);
  if (use && it == use_on_oom_pools_.end()) use_on_oom_pools_.push_back(pool);
  if (!use && it != use_on_oom_pools_.end()) use_on_oom_pools_.erase(it);
}

// PyTorch's try_mempool_fallback: only a cached block will do (no new segment), on the
// request's stream; a request already routed to a MemPool gets none.
bool DeviceCachingAllocator::try_mempool_fallback(AllocParams& p) {
  if (p.pool->pool_id != 0 || !caching_enabled_) return false;
  for (std::uint32_t id : use_on_oom_pools_) {
    const PrivatePool* pool = ledger_.private_pool(id);
    if (pool == nullptr) continue;
    AllocParams fallback = p;
    fallback.pool = &pool_of(pool, p.pool->is_small);
    if (get_free_block(fallback)) {
      p = fallback;
      return true;
    }
  }
  return false;
}

void DeviceCachingAllocator::begin_allocate_to_pool(std::uint32_t pool) {
  std::lock_guard<FutexMutex> lock(mu_);
  if (private_pool(pool).use_count <= 0) throw unknown_pool(pool, device_.index());
  ledger_.pool_use_changed(pool, +1);
  routes_.emplace_back(std::this_thread::get_id(), pool);
  update_routing_flags();
}

void DeviceCachingAllocator::end_allocate_to_pool(std::uint32_t pool) {
  std::lock_guard<FutexMutex> lock(mu_);
  const std::thread::id self = std::this_thread::get_id();
  for (auto it = routes_.rbegin(); it != routes_.rend(); ++it) {
    if (it->first == self && it->second == pool) {
      routes_.erase(std::next(it).base());
      update_routing_flags();
      ledger_.pool_use_changed(pool, -1);
      release_freeable_pools();
      return;
    }
  }
  throw InvalidArgumentError("this thread is not allocating to MemPool (0, " + std::to_string(pool) + ")",
                             "ERR_CCA_INVALID_POOL");
}

void DeviceCachingAllocator::release_pool(std::uint32_t pool) {
  std::lock_guard<FutexMutex> lock(mu_);
  if (private_pool(pool).use_count <= 0) throw unknown_pool(pool, device_.index());
  // As PyTorch's MemPool destructor: a released pool is no fallback any more.
  use_on_oom_pools_.erase(std::remove(use_on_oom_pools_.begin(), use_on_oom_pools_.end(), pool), use_on_oom_pools_.end());
  ledger_.pool_use_changed(pool, -1);
  release_freeable_pools();
  check_after_operation();
}

int DeviceCachingAllocator::pool_use_count(std::uint32_t pool) const {
  std::lock_guard<FutexMutex> lock(mu_);
  return private_pool(pool).use_count;
}

bool DeviceCachingAllocator::pool_exists(std::uint32_t pool) const {
  std::lock_guard<FutexMutex> lock(mu_);
  return ledger_.private_pool(pool) != nullptr;
}

// Released pools (use_count 0) give back their cached segments; a pool with no segment
// left is erased. Live allocations keep their segments until freed.
void DeviceCachingAllocator::release_freeable_pools() {
  std::vector<std::uint32_t> released;
  ledger_.for_each_private_pool([&released](const PrivatePool& p) {
    if (p.use_count <= 0) released.push_back(p.id);
  });
  for (std::uint32_t id : released) {
    const PrivatePool& p = *ledger_.private_pool(id);
    release_free_blocks(p.large);
    release_free_blocks(p.small);
    if (p.segment_count == 0) ledger_.pool_erased(id);
  }
}

}  // namespace cca
