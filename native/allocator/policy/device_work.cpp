// Work queued on the device that names allocations: a kernel launch's buffers. The checks
// and the stream bookkeeping are the allocator's, since only it knows which ranges are live
// and which stream each block's reuse is ordered on; what the work is, it does not know.
#include <string>

#include "caching_allocator.h"

namespace cca {

void DeviceCachingAllocator::enqueue_on_buffers(StreamId stream, const BufferUse* uses, std::size_t count, bool record,
                                                const char* what, EnqueueWork enqueue, void* context) {
  std::lock_guard<FutexMutex> lock(mu_);
  check_stream(stream);
  // Every range is checked before any block is recorded: a bad one changes nothing.
  for (std::size_t i = 0; i < count; ++i) live_range(uses[i].base, uses[i].offset, uses[i].bytes, what);
  if (record) {
    for (std::size_t i = 0; i < count; ++i) {
      const Block* block = ledger_.find_allocated(uses[i].base);  // null for another process's memory
      if (block != nullptr && block->stream != stream) {
        ledger_.stream_used(block, stream);
        if (!captures_.empty()) note_capture_stream_use(block, stream);
      }
    }
  }
  Status s = enqueue(context);
  if (s != Status::kOk) throw device_error(device_, what, s);
  if (record) check_after_operation();
}

}  // namespace cca
