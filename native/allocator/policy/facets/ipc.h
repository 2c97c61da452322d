// CUDA IPC, the allocator's part (a facet: facet_access.h): a handle names a whole device
// allocation (a segment), so an exported block travels as the segment's handle plus its
// offset and size; the importing process maps the segment once and may name each block in
// it. The mappings live in the allocator (ipc_mappings.h), whose copies and launches accept
// them. Keeping the exporter's block alive while importers use it is the caller's
// (native/interop/ipc.cpp).
#pragma once
#include <cstdint>

#include "../caching_allocator.h"

namespace cca {

struct IpcExport {
  unsigned char handle[Device::kIpcHandleBytes];
  std::uint64_t offset = 0;  // the allocation's place in the device allocation the handle names
  std::uint64_t size = 0;    // its requested size
};

class IpcFacet {
 public:
  explicit IpcFacet(DeviceCachingAllocator& allocator) : a_(allocator) {}

  // A handle for the live allocation at `ptr`. InvalidPointerError unless it is one;
  // InvalidArgumentError (ERR_CCA_IPC_UNSUPPORTED) for expandable segments, whose memory the
  // legacy IPC handles cannot name, and where the device cannot share memory.
  IpcExport export_allocation(DevicePtr ptr);
  // Another process's allocation, mapped here: returns its address. Copies and launches may
  // name its `size` bytes (on the default stream); it is never freed into the cache. The same
  // handle opened again shares the mapping (counted).
  DevicePtr open(const unsigned char* handle, std::uint64_t offset, std::uint64_t size);
  // Undoes one open of the allocation at `ptr`; the last unmaps it.
  void close(DevicePtr ptr);

 private:
  DeviceCachingAllocator& a_;
};

}  // namespace cca
