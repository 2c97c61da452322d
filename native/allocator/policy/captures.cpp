// CUDA graph capture: the allocator's side of it.
//
// Note [Allocating under graph capture]
// A captured graph replays its kernels on the addresses they had during capture, every time
// it is launched, long after the capture ended. So memory that a capture's work touched
// belongs to the graph until the graph is destroyed. PyTorch's design
// (c10/cuda/CUDACachingAllocator.cpp, Note [Interaction with CUDA graph capture]), kept here:
// 1. Private pools. Between begin_allocate_to_capture and end_allocate_to_capture, a request
//    on any stream of the capture (the device says which capture a stream is in, so a side
//    stream forked into it with an event counts) is served from the capture's private pool,
//    never from the default pools, and a block freed during the capture goes back to that
//    pool. Inside the pool it is reused by later requests of the same capture (their order
//    is the graph's order), and by other graphs sharing the pool, which must then never run
//    at the same time. Eager work never gets such a block: a replay would overwrite it
//    (the corruption CuPy's pool has: cupy#9655).
// 2. The pool lives while a graph uses it: the capture adds a use, which the graph gives
//    back when destroyed (release_pool); then its cached segments go back to the device now
//    and at later empty_cache()/OOM releases, and the pool is erased with its last segment.
// 3. No event work during a capture. Recording or querying an event while a stream is
//    captured invalidates the capture (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, or _INVALIDATED
//    / _CAPTURED_EVENT for an event recorded inside it). So while any capture is underway
//    here, a free that must wait for other streams (record_stream, a launch on another
//    stream) is deferred: its block waits in deferred_ (counted as one outstanding event, so
//    the validator still balances) until the next process_events with no capture underway,
//    which records its events then. Streams recorded on during the capture are dropped from
//    it first: their captured work runs only inside the graph. process_events does nothing
//    during a capture; empty_cache, synchronizations and the OOM path's release of the
//    whole cache are refused or skipped, since each synchronizes.
// 4. A device malloc during a capture is allowed: the cuda backend runs it in relaxed
//    capture mode so it cannot invalidate a global-mode capture.
#include <algorithm>
#include <atomic>
#include <string>

#include "caching_allocator.h"
#include "../../common/message_format.h"

namespace cca {

namespace {
std::string pool_name(std::uint32_t pool) { return "(0, " + std::to_string(pool) + ")"; }
}  // namespace

void DeviceCachingAllocator::update_routing_flags() {
  routed_ = !routes_.empty() || !captures_.empty();
  capture_work_ = !captures_.empty() || !deferred_.empty() || !capture_uses_.empty();
}

void DeviceCachingAllocator::refuse_during_capture(const char* what) const {
  if (captures_.empty()) return;
  std::string ids;
  for (const auto& [id, pool] : captures_) {
    ids += (ids.empty() ? "" : ", ") + std::to_string(id) + " (pool " + pool_name(pool) + ")";
  }
  throw AllocatorError("ERR_CCA_CAPTURE_UNSUPPORTED",
                       std::string(what) + " is not allowed while a CUDA graph is being captured on device " +
                           std::to_string(device_.index()) + " (capture " + ids +
                           "): it would synchronize or query the device, which invalidates the capture. "
                           "Call it before the capture begins or after it ends.");
}

std::uint32_t DeviceCachingAllocator::reserve_pool_id() { return next_pool_id(); }

void DeviceCachingAllocator::begin_allocate_to_capture(std::uint32_t pool, std::uint64_t capture_id) {
  std::lock_guard<FutexMutex> lock(mu_);
  if (!caching_enabled_) {
    throw AllocatorError("ERR_CCA_CAPTURE_UNSUPPORTED",
                         "a CUDA graph cannot be captured while caching is off on device " +
                             std::to_string(device_.index()) +
                             " (each free would return memory the graph still names); turn caching on "
                             "(memory.caching_allocator_enable(true)) before capturing");
  }
  for (const auto& [id, p] : captures_) {
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
  const PrivatePool* existing = ledger_.private_pool(pool);
  if (existing != nullptr && existing->use_count <= 0) {
    throw InvalidArgumentError("pool " + pool_name(pool) + " was released; a capture needs a live pool",
                               "ERR_CCA_INVALID_POOL");
  }
  if (existing == nullptr) {
    if (pool == 0 || pool >= peek_next_pool_id()) {
      throw InvalidArgumentError("pool " + pool_name(pool) + " was never made (use a graph pool handle or a MemPool)",
                                 "ERR_CCA_INVALID_POOL");
    }
    ledger_.pool_created(pool, false);  // use 1: this capture's
  } else {
    ledger_.pool_use_changed(pool, +1);
  }
  captures_.emplace_back(capture_id, pool);
  update_routing_flags();
}

void DeviceCachingAllocator::capture_started(std::uint32_t pool, std::uint64_t capture_id) {
  std::lock_guard<FutexMutex> lock(mu_);
  for (auto& [id, p] : captures_) {
    if (p == pool && id == 0) {
      id = capture_id;
      return;
    }
  }
  throw InvalidArgumentError("pool " + pool_name(pool) + " has no capture waiting for its id", "ERR_CCA_INVALID_POOL");
}

void DeviceCachingAllocator::end_allocate_to_capture(std::uint32_t pool, std::uint64_t capture_id) {
  std::lock_guard<FutexMutex> lock(mu_);
  auto it = std::find(captures_.begin(), captures_.end(), std::make_pair(capture_id, pool));
  if (it == captures_.end()) {
    throw InvalidArgumentError("capture " + std::to_string(capture_id) + " is not allocating to pool " +
                                   pool_name(pool),
                               "ERR_CCA_INVALID_POOL");
  }
  captures_.erase(it);
  update_routing_flags();
  check_after_operation();
}

bool DeviceCachingAllocator::capture_underway() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return !captures_.empty();
}

void DeviceCachingAllocator::refuse_if_capturing(const char* what) const {
  std::lock_guard<FutexMutex> lock(mu_);
  refuse_during_capture(what);
}

Bytes DeviceCachingAllocator::frees_deferred_by_capture() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return deferred_.size();
}

