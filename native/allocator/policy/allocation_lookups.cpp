// Lookups of an address: the live allocation holding it (for DLPack, copies, the C ABI,
// memory._allocation_traceback) and an annotation on it (PyTorch's _annotate_memory).
#include "caching_allocator.h"
#include "../../common/message_format.h"

namespace cca {

bool DeviceCachingAllocator::find_allocation(DevicePtr inside, DevicePtr* base, std::uint64_t* size,
                                             StreamId* stream) const {
  std::lock_guard<FutexMutex> lock(mu_);
  return find_allocation_locked(inside, base, size, stream);
}

bool DeviceCachingAllocator::find_allocation_locked(DevicePtr inside, DevicePtr* base, std::uint64_t* size,
                                                    StreamId* stream) const {
  const Block* found = allocated_block_holding(inside);
  if (found == nullptr) return false;
  *base = found->ptr;
  *size = found->requested_size;
  *stream = found->stream;
  return true;
}

bool DeviceCachingAllocator::allocation_stack(DevicePtr inside, std::uint32_t* stack) const {
  std::lock_guard<FutexMutex> lock(mu_);
  const Block* found = allocated_block_holding(inside);
  if (found == nullptr) return false;
  *stack = found->alloc_stack;
  return true;
}

void DeviceCachingAllocator::annotate(DevicePtr inside, CallContext ctx) {
  std::lock_guard<FutexMutex> lock(mu_);
  const Block* found = allocated_block_holding(inside);
  if (found == nullptr) {
    throw InvalidPointerError("_annotate_memory: " + hex(inside) + " is not inside a live allocation on device " +
                              std::to_string(device_.index()));
  }
  ledger_.annotated(found, ctx.stack, ctx.tag);
}

const Block* DeviceCachingAllocator::allocated_block_holding(DevicePtr inside) const {
  const Block* found = ledger_.find_allocated(inside);
  if (found != nullptr) return found;
  const Segment* segment = ledger_.segment_containing(inside);
  if (segment == nullptr) return nullptr;
  for (const Block* b = segment->head; b != nullptr; b = b->next) {
    if (inside >= b->ptr && inside < b->ptr + b->size) {
      found = b;
      break;
    }
  }
  // Only the bytes asked for count: the rounding past them is not the caller's.
  if (found == nullptr || found->state != BlockState::kAllocated || inside >= found->ptr + found->requested_size) return nullptr;
  return found;
}

}  // namespace cca
