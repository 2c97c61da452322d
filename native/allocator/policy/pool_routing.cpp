// Where requests go besides the default pools (pool_routing.h): a capture's or a thread's
// MemPool, a use_on_oom pool's cached blocks before an out-of-memory error, and the release
// of pools no one uses.
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

std::uint32_t take_pool_id() { return g_next_pool_id.fetch_add(1); }
std::uint32_t peek_pool_id() { return g_next_pool_id.load(); }

const PrivatePool& DeviceCachingAllocator::private_pool(std::uint32_t pool) const {
  const PrivatePool* p = ledger_.private_pool(pool);
  if (p == nullptr) throw unknown_pool(pool, device_.index());
  return *p;
}

const PrivatePool& DeviceCachingAllocator::live_pool(std::uint32_t pool) const {
  const PrivatePool& p = private_pool(pool);
  if (p.use_count <= 0) throw unknown_pool(pool, device_.index());
  return p;
}

// A capture's pool first: memory a graph's work names must never be handed to work outside
// the graph, even inside use_mem_pool (PyTorch tries the newest route first, whatever kind).
const PrivatePool* DeviceCachingAllocator::routed_pool(StreamId stream) const {
  if (!routing_.captures.empty() && routing_.capture_routing) {
    Device::CaptureInfo info;
    const Status s = device_.stream_capture_info(stream, &info);
    if (s != Status::kOk) throw device_error(device_, "cudaStreamGetCaptureInfo", s);
    if (info.active) {
      for (auto it = routing_.captures.rbegin(); it != routing_.captures.rend(); ++it) {
        if (it->first == info.id && info.id != 0) return ledger_.private_pool(it->second);
      }
    }
  }
  const std::thread::id self = std::this_thread::get_id();
  for (auto it = routing_.routes.rbegin(); it != routing_.routes.rend(); ++it) {
    if (it->first == self) return ledger_.private_pool(it->second);
  }
  return nullptr;
}

// PyTorch's try_mempool_fallback: only a cached block will do (no new segment), on the
// request's stream; a request already routed to a MemPool gets none.
bool DeviceCachingAllocator::try_mempool_fallback(AllocParams& p) {
  if (p.pool->pool_id != 0 || !caching_enabled_) return false;
  for (std::uint32_t id : routing_.use_on_oom) {
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
