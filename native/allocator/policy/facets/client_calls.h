// What native clients (the C ABI, native/interop/) ask beyond malloc_counted: frees checked
// against the client that allocated, and their counters read whole (a facet: facet_access.h).
#pragma once
#include <cstdint>

#include "../caching_allocator.h"

namespace cca {

class ClientCalls {
 public:
  explicit ClientCalls(DeviceCachingAllocator& allocator) : a_(allocator) {}

  // Frees an allocation that `owner` made, counting it in `counters`: InvalidPointerError,
  // changing nothing, for a pointer that is not a live allocation of that owner.
  void free_owned(DevicePtr ptr, std::uint32_t owner, CallContext ctx, OwnerCounters& counters);
  // A copy of counters the allocator updates, read under its lock.
  OwnerCounters read_counters(const OwnerCounters& counters) const;

 private:
  DeviceCachingAllocator& a_;
};

}  // namespace cca
