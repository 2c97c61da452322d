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
//    stream) is deferred: its block waits in the deferred frees (counted as one outstanding event, so
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

void DeviceCachingAllocator::refuse_during_capture(const char* what) const {
  if (routing_.captures.empty()) return;
  std::string ids;
  for (const auto& [id, pool] : routing_.captures) {
    ids += (ids.empty() ? "" : ", ") + std::to_string(id) + " (pool " + pool_name(pool) + ")";
  }
  throw AllocatorError("ERR_CCA_CAPTURE_UNSUPPORTED",
                       std::string(what) + " is not allowed while a CUDA graph is being captured on device " +
                           std::to_string(device_.index()) + " (capture " + ids +
                           "): it would synchronize or query the device, which invalidates the capture. "
                           "Call it before the capture begins or after it ends.");
}

void DeviceCachingAllocator::note_capture_stream_use(const Block* block, StreamId stream) {
  auto& uses = routing_.capture_uses[block];
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
  routing_.update_flags();
}

void DeviceCachingAllocator::forget_capture_uses_of(StreamId stream) {
  for (auto it = routing_.capture_uses.begin(); it != routing_.capture_uses.end();) {
    auto& uses = it->second;
    uses.erase(std::remove(uses.begin(), uses.end(), stream), uses.end());
    it = uses.empty() ? routing_.capture_uses.erase(it) : std::next(it);
  }
  routing_.update_flags();
}

bool DeviceCachingAllocator::free_during_capture(const Block* block, CallContext ctx) {
  std::vector<StreamId> captured;
  if (!routing_.capture_uses.empty()) {
    auto it = routing_.capture_uses.find(block);
    if (it != routing_.capture_uses.end()) {
      captured = std::move(it->second);
      routing_.capture_uses.erase(it);
    }
  }
  bool deferred = false;
  if (!routing_.captures.empty() && !block->stream_uses.empty()) {
    // PyTorch's needs_events_deferred_until_no_capture: the events are recorded after the
    // capture, on the streams that were not the capture's.
    std::vector<StreamId> uses;
    for (StreamId s : block->stream_uses) {
      if (std::find(captured.begin(), captured.end(), s) == captured.end()) uses.push_back(s);
    }
    routing_.deferred.push_back(PoolRouting::DeferredFree{block, std::move(uses)});
    ledger_.free_requested(block, 1, ctx);  // the one "event": the capture's end
    deferred = true;
  }
  routing_.update_flags();
  return deferred;
}

void DeviceCachingAllocator::insert_deferred_events() {
  while (!routing_.deferred.empty()) {
    PoolRouting::DeferredFree& d = routing_.deferred.back();
    // Streams destroyed since were waited for then: no event on them.
    std::vector<StreamId> uses;
    for (StreamId s : d.uses) {
      if (s == 0 || streams_.count(s) != 0) uses.push_back(s);
    }
    const int events = uses.empty() ? 0 : events_.record(d.block, uses);  // throws with nothing queued
    const Block* block = d.block;
    routing_.deferred.pop_back();
    ledger_.deferred_events_recorded(block, events);
    if (!caching_enabled_ && events == 0) release_if_uncached(block);
  }
  routing_.update_flags();
}

}  // namespace cca
