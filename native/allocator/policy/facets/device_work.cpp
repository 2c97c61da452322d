// Work queued on the device over allocations (device_work.h).
#include "device_work.h"

#include "../facet_access.h"

namespace cca {

void DeviceWork::enqueue_on_buffers(StreamId stream, const BufferUse* uses, std::size_t count, bool record,
                                    const char* what, Enqueue enqueue, void* context) {
  const auto lock = FacetAccess::lock(a_);
  FacetAccess::check_stream(a_, stream);
  // Every range is checked before any block is recorded: a bad one changes nothing.
  for (std::size_t i = 0; i < count; ++i) FacetAccess::live_range(a_, uses[i].base, uses[i].offset, uses[i].bytes, what);
  if (record) {
    for (std::size_t i = 0; i < count; ++i) {
      const Block* block = FacetAccess::ledger(a_).find_allocated(uses[i].base);  // null for another process's memory
      if (block != nullptr && block->stream != stream) FacetAccess::stream_used(a_, block, stream);
    }
  }
  Status s = enqueue(context);
  if (s != Status::kOk) throw device_error(FacetAccess::device(a_), what, s);
  if (record) FacetAccess::check_after_operation(a_);
}

}  // namespace cca
