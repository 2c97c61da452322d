// CUDA IPC between processes: an exported allocation travels as bytes (the driver's handle
// for its segment, where it lies in it, and how to reach the exporter's count of importers);
// another process maps it, and its open counts until it closes it. The exporter's memory
// stays allocated while that count is above zero (exports.h).
#pragma once
#include <cstdint>
#include <vector>

#include "../runtime/runtime.h"

namespace cca {

constexpr std::size_t kIpcWireBytes = 120;

// The bytes another process opens. InvalidPointerError unless `base` is a live allocation;
// ERR_CCA_IPC_UNSUPPORTED where the device cannot share it.
std::vector<unsigned char> export_ipc_handle(Runtime& runtime, int device, DevicePtr base);

struct IpcImport {
  int device = 0;
  DevicePtr ptr = 0;
  std::uint64_t size = 0;
};
// Maps the allocation the bytes name and counts the open in the exporter. InvalidArgumentError
// with ERR_CCA_IPC_HANDLE for bytes that are not a handle, ERR_CCA_IPC_SAME_PROCESS in the
// exporting process, ERR_CCA_IPC_STALE when the exporter has exited or freed the allocation.
IpcImport open_ipc_handle(Runtime& runtime, const unsigned char* bytes, std::size_t length);
// Undoes one open: the count in the exporter drops, and the last close unmaps.
void close_ipc_handle(Runtime& runtime, int device, DevicePtr ptr);

}  // namespace cca
