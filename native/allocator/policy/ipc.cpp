// CUDA IPC, the allocator's part: a handle names a whole device allocation (a segment),
// so an exported block travels as the segment's handle plus its offset and size; the
// importing process maps the segment once and may name each block in it. Keeping the
// exporter's block alive while importers use it is the caller's (native/interop/ipc.cpp).
#include <cstring>

#include "caching_allocator.h"
#include "../../common/message_format.h"

namespace cca {

DeviceCachingAllocator::IpcExport DeviceCachingAllocator::export_ipc(DevicePtr ptr) {
  std::lock_guard<FutexMutex> lock(mu_);
  const Block* block = ledger_.find_allocated(ptr);
  if (block == nullptr || block->state != BlockState::kAllocated) {
    throw InvalidPointerError("ipcHandle: " + hex(ptr) + " is not a live allocation on device " +
                              std::to_string(device_.index()));
  }
  if (block->expandable) {
    throw InvalidArgumentError("ipcHandle: the buffer at " + hex(ptr) + " lies in an expandable segment, which CUDA's "
                               "IPC handles cannot name; allocate it with expandable_segments:False to share it",
                               "ERR_CCA_IPC_UNSUPPORTED");
  }
  IpcExport out;
  const DevicePtr segment = block->segment->ptr;
  const Status s = device_.ipc_handle(segment, out.handle);
  if (s == Status::kUnsupported) {
    throw InvalidArgumentError("ipcHandle: the buffer's device " + std::to_string(device_.index()) +
                               " cannot share memory with other processes (" + (device_.is_simulated() ? std::string("a simulated GPU") : device_.last_error()) +
                               ")", "ERR_CCA_IPC_UNSUPPORTED");
  }
  if (s != Status::kOk) throw device_error(device_, "cuIpcGetMemHandle", s);
  out.offset = ptr - segment;
  out.size = block->requested_size;
  return out;
}

DevicePtr DeviceCachingAllocator::open_ipc(const unsigned char* handle, std::uint64_t offset, std::uint64_t size) {
  std::lock_guard<FutexMutex> lock(mu_);
  const std::string key(reinterpret_cast<const char*>(handle), Device::kIpcHandleBytes);
  auto m = mappings_.find(key);
  if (m == mappings_.end()) {
    DevicePtr base = 0;
    const Status s = device_.ipc_open(handle, &base);
    if (s == Status::kUnsupported) {
      throw InvalidArgumentError("openIpcHandle: device " + std::to_string(device_.index()) +
                                     " cannot map another process's memory (" +
                                     (device_.is_simulated() ? std::string("a simulated GPU") : device_.last_error()) + ")",
                                 "ERR_CCA_IPC_UNSUPPORTED");
    }
    if (s != Status::kOk) throw device_error(device_, "cuIpcOpenMemHandle", s);
    m = mappings_.emplace(key, Mapping{base, 0}).first;
  }
  const DevicePtr ptr = m->second.base + offset;
  Imported& imp = imported_[ptr];
  if (imp.opens == 0) {
    imp.bytes = size;
    imp.handle = key;
    ++m->second.users;
  }
  ++imp.opens;
  return ptr;
}

void DeviceCachingAllocator::close_ipc(DevicePtr ptr) {
  std::lock_guard<FutexMutex> lock(mu_);
  auto it = imported_.find(ptr);
  if (it == imported_.end()) {
    throw InvalidPointerError("close: " + hex(ptr) + " is not memory of another process open on device " +
                              std::to_string(device_.index()));
  }
  if (--it->second.opens > 0) return;
  auto m = mappings_.find(it->second.handle);
  imported_.erase(it);
  if (m != mappings_.end() && --m->second.users == 0) {
    const DevicePtr base = m->second.base;
    mappings_.erase(m);
    const Status s = device_.ipc_close(base);
    if (s != Status::kOk) throw device_error(device_, "cuIpcCloseMemHandle", s);
  }
}

}  // namespace cca
