// What other native code asks of the allocator through the C ABI (native/interop/): frees
// checked against the client that allocated, lookups of an address, and streams that the
// allocator did not create but must order blocks on.
#include "caching_allocator.h"
#include "../../common/message_format.h"

namespace cca {

void DeviceCachingAllocator::free_owned(DevicePtr ptr, std::uint32_t owner, CallContext ctx, OwnerCounters& counters) {
  std::lock_guard<FutexMutex> lock(mu_);
  const Block* block = ledger_.find_allocated(ptr);
  if (block == nullptr) throw_not_allocated(ptr);
  if (block->owner != owner) {
    throw InvalidPointerError("free: pointer " + hex(ptr) + " belongs to another client or to JS; only the code that "
                              "allocated it may free it");
  }
  const std::uint64_t requested = block->requested_size;
  free_block(block, ctx);
  counters.on_free(requested);
  check_after_operation();
}

OwnerCounters DeviceCachingAllocator::read_counters(const OwnerCounters& counters) const {
  std::lock_guard<FutexMutex> lock(mu_);
  return counters;
}

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

void DeviceCachingAllocator::adopt_stream(StreamId stream) {
  std::lock_guard<FutexMutex> lock(mu_);
  auto it = adopted_.find(stream);
  if (it != adopted_.end()) {
    ++it->second;
    return;
  }
  if (stream == 0 || streams_.count(stream) != 0) {
    throw InvalidArgumentError("stream " + hex(stream) + (stream == 0 ? " is the default stream" : " was created by the allocator") +
                                   ": it is usable without adopting it",
                               "ERR_CCA_INVALID_STREAM");
  }
  // The device must know it: a handle it refuses (of another device, or not a stream) is
  // refused here, never guessed at later. A destroyed stream's handle dangles: a real driver
  // cannot tell, so the contract is to adopt only live streams (docs/interop.md).
  const Status s = device_.stream_query(stream);
  if (s != Status::kOk && s != Status::kNotReady) {
    throw InvalidArgumentError("stream " + hex(stream) + " is not a stream of device " + std::to_string(device_.index()) +
                                   " (" + device_.last_error() + ")",
                               "ERR_CCA_INVALID_STREAM");
  }
  streams_.insert(stream);
  adopted_.emplace(stream, 1);
}

void DeviceCachingAllocator::release_stream(StreamId stream) {
  std::lock_guard<FutexMutex> lock(mu_);
  auto it = adopted_.find(stream);
  if (it == adopted_.end()) {
    throw InvalidArgumentError("stream " + hex(stream) + " is not an adopted stream of device " +
                                   std::to_string(device_.index()),
                               "ERR_CCA_INVALID_STREAM");
  }
  if (it->second > 1) {
    --it->second;
    return;
  }
  refuse_during_capture("releasing the last adoption of a stream (it waits for the stream)");
  forget_stream_locked(stream, false);
  adopted_.erase(stream);
}

}  // namespace cca
