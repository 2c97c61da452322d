// Other processes' memory mapped on this device (CUDA IPC): the state the IPC facet
// (facets/ipc.h) keeps, held by the allocator because its copies and launches must accept
// ranges inside it. Guarded by the allocator's lock.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>

#include "../../device/device.h"

namespace cca {

class IpcMappings {
 public:
  // Whether another process's allocation is open at `ptr`, and the bytes it spans here.
  bool imported(DevicePtr ptr, std::uint64_t* bytes) const {
    auto it = imported_.find(ptr);
    if (it == imported_.end()) return false;
    *bytes = it->second.bytes;
    return true;
  }
  // Unmaps every mapping (the allocator's teardown).
  void close_all(Device& device) {
    for (const auto& [handle, mapping] : mappings_) device.ipc_close(mapping.base);
    mappings_.clear();
    imported_.clear();
  }

 private:
  friend class IpcFacet;
  struct Imported {
    std::uint64_t bytes = 0;
    int opens = 0;
    std::string handle;  // the 64 bytes, the key of `mappings_`
  };
  std::unordered_map<DevicePtr, Imported> imported_;  // by address
  struct Mapping {
    DevicePtr base = 0;
    int users = 0;  // imported_ entries on it
  };
  std::unordered_map<std::string, Mapping> mappings_;  // one per handle opened
};

}  // namespace cca
