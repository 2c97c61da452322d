// Device work that names allocations (a kernel launch, a GEMM, an async copy): the checks and
// the stream bookkeeping are the allocator's, since only it knows which ranges are live and
// which stream each block's reuse is ordered on; what the work is, it does not know. A facet:
// facet_access.h.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../caching_allocator.h"

namespace cca {

// A range of a live allocation that queued device work will read or write. No default
// member values: a launch fills a stack array of these per call, and zeroing it first
// would be wasted work.
struct BufferUse {
  DevicePtr base;
  std::uint64_t offset;
  std::uint64_t bytes;
};

class DeviceWork {
 public:
  explicit DeviceWork(DeviceCachingAllocator& allocator) : a_(allocator) {}

  // Checks that `stream` is live and each range lies inside a live allocation, records each
  // allocation made on another stream as used on `stream` when `record` is set (so its memory
  // waits for this work when freed), then calls enqueue(context), all under the allocator's
  // lock, so no range can be freed and handed out again between the check and the queuing. A
  // failed enqueue throws its DeviceError, naming `what`; a bad range throws before anything
  // changed.
  using Enqueue = Status (*)(void* context);
  void enqueue_on_buffers(StreamId stream, const BufferUse* uses, std::size_t count, bool record, const char* what,
                          Enqueue enqueue, void* context);

 private:
  DeviceCachingAllocator& a_;
};

}  // namespace cca
