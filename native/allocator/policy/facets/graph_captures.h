// CUDA graph capture's calls on one device's allocator (a facet: facet_access.h): they set
// the routing (pool_routing.h) that the allocator follows while a capture is underway, as
// Note [Allocating under graph capture] in captures.cpp describes.
#pragma once
#include <cstdint>

#include "../caching_allocator.h"

namespace cca {

class GraphCaptures {
 public:
  explicit GraphCaptures(DeviceCachingAllocator& allocator) : a_(allocator) {}

  // A pool id no pool has yet (PyTorch's graph_pool_handle()): a capture given it creates
  // the pool, and graphs given the same id share it.
  std::uint32_t reserve_pool_id();
  // Routes every allocation on a stream of capture `capture_id` (Device::stream_capture_info;
  // side streams that joined the capture too) to private pool `pool` until
  // end_allocate_to_capture. Creates the pool or adds a use to it: the graph's use, kept
  // until release_pool when the graph goes. While any capture is routed on this device no
  // event is recorded or queried, empty_cache and synchronizations are refused, and the OOM
  // path does not release the whole cache. InvalidArgumentError (ERR_CCA_INVALID_POOL) for a
  // released pool or one already routed to; ERR_CCA_CAPTURE_UNSUPPORTED with caching off.
  void begin_allocate_to_capture(std::uint32_t pool, std::uint64_t capture_id);
  // Begun before the device's capture (PyTorch's order: a free on another thread between the
  // two must find frees deferred), the routing learns the capture's id once it exists: until
  // then it routes nothing (capture_id 0).
  void capture_started(std::uint32_t pool, std::uint64_t capture_id);
  // Ends the routing of one capture. The pool keeps the capture's use.
  void end_allocate_to_capture(std::uint32_t pool, std::uint64_t capture_id);
  // Whether any capture is routed on this device.
  bool capture_underway() const;
  // ERR_CCA_CAPTURE_UNSUPPORTED, naming `what` and the captures, while any is underway here:
  // for the compute layer's calls that would synchronize or query (event.done(), stream.done()).
  void refuse_if_capturing(const char* what) const;
  // Frees waiting for the last capture to end (their blocks' events are recorded then).
  Bytes frees_deferred_by_capture() const;
  // A test hook: with false, begin_allocate_to_capture still counts the capture (events
  // stay off) but routes nothing to its pool, so eager work may take the graph's memory:
  // the corruption a capture-aware allocator prevents, shown by a negative control.
  void set_capture_routing_for_tests(bool route);

 private:
  DeviceCachingAllocator& a_;
};

}  // namespace cca
