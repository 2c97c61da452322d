// Host <-> device copies and fills that wait (a facet: facet_access.h). They reach device
// memory only through here, under the allocator's lock, and only inside one live allocation:
// a buffer object forged in JavaScript, a freed or foreign address, or a range past the
// caller's size is refused before the device sees it. The work runs on the allocation's own
// stream and is waited for before the lock is released, so the block cannot be freed and
// handed to someone else while its bytes are moving, and the host memory is free to reuse on
// return.
#pragma once
#include <cstdint>

#include "../caching_allocator.h"

namespace cca {

class SyncCopies {
 public:
  SyncCopies(DeviceCachingAllocator& allocator, CopyEngine& engine) : a_(allocator), engine_(engine) {}

  // Only inside the live allocation at `base` (or memory mapped from another process),
  // within the caller's size; anything else throws InvalidPointerError or
  // InvalidArgumentError (ERR_CCA_OUT_OF_BOUNDS), touching nothing. Refused during a capture.
  void copy_to_device(DevicePtr base, std::uint64_t offset, const void* src, std::uint64_t bytes);
  void copy_to_host(void* dst, DevicePtr base, std::uint64_t offset, std::uint64_t bytes);
  void fill(DevicePtr base, std::uint64_t offset, unsigned char value, std::uint64_t bytes);

 private:
  void finish(Status s, StreamId stream, const char* what);

  DeviceCachingAllocator& a_;
  CopyEngine& engine_;
};

}  // namespace cca
