// Questions about an address inside device memory: the live allocation holding it (DLPack,
// the C ABI), the stack it was made with (memory._allocation_traceback), and an annotation
// on it (PyTorch's _annotate_memory). A facet: facet_access.h.
#pragma once
#include <cstdint>

#include "../caching_allocator.h"

namespace cca {

class AddressLookups {
 public:
  explicit AddressLookups(DeviceCachingAllocator& allocator) : a_(allocator) {}

  // The live allocation holding `inside` (its base, requested size and stream); false if none.
  bool find_allocation(DevicePtr inside, DevicePtr* base, std::uint64_t* size, StreamId* stream) const;
  // The stack id the live allocation holding `inside` was made with (0: none captured);
  // false if no live allocation holds it.
  bool allocation_stack(DevicePtr inside, std::uint32_t* stack) const;
  // Records an `annotate` history entry for the live allocation holding `inside` with ctx's
  // tag and stack; InvalidPointerError, changing nothing, when no live allocation holds it.
  void annotate(DevicePtr inside, CallContext ctx);

 private:
  // The allocated block whose requested bytes hold `inside`, or nullptr (the caller holds
  // the lock).
  const Block* allocated_block_holding(DevicePtr inside) const;

  DeviceCachingAllocator& a_;
};

}  // namespace cca
