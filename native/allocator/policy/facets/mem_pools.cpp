// MemPools' calls (mem_pools.h).
#include "mem_pools.h"

#include <algorithm>
#include <string>
#include <thread>

#include "../facet_access.h"

namespace cca {

std::uint32_t MemPools::create_pool(bool no_split) {
  const auto lock = FacetAccess::lock(a_);
  const std::uint32_t id = take_pool_id();
  FacetAccess::ledger(a_).pool_created(id, no_split);
  return id;
}

void MemPools::set_use_on_oom(std::uint32_t pool, bool use) {
  const auto lock = FacetAccess::lock(a_);
  FacetAccess::live_pool(a_, pool);
  std::vector<std::uint32_t>& marked = FacetAccess::routing(a_).use_on_oom;
  auto it = std::find(marked.begin(), marked.end(), pool);
  if (use && it == marked.end()) marked.push_back(pool);
  if (!use && it != marked.end()) marked.erase(it);
}

void MemPools::begin_allocate_to_pool(std::uint32_t pool) {
  const auto lock = FacetAccess::lock(a_);
  FacetAccess::live_pool(a_, pool);
  FacetAccess::ledger(a_).pool_use_changed(pool, +1);
  PoolRouting& routing = FacetAccess::routing(a_);
  routing.routes.emplace_back(std::this_thread::get_id(), pool);
  routing.update_flags();
}

void MemPools::end_allocate_to_pool(std::uint32_t pool) {
  const auto lock = FacetAccess::lock(a_);
  PoolRouting& routing = FacetAccess::routing(a_);
  const std::thread::id self = std::this_thread::get_id();
  for (auto it = routing.routes.rbegin(); it != routing.routes.rend(); ++it) {
    if (it->first == self && it->second == pool) {
      routing.routes.erase(std::next(it).base());
      routing.update_flags();
      FacetAccess::ledger(a_).pool_use_changed(pool, -1);
      FacetAccess::release_freeable_pools(a_);
      return;
    }
  }
  throw InvalidArgumentError("this thread is not allocating to MemPool " + pool_name(pool), "ERR_CCA_INVALID_POOL");
}

void MemPools::release_pool(std::uint32_t pool) {
  const auto lock = FacetAccess::lock(a_);
  FacetAccess::live_pool(a_, pool);
  // As PyTorch's MemPool destructor: a released pool is no fallback any more.
  std::vector<std::uint32_t>& marked = FacetAccess::routing(a_).use_on_oom;
  marked.erase(std::remove(marked.begin(), marked.end(), pool), marked.end());
  FacetAccess::ledger(a_).pool_use_changed(pool, -1);
  FacetAccess::release_freeable_pools(a_);
  FacetAccess::check_after_operation(a_);
}

int MemPools::pool_use_count(std::uint32_t pool) const {
  const auto lock = FacetAccess::lock(a_);
  return FacetAccess::private_pool(a_, pool).use_count;
}

bool MemPools::pool_exists(std::uint32_t pool) const {
  const auto lock = FacetAccess::lock(a_);
  return FacetAccess::ledger(a_).private_pool(pool) != nullptr;
}

}  // namespace cca