void DeviceCachingAllocator::set_capture_routing_for_tests(bool route) {
  std::lock_guard<FutexMutex> lock(mu_);
  capture_routing_ = route;
}

void DeviceCachingAllocator::note_capture_stream_use(const Block* block, StreamId stream) {
  auto& uses = capture_uses_[block];
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
  update_routing_flags();
}

void DeviceCachingAllocator::forget_capture_uses_of(StreamId stream) {
  for (auto it = capture_uses_.begin(); it != capture_uses_.end();) {
    auto& uses = it->second;
    uses.erase(std::remove(uses.begin(), uses.end(), stream), uses.end());
    it = uses.empty() ? capture_uses_.erase(it) : std::next(it);
  }
  update_routing_flags();
}

bool DeviceCachingAllocator::free_during_capture(const Block* block, CallContext ctx) {
  std::vector<StreamId> captured;
  if (!capture_uses_.empty()) {
    auto it = capture_uses_.find(block);
    if (it != capture_uses_.end()) {
      captured = std::move(it->second);
      capture_uses_.erase(it);
    }
  }
  bool deferred = false;
  if (!captures_.empty() && !block->stream_uses.empty()) {
    // PyTorch's needs_events_deferred_until_no_capture: the events are recorded after the
    // capture, on the streams that were not the capture's.
    std::vector<StreamId> uses;
    for (StreamId s : block->stream_uses) {
      if (std::find(captured.begin(), captured.end(), s) == captured.end()) uses.push_back(s);
    }
    deferred_.push_back(DeferredFree{block, std::move(uses)});
    ledger_.free_requested(block, 1, ctx);  // the one "event": the capture's end
    deferred = true;
  }
  update_routing_flags();
  return deferred;
}

void DeviceCachingAllocator::insert_deferred_events() {
  while (!deferred_.empty()) {
    DeferredFree& d = deferred_.back();
    // Streams destroyed since were waited for then: no event on them.
    std::vector<StreamId> uses;
    for (StreamId s : d.uses) {
      if (s == 0 || streams_.count(s) != 0) uses.push_back(s);
    }
    const int events = uses.empty() ? 0 : events_.record(d.block, uses);  // throws with nothing queued
    const Block* block = d.block;
    deferred_.pop_back();
    ledger_.deferred_events_recorded(block, events);
    if (!caching_enabled_ && events == 0) release_if_uncached(block);
  }
  update_routing_flags();
}

}  // namespace cca
