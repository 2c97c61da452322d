// CUDA graph capture's calls (graph_captures.h).
#include "graph_captures.h"

#include <algorithm>
#include <string>

#include "../facet_access.h"

namespace cca {

std::uint32_t GraphCaptures::reserve_pool_id() { return take_pool_id(); }

void GraphCaptures::begin_allocate_to_capture(std::uint32_t pool, std::uint64_t capture_id) {
  const auto lock = FacetAccess::lock(a_);
  PoolRouting& routing = FacetAccess::routing(a_);
  Ledger& ledger = FacetAccess::ledger(a_);
  if (!FacetAccess::caching_on(a_)) {
    throw AllocatorError("ERR_CCA_CAPTURE_UNSUPPORTED",
                         "a CUDA graph cannot be captured while caching is off on device " +
                             std::to_string(a_.device_index()) +
                             " (each free would return memory the graph still names); turn caching on "
                             "(memory.caching_allocator_enable(true)) before capturing");
  }
  for (const auto& [id, p] : routing.captures) {
    if (p == pool) {
      throw InvalidArgumentError("pool " + pool_name(pool) + " is already allocating to capture " + std::to_string(id) +
                                     "; two captures at once need two pools",
                                 "ERR_CCA_INVALID_POOL");
    }
    if (id == capture_id && capture_id != 0) {
      throw InvalidArgumentError("capture " + std::to_string(capture_id) + " is already allocating to pool " +
                                     pool_name(p),
                                 "ERR_CCA_CAPTURE_UNSUPPORTED");
    }
  }
  const PrivatePool* existing = ledger.private_pool(pool);
  if (existing != nullptr && existing->use_count <= 0) {
    throw InvalidArgumentError("pool " + pool_name(pool) + " was released; a capture needs a live pool",
                               "ERR_CCA_INVALID_POOL");
  }
  if (existing == nullptr) {
    if (pool == 0 || pool >= peek_pool_id()) {
      throw InvalidArgumentError("pool " + pool_name(pool) + " was never made (use a graph pool handle or a MemPool)",
                                 "ERR_CCA_INVALID_POOL");
    }
    ledger.pool_created(pool, false);  // use 1: this capture's
  } else {
    ledger.pool_use_changed(pool, +1);
  }
  routing.captures.emplace_back(capture_id, pool);
  routing.update_flags();
}

void GraphCaptures::capture_started(std::uint32_t pool, std::uint64_t capture_id) {
  const auto lock = FacetAccess::lock(a_);
  PoolRouting& routing = FacetAccess::routing(a_);
  for (auto& [id, p] : routing.captures) {
    if (p == pool && id == 0) {
      id = capture_id;
      return;
    }
  }
  throw InvalidArgumentError("pool " + pool_name(pool) + " has no capture waiting for its id", "ERR_CCA_INVALID_POOL");
}

void GraphCaptures::end_allocate_to_capture(std::uint32_t pool, std::uint64_t capture_id) {
  const auto lock = FacetAccess::lock(a_);
  PoolRouting& routing = FacetAccess::routing(a_);
  auto it = std::find(routing.captures.begin(), routing.captures.end(), std::make_pair(capture_id, pool));
  if (it == routing.captures.end()) {
    throw InvalidArgumentError("capture " + std::to_string(capture_id) + " is not allocating to pool " +
                                   pool_name(pool),
                               "ERR_CCA_INVALID_POOL");
  }
  routing.captures.erase(it);
  routing.update_flags();
  FacetAccess::check_after_operation(a_);
}

bool GraphCaptures::capture_underway() const {
  const auto lock = FacetAccess::lock(a_);
  const PoolRouting& routing = FacetAccess::routing(a_);
  return !routing.captures.empty();
}

void GraphCaptures::refuse_if_capturing(const char* what) const {
  const auto lock = FacetAccess::lock(a_);
  FacetAccess::refuse_during_capture(a_, what);
}

Bytes GraphCaptures::frees_deferred_by_capture() const {
  const auto lock = FacetAccess::lock(a_);
  const PoolRouting& routing = FacetAccess::routing(a_);
  return routing.deferred.size();
}

void GraphCaptures::set_capture_routing_for_tests(bool route) {
  const auto lock = FacetAccess::lock(a_);
  PoolRouting& routing = FacetAccess::routing(a_);
  routing.capture_routing = route;
}


}  // namespace cca
