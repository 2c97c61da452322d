// CUDA IPC's facet (ipc.h).
#include "ipc.h"

#include <cstring>

#include "../facet_access.h"
#include "../../../common/message_format.h"

namespace cca {

IpcExport IpcFacet::export_allocation(DevicePtr ptr) {
  const auto lock = FacetAccess::lock(a_);
  Device& device = FacetAccess::device(a_);
  const Block* block = FacetAccess::ledger(a_).find_allocated(ptr);
  if (block == nullptr || block->state != BlockState::kAllocated) {
    throw InvalidPointerError("ipcHandle: " + hex(ptr) + " is not a live allocation on device " +
                              std::to_string(device.index()));
  }
  if (block->expandable) {
    throw InvalidArgumentError("ipcHandle: the buffer at " + hex(ptr) + " lies in an expandable segment, which CUDA's "
                               "IPC handles cannot name; allocate it with expandable_segments:False to share it",
                               "ERR_CCA_IPC_UNSUPPORTED");
  }
  IpcExport out;
  const DevicePtr segment = block->segment->ptr;
  const Status s = device.ipc_handle(segment, out.handle);
  if (s == Status::kUnsupported) {
    throw InvalidArgumentError("ipcHandle: the buffer's device " + std::to_string(device.index()) +
                               " cannot share memory with other processes (" + (device.is_simulated() ? std::string("a simulated GPU") : device.last_error()) +
                               ")", "ERR_CCA_IPC_UNSUPPORTED");
  }
  if (s != Status::kOk) throw device_error(device, "cuIpcGetMemHandle", s);
  out.offset = ptr - segment;
  out.size = block->requested_size;
  return out;
}

DevicePtr IpcFacet::open(const unsigned char* handle, std::uint64_t offset, std::uint64_t size) {
  const auto lock = FacetAccess::lock(a_);
  Device& device = FacetAccess::device(a_);
  IpcMappings& ipc = FacetAccess::ipc(a_);
  const std::string key(reinterpret_cast<const char*>(handle), Device::kIpcHandleBytes);
  auto m = ipc.mappings_.find(key);
  if (m == ipc.mappings_.end()) {
    DevicePtr base = 0;
    const Status s = device.ipc_open(handle, &base);
    if (s == Status::kUnsupported) {
      throw InvalidArgumentError("openIpcHandle: device " + std::to_string(device.index()) +
                                     " cannot map another process's memory (" +
                                     (device.is_simulated() ? std::string("a simulated GPU") : device.last_error()) + ")",
                                 "ERR_CCA_IPC_UNSUPPORTED");
    }
    if (s != Status::kOk) throw device_error(device, "cuIpcOpenMemHandle", s);
    m = ipc.mappings_.emplace(key, IpcMappings::Mapping{base, 0}).first;
  }
  const DevicePtr ptr = m->second.base + offset;
  IpcMappings::Imported& imp = ipc.imported_[ptr];
  if (imp.opens == 0) {
    imp.bytes = size;
    imp.handle = key;
    ++m->second.users;
  }
  ++imp.opens;
  return ptr;
}

void IpcFacet::close(DevicePtr ptr) {
  const auto lock = FacetAccess::lock(a_);
  Device& device = FacetAccess::device(a_);
  IpcMappings& ipc = FacetAccess::ipc(a_);
  auto it = ipc.imported_.find(ptr);
  if (it == ipc.imported_.end()) {
    throw InvalidPointerError("close: " + hex(ptr) + " is not memory of another process open on device " +
                              std::to_string(device.index()));
  }
  if (--it->second.opens > 0) return;
  auto m = ipc.mappings_.find(it->second.handle);
  ipc.imported_.erase(it);
  if (m != ipc.mappings_.end() && --m->second.users == 0) {
    const DevicePtr base = m->second.base;
    ipc.mappings_.erase(m);
    const Status s = device.ipc_close(base);
    if (s != Status::kOk) throw device_error(device, "cuIpcCloseMemHandle", s);
  }
}

}  // namespace cca
