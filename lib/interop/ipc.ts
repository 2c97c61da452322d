// CUDA IPC, the importing side: another process's buffer mapped here as a DeviceBuffer that
// copies and kernels may use and whose free() unmaps it; and ipc_collect, PyTorch's name for
// freeing exported buffers that importers have let go of.
import { DeviceBuffer, makeDeviceBuffer } from '../device-buffer.js';
import { native } from '../native.js';
import { defaultStream } from '../stream.js';
import { generation } from '../generation.js';
import { typeError } from '../validate.js';

/**
 * Maps a buffer another process exported with `buf.ipcHandle()` (the same machine and GPU).
 * The result is a DeviceBuffer on the default stream: read and write it with copies and
 * kernels; its `free()` unmaps it (the memory is the exporter's). Opening the same handle
 * twice shares one mapping. Throws ERR_CCA_IPC_HANDLE for bytes that are not a handle,
 * ERR_CCA_IPC_SAME_PROCESS in the exporting process, ERR_CCA_IPC_STALE when the exporter
 * has exited or freed the buffer, ERR_CCA_IPC_UNSUPPORTED on the simulator.
 */
export function openIpcHandle(handle: Uint8Array): DeviceBuffer {
  if (!(handle instanceof Uint8Array)) throw typeError('a Uint8Array from buf.ipcHandle()', 'handle', handle);
  const { device, ptr, size } = native.openIpcHandle(handle);
  return makeDeviceBuffer(ptr, size, defaultStream(device), generation(), true);
}

/**
 * Frees the exported buffers that were freed here while other processes had them open, once
 * those processes have closed them (PyTorch's torch.cuda.ipc_collect). The allocator also
 * does this by itself when it runs short of memory. Returns how many were freed.
 */
export function ipc_collect(): number {
  return native.ipcCollect();
}
